"""Time of a joint batch suggestion ``Optimizer.ask(n=q)`` at N told observations on the NAS-like space.

The NAS-like space (``fastfm.benchmarks.workloads.benchmark_spaces``: 6 continuous, 10 nominal + 10 ordinal
variables with 3-8 states) has no objective of its own: the observations are N seeded random configs valued by
the smooth synthetic function of the encoded point that the asv suite uses (``bench_bo._objective``).  Each
repeat builds a fresh optimiser, tells the N observations and times one ``ask(n=q)`` (one GP fit with
10 restarts, then q acquisition optimisations, each conditioned on the points before it); ``ask(n=1)`` is
timed the same way for comparison.

    PYTHONPATH=. python asv_benchmarks/parallel/ask_batch_time.py --json /tmp/ask_batch.json
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fastfm as ff  # noqa: E402
from fastfm.benchmarks.workloads import benchmark_spaces  # noqa: E402

from _common import finish, header, loadavg  # noqa: E402


def objective(X):
    """The asv suite's smooth mixed test function on encoded rows (asv_benchmarks/benchmarks/bench_bo.py)."""
    return np.sin(3.0 * X[:, 0]) + np.cos(2.0 * X[:, -1]) + 0.1 * X.sum(axis=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-obs", type=int, default=200)
    p.add_argument("--q", type=int, nargs="+", default=[1, 8])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    meta = header(args)
    space = benchmark_spaces()["NAS-like"]
    X = space.sample_encoded(args.n_obs, seed=2)
    configs = space.decode(X)
    values = objective(X)
    rows = []
    for rep in range(args.repeats):
        for q in args.q:
            opt = ff.Optimizer(space, kernel="modlap", seed=args.seed + rep)
            for c, v in zip(configs, values):
                opt.tell(c, float(v))
            load0 = loadavg()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                batch = opt.ask(n=q)
                wall = time.perf_counter() - t0
            per_point = [opt._pending[s.trial_id].suggest_time for s in batch]
            rows.append({"q": q, "repeat": rep, "wall_s": wall, "n_returned": len(batch),
                         "per_point_s": per_point, "n_distinct": len({tuple(sorted(s.items())) for s in batch}),
                         "load_start": load0, "load_end": loadavg()})
            print(f"repeat {rep} ask(n={q}): {wall:.2f} s, per point "
                  + ", ".join(f"{t:.2f}" for t in per_point), flush=True)
    print(f"\nNAS-like space, {args.n_obs} told observations, {args.repeats} repeats (fresh optimiser each)\n")
    print("| call | mean (s) | min–max (s) | first point: fit + acquisition (s) | each further point (s) "
          "| per point (s) | target |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for q in args.q:
        rs = [r for r in rows if r["q"] == q]
        w = np.array([r["wall_s"] for r in rs])
        first = np.mean([r["per_point_s"][0] for r in rs])
        rest = [t for r in rs for t in r["per_point_s"][1:]]
        rest_s = f"{np.mean(rest):.2f}" if rest else "—"
        target = "≤ 2 s" if q == 8 else ""
        print(f"| ask(n={q}) | {w.mean():.2f} | {w.min():.2f}–{w.max():.2f} | {first:.2f} | {rest_s} | "
              f"{w.mean() / q:.2f} | {target} |")
    finish(meta, rows, args.json)


if __name__ == "__main__":
    main()
