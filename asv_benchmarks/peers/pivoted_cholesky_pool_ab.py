"""Same-run A/B of the pivoted Cholesky at the regression benchmark's fitted hyperparameters: commit
0f5b257's blocked version (batches from 16, its default, and from 128) against the current one (batches
from 128, rejected candidates' rows reused).

    python asv_benchmarks/peers/pivoted_cholesky_pool_ab.py N RANK

Run from the repository root (``git show`` reads the old module).  Hyperparameters: exact ML on the first
1,000 points with 5 starts, as ``python -m fastfm.bench regression --subset 1000 --restarts 4``.
"""
import sys
import time

from pivoted_cholesky_ab import load_old_module   # this folder is on sys.path when run as a script

from fastfm import GaussianProcessRegressor
from fastfm import gp_large
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.kernels import ModLap

OLD_COMMIT = "0f5b257"


def main():
    n, rank = int(sys.argv[1]), int(sys.argv[2])
    old = load_old_module(OLD_COMMIT)
    space, X, y, _, _ = make_mixed_regression(n, 10, seed=0)
    tuned = GaussianProcessRegressor(ModLap(space), n_restarts=4, random_state=0).fit(X[:1000], y[:1000])
    for label, module, batch_min in ((f"{OLD_COMMIT}, batches from 16", old, 16),
                                     (f"{OLD_COMMIT}, batches from 128", old, 128),
                                     ("current (batches from 128, rows reused)", gp_large, 128)):
        module._PIVOT_BATCH_MIN = batch_min
        start = time.perf_counter()
        L, pivots, residual = module.pivoted_cholesky(tuned.kernel_, X, rank)
        print(f"{label}: {time.perf_counter() - start:.1f} s, rank {len(pivots)}, residual trace {residual.sum():.6g}",
              flush=True)
        del L


if __name__ == "__main__":
    main()
