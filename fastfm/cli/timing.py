"""What every ``fastfm time`` command shares: the clocks, the timing loop, the machine description, and
the backend arguments built from the suite's seeded inputs (``fastfm.benchmarks.workloads``)."""
import os
import platform
import statistics
import time

import numpy as np

from .._backends import available_backends, cpp
from .._backends.modulation import Modulation
from ..benchmarks import workloads
from ..kernels import Hierarchical

__all__ = ["CLOCKS", "STATISTICS", "time_call", "describe_machine", "kernel_arguments", "hierarchical_arguments"]

CLOCKS = {
    # elapsed time: what a user waits for
    "wall": time.perf_counter,
    # CPU time of the whole process (all threads): with --threads 1 it is the
    # single-core cost, unaffected by other programs competing for the cores
    "cpu": time.process_time,
}


STATISTICS = {
    "median": statistics.median,
    # best of the repeats (as timeit recommends): the run least disturbed by
    # other programs, an estimate of the time on an idle machine
    "min": min,
}

# The NumPy reference is slow at large N; it gets fewer repeats than the compiled backend.
MAX_NUMPY_REPEAT = 3


def time_call(function, repeat, warmup=1, clock="wall", statistic="median"):
    """``statistic`` (median or min) of the times in seconds of ``repeat`` runs of ``function()``
    (after ``warmup`` runs) on ``clock``."""
    now = CLOCKS[clock]
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        start = now()
        function()
        times.append(now() - start)
    return STATISTICS[statistic](times)


def describe_machine():
    """Python, NumPy, the CPUs, the load average and the compiled extension's build: the lines every
    timing command prints first, so that a figure can be read with the machine it ran on."""
    lines = [f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
             f"{platform.machine()} {platform.processor() or ''}".rstrip()]
    if hasattr(os, "getloadavg"):
        lines.append("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if "cpp" in available_backends():
        info = cpp.build_info()
        lines.append(f"fastfm._cpp: OpenMP {'on' if info['openmp'] else 'off'} ({info['max_threads']} threads), "
                     f"{info['compiler']}, SIMD {info['simd']}")
    return "\n".join(lines)


def kernel_arguments(space, n_points, seed=0, modulation=None):
    """``workloads.kernel_inputs`` with the modulation appended: ``C, D, W, args`` where ``args`` are the
    trailing arguments of every FM backend function (ModLap's ``Modulation()`` unless one is given)."""
    C, D, W, hyperparameters = workloads.kernel_inputs(space, n_points, seed=seed)
    return C, D, W, (*hyperparameters, Modulation() if modulation is None else modulation)


def hierarchical_arguments(n, seed=0, base="matern52"):
    """Backend inputs of the Hierarchical-kernel timings: ``V, M, W, args`` (embedding values and activity
    mask of ``workloads.hierarchical_inputs``' points, the weights, and the arguments after
    ``(V, M[, V2, M2 | W])`` of ``Hierarchical(space, base=base, **HIERARCHICAL_PARAMS)``)."""
    space, X, W = workloads.hierarchical_inputs(n, seed=seed)
    kernel = Hierarchical(space, base=base, **workloads.HIERARCHICAL_PARAMS)
    V, M = kernel._inputs(X)
    return V, M, W, kernel._args()
