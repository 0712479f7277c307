"""Memory and time of the exact GP's large-N linear algebra: fastfm against the out-of-place reference.

    python asv_benchmarks/peers/likelihood_memory.py --n 6000,10000 --repeats 2

Two measurements per N on the mixed regression set (ModLap at its default θ, noise 1e-2):

* one likelihood evaluation with its gradient, ``GaussianProcessRegressor._lml``, which factorises the Gram
  in place and forms W = ½(ααᵀ − K⁻¹) in the same buffer, against the textbook out-of-place sequence it
  replaced (scipy ``cholesky`` copy, ``dpotri``, K⁻¹ = inv + invᵀ, W = ααᵀ − K⁻¹): fastfm's code before
  commit 8d1bb26, kept here as the reference.  Both get the same Gram and reduction.
* the predictive mean and std of ``--n-test`` points, in blocks of ``gp._CROSS_BLOCK_BYTES`` (fastfm)
  against one M × N block (the code before this change).

Time: the best of ``--repeats`` calls, wall clock.  Memory: the peak of NumPy's allocations during one
call (tracemalloc; the C++ backend's result arrays are NumPy arrays), in N × N float64 arrays.  Both
variants run in this process, alternately, so the ratios compare like with like on this machine.
"""
import argparse
import math
import time
import tracemalloc

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.linalg.lapack import dpotri

import fastfm as ff
from fastfm import gp as gp_module
from fastfm.benchmarks.regression import make_mixed_regression


def out_of_place_lml(terms, theta, y, noise):
    """(log p, gradient) as fastfm computed them before the in-place buffer: three N × N arrays at once."""
    K = terms.gram(theta)
    K.flat[::K.shape[0] + 1] += noise
    L = cholesky(K, lower=True, check_finite=False)
    del K
    alpha = solve_triangular(L, y, lower=True, check_finite=False)
    quad = float(alpha @ alpha)
    alpha = solve_triangular(L, alpha, lower=True, trans="T", check_finite=False)
    lml = -0.5 * quad - float(np.sum(np.log(np.diag(L)))) - 0.5 * len(y) * math.log(2 * math.pi)
    inv, _ = dpotri(L, lower=1)
    K_inv = inv + inv.T
    del inv
    K_inv.flat[::K_inv.shape[0] + 1] *= 0.5
    W = np.multiply.outer(alpha, alpha)
    W -= K_inv
    W *= 0.5
    return lml, np.append(terms.reduction(W), noise * float(np.trace(W)))


def measure(call, repeats):
    """(best wall seconds, peak traced bytes of one more call, its result)."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return best, peak, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="6000,10000")
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    print("| N | what | reference s | fastfm s | time ratio | reference peak (N² arrays) | fastfm peak | "
          "same result |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(value) for value in args.n.split(",")):
        space, X, y, X_test, _ = make_mixed_regression(n, args.n_test, seed=0)
        y = (y - y.mean()) / y.std()
        kernel = ff.kernels.ModLap(space)
        gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=1e-2)
        terms = kernel._likelihood_terms(X)
        theta, noise = kernel.theta, 1e-2
        array = 8.0 * n * n
        ref = measure(lambda: out_of_place_lml(terms, theta, y, noise), args.repeats)
        new = measure(lambda: gp._lml(terms, theta, y, math.log(noise), True), args.repeats)
        same = abs(ref[2][0] - new[2][0]) <= 1e-9 * abs(ref[2][0]) and np.allclose(ref[2][1], new[2][1],
                                                                                   rtol=1e-8, atol=1e-8)
        print(f"| {n:,} | log ML + gradient | {ref[0]:.2f} | {new[0]:.2f} | {ref[0] / new[0]:.2f} | "
              f"{ref[1] / array:.2f} | {new[1] / array:.2f} | {same} |", flush=True)

        fitted = gp.fit(X, y)

        def predict():
            fitted.__dict__.pop("_L_inverse", None)   # each call pays for L⁻¹ where it uses it (M ≥ N)
            return fitted.predict(X_test, return_std=True)

        blocked = measure(predict, 1)
        saved = gp_module._CROSS_BLOCK_BYTES
        gp_module._CROSS_BLOCK_BYTES = 1 << 62           # one block: the code before blocking
        try:
            whole = measure(predict, 1)
        finally:
            gp_module._CROSS_BLOCK_BYTES = saved
        same = np.allclose(whole[2][1], blocked[2][1], rtol=1e-9, atol=1e-12)
        print(f"| {n:,} | mean + std of {args.n_test:,} points | {whole[0]:.2f} | {blocked[0]:.2f} | "
              f"{whole[0] / blocked[0]:.2f} | {whole[1] / array:.2f} | {blocked[1] / array:.2f} | {same} |",
              flush=True)


if __name__ == "__main__":
    main()
