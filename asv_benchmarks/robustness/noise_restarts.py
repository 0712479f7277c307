"""Log marginal likelihood and held-out accuracy of GP fits with 0, 1 and 2 noise restarts
(``GaussianProcessRegressor(noise_restarts=k)``) on eight regression data sets, for ModLap and AdditiveFM
(docs/benchmarks/large-n.md, "A restart of the noise").

The data sets: the mixed regression set (``make_mixed_regression``) with seeds 0-3 and noise std 0.1, 0.1, 0.01 and
0.3, and random configurations of Func3C, Ackley5C, Contamination and Mixed10C20N with Gaussian noise of 2, 10, 1 and
5 % of their values' std.  One JSON line per (data set, kernel) on stdout.

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/robustness/noise_restarts.py 300 modlap,modlap_additive 0,1,2
"""
import json
import sys
import time
import warnings

import numpy as np

from fastfm.benchmarks import get_problem
from fastfm.benchmarks.regression import make_mixed_regression, score_predictions
from fastfm.gp import GaussianProcessRegressor
from fastfm.kernels import make_kernel


def datasets(n, n_test):
    for seed, noise_std in [(0, 0.1), (1, 0.1), (2, 0.01), (3, 0.3)]:
        space, X, y, X_test, y_test = make_mixed_regression(n, n_test, seed=seed, noise_std=noise_std)
        yield f"mixedreg s{seed} noise{noise_std}", space, X, y, X_test, y_test
    for name, relative_noise in [("Func3C", 0.02), ("Ackley5C", 0.1), ("Contamination", 0.01), ("Mixed10C20N", 0.05)]:
        problem = get_problem(name)
        configs = problem.space.sample(n + n_test, seed=11)
        f = np.array([problem(c) for c in configs], dtype=float)
        f += relative_noise * np.std(f) * np.random.default_rng(7).standard_normal(len(f))
        X = problem.space.encode(configs)
        yield f"{name} noise{relative_noise}", problem.space, X[:n], f[:n], X[n:], f[n:]


def main(argv):
    n, kernels, counts = int(argv[0]), argv[1].split(","), [int(c) for c in argv[2].split(",")]
    warnings.simplefilter("ignore")
    for label, space, X, y, X_test, y_test in datasets(n, 2000):
        for name in kernels:
            row = {"data": label, "kernel": name, "n": n}
            for count in counts:
                start = time.perf_counter()
                gp = GaussianProcessRegressor(make_kernel(name, space), n_restarts=2, random_state=0,
                                              hyperparameter_subset=None, noise_restarts=count).fit(X, y)
                row[count] = {"seconds": round(time.perf_counter() - start, 2), "noise": float(f"{gp.noise_:.3g}"),
                              "lml": round(gp.log_marginal_likelihood_value_, 3),
                              "rmse_nll": [round(v, 4) for v in score_predictions(gp, X_test, y_test)]}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
