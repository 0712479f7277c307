#!/usr/bin/env python
"""Racing the GP restarts: the optimum reached and the likelihood evaluations spent.

For each problem space (NAS-like of the suggestion benchmark, Func3C, Ackley5C,
Func2C), N ∈ {30, 100, 200} random observations and two data seeds, fit the
ModLap GP exactly as ``fastfm.Optimizer`` does (10 restarts drawn from the BO
hyperparameter prior, "shift" log transform of y) twice:

* ``n_finalists=None``: every start runs L-BFGS-B to convergence;
* ``n_finalists=3`` (the default): every start runs 10 iterations, the 3 best
  continue to convergence.

It prints the maximised objective log p(y|θ) + log p(θ) of each, the number of
likelihood evaluations and the wall time.

Usage::

    PYTHONPATH=. python asv_benchmarks/peers/restart_racing.py
"""
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import suggestion_time  # noqa: E402  (the NAS-like space and objective)

import fastfm.gp as ffgp  # noqa: E402
from fastfm.benchmarks import get_problem  # noqa: E402
from fastfm.bo import Optimizer  # noqa: E402

_evaluations = [0]
_original_lml = ffgp.GaussianProcessRegressor._lml


def _counted_lml(self, *args, **kwargs):
    _evaluations[0] += 1
    return _original_lml(self, *args, **kwargs)


def fit_both(space, objective, n, seed):
    X = space.sample_encoded(n, seed=seed)
    y = objective(X)
    kernel = Optimizer(space, kernel="modlap", seed=seed)._kernel
    prior_of = Optimizer(space, kernel="modlap", seed=seed).hyperparameter_prior
    rows = []
    for n_finalists in (None, 3):
        prior = prior_of(kernel)
        gp = ffgp.GaussianProcessRegressor(kernel, random_state=seed, n_restarts=10, log_transform_y="shift",
                                           theta_prior=prior, n_finalists=n_finalists)
        _evaluations[0] = 0
        start = time.perf_counter()
        gp.fit(X, y)
        seconds = time.perf_counter() - start
        rows.append((gp.log_marginal_likelihood_value_ + prior(gp._fitted_theta)[0], _evaluations[0], seconds))
    return rows


def main():
    warnings.simplefilter("ignore")
    ffgp.GaussianProcessRegressor._lml = _counted_lml
    nas, _ = suggestion_time.nas_like_space()
    problems = [("NAS-like", nas, suggestion_time.Objective(nas))]
    for name in ("func3c", "ackley5c", "func2c"):
        problem = get_problem(name)
        problems.append((problem.__class__.__name__, problem.space,
                         lambda X, p=problem: np.array([p(c) for c in p.space.decode(X)])))
    print("| space | N | seed | objective (all converge) | evals | objective (raced) | evals | difference |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, space, objective in problems:
        for n in (30, 100, 200):
            for seed in range(2):
                (full, full_evals, _), (raced, raced_evals, _) = fit_both(space, objective, n, seed)
                print(f"| {name} | {n} | {seed} | {full:.3f} | {full_evals} | {raced:.3f} | {raced_evals} | "
                      f"{full - raced:+.3f} |", flush=True)


if __name__ == "__main__":
    main()
