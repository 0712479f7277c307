"""Hyperparameters at large N with the exact solver: starts on a random subset only, against the same
starts refined on all N points (``GaussianProcessRegressor(hyperparameter_subset=m)``, the default above
4,000 points), on the mixed regression set.  Reports wall time, likelihood evaluations on all N points,
and test RMSE / NLL.

    python asv_benchmarks/peers/subset_refine.py --n 10000 --subset 2000 --restarts 4 --n-test 5000
"""
import argparse
import time

import numpy as np

import fastfm as ff
from fastfm.benchmarks.regression import make_mixed_regression, score_predictions


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--subset", type=int, default=2000)
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    space, X, y, X_test, y_test = make_mixed_regression(args.n, args.n_test, seed=args.seed)
    evaluations = {}
    lml = ff.GaussianProcessRegressor._lml

    def counted(self, terms, theta, y_, log_noise, eval_gradient):   # likelihood evaluations by number of points
        evaluations[len(y_)] = evaluations.get(len(y_), 0) + 1
        return lml(self, terms, theta, y_, log_noise, eval_gradient)
    ff.GaussianProcessRegressor._lml = counted

    def report(label, gp, seconds):
        rmse, nll = score_predictions(gp, X_test, y_test)
        print(f"| {label} | {seconds:.1f} | {evaluations.get(args.n, 0)} | {gp.log_marginal_likelihood_value_:.1f} | "
              f"{gp.noise_:.3g} | {rmse:.4f} | {nll:.3f} |", flush=True)

    print(f"N = {args.n}, hyperparameter subset {args.subset}, {args.restarts + 1} L-BFGS-B starts, "
          f"{args.n_test} test points, seed {args.seed}")
    print("| hyperparameters | wall (s) | likelihood evaluations on all N | log ML on all N | noise | test RMSE "
          "| test NLL |")
    print("|---|---|---|---|---|---|---|")
    common = dict(n_restarts=args.restarts, random_state=args.seed)
    start = time.perf_counter()
    refined = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), hyperparameter_subset=args.subset,
                                          **common).fit(X, y)
    refined_time = time.perf_counter() - start
    refined_evaluations = evaluations.get(args.n, 0)
    # the same subset and starts (same seed) without the refinement: the subset optimum, fixed, on all N
    subset = np.sort(np.random.default_rng(args.seed).choice(args.n, size=args.subset, replace=False))
    evaluations.clear()
    start = time.perf_counter()
    tuned = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), normalize_y=False, hyperparameter_subset=None,
                                        **common).fit(X[subset], refined.y_train_[subset])
    fixed = ff.GaussianProcessRegressor(tuned.kernel_, optimizer=None, noise=tuned.noise_).fit(X, y)
    report(f"starts on {args.subset} random points", fixed, time.perf_counter() - start)
    evaluations.clear()
    evaluations[args.n] = refined_evaluations
    report(f"the same, refined on all {args.n} (hyperparameter_subset={args.subset})", refined, refined_time)


if __name__ == "__main__":
    main()
