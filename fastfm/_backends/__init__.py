"""Compute backends and the registry that picks one.

Each backend is a module exposing the same private functions as
``numpy_backend`` (the reference).  A backend may lack a function; the
reference then takes over, with one warning per function.

A backend module says whether it can run here with ``available`` (fixed at
import) or with ``probe()`` (asked again on every lookup until it succeeds:
the CUDA backend depends on the environment, e.g. the simulator switch, and
must not import numba to answer).

``"auto"`` resolves to ``cpp`` (or ``numpy`` without the extension).  When a
real CUDA GPU is present (never under Numba's simulator), :func:`get_backend`
returns a :class:`SizeDispatch` over that backend instead, which sends a call
to ``cuda`` when its problem is at least :data:`CUDA_MIN_TERMS` pair × eigenvalue-group terms (or
:data:`CUDA_SET_MIN_TERMS` element pairs for set kernels, :data:`CUDA_HIER_MIN_TERMS` pair ×
(column + 1) terms for the hierarchical kernel) and to ``cpp`` otherwise: small calls are
dominated by the launch and transfer latency.
"""
import importlib
import warnings

import numpy as np

from .._config import get_config
from ..exceptions import BackendUnavailableError
from ._spectra import terms_per_pair as _terms_per_pair

__all__ = ["get_backend", "resolve_backend_name", "available_backends", "backend_function", "backend_status",
           "SizeDispatch", "CUDA_MIN_TERMS", "CUDA_SET_MIN_TERMS", "CUDA_HIER_MIN_TERMS"]

# name -> module path; order = preference for "auto"
_REGISTRY = {
    "cuda": "fastfm._backends.cuda",
    "cpp": "fastfm._backends.cpp",
    "numpy": "fastfm._backends.numpy_backend",
}
_loaded = {}
_failures = {}
_probe_failures = {}
_warned = set()

# "auto" sends an FM call to the GPU from this many pair × eigenvalue-group terms
# (``_terms_per_pair``: 7 per pair on Func3C, 76 on NAS-like).  Below it the fixed
# costs (launch, transfers, the result's download) exceed the C++ time.  Measured with
# ``fastfm time gpu`` (then ``python -m fastfm._backends.cuda_bench``) on an H100 against C++ on 16 cores
# (docs/benchmarks/gpu.md, "GPU backend"): NAS-like 2000×2000 (0.3e9 terms) cuda 4.9 ms vs
# cpp 9.9 ms; Func3C 2000×2000 (0.03e9) 4.5 vs 1.6 ms, 10000×10000 (0.7e9) 52 vs 82 ms.
# 2e8 puts the switch near N = 5300 on Func3C and N = 1600 on NAS-like.  The matrix-free K·V
# (fm_gram_matvec) shares it; second H100 run (2026-11-23): Func3C 2000×2000 K·v cuda 0.93 vs
# cpp 0.60 ms, NAS-like 2000×2000 3.2 vs 7.0 ms.
CUDA_MIN_TERMS = 200_000_000
# Set kernels: element pairs NA·NB·m·m' (each costs one Matérn evaluation).
CUDA_SET_MIN_TERMS = 10_000_000
# Hierarchical kernel (SPEC §3): pairs × (n_dims + 1), one term per encoded column (a cos or a
# comparison) plus the profile, as the C++ backend counts its work.  Measured on the H100 against C++ on
# 16 cores (docs/benchmarks/gpu.md, "Second H100 run"), 9-column test space: N = 2000 (4e7 terms) Gram 3.2 vs
# 3.9 ms, Gram + reduction 6.4 vs 12.2 ms; N = 10,000 3.3× and 4.9×.  The GPU already wins at 4e7.
CUDA_HIER_MIN_TERMS = 40_000_000


def _load(name):
    if name in _loaded:
        return _loaded[name]
    if name in _failures:
        return None
    try:
        module = importlib.import_module(_REGISTRY[name])
    except Exception as exc:  # ImportError, or a module refusing on this machine
        _failures[name] = f"{type(exc).__name__}: {exc}"
        return None
    probe = getattr(module, "probe", None)
    if probe is not None:
        ok, reason = probe()
        if not ok:  # not cached: the answer may change (e.g. NUMBA_ENABLE_CUDASIM set later)
            _probe_failures[name] = reason
            return None
    elif not getattr(module, "available", True):
        _failures[name] = f"ImportError: {getattr(module, 'unavailable_reason', 'not available')}"
        return None
    _probe_failures.pop(name, None)
    _loaded[name] = module
    return module


def _failure(name):
    return _failures.get(name) or _probe_failures.get(name, "?")


def backend_status():
    """{name: "available" | reason it is not} for every registered backend."""
    return {name: ("available" if _load(name) is not None else _failure(name)) for name in _REGISTRY}


def available_backends():
    """Names of the backends that load on this machine, fastest first."""
    return [name for name in _REGISTRY if _load(name) is not None]


def resolve_backend_name(requested="auto"):
    """Map a requested backend (possibly "auto") to a concrete available one."""
    if requested is None or requested == "auto":
        requested = get_config()["backend"]
    if requested == "auto":
        # cuda is chosen per call by size (get_backend's SizeDispatch), never blindly
        return "cpp" if _load("cpp") is not None else "numpy"
    if requested not in _REGISTRY:
        raise ValueError(f"unknown backend {requested!r}; choose from {list(_REGISTRY)} or 'auto'")
    if _load(requested) is None:
        raise BackendUnavailableError(f"backend {requested!r} is not available: {_failure(requested)}")
    return requested


def get_backend(requested="auto"):
    """The backend module for ``requested`` ("auto", "numpy", "cpp", "cuda").

    For "auto" on a machine with a CUDA GPU, a :class:`SizeDispatch` between
    ``cuda`` and the CPU backend.
    """
    name = resolve_backend_name(requested)
    module = _load(name)
    if (requested is None or requested == "auto") and get_config()["backend"] == "auto" and _gpu_present():
        return _size_dispatch(module)
    return module


def _gpu_present():
    """A real CUDA GPU and numba, without importing numba (never true under the simulator)."""
    from . import cuda
    # The cached GPU count first: every kernel call asks, and without a GPU it then skips the environment lookup
    # of simulator_requested (~3 µs a call, ~3 % of a suggestion on a small set space).
    return cuda.driver_gpu_count() > 0 and not cuda.simulator_requested() and cuda.probe()[0]


_dispatchers = {}


def _size_dispatch(cpu_module):
    if cpu_module.name not in _dispatchers:
        _dispatchers[cpu_module.name] = SizeDispatch(cpu_module)
    return _dispatchers[cpu_module.name]


# FM functions: (index of the argument whose length gives the rows, of the one giving the columns
# (None: same as rows), of the spectra).  fm_grad_reduction and fm_gram_from_argument read N×M from W / R.
_FM_SHAPES = {
    "fm_gram": (1, 3, 4),
    "fm_neighbour_gram_batch": (4, 3, 7),
    "fm_neighbour_gram": (4, 3, 6),
    # the matrix-free K V: every pair's entry is computed once per call, whatever the number of vectors
    "fm_gram_matvec": (1, 3, 5),
}


def _work(function_name, args):
    """(work, threshold) of a backend call, from its arguments (signatures of ``numpy_backend``).

    FM functions: pairs × :func:`_terms_per_pair` against :data:`CUDA_MIN_TERMS`;
    set functions: element pairs against :data:`CUDA_SET_MIN_TERMS`; hierarchical functions:
    pairs × (n_dims + 1) against :data:`CUDA_HIER_MIN_TERMS`; anything else stays on the CPU.
    """
    if function_name in _FM_SHAPES:
        rows, columns, spectra = _FM_SHAPES[function_name]
        n_columns = len(args[rows]) if args[columns] is None else len(args[columns])
        return len(args[rows]) * n_columns * _terms_per_pair(args[spectra]), CUDA_MIN_TERMS
    if function_name in ("fm_grad_reduction", "fm_gram_from_argument"):
        pairs = np.size(args[2] if function_name == "fm_grad_reduction" else args[0])
        return int(pairs) * _terms_per_pair(args[3]), CUDA_MIN_TERMS
    if function_name in ("set_gram", "set_grad_reduction"):
        A, B = args[0], args[1]
        B = A if function_name == "set_grad_reduction" or B is None else B
        return len(A) * np.shape(A)[1] * len(B) * np.shape(B)[1], CUDA_SET_MIN_TERMS
    if function_name in ("hier_gram", "hier_grad_reduction"):
        # hier_gram(V1, M1, V2, ...) / hier_grad_reduction(V, M, W, ...): W is N×N
        V1 = args[0]
        n_columns = len(V1) if function_name == "hier_grad_reduction" or args[2] is None else len(args[2])
        return len(V1) * n_columns * (np.shape(V1)[1] + 1), CUDA_HIER_MIN_TERMS
    return 0, 1


class SizeDispatch:
    """The "auto" backend on a GPU machine: ``cuda`` for large calls, the CPU backend for the rest.

    It offers exactly the CPU backend's functions (so the kernels' fallbacks
    behave as without a GPU); a call goes to the GPU when :func:`_work` says
    it is large enough and the ``cuda`` module has the function.  If the GPU
    refuses the call (``BackendUnavailableError``) the CPU backend runs it,
    with one warning per reason.
    """

    def __init__(self, cpu_module):
        self.cpu = cpu_module
        self.name = f"auto({cpu_module.name}/cuda)"
        self.refusals = set()   # messages already warned about

    def __getattr__(self, function_name):
        cpu_function = getattr(self.cpu, function_name)   # AttributeError: the CPU backend lacks it

        def dispatch(*args, **kwargs):
            # keyword arguments (a part sum's weights) pass through; the work is read off the positional ones
            work, threshold = _work(function_name, args)
            if work >= threshold:
                gpu = _load("cuda")
                gpu_function = getattr(gpu, function_name, None) if gpu is not None else None
                if gpu_function is not None:
                    try:
                        return gpu_function(*args, **kwargs)
                    except BackendUnavailableError as error:   # a driver numba cannot use, a size limit
                        if str(error) not in self.refusals:
                            self.refusals.add(str(error))
                            warnings.warn(f"fastfm: 'auto' could not use the GPU ({error}); using "
                                          f"{self.cpu.name} instead", RuntimeWarning, stacklevel=2)
            return cpu_function(*args, **kwargs)

        dispatch.__name__ = function_name
        return dispatch


def gpu_module_for(backend, function_name, args):
    """The ``cuda`` module when ``backend`` runs ``function_name(*args)`` on the GPU, else None.

    ``backend`` is a backend module or the "auto" :class:`SizeDispatch`.  Callers that can keep a
    result on the device (the GP likelihood, ``fastfm.kernels.fm``) ask this first."""
    if getattr(backend, "name", None) == "cuda":
        return backend
    if isinstance(backend, SizeDispatch):
        work, threshold = _work(function_name, args)
        if work >= threshold:
            return _load("cuda")
    return None


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
