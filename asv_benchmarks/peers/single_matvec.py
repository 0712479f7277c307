"""Single- against double-precision kernel values in the matrix-free K·v (PCG's product), same run.

On the mixed regression set (5 continuous, 5 nominal, 5 ordinal inputs) at the hyperparameters the
regression benchmark fits (exact ML on the first 1,000 points, 5 L-BFGS-B starts), for each N: the
best of three symmetric K·v in double (``kernel_matvec``) and with single-precision kernel values
(``gp_large._single_precision_product``), the relative difference of the two products, and the one
number PCG cares about: the residual ‖(K₃₂ − K₆₄) α‖ / ‖y‖ that the single-precision values add at the
exact α = (K + σ²I)⁻¹ y (computed by a double PCG to 1e-8, up to N = 10,000; "—" above).

    python asv_benchmarks/peers/single_matvec.py [N ...]      (default 5000 20000)
"""
import sys
import time

import numpy as np

import fastfm
from fastfm import GaussianProcessRegressor, gp_large
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.kernels import ModLap

# sizes up to which the exact α for the residual column is computed (a PCG solve to 1e-8)
RESIDUAL_MAX_N = 10_000


def best_of(function, rounds=3):
    times, value = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return min(times), value


def main(argv):
    sizes = [int(n) for n in argv[1:]] or [5000, 20_000]
    from fastfm import _cpp
    print(f"fastfm._cpp SIMD: {_cpp.build_info()['simd']}", flush=True)
    space, X_all, y_all, _, _ = make_mixed_regression(max(sizes), 10, seed=0)
    start = time.perf_counter()
    tuned = GaussianProcessRegressor(ModLap(space), n_restarts=4, random_state=0).fit(X_all[:1000], y_all[:1000])
    kernel, noise = tuned.kernel_, tuned.noise_
    print(f"hyperparameters: exact ML on 1000 points, {time.perf_counter() - start:.1f} s; noise {noise:.3g}",
          flush=True)
    print("| N | K·v double (s) | K·v single-precision values (s) | speed-up | ‖Δ(K·v)‖/‖K·v‖ | "
          "‖(K₃₂ − K₆₄) α‖/‖y‖ |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        X, y = X_all[:n], (y_all[:n] - y_all[:n].mean()) / y_all[:n].std()
        v = np.random.default_rng(0).standard_normal((n, 1))
        single = gp_large._single_precision_product(kernel, X)
        if single is None:
            print(f"| {n} | no single-precision product for this kernel/backend |")
            continue
        double_time, double_value = best_of(lambda: gp_large.kernel_matvec(kernel, X, v))
        single_time, single_value = best_of(lambda: single(v))
        difference = np.linalg.norm(single_value - double_value) / np.linalg.norm(double_value)
        added = "—"
        if n <= RESIDUAL_MAX_N:
            options = gp_large.check_cg_options({"tol": 1e-8, "precision": "double"})
            alpha = gp_large.solve_system(kernel, X, noise, y[:, None], options)[0]
            difference_at_alpha = single(alpha) - gp_large.kernel_matvec(kernel, X, alpha)
            added = f"{np.linalg.norm(difference_at_alpha) / np.linalg.norm(y):.2g}"
        print(f"| {n} | {double_time:.3f} | {single_time:.3f} | {double_time / single_time:.2f} | "
              f"{difference:.2g} | {added} |", flush=True)
    print(f"fastfm {fastfm.__file__}")


if __name__ == "__main__":
    main(sys.argv)
