"""Failed evaluations: Func3C with a crash region (the evaluation fails, NaN, when x1 > 0.5: a quarter of the
continuous box that holds neither of the two optima, u ≈ ±(-0.0449, 0.3563)), failures="impute" (failed points
enter the model at the worst successful value) against "ignore" (they are only excluded).  Protocol of
batch_efficiency.py: ask(n=q), evaluate all, tell all (NaN -> tell(x, None)); 40 evaluations, 10 random first.

    PYTHONPATH=. python asv_benchmarks/parallel/failures.py --seeds 6 --json /tmp/failures.json
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_protocol_arguments, finish, header, mean_se, run_pool  # noqa: E402
from batch_efficiency import _init_worker, _problem, best_at, run_fastfm  # noqa: E402

THRESHOLD = 0.5


def crashes(config):
    return config["x1"] > THRESHOLD


def _job(job):
    mode, q, seed, budget, n_init = job
    out = run_fastfm("Func3C", q, seed, budget, n_init, failures=mode, crash=crashes)
    out.update(failures=mode, q=q, seed=seed)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", nargs="+", default=["impute", "ignore"])
    p.add_argument("--q", type=int, nargs="+", default=[1])
    add_protocol_arguments(p, seeds=6)
    args = p.parse_args()
    meta = header(args)
    jobs = [(m, q, s, args.budget, args.n_init) for s in range(args.seeds) for m in args.modes for q in args.q]
    results, meta["wall_s"] = run_pool(_job, jobs, args.processes, _init_worker,
                                        lambda r: f"{r['failures']} q={r['q']} seed={r['seed']}: best "
                                       f"{best_at(r['values'], args.budget):.4f}, {r['n_failed']} failed "
                                       f"({r['time_s']:.1f} s)")
    print(f"\nFunc3C (optimum {_problem('Func3C').optimum:.4f}), evaluations fail where x1 > {THRESHOLD}; "
          f"{args.budget} evaluations ({args.n_init} random first), {args.seeds} seeds, mean ± standard error\n")
    print("| failures | q | best @ 40 | failed evaluations (of 40) | failed after the random ones | time/run (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for m in args.modes:
        for q in args.q:
            rs = [r for r in results if r["failures"] == m and r["q"] == q]
            b = "{:.4f} ± {:.4f}".format(*mean_se([best_at(r["values"], args.budget) for r in rs]))
            f = "{:.1f} ± {:.1f}".format(*mean_se([r["n_failed"] for r in rs]))
            late = "{:.1f} ± {:.1f}".format(*mean_se([int(np.sum(~np.isfinite(r["values"][args.n_init:])))
                                                      for r in rs]))
            print(f"| {m} | {q} | {b} | {f} | {late} | {np.mean([r['time_s'] for r in rs]):.1f} |")
    finish(meta, results, args.json)


if __name__ == "__main__":
    main()
