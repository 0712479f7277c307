"""Test error along the refinement on all N points (why ``gp._REFINE_OPTIONS`` caps it at 25 iterations).

Fits ``GaussianProcessRegressor(hyperparameter_subset=m)`` with the refinement uncapped (the plain
L-BFGS-B options), records [θ, noise] at every likelihood evaluation on all N points, stops after
``--max-evaluations`` of them, then refits at the chosen evaluations with fixed hyperparameters and prints
log ML, test RMSE and NLL at each.

    python asv_benchmarks/peers/refine_trajectory.py --n 10000 --subset 2000 --max-evaluations 37 --at 1,12,16,20,25,30
"""
import argparse
import time

import numpy as np

import fastfm as ff
from fastfm import gp as gp_module
from fastfm.benchmarks.regression import make_mixed_regression, score_predictions


class _Enough(Exception):
    pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--subset", type=int, default=2000)
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--max-evaluations", type=int, default=37)
    parser.add_argument("--at", default="1,12,16,20,25,30")
    parser.add_argument("--n-test", type=int, default=5000)
    args = parser.parse_args(argv)
    space, X, y, X_test, y_test = make_mixed_regression(args.n, args.n_test, seed=0)

    trajectory, start = [], time.perf_counter()
    lml = gp_module.GaussianProcessRegressor._lml

    def recorded(self, terms, theta, y_, log_noise, eval_gradient):
        value = lml(self, terms, theta, y_, log_noise, eval_gradient)
        if len(y_) == args.n:
            trajectory.append((time.perf_counter() - start, float(value[0]), np.array(theta), float(log_noise)))
            if len(trajectory) >= args.max_evaluations:
                raise _Enough
        return value

    gp_module.GaussianProcessRegressor._lml = recorded
    gp_module._REFINE_OPTIONS = gp_module._LBFGSB_OPTIONS   # uncapped
    try:
        ff.GaussianProcessRegressor(ff.kernels.ModLap(space), n_restarts=args.restarts, random_state=0,
                                    hyperparameter_subset=args.subset).fit(X, y)
    except _Enough:
        pass
    gp_module.GaussianProcessRegressor._lml = lml
    print(f"N = {args.n}, starts on {args.subset} points, {len(trajectory)} evaluations on all N recorded")
    print("| evaluation | wall (s) | log ML on all N | test RMSE | test NLL |")
    print("|---|---|---|---|---|")
    for k in (int(a) for a in args.at.split(",")):
        if k > len(trajectory):
            continue
        seconds, value, theta, log_noise = trajectory[k - 1]
        model = ff.GaussianProcessRegressor(ff.kernels.ModLap(space).clone_with_theta(theta), optimizer=None,
                                            noise=float(np.exp(log_noise))).fit(X, y)
        rmse, nll = score_predictions(model, X_test, y_test)
        print(f"| {k} | {seconds:.0f} | {value:.1f} | {rmse:.4f} | {nll:.3f} |", flush=True)


if __name__ == "__main__":
    main()
