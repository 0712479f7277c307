"""fastfm: Bayesian optimisation and GP regression on mixed spaces with frequency modulated kernels.

Quick start::

    import fastfm as ff
    space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("c", ["a", "b", "c"])])
    kernel = ff.kernels.ModLap(space)
    K = kernel(space.encode(space.sample(5, seed=0)))
"""
import warnings as _warnings

from . import acquisition, benchmarks, kernels, optim
from .bo import Optimizer, OptimizeResult, Trial, minimize
from .gp import GaussianLogPrior, GaussianProcessRegressor, JitterWarning
from ._backends import available_backends, backend_status
from ._config import config_context, get_config, set_config
from ._version import __version__
from .exceptions import (FastFMError, FitError, InactiveParameterError, InvalidConfigError, InvalidValueError,
                         MissingParameterError, NotPositiveDefiniteError, NumericalError, ObjectiveNotPicklableError,
                         OutOfBoundsError, SpaceDefinitionError, StorageError, TrialStateError, UnknownParameterError)
from .space import Categorical, Graph, Integer, Ordinal, Real, Set, Space

__all__ = [
    "__version__", "Space", "Optimizer", "minimize", "OptimizeResult", "Trial", "GaussianProcessRegressor",
    "GaussianLogPrior", "JitterWarning", "benchmarks", "acquisition", "optim", "Real", "Integer", "Ordinal", "Categorical", "Graph", "Set", "kernels",
    "set_config", "get_config", "config_context", "show_config", "available_backends",
    "FastFMError", "SpaceDefinitionError", "InvalidConfigError", "UnknownParameterError",
    "MissingParameterError", "InactiveParameterError", "OutOfBoundsError", "InvalidValueError", "FitError", "NotPositiveDefiniteError",
    "NumericalError", "TrialStateError", "StorageError", "ObjectiveNotPicklableError",
]

if "cpp" not in available_backends():
    _warnings.warn(
        "fastfm: the compiled extension is not available ("
        + backend_status()["cpp"]
        + "); using the NumPy reference backend, which is much slower. "
        "Reinstall with a C++17 compiler (pip install --force-reinstall --no-binary fastfm fastfm) to fix.",
        RuntimeWarning, stacklevel=2)


def show_config(file=None):
    """Print the version, the backends available on this machine, OpenMP and threads, and the CUDA device."""
    import platform
    import sys

    import numpy
    import scipy

    lines = [f"fastfm {__version__}", f"python {platform.python_version()} ({sys.platform})",
             f"numpy {numpy.__version__}, scipy {scipy.__version__}"]
    config = get_config()
    lines.append(f"backend setting: {config['backend']} (resolves to {_resolved_backend()})")
    for name, status in backend_status().items():
        lines.append(f"  {name:6s}: {status}")
    if "cpp" in available_backends():
        from ._backends import cpp
        info = cpp.build_info()
        lines.append(f"OpenMP: {'on' if info['openmp'] else 'off'}, threads: {info['max_threads']}"
                     f" (num_threads setting: {config['num_threads'] or 'all'})")
        lines.append(f"compiler: {info.get('compiler', '?')}, SIMD dispatch: {info.get('simd', '?')}")
    else:
        lines.append("OpenMP: n/a (compiled extension missing)")
    if "cuda" in available_backends():
        from ._backends import CUDA_MIN_TERMS, cuda
        lines.append(f"CUDA: {cuda.describe()}")
        lines.append(f"  'auto' uses it from {CUDA_MIN_TERMS:,} pair x eigenvalue-group terms per call"
                     + (" (never under the simulator)" if cuda.simulator_requested() else ""))
    print("\n".join(lines), file=file)


def _resolved_backend():
    from ._backends import resolve_backend_name
    try:
        return resolve_backend_name("auto")
    except Exception as exc:  # pragma: no cover
        return f"error: {exc}"
