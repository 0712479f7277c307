"""Time the large-N preconditioner of the current checkout: pivoted Cholesky, PITC blocks + Woodbury factor, one solve.

    python asv_benchmarks/peers/preconditioner_setup.py N RANK [--block-size B] [--save PATH]

The mixed regression set's first N points, ModLap at lengthscale 0.6, α = β = 0.5, noise 1e-4,
PITC blocks of B points (default 1,000).  For an A/B, run it at both commits on an idle machine (``--save``
writes the solve of a fixed right-hand side, so the two versions' results can be compared).  The peak
memory is the process's largest resident set (ru_maxrss) after each step, less the one before it.
"""
import argparse
import resource
import time

import numpy as np

import fastfm as ff
from fastfm import gp_large
from fastfm.benchmarks.regression import make_mixed_regression


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("rank", type=int)
    parser.add_argument("--block-size", type=int, default=1000)
    parser.add_argument("--save", help="write P⁻¹ r for a seeded r here (.npy)")
    args = parser.parse_args()
    space, X, _, _, _ = make_mixed_regression(args.n, 10, seed=0)
    kernel = ff.kernels.ModLap(space, lengthscale=0.6, alpha=0.5, beta=0.5)
    start = time.perf_counter()
    L, pivots, _ = gp_large.pivoted_cholesky(kernel, X, args.rank)
    factor_time = time.perf_counter() - start
    peak_before = _peak_rss_gb()
    start = time.perf_counter()
    preconditioner = gp_large.PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, 1e-4, args.block_size)
    setup_time = time.perf_counter() - start
    setup_peak = _peak_rss_gb() - peak_before
    R = np.random.default_rng(0).standard_normal((args.n, 1))
    start = time.perf_counter()
    for _ in range(5):
        Z = preconditioner.solve(R)
    solve_time = (time.perf_counter() - start) / 5
    print(f"N={args.n} rank {len(pivots)}, blocks of {args.block_size}: pivoted Cholesky {factor_time:.1f} s, "
          f"PITC + Woodbury {setup_time:.1f} s (peak resident memory +{setup_peak:.2f} GB), "
          f"one solve {1e3 * solve_time:.0f} ms")
    if args.save:
        np.save(args.save, Z)


def _peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6   # kB on Linux


if __name__ == "__main__":
    main()
