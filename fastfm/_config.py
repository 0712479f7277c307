"""Global settings: which compute backend runs the kernels, and how many threads.

``set_config(backend=...)`` changes them for the process, ``config_context``
for a ``with`` block; ``FASTFM_BACKEND`` and ``FASTFM_NUM_THREADS`` set the
start values.
"""
import contextlib
import os
import threading

__all__ = ["get_config", "set_config", "config_context"]

_VALID_BACKENDS = ("auto", "numpy", "cpp", "cuda")

_global_config = {
    "backend": os.environ.get("FASTFM_BACKEND", "auto"),
    # 0 means "let OpenMP decide" (all cores, or OMP_NUM_THREADS)
    "num_threads": int(os.environ.get("FASTFM_NUM_THREADS", "0") or 0),
}
_lock = threading.Lock()


def _check_backend(backend):
    if backend not in _VALID_BACKENDS:
        raise ValueError(f"backend must be one of {_VALID_BACKENDS}, got backend={backend!r}")
    return backend


_check_backend(_global_config["backend"])


def get_config():
    """Return a copy of the current settings as a dict."""
    with _lock:
        return dict(_global_config)


def _setting(name):
    """One setting, without copying them all as ``get_config`` does: the C++ backend reads num_threads at every
    call, thousands of times per GP fit (one key of a dict is read atomically: no lock)."""
    return _global_config[name]


def set_config(backend=None, num_threads=None):
    """Change global settings.

    Parameters
    ----------
    backend : {"auto", "numpy", "cpp", "cuda"}, optional
        Backend used by kernels whose own ``backend`` is ``"auto"``.
        ``"auto"`` picks the fastest available one.
    num_threads : int, optional
        Threads used by the compiled backend; 0 means all available.
    """
    with _lock:
        if backend is not None:
            _global_config["backend"] = _check_backend(backend)
        if num_threads is not None:
            if int(num_threads) < 0:
                raise ValueError(f"num_threads must be >= 0, got num_threads={num_threads!r}")
            _global_config["num_threads"] = int(num_threads)


@contextlib.contextmanager
def config_context(**settings):
    """Temporarily change settings inside a ``with`` block."""
    old = get_config()
    set_config(**settings)
    try:
        yield
    finally:
        set_config(**old)
