"""Issue 24 §4: BO over sets vs the Vector and Split baselines, on set problems with a chosen m.

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/bo_runs.py --problems setperiodic:10,setdensity:20 \\
        --methods set-norm,vector,split --budget 60 --seeds 5 --json out.json

A problem is NAME or NAME:m (m points per set, for setperiodic and setdensity); a method is one of
``run_set_method``'s, or METHOD+old for the acquisition search before issue 24 §4 (no one-point moves).
Prints best-at-budget, mean ± s.e. over the seeds, and seconds per suggestion; ``--jobs 2`` runs two
processes; ``--json`` is rewritten as each run finishes.
"""
import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

from fastfm._config import set_config
from fastfm.benchmarks import get_problem
from fastfm.cli.runs import run_set_method


def make_problem(spec):
    name, _, m = spec.partition(":")
    return get_problem(name, **({"n_points": int(m)} if m else {}))


def run_one(spec, method, seed, budget, n_init):
    set_config(num_threads=1)
    problem = make_problem(spec)
    start = time.perf_counter()
    # "METHOD+old": the acquisition search before issue 24 §4 (no one-point moves of the best sets)
    old = method.endswith("+old")
    base = method[:-len("+old")] if old else method
    acq_options = {"n_set_point_moves": 0} if old else None
    result = run_set_method(problem, base, budget, n_init, seed, acq_options=acq_options)
    suggest = np.asarray(result.suggest_times)[n_init:]
    return {"problem": spec, "method": method, "seed": seed, "best": float(result.fun),
            "curve": np.asarray(result.best_so_far).tolist(),
            "mean_suggest_time": float(np.mean(suggest)) if len(suggest) else float("nan"),
            "wall_time": time.perf_counter() - start}


def summary(rows):
    lines = []
    for spec in dict.fromkeys(r["problem"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows):
            best = np.array([r["best"] for r in rows if r["problem"] == spec and r["method"] == method])
            if not len(best):
                continue
            t = np.mean([r["mean_suggest_time"] for r in rows if r["problem"] == spec and r["method"] == method])
            se = best.std(ddof=1) / np.sqrt(len(best)) if len(best) > 1 else 0.0
            lines.append(f"| {spec} | {method} | {len(best)} | {best.mean():+.4f} ± {se:.4f} | {t:.2f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", required=True)
    parser.add_argument("--methods", default="set-norm,vector")
    parser.add_argument("--budget", type=int, default=60)
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed0", type=int, default=0, help="first seed (add seeds to an earlier run's)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    tasks = [(spec, method, seed, args.budget, args.n_init) for spec in args.problems.split(",")
             for method in args.methods.split(",") for seed in range(args.seed0, args.seed0 + args.seeds)]
    done, rows = {}, []
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, *task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            rows = [done[i] for i in sorted(done)]
            if args.json:   # every finished run is kept: an hour-long m = 50 job stopped halfway loses nothing
                with open(args.json, "w") as f:
                    json.dump(rows, f)
    print("| problem:m | method | seeds | best at budget (mean ± s.e.) | s/suggestion |")
    print("| --- | --- | --- | --- | --- |")
    print(summary(rows))


if __name__ == "__main__":
    main()
