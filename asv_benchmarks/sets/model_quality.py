"""Issue 24 §4: held-out predictive quality of the set GP vs the ordered-vector GP on random sets.

Separates model quality from acquisition optimisation: each surrogate is fitted (MAP-II, fastfm's default
priors, 10 restarts, no y transform) on N uniformly random sets of a set problem and scored on 300 other
random sets: standardised RMSE (RMSE / std of the held-out y) and the mean negative log predictive density
(NLPD, of the noisy y, in units of the held-out std).

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/model_quality.py --seeds 5 --json out.json
"""
import argparse
import json
import time
import warnings

import numpy as np

from fastfm.benchmarks import get_problem
from fastfm.cli.runs import _vector_space
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.priors import default_hyperparameter_prior
from fastfm.kernels import Matern52, set_space_kernel

PROBLEMS = {"setcoverage": {}, "setchamfer": {}, "kmeansinit": {}, "pmedian": {}, "setperiodic": {}, "setdensity": {},
            "setperiodic-m20": {"n_points": 20}, "setdensity-m20": {"n_points": 20}}


def make_problem(name):
    return get_problem(name.split("-m")[0], **PROBLEMS[name])


def surrogate_kernels(problem, variants):
    """variant -> (kernel, prior overrides); "NAME:ls=0.15" centres the lengthscale prior on 0.15."""
    kernels = {}
    for spec in variants:
        variant, _, option = spec.partition(":")
        overrides = {"lengthscale": (np.log(float(option.split("=")[1])), 1.0)} if option else None
        if variant == "vector":
            kernel = Matern52(_vector_space(problem.set_param))
        elif variant == "set-norm":
            kernel = set_space_kernel("matern52", problem.space, normalize=True)
        elif variant == "set-learn":
            kernel = set_space_kernel("matern52", problem.space, normalize="learn")
        elif variant == "set":
            kernel = set_space_kernel("matern52", problem.space, normalize=False)
        elif variant in ("set-mmd", "set-norm+mmd"):
            kernel = set_space_kernel("matern52", problem.space, normalize=variant[len("set-"):])
        else:
            raise ValueError(f"unknown variant {variant!r}")
        kernels[spec] = (kernel, overrides)
    return kernels


def evaluate(problem, X):
    return np.array([problem(c) for c in problem.space.decode(X)])


def score(kernel, X, y, X_test, y_test, seed, overrides=None):
    gp = GaussianProcessRegressor(kernel, n_restarts=10, random_state=seed,
                                  theta_prior=default_hyperparameter_prior(kernel, overrides))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp.fit(X, y)
    mean, std = gp.predict(X_test, return_std=True)
    sd = np.sqrt(std ** 2 + gp.noise_ * gp.y_std_ ** 2) if hasattr(gp, "y_std_") else std
    scale = y_test.std()
    z = (y_test - mean) / sd
    nlpd = np.mean(0.5 * z ** 2 + np.log(sd / scale) + 0.5 * np.log(2 * np.pi))
    theta = {h.name: np.round(np.exp(gp.kernel_.theta[i]), 4).tolist()
             for i, h in enumerate(h for h in gp.kernel_.hyperparameters if not h.fixed)} \
        if len(gp.kernel_.theta) < 6 else None
    return {"rmse": float(np.sqrt(np.mean((mean - y_test) ** 2)) / scale), "nlpd": float(nlpd),
            "theta": theta}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--variants", default="set-norm,set,set-learn,set-mmd,set-norm+mmd,vector")
    parser.add_argument("--n", default="20,40,60")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for name in args.problems.split(","):
        problem = make_problem(name)
        X_test = problem.space.sample_encoded(300, seed=12345)
        y_test = evaluate(problem, X_test)
        for n in map(int, args.n.split(",")):
            for seed in range(args.seeds):
                X = problem.space.sample_encoded(n, seed=seed)
                y = evaluate(problem, X)
                for variant, (kernel, overrides) in surrogate_kernels(problem, args.variants.split(",")).items():
                    start = time.perf_counter()
                    row = {"problem": name, "n": n, "seed": seed, "variant": variant,
                           **score(kernel, X, y, X_test, y_test, seed, overrides), "fit_s": time.perf_counter() - start}
                    rows.append(row)
            for variant in args.variants.split(","):
                mine = [r for r in rows if r["problem"] == name and r["n"] == n and r["variant"] == variant]
                rmse = np.array([r["rmse"] for r in mine])
                nlpd = np.array([r["nlpd"] for r in mine])
                se = lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
                print(f"{name:16s} N={n:3d} {variant:9s} RMSE/std {rmse.mean():.3f} ± {se(rmse):.3f}  "
                      f"NLPD {nlpd.mean():+.3f} ± {se(nlpd):.3f}  theta(seed0) {mine[0]['theta']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
