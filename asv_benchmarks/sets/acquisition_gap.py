"""Issue 24 §4: does the acquisition search over sets find the acquisition maximum?

Runs BO (default optimiser) for ``--n-evals`` evaluations on a set problem, then on the fitted model
compares the log-EI value reached on the same fitted model by: "old", the search before issue 24 §4
(10,000 random sets + 50 spray points, 40 starts, L-BFGS-B through the set kernel's input gradient);
"new", the same plus 2,000 one-point moves of the best observed sets (``--candidate`` overrides); and
searches ``--factor`` times larger (random sets, spray, starts, to convergence) without and with moves.
The gap to the best of the four is how far a search falls short of the acquisition maximum found.

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/acquisition_gap.py --problems setcoverage,setperiodic

``--random-counts 10000,2048,1000`` compares instead the default search with each number of random candidate sets
(three searches per count) on BO states reached with 2,048 of them; a problem may be NAME:m (m points per set):

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/acquisition_gap.py --problems setperiodic:20,setdensity:20 \
        --random-counts 10000,2048,1000

``--configs`` compares searches given as named ``acq_options`` (three searches each) on BO states of the default
optimizer (default kernel and search) after each of ``--n-evals`` evaluations:

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/acquisition_gap.py --problems setperiodic,pmedian \
        --n-evals 30,60 --configs '{"default": {}, "2048x20": {"n_random": 2048, "n_starts": 20}}'
"""
import argparse
import json
import time

import numpy as np

import fastfm as ff
from fastfm.acquisition import acquisition_function
from fastfm.benchmarks import get_problem
from fastfm.cli.runs import _vector_space
from fastfm.kernels import Matern52, set_space_kernel
from fastfm.optim import MixedAcquisitionOptimizer


def fitted_state(problem, method, n_evals, seed, acq_options=None):
    if method == "vector":
        space = _vector_space(problem.set_param)
        kernel = Matern52(space)
        objective = lambda c: problem.set_value(np.array([c[p.name] for p in space.parameters]).reshape(
            problem.set_param.n_points, problem.set_param.dim))
    else:
        space, kernel, objective = problem.space, set_space_kernel("matern52", problem.space), problem
    opt = ff.Optimizer(space, kernel=kernel, n_init=10, seed=seed, acq_options=acq_options)
    for _ in range(n_evals):
        config = opt.ask()
        opt.tell(config, objective(config))
    return opt


def search(opt, optimizer, seed):
    gp = opt._fit_model()
    acquisition = acquisition_function(opt.acquisition, gp.best_y_standardized_)
    values = np.array([t.value for t in opt._trials])
    incumbent = opt._X[int(np.argmin(values))]
    start = time.perf_counter()
    result = optimizer.optimize(gp, acquisition, incumbent, opt._excluded(), np.random.default_rng(seed))
    return result.value, time.perf_counter() - start


def compare_random_counts(problem, spec, seed, n_evals, counts):
    """The default search with each number of random candidate sets, three draws each, on one BO state."""
    opt = fitted_state(problem, "set", n_evals, seed, {"n_random": 2048})
    found = {n: [search(opt, MixedAcquisitionOptimizer(opt.space, n_random=n), 100 * draw + seed)
                 for draw in range(3)] for n in counts}
    best = max(value for runs in found.values() for value, _ in runs)
    print(f"{spec} seed {seed}: " + " | ".join(
        f"{n}: mean gap {best - np.mean([v for v, _ in runs]):.3f} max gap {best - min(v for v, _ in runs):.3f} "
        f"({np.mean([t for _, t in runs]):.1f}s)" for n, runs in found.items()), flush=True)


def compare_configs(problem, spec, seed, n_evals, configs, rows):
    """Searches given as named acq_options, three draws each, on the default optimizer's BO states."""
    opt = ff.Optimizer(problem.space, n_init=10, seed=seed)
    done = 0
    for target in n_evals:
        for _ in range(target - done):
            config = opt.ask()
            opt.tell(config, problem(config))
        done = target
        found = {label: [search(opt, MixedAcquisitionOptimizer(opt.space, **options), 100 * draw + seed)
                         for draw in range(3)] for label, options in configs.items()}
        best = max(value for runs in found.values() for value, _ in runs)
        row = {"problem": spec, "seed": seed, "n_evals": target}
        for label, runs in found.items():
            row[label] = {"mean_gap": best - float(np.mean([v for v, _ in runs])),
                          "max_gap": best - min(v for v, _ in runs),
                          "seconds": float(np.mean([t for _, t in runs]))}
        rows.append(row)
        print(f"{spec} seed {seed} at {target}: " + " | ".join(
            f"{label}: mean gap {r['mean_gap']:.3f} max gap {r['max_gap']:.3f} ({r['seconds']:.2f}s)"
            for label, r in ((label, row[label]) for label in configs)), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", default="setcoverage,setchamfer,setperiodic,setdensity")
    parser.add_argument("--method", default="set-norm")
    parser.add_argument("--n-evals", default="30", help="evaluations before the search (a list with --configs)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--candidate", default="{}", help="acq_options (JSON) of the search under test")
    parser.add_argument("--json")
    parser.add_argument("--random-counts", help="compare these numbers of random candidate sets instead")
    parser.add_argument("--configs", help="compare these named searches (JSON: label -> acq_options) instead")
    args = parser.parse_args()
    n_evals = [int(n) for n in args.n_evals.split(",")]
    rows = []
    for spec in args.problems.split(","):
        name, _, m = spec.partition(":")
        problem = get_problem(name, **({"n_points": int(m)} if m else {}))
        if args.configs:
            for seed in range(args.seeds):
                compare_configs(problem, spec, seed, n_evals, json.loads(args.configs), rows)
            continue
        if args.random_counts:
            for seed in range(args.seeds):
                compare_random_counts(problem, spec, seed, n_evals[0],
                                      [int(n) for n in args.random_counts.split(",")])
            continue
        for seed in range(args.seeds):
            # the BO state is reached with the search of before issue 24 §4 (no one-point moves)
            opt = fitted_state(problem, args.method, n_evals[0], seed, {"n_set_point_moves": 0})
            space = opt.space
            searches = {
                "old": MixedAcquisitionOptimizer(space, n_set_point_moves=0),
                "new": MixedAcquisitionOptimizer(space, **json.loads(args.candidate)),
                f"x{args.factor}": MixedAcquisitionOptimizer(
                    space, n_random=10_000 * args.factor, n_starts=40 * args.factor, n_spray=50 * args.factor,
                    max_rounds=1000, n_set_point_moves=0),
                f"x{args.factor}+moves": MixedAcquisitionOptimizer(
                    space, n_random=10_000 * args.factor, n_starts=40 * args.factor, n_spray=50 * args.factor,
                    max_rounds=1000, n_set_point_moves=2000 * args.factor)}
            row = {"problem": name, "seed": seed}
            for label, optimizer in searches.items():
                row[label], row["t_" + label] = search(opt, optimizer, seed)
            rows.append(row)
            best = max(row[label] for label in searches)
            print(f"{name:12s} seed {seed}: log-EI " + "  ".join(
                f"{label} {row[label]:+.3f} ({row['t_' + label]:.1f}s)" for label in searches)
                + "  gap to best: " + " ".join(f"{best - row[label]:.3f}" for label in searches), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
