"""C++ backend (pybind11 + OpenMP): thin wrappers over ``fastfm._cpp``.

Same private signatures as ``numpy_backend``.  Loading fails (and the
registry falls back to NumPy) when the extension was not built.
"""
try:
    from .. import _cpp
except ImportError as exc:  # extension not built on this machine
    _cpp = None
    available = False
    unavailable_reason = f"the compiled extension fastfm._cpp is missing ({exc})"
else:
    available = True

name = "cpp"
