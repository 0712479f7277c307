"""PCG on the large-N regression set: iterations and test RMSE per preconditioner (BENCHMARKS.md, issue 6).

Hyperparameters are fitted exactly on the first ``--subset`` training points (the regressor's own
subset strategy), then (K + noise·I) α = y is solved on all N points by PCG with the pivoted-Cholesky
preconditioner and each block size (1 = the FITC diagonal, > 1 = PITC blocks), recording the relative
residual and the test RMSE of the predictive mean K(X*, X) α at checkpoints.  Iteration counts do not
depend on the machine's load; the times do.

    python asv_benchmarks/peers/pcg_preconditioners.py --n 5000 --block-sizes 1,500,1000
"""
import argparse
import time

import numpy as np

from fastfm import GaussianProcessRegressor, gp_large
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.kernels import ModLap

CHECKPOINTS = (5, 10, 20, 30, 40, 50, 75, 100, 150, 200, 300, 400)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--subset", type=int, default=1000)
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--rank", type=int, default=300)
    parser.add_argument("--block-sizes", default="1,1000")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--max-iter", type=int, default=400)
    args = parser.parse_args()

    space, X, y, X_test, y_test = make_mixed_regression(args.n, args.n_test, seed=0)
    y_std = (y - y.mean()) / y.std()
    start = time.perf_counter()
    sub = GaussianProcessRegressor(ModLap(space), n_restarts=args.restarts, normalize_y=False,
                                   random_state=0).fit(X[:args.subset], y_std[:args.subset])
    kernel, noise = sub.kernel_, sub.noise_
    print(f"N={args.n}: hyperparameters on {args.subset} points, {args.restarts + 1} starts, "
          f"{time.perf_counter() - start:.1f} s, log ML {sub.log_marginal_likelihood_value_:.1f}, noise {noise:.3g}")

    def rmse(alpha):
        mean = gp_large.kernel_matvec(kernel, X_test, alpha, Y=X) * y.std() + y.mean()
        return float(np.sqrt(np.mean((mean - y_test) ** 2)))

    start = time.perf_counter()
    L, pivots, residual = gp_large.pivoted_cholesky(kernel, X, args.rank)
    print(f"pivoted Cholesky rank {len(pivots)}: {time.perf_counter() - start:.1f} s")
    for block_size in (int(b) for b in args.block_sizes.split(",")):
        start = time.perf_counter()
        if block_size > 1:
            pre = gp_large.PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, noise, block_size)
        else:
            pre = gp_large.PivotedCholeskyPreconditioner(L, pivots, noise, residual)
        setup = time.perf_counter() - start
        # PCG by hand (one column) to read the residual and the RMSE at the checkpoints
        b = y_std[:, None]
        x, r = np.zeros_like(b), b.copy()
        z = pre.solve(r)
        p, rz = z.copy(), float(r[:, 0] @ z[:, 0])
        start = time.perf_counter()
        for iteration in range(1, args.max_iter + 1):
            Ap = gp_large.kernel_matvec(kernel, X, p) + noise * p
            step = rz / float(p[:, 0] @ Ap[:, 0])
            x += step * p
            r -= step * Ap
            relres = float(np.linalg.norm(r) / np.linalg.norm(b))
            done = relres <= args.tol
            if iteration in CHECKPOINTS or done or iteration == args.max_iter:
                print(f"block {block_size:5d} (setup {setup:.1f} s) iteration {iteration:4d}: relative residual "
                      f"{relres:.2e}, test RMSE {rmse(x[:, 0]):.5f}, {time.perf_counter() - start:.1f} s", flush=True)
            if done:
                break
            z = pre.solve(r)
            rz_new = float(r[:, 0] @ z[:, 0])
            p = z + (rz_new / rz) * p
            rz = rz_new


if __name__ == "__main__":
    main()
