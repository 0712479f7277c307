"""The acquisition's local search on mixed spaces with and without its two savings of 2026-12-07 (issue 24 §3;
docs/benchmarks/suggestion.md, "Starts that meet"): starts that meet stop behind the one they met
(``fastfm.optim.mixed._merge_met_starts``), and after the first round a start searches its continuous part only
where its discrete move did not gain (``CONTINUOUS_AFTER_EVERY_MOVE``).

    PYTHONPATH=. python asv_benchmarks/peers/met_starts_probe.py search --seeds 0:5 --n-obs 200
    PYTHONPATH=. python asv_benchmarks/peers/met_starts_probe.py search --problem mixed10c20n --seeds 0:2 --n-obs 40
    PYTHONPATH=. python asv_benchmarks/peers/met_starts_probe.py paired OLD.jsonl NEW.jsonl [NEW2.jsonl ...]
    R=asv_benchmarks/peers/results/met_starts.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/met_starts_probe.py paired "$R#before" "$R#merged" "$R#merged_discrete_first"
    PYTHONPATH=. python asv_benchmarks/peers/met_starts_probe.py paired "$R#before" "$R#final"

``search``: on the NAS-like space of ``suggestion_time.py`` (``--n-obs`` random points told to
``Optimizer(space, kernel="auto")``), or on a benchmark problem along a default BO run of ``--n-obs`` evaluations,
every local search of the optimizer is run again from the same starts under each rule: "apart" (neither saving, the
search before 2026-12-07), "merged" (starts that meet merged) and "default" (both); it prints each one's seconds,
rounds and the best acquisition value reached.  ``paired``: head-to-head rows (``head_to_head.py --methods fastfm``)
of the same problems and seeds, each file against the first: the best after 30, 60 and 100 evaluations, new − old,
mean ± s.e., seeds better / worse, and the median seconds per suggestion from the 11th on.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import fastfm as ff
from fastfm.optim import mixed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suggestion_time  # noqa: E402

RULES = {"apart": (False, True), "merged": (True, True), "default": (True, False)}   # (merge, after every move)
STALL_LINES = {"func2c": -0.15, "func3c": -0.3}


def search(problem, seeds, n_obs):
    local_search = mixed.MixedAcquisitionOptimizer._local_search
    merge = mixed._merge_met_starts
    totals = {rule: 0.0 for rule in RULES}

    def every_rule(self, gp, acquisition, X, acq):
        line = []
        for rule, (merged, after_every_move) in RULES.items():
            mixed._merge_met_starts = merge if merged else (lambda *args: None)
            mixed.CONTINUOUS_AFTER_EVERY_MOVE = after_every_move
            start = time.perf_counter()
            _, values, rounds = local_search(self, gp, acquisition, X.copy(), acq.copy())
            seconds = time.perf_counter() - start
            totals[rule] += seconds
            line.append(f"{rule} {seconds:.3f} s, {rounds} rounds, best {values.max():.4f}")
        mixed._merge_met_starts, mixed.CONTINUOUS_AFTER_EVERY_MOVE = merge, False
        print("   " + " | ".join(line), flush=True)
        return local_search(self, gp, acquisition, X, acq)

    mixed.MixedAcquisitionOptimizer._local_search = every_rule
    try:
        for seed in seeds:
            print(f"seed {seed}", flush=True)
            if problem == "nas-like":
                space, _ = suggestion_time.nas_like_space()
                objective = suggestion_time.Objective(space)
                X, y = suggestion_time.draw_observations(space, objective, n_obs, seed)
                optimizer = ff.Optimizer(space, kernel="auto", n_init=10, seed=seed)
                for config, value in zip(space.decode(X), y):
                    optimizer.tell(config, float(value))
                optimizer.ask()
            else:
                from fastfm.benchmarks.base import get_problem
                bench = get_problem(problem)
                optimizer = ff.Optimizer(bench.space, seed=seed)
                for _ in range(n_obs):
                    config = optimizer.ask()
                    optimizer.tell(config, float(bench(config)))
    finally:
        mixed.MixedAcquisitionOptimizer._local_search = local_search
    print("seconds in all: " + ", ".join(f"{rule} {seconds:.2f}" for rule, seconds in totals.items()))


def _rows(path):
    """The ok rows of a JSON-lines file by (problem, seed); ``FILE#VARIANT`` takes one variant's rows of a file of
    several (``results/met_starts.jsonl``)."""
    path, _, variant = path.partition("#")
    rows = {}
    with open(path) as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("status") == "ok" and (not variant or row.get("variant") == variant):
                rows[(row["problem_key"], row["seed"])] = row
    return rows


def paired(old_path, new_paths):
    old = _rows(old_path)
    for new_path in new_paths:
        new = _rows(new_path)
        for problem in sorted({key[0] for key in old}):
            for budget in (30, 60, 100):
                seeds = sorted(seed for (name, seed) in old if name == problem and (name, seed) in new
                               and len(old[(name, seed)]["best_so_far"]) >= budget)
                if not seeds:
                    continue
                before = np.array([old[(problem, s)]["best_so_far"][budget - 1] for s in seeds])
                after = np.array([new[(problem, s)]["best_so_far"][budget - 1] for s in seeds])
                diff = after - before
                error = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
                line = STALL_LINES.get(problem)
                stalls = (f", above {line}: {np.sum(before > line)} -> {np.sum(after > line)}"
                          if line is not None and budget == 60 else "")
                seconds = [np.median(np.concatenate([rows[(problem, s)]["suggest_seconds"][10:budget] for s in seeds]))
                           for rows in (old, new)]
                print(f"{os.path.basename(new_path)}: {problem} @{budget} ({len(seeds)} seeds): {before.mean():.4f} -> "
                      f"{after.mean():.4f}, {diff.mean():+.4f} ± {error:.4f}, better / worse "
                      f"{np.sum(diff < 0)} / {np.sum(diff > 0)}{stalls}; median s a suggestion {seconds[0]:.3f} -> "
                      f"{seconds[1]:.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("search")
    run.add_argument("--problem", default="nas-like", help="nas-like or a benchmark problem's name")
    run.add_argument("--seeds", default="0:3", help="first:last+1")
    run.add_argument("--n-obs", type=int, default=200)
    compare = sub.add_parser("paired")
    compare.add_argument("old")
    compare.add_argument("new", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "search":
        first, last = (int(part) for part in args.seeds.split(":"))
        search(args.problem, range(first, last), args.n_obs)
    else:
        paired(args.old, args.new)


if __name__ == "__main__":
    main()
