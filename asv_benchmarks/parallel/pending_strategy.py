"""Fantasy values of pending points in a joint batch: "believer" (the GP mean, Kriging believer) against
"liar_min" (the best value seen, constant liar), at batch size q on Func3C and Ackley5C, same protocol as
batch_efficiency.py (ask(n=q), evaluate all, tell all; 40 evaluations, the first 10 random).

    PYTHONPATH=. python asv_benchmarks/parallel/pending_strategy.py --seeds 6 --json /tmp/pending.json
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_protocol_arguments, finish, header, mean_se, run_pool  # noqa: E402
from batch_efficiency import PROBLEMS, _init_worker, _problem, best_at, run_fastfm  # noqa: E402


def _job(job):
    problem, pending, q, seed, budget, n_init = job
    out = run_fastfm(problem, q, seed, budget, n_init, pending=pending)
    out.update(problem=problem, pending=pending, q=q, seed=seed)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    p.add_argument("--strategies", nargs="+", default=["believer", "liar_min"])
    p.add_argument("--q", type=int, default=4)
    add_protocol_arguments(p, seeds=6)
    p.add_argument("--checkpoints", type=int, nargs="+", default=[20, 40])
    args = p.parse_args()
    meta = header(args)
    jobs = [(pr, st, args.q, s, args.budget, args.n_init) for s in range(args.seeds) for pr in args.problems
            for st in args.strategies]
    results, meta["wall_s"] = run_pool(_job, jobs, args.processes, _init_worker,
                                        lambda r: f"{r['problem']} {r['pending']} seed={r['seed']}: "
                                       f"best {best_at(r['values'], args.budget):.4f} ({r['time_s']:.1f} s)")
    print(f"\nq={args.q}, {args.budget} evaluations ({args.n_init} random first), {args.seeds} seeds: "
          "best value, mean ± standard error\n")
    print("| problem (optimum) | pending | " + " | ".join(f"best @ {k}" for k in args.checkpoints)
          + " | time/run (s) |")
    print("| --- | --- | " + " | ".join("---" for _ in args.checkpoints) + " | --- |")
    for pr in args.problems:
        for st in args.strategies:
            rs = [r for r in results if r["problem"] == pr and r["pending"] == st]
            cells = [("{:.4f} ± {:.4f}".format(*mean_se([best_at(r["values"], k) for r in rs])))
                     for k in args.checkpoints]
            print(f"| {pr} ({_problem(pr).optimum:.4f}) | {st} | " + " | ".join(cells)
                  + f" | {np.mean([r['time_s'] for r in rs]):.1f} |")
    finish(meta, results, args.json)


if __name__ == "__main__":
    main()
