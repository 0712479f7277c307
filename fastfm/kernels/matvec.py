"""Kernel matrix-vector products K(X, Y) V without storing K(X, Y): the operator of the matrix-free GP solver.

FM kernels run the backend's tiled product (``fm_gram_matvec``: C++ ``csrc/include/fastfm/matvec.hpp``, the
blocked NumPy reference, CUDA), or its single-precision form (``fm_gram_matvec_single``); any other kernel is
multiplied by row blocks of ``kernel(X_block, Y)``.  These read FM kernels' packing (``_scaled``, ``_args``,
``_backend_module``), which is why they live with the kernels rather than with the GP.
"""
import numpy as np

from .._backends import backend_function, gpu_module_for

__all__ = ["kernel_matvec"]


def kernel_matvec(kernel, X, V, Y=None):
    """K(X, Y) V without storing K(X, Y).

    Parameters
    ----------
    kernel : fastfm.kernels.Kernel
    X : ndarray of shape (N, n_dims)
    V : ndarray of shape (M, r) or (M,)
        M = N when Y is None (the symmetric K(X, X)).
    Y : ndarray of shape (M, n_dims) or None

    Returns
    -------
    ndarray of shape (N, r), or (N,) for a 1-d V
    """
    V = np.asarray(V, dtype=np.float64)
    vector = V.ndim == 1
    V2 = np.ascontiguousarray(V[:, None] if vector else V)
    scaled = getattr(kernel, "_scaled", None)
    parts = getattr(kernel, "_matvec_parts", None)
    if parts is not None:
        # a sum of FM kernels on column subsets (AdditiveFM): each part's own on-the-fly product
        out = None
        for part, select in parts():
            term = kernel_matvec(part, select(X), V2, None if Y is None else select(Y))
            out = term if out is None else out + term
    elif scaled is not None and hasattr(kernel, "_args"):
        # FM kernels: the backend computes kernel tiles on the fly (C++/CUDA, or the blocked reference)
        C1, D1 = scaled(kernel._check_X(X))
        C2, D2 = (None, None) if Y is None else scaled(kernel._check_X(Y, "Y"))
        function = backend_function(kernel._backend_module(), "fm_gram_matvec")
        w1, w2 = _unit_weights(kernel, D1, D2)
        if w1 is None:
            out = function(C1, D1, C2, D2, V2, *kernel._args())
        else:   # k̃(x, y) = w(x) k(x, y) w(y) (fastfm.kernels.fm, "Unit diagonal")
            out = w1[:, None] * function(C1, D1, C2, D2, w2[:, None] * V2, *kernel._args())
    else:
        out = _blocked_matvec(kernel, X, V2, Y)
    return out[:, 0] if vector else out


def _single_precision_product(kernel, X, Y=None):
    """V ↦ K(X, Y) V (K(X, X) V where Y is None) with single-precision kernel values and double sums, the
    points packed once; None where the backend has no such product for this kernel at its hyperparameters,
    or would run the double product on a GPU."""
    scaled = getattr(kernel, "_scaled", None)
    if scaled is None or not hasattr(kernel, "_args"):
        return None
    backend = kernel._backend_module()
    function = getattr(backend, "fm_gram_matvec_single", None)
    if function is None:
        return None
    C1, D1 = scaled(kernel._check_X(X))
    C2, D2 = (None, None) if Y is None else scaled(kernel._check_X(Y, "Y"))
    args = kernel._args()
    if gpu_module_for(backend, "fm_gram_matvec", (C1, D1, C2, D2, None, *args)) is not None:
        return None
    # the single-precision form depends on the hyperparameters only: one point tells
    if function(C1[:1], D1[:1], None, None, np.zeros((1, 1)), *args) is None:
        return None
    w1, w2 = _unit_weights(kernel, D1, D2)
    if w1 is None:
        return lambda V: function(C1, D1, C2, D2, np.ascontiguousarray(V, dtype=np.float64), *args)

    def scaled_product(V):   # k̃(x, y) = w(x) k(x, y) w(y) (fastfm.kernels.fm, "Unit diagonal")
        V = np.asarray(V, dtype=np.float64)
        out = function(C1, D1, C2, D2, np.ascontiguousarray(w2.reshape((-1,) + (1,) * (V.ndim - 1)) * V), *args)
        return w1.reshape((-1,) + (1,) * (out.ndim - 1)) * out
    return scaled_product


def _unit_weights(kernel, D1, D2):
    """(w(D1), w(D2 or D1)) of an FM kernel's unit-diagonal scaling, or (None, None) when it has none."""
    unit_weights = getattr(kernel, "_unit_weights", None)
    w1 = None if unit_weights is None else unit_weights(D1)
    if w1 is None:
        return None, None
    return w1, (w1 if D2 is None else unit_weights(D2))


def _blocked_matvec(kernel, X, V, Y):
    """Any kernel: row blocks of K(X, Y) of at most ~32 MB, each multiplied at once."""
    Y_ = X if Y is None else Y
    block = max(1, (1 << 22) // max(1, Y_.shape[0]))
    out = np.empty((X.shape[0], V.shape[1]))
    for a0 in range(0, X.shape[0], block):
        out[a0:a0 + block] = kernel(X[a0:a0 + block], Y_) @ V
    return out
