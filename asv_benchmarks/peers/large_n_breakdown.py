"""Where a large-N matrix-free fit spends its time, piece by piece, at the regression benchmark's
fitted hyperparameters (exact ML on the first 1,000 points, 5 starts).

    python asv_benchmarks/peers/large_n_breakdown.py [N]      (default 50,000)

Pieces: pivoted Cholesky of the default rank, PITC blocks of the default size, the preconditioner
constructor (per block: the residual matrix, its Cholesky, Z_b = C_b⁻¹L_bᵀ and I + ΣZ_bᵀZ_b), a preconditioner
solve, a K·v product in double and one with single-precision kernel values (PCG's under
``cg_options["precision"] = "auto"``; twice each), and the k × k DTC factor of the predictive std.
"""
import sys
import time

import numpy as np

from fastfm import GaussianProcessRegressor
from fastfm import gp_large
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.kernels import ModLap


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    space, X, y, _, _ = make_mixed_regression(n, 10_000, seed=0)
    start = time.perf_counter()
    tuned = GaussianProcessRegressor(ModLap(space), n_restarts=4, random_state=0).fit(X[:1000], y[:1000])
    print(f"hyperparameters: {time.perf_counter() - start:.1f} s, noise {tuned.noise_:.3g}", flush=True)
    kernel, noise = tuned.kernel_, tuned.noise_
    rank = gp_large.default_rank(n)
    block_size = gp_large.default_block_size(n)

    def timed(label, function):
        begin = time.perf_counter()
        value = function()
        print(f"{label}: {time.perf_counter() - begin:.2f} s", flush=True)
        return value

    L, pivots, _ = timed(f"pivoted Cholesky, rank {rank}", lambda: gp_large.pivoted_cholesky(kernel, X, rank))
    blocks = timed(f"pivot_blocks, {block_size} points", lambda: gp_large.pivot_blocks(L, pivots, block_size, kernel, X))
    pre = timed("preconditioner constructor (block residuals, Choleskys, Woodbury)",
                lambda: gp_large.PivotedCholeskyPreconditioner(L, pivots, noise, blocks=blocks, kernel=kernel, X=X))
    v = np.random.default_rng(0).standard_normal((n, 1))
    single = gp_large._single_precision_product(kernel, X)
    for _ in range(2):
        timed("preconditioner solve", lambda: pre.solve(v))
        timed("K·v", lambda: gp_large.kernel_matvec(kernel, X, v))
        if single is not None:
            timed("K·v, single-precision kernel values", lambda: single(v))
    timed("DTC factor (predictive std)", lambda: pre.dtc_factor(noise))


if __name__ == "__main__":
    main()
