"""PCG iterations and fit time against the PITC block size, at the regression benchmark's fitted
hyperparameters (exact ML on the first 1,000 points, 5 starts).

    python asv_benchmarks/peers/pitc_block_size.py N BLOCK_SIZE [BLOCK_SIZE ...]

Each block size fits ``GaussianProcessRegressor(method="cg", cg_options={"block_size": b})`` on the first
N points (default rank and tolerance) and predicts the mean of 10,000 test points.
"""
import sys
import time

import numpy as np

from fastfm import GaussianProcessRegressor
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.kernels import ModLap


def main():
    n = int(sys.argv[1])
    space, X, y, X_test, y_test = make_mixed_regression(n, 10_000, seed=0)
    tuned = GaussianProcessRegressor(ModLap(space), n_restarts=4, random_state=0).fit(X[:1000], y[:1000])
    for block_size in (int(b) for b in sys.argv[2:]):
        start = time.perf_counter()
        gp = GaussianProcessRegressor(tuned.kernel_, optimizer=None, noise=tuned.noise_, method="cg",
                                      cg_options={"block_size": block_size}).fit(X, y)
        fit = time.perf_counter() - start
        rmse = float(np.sqrt(np.mean((gp.predict(X_test) - y_test) ** 2)))
        print(f"N = {n}, block_size {block_size}: fit {fit:.1f} s, {gp.cg_info_.n_iter} PCG iterations, "
              f"test RMSE {rmse:.4f}", flush=True)


if __name__ == "__main__":
    main()
