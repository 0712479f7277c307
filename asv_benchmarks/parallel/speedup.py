"""Wall-clock speed-up of ``fastfm.minimize`` with n_workers evaluations in flight.

The objective sleeps ``--sleep`` seconds and returns Func3C's value (a stand-in for an expensive black box);
it is module level, so the default executor (a process pool) can run it.  The same run measures every
worker count, so that they see the same machine load.

    PYTHONPATH=. python asv_benchmarks/parallel/speedup.py --json /tmp/speedup.json
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fastfm as ff  # noqa: E402
from fastfm.benchmarks import Func3C  # noqa: E402

from _common import finish, header, loadavg  # noqa: E402

PROBLEM = Func3C()
SLEEP = 2.0


def objective(config):
    time.sleep(SLEEP)
    return PROBLEM(config)


def main():
    global SLEEP
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--n-iter", type=int, default=32)
    p.add_argument("--n-init", type=int, default=10)
    p.add_argument("--sleep", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the raw results here")
    args = p.parse_args()
    SLEEP = args.sleep   # read in the workers too: the pool forks (Linux) after this is set
    meta = header(args)
    rows = []
    for w in args.workers:
        load0 = loadavg()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = ff.minimize(objective, PROBLEM.space, n_iter=args.n_iter, n_init=args.n_init, seed=args.seed,
                              progress=False, n_workers=w)
        wall = time.perf_counter() - t0
        st = res.suggest_times
        rows.append({"workers": w, "wall_s": wall, "best": float(res.fun), "n_evals": res.n_evals,
                     "n_failed": res.n_failed, "status": res.status,
                     "suggest_mean_s": float(np.nanmean(st)), "suggest_sum_s": float(np.nansum(st)),
                     "suggest_model_mean_s": float(np.nanmean(st[args.n_init:])) if len(st) > args.n_init else None,
                     "suggest_times": st.tolist(), "load_start": load0, "load_end": loadavg()})
        print(f"workers={w}: {wall:.1f} s, best {res.fun:.4f}, status {res.status}", flush=True)
    base = next((r["wall_s"] for r in rows if r["workers"] == 1), None)
    ideal_serial = args.n_iter * args.sleep
    print(f"\nn_iter={args.n_iter}, n_init={args.n_init}, sleep {args.sleep} s/evaluation "
          f"(evaluation time alone, serial: {ideal_serial:.0f} s)\n")
    print("| workers | wall (s) | speed-up vs 1 | efficiency | ideal wall n_iter·sleep/w (s) | mean suggestion (s) "
          "| mean model suggestion (s) | best value | load start→end |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        sp = base / r["wall_s"] if base else float("nan")
        r["speedup"], r["efficiency"] = sp, sp / r["workers"]
        print(f"| {r['workers']} | {r['wall_s']:.1f} | {sp:.2f} | {sp / r['workers']:.2f} | "
              f"{ideal_serial / r['workers']:.0f} | {r['suggest_mean_s']:.3f} | {r['suggest_model_mean_s']:.3f} | "
              f"{r['best']:.4f} | {r['load_start']:.2f}→{r['load_end']:.2f} |")
    finish(meta, rows, args.json)


if __name__ == "__main__":
    main()
