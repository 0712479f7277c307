"""Optimizer ask/tell runs with Optimizer options given as JSON, one row per (problem, seed) with every value
(issue 24 §2; docs/benchmarks/bo-efficiency.md, "AdditiveFM on the large problems at 200 evaluations").

Each run is ``fastfm.Optimizer(problem.space, seed=seed, **options)`` asked and told ``--budget`` times on
``fastfm.benchmarks.get_problem(name)`` by the head-to-head's own loop (``head_to_head.run_fastfm``), in this process,
one thread, so that ``--options '{}'`` gives the head-to-head's fastfm rows value for value and a row of another
option pairs with them seed by seed.
``--method tpe`` or ``gpsampler`` runs Optuna's sampler instead, as ``head_to_head.py`` does (its settings, its view of
the space), for problems the head-to-head does not run: the probe ``ackley53``.

    PYTHONPATH=. python asv_benchmarks/peers/large_kernel_runs.py --problems isingsparsification,labs \
        --seeds 0:10 --budget 200 --label additive --options '{"kernel": "modlap_additive"}' --out out.jsonl
"""
import argparse
import json

import numpy as np

import fastfm
from fastfm.benchmarks import get_problem
from head_to_head import Recorder, git_state, run_fastfm, run_optuna   # this script's folder is on the path

REPORTED_BUDGETS = (30, 60, 100, 150, 200)


class Ackley53:
    """Ackley-53 of CASMOPOLITAN (Wan et al. 2021, "Think global and act local", §5): 50 binary variables (``b0``..
    ``b49``, Categorical 0/1) and 3 continuous ones (``x0``..``x2`` in [-1, 1]); the Ackley function of the 53
    coordinates, optimum 0 at the origin.  A probe of large mixed spaces next to Mixed10C20N (docs/benchmarks/
    bo-efficiency.md), not in ``fastfm.benchmarks``: the head-to-head has no peer runs on it."""

    n_binary, n_continuous = 50, 3

    def __init__(self):
        self.space = fastfm.Space([fastfm.Categorical(f"b{i}", [0, 1]) for i in range(self.n_binary)]
                                  + [fastfm.Real(f"x{i}", -1.0, 1.0) for i in range(self.n_continuous)])

    def __call__(self, config):
        z = np.array([config[f"b{i}"] for i in range(self.n_binary)]
                     + [config[f"x{i}"] for i in range(self.n_continuous)], dtype=float)
        return float(-20.0 * np.exp(-0.2 * np.sqrt(np.mean(z ** 2))) - np.exp(np.mean(np.cos(2.0 * np.pi * z)))
                     + 20.0 + np.e)


PROBES = {"ackley53": Ackley53}


def run(name, seed, budget, options, method="fastfm"):
    """(values, seconds of each ask) of one run: fastfm's Optimizer with ``options``, or Optuna's sampler ``method``
    ("tpe", "gpsampler") as the head-to-head runs it (its loop, its settings and its view of the space)."""
    problem = PROBES[name]() if name in PROBES else get_problem(name)
    rec = Recorder(problem, budget, progress_path=None)
    if method == "fastfm":
        run_fastfm(problem, budget, seed, rec, options=options)
    else:
        if method == "gpsampler":              # one thread, as fastfm's runs (GPSampler computes with torch)
            import torch
            from threadpoolctl import threadpool_limits
            torch.set_num_threads(1)
            threadpool_limits(1)
        run_optuna(problem, budget, seed, rec, method)
    return rec.values, rec.suggest_s


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", required=True,
                        help="comma-separated fastfm.benchmarks names, or the probe problem 'ackley53'")
    parser.add_argument("--seeds", default="0:10", help="START:STOP")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--label", required=True, help="the variant's name in the rows")
    parser.add_argument("--options", default="{}", help="Optimizer keyword arguments as a JSON object")
    parser.add_argument("--method", default="fastfm", choices=("fastfm", "tpe", "gpsampler"),
                        help="fastfm's Optimizer (default), or Optuna's TPESampler / GPSampler as head_to_head.py "
                             "runs them")
    parser.add_argument("--out", required=True, help="JSON lines file, appended to")
    args = parser.parse_args()
    options = json.loads(args.options)
    if not isinstance(options, dict):
        parser.error(f"--options must be a JSON object, got {args.options!r}")
    start, stop = map(int, args.seeds.split(":"))
    commit = git_state()["commit"]
    fastfm.set_config(num_threads=1)
    for name in args.problems.split(","):
        for seed in range(start, stop):
            values, ask_seconds = run(name, seed, args.budget, options, args.method)
            best = np.minimum.accumulate(values)
            row = {"problem": name, "label": args.label, "method": args.method, "options": options, "seed": seed,
                   "budget": args.budget,
                   "best": {str(k): float(best[k - 1]) for k in REPORTED_BUDGETS if k <= args.budget},
                   "values": values, "median_ask_seconds": float(np.median(ask_seconds[10:] or ask_seconds)),
                   "fastfm_commit": commit}
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps({k: row[k] for k in ("problem", "label", "seed", "best", "median_ask_seconds")}),
                  flush=True)


if __name__ == "__main__":
    main()
