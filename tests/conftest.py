"""Shared fixtures: one set of random mixed spaces serves every kernel and backend test.

The suite runs in parallel processes (pytest-xdist, ``-n auto`` in pyproject's addopts; ``pytest -n 0`` runs it
in one process).  Each worker gets its share of the cores for OpenMP and BLAS, set here before numpy and
fastfm's extension start their thread pools, so that the workers' compiled kernels do not oversubscribe the
machine.
"""
import os

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def _usable_cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if _WORKERS > 1:
    for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, str(max(1, _usable_cpus() // _WORKERS)))

import numpy as np  # noqa: E402  (after the thread settings above)
import pytest  # noqa: E402
from _spaces import SPACES  # noqa: E402


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per usable core, at most 4 (each worker imports numpy, scipy, numba and
    scikit-learn, and the suite's slowest files, the CUDA simulator's, are 4)."""
    return min(4, _usable_cpus())


@pytest.fixture(params=sorted(SPACES), ids=sorted(SPACES))
def space(request):
    return SPACES[request.param]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
