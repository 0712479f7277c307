"""Compute backends and the registry that picks one.

Each backend is a module exposing the same private functions as
``numpy_backend`` (the reference).  A backend may lack a function; the
reference then takes over, with one warning per function.
"""
import importlib
import warnings

from .._config import get_config
from ..exceptions import BackendUnavailableError

__all__ = ["get_backend", "resolve_backend_name", "available_backends", "backend_function", "backend_status"]

# name -> module path; order = preference for "auto"
_REGISTRY = {
    "cuda": "fastfm._backends.cuda",
    "cpp": "fastfm._backends.cpp",
    "numpy": "fastfm._backends.numpy_backend",
}
_loaded = {}
_failures = {}
_warned = set()


def _load(name):
    if name in _loaded:
        return _loaded[name]
    if name in _failures:
        return None
    try:
        module = importlib.import_module(_REGISTRY[name])
        if not getattr(module, "available", True):
            raise ImportError(getattr(module, "unavailable_reason", "not available"))
    except Exception as exc:  # ImportError, or a module refusing on this machine
        _failures[name] = f"{type(exc).__name__}: {exc}"
        return None
    _loaded[name] = module
    return module


def backend_status():
    """{name: "available" | reason it is not} for every registered backend."""
    return {name: ("available" if _load(name) is not None else _failures.get(name, "?")) for name in _REGISTRY}


def available_backends():
    """Names of the backends that load on this machine, fastest first."""
    return [name for name in _REGISTRY if _load(name) is not None]


def resolve_backend_name(requested="auto"):
    """Map a requested backend (possibly "auto") to a concrete available one."""
    if requested is None or requested == "auto":
        requested = get_config()["backend"]
    if requested == "auto":
        # cuda is chosen per call by size (see the kernels), never blindly
        return "cpp" if _load("cpp") is not None else "numpy"
    if requested not in _REGISTRY:
        raise ValueError(f"unknown backend {requested!r}; choose from {list(_REGISTRY)} or 'auto'")
    if _load(requested) is None:
        raise BackendUnavailableError(f"backend {requested!r} is not available: {_failures.get(requested)}")
    return requested


def get_backend(requested="auto"):
    """The backend module for ``requested`` ("auto", "numpy", "cpp", "cuda")."""
    return _load(resolve_backend_name(requested))


def backend_function(backend, function_name):
    """``backend.function_name``, or the reference's with one warning if the backend lacks it."""
    function = getattr(backend, function_name, None)
    if function is not None:
        return function
    key = (backend.name, function_name)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(
            f"fastfm: backend {backend.name!r} has no {function_name}; using the NumPy reference for it",
            RuntimeWarning, stacklevel=3)
    return getattr(_load("numpy"), function_name)
