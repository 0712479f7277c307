"""AdditiveFM's first fit on a large mixed space from fewer starts (issue 24 §3; docs/benchmarks/suggestion.md,
"AdditiveFM's full fit on large spaces from fewer starts").

On ``n`` random observations of the NAS-like space (``suggestion_time.py``'s objective) or of a benchmark problem,
fits ModLap as kernel="auto"'s full fit does (n_restarts 10, the best 3 continuing after the screen), then AdditiveFM
from the arms below, each with the optimizer's prior and the same restart seed, and prints one JSON line per arm:
CPU seconds of the fit (one thread), its log marginal likelihood, and its leave-one-out log predictive density minus
ModLap's (what kernel="auto" chooses by) with the paired standard error.

* ``r10_f3``: 10 random restarts besides the kernel's θ, 3 finalists (the full fit before 2026-12-06);
* ``r3_f2``, ``r1_f1``: 3 or 1 restarts, 2 or 1 finalists;
* ``modlap_r3_f2``: as r3_f2, with the product part's start at ModLap's optimum (its noise too) instead of the
  kernel's default θ.

    PYTHONPATH=.:asv_benchmarks/peers python asv_benchmarks/peers/additive_starts_probe.py nas 200 0,1,2
    PYTHONPATH=.:asv_benchmarks/peers python asv_benchmarks/peers/additive_starts_probe.py mixed10c20n 120 0,1,2
"""
import json
import sys
import time
import warnings

import numpy as np

import fastfm
import fastfm.bo.surrogate as surrogate
from fastfm.benchmarks import get_problem
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.selection import loo_difference

ARMS = {"r10_f3": (10, 3, False), "r3_f2": (3, 2, False), "r1_f1": (1, 1, False), "modlap_r3_f2": (3, 2, True)}


def observations(problem, n, seed):
    """(space, X, y): n uniform random points of the NAS-like space or of ``fastfm.benchmarks`` problem."""
    if problem == "nas":
        import suggestion_time
        space, _ = suggestion_time.nas_like_space()
        X, y = suggestion_time.draw_observations(space, suggestion_time.Objective(space), n, seed)
        return space, X, y
    benchmark = get_problem(problem)
    X = benchmark.space.sample_encoded(n, seed=seed)
    return benchmark.space, X, np.array([benchmark(config) for config in benchmark.space.decode(X)])


def fit(optimizer, name, X, y, n_restarts, n_finalists, start=None):
    """(GP, CPU seconds): candidate kernel ``name`` of ``optimizer`` fitted as its full fit is, from ``start`` (a
    fitted GP whose hyperparameter values seed the kernel's θ and noise) when given."""
    kernel = optimizer._candidate_kernel(name, None)
    options = {"n_restarts": n_restarts, "n_finalists": n_finalists, "noise_restarts": 0, "log_transform_y": "auto",
               "theta_prior": optimizer.hyperparameter_prior(kernel)}
    if start is not None:
        kernel = surrogate._with_kernel_values(kernel, surrogate._kernel_values(start.kernel_))
        options["noise"] = start.noise_
    gp = GaussianProcessRegressor(kernel, random_state=1234, **options)
    cpu = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp.fit(X, y)
    return gp, time.process_time() - cpu


def main(argv):
    problem, n, seeds = argv[0], int(argv[1]), [int(s) for s in argv[2].split(",")]
    fastfm.set_config(num_threads=1)
    for seed in seeds:
        space, X, y = observations(problem, n, seed)
        optimizer = fastfm.Optimizer(space, seed=seed)
        modlap, modlap_cpu = fit(optimizer, "modlap", X, y, 10, surrogate.FULL_FINALISTS)
        for arm, (n_restarts, n_finalists, seeded) in ARMS.items():
            gp, cpu = fit(optimizer, "modlap_additive", X, y, n_restarts, n_finalists, modlap if seeded else None)
            ahead, standard_error = loo_difference(gp, modlap)
            print(json.dumps({"problem": problem, "n": n, "seed": seed, "arm": arm, "cpu_s": round(cpu, 3),
                              "modlap_cpu_s": round(modlap_cpu, 3),
                              "lml": round(float(gp.log_marginal_likelihood_value_), 2),
                              "loo_ahead_of_modlap": round(float(ahead), 2),
                              "standard_error": round(float(standard_error), 2)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or "--help" in sys.argv or "-h" in sys.argv:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
