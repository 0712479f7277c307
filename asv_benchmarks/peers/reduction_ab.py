"""CPU time of one FM Gram or one gradient reduction, as the GP fit calls them (A/B of two builds).

    PYTHONPATH=<tree with a built fastfm> python asv_benchmarks/peers/reduction_ab.py SPACE N REPEATS {red,gram}

SPACE is one of ``fastfm.bench.benchmark_spaces()`` (Func3C, Ackley5C, NAS-like) or ``regression`` (the
mixed regression set of ``python -m fastfm.bench regression``: 5 continuous, 5 nominal, 5 ordinal); the kernel is ModLap
at lengthscale 0.5 on one thread; W is a seeded symmetric matrix.  The reduction is
``ModLap._likelihood_terms(X).reduction(W)`` (``symmetric_weights=True`` on builds that have it).  Run
the two builds alternately in the same minutes: the figure is the mean process CPU time per call.
"""
import sys
import time

import numpy as np

import fastfm as ff
from fastfm import bench


def main(argv):
    space_name, n, repeats = argv[0], int(argv[1]), int(argv[2])
    mode = argv[3] if len(argv) > 3 else "red"
    if space_name == "regression":
        from fastfm.benchmarks.regression import make_mixed_regression
        space, X, _, _, _ = make_mixed_regression(n, 1, seed=0)
    else:
        space = bench.benchmark_spaces()[space_name]
        space = getattr(space, "space", space)
        X = space.sample_encoded(n, seed=0)
    kernel = ff.kernels.ModLap(space, lengthscale=0.5)
    ff.set_config(num_threads=1)
    W = np.random.default_rng(0).normal(size=(n, n))
    W = W + W.T
    terms = kernel._likelihood_terms(X)
    theta = kernel.theta
    terms.gram(theta)
    start = time.process_time()
    for _ in range(repeats):
        terms.reduction(W) if mode == "red" else terms.gram(theta)
    print(mode, (time.process_time() - start) / repeats * 1e3, "ms")


if __name__ == "__main__":
    main(sys.argv[1:])
