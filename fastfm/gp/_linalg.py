"""Dense linear algebra of the exact GP, in place: one N × N buffer serves the Gram, its Cholesky factor,
K⁻¹ and the likelihood's gradient weights (``mll``), and the final factor ``L_``.
"""
import contextlib
import functools
import math

import numpy as np
from scipy.linalg.blas import dsyr
from scipy.linalg.lapack import dpotrf, dpotri

from .. import _parallel
from .._backends import cpp as _cpp_backend
from ..exceptions import NotPositiveDefiniteError

# Jitter added to the diagonal, as a multiple of the mean diagonal of K + noise·I, tried in this order
# after a plain Cholesky fails: 1e-10 .. 1e-4 in decades.  Beyond 1e-4 the jitter would dominate the
# smallest noise (1e-6 by default) by orders of magnitude and the model would no longer be the one asked for.
_JITTER_SCHEDULE = tuple(10.0 ** e for e in range(-10, -3))

# Side of the square blocks in which _overwrite_strict_lower copies one triangle onto the other: 128 KB per
# block, so the strided side of the copy stays in cache, and the diagonal blocks' temporaries stay small.
# 128 was the fastest of 64-512 at N = 6,000 (38 ms for one mirror) and within 15% at N = 10,000.
_MIRROR_BLOCK = 128

# Up to this side _overwrite_strict_lower copies through one masked np.copyto (the mask cached per side, the
# source copied once by NumPy since it overlaps the destination): at N = 100 5x faster than the blocks' Python
# loop and temporaries (8 against 40 us; 31 against 113 us at N = 200), and the GP likelihood mirrors once
# per evaluation.  Beyond it the blocks need no N² temporary.
_MASKED_MIRROR_MAX_N = 512

# Up to this many training points the hyperparameter search runs BLAS/LAPACK on one thread: an N ≤ 2000
# Cholesky gains little from threads, while a threaded BLAS pool contending with the kernel backend's
# OpenMP threads (or a busy machine) was measured 100× slower per factorisation at N = 200.
_SERIAL_BLAS_MAX_N = 2000


def _serial_blas(n):
    """Context limiting BLAS to one thread for an n-point fit."""
    if n > _SERIAL_BLAS_MAX_N:
        return contextlib.nullcontext()
    return _parallel.single_threaded_blas()

# Up to this many points the likelihood's gradient weights W = ½(ααᵀ − K⁻¹) come from the compiled
# ``fastfm._cpp.likelihood_weights`` (csrc/include/fastfm/linalg.hpp: register tiles, with ½ααᵀ and the mirror
# written as each tile is stored), above it from LAPACK's dpotri, whose blocked code keeps large matrices in
# cache.  One core, AVX2, against dpotri + dsyr + the mirror: 4.5x at N = 20, 2.2x at 100, 2.0x at 200, 1.25x at
# 300, 1.04x at 400, 0.9x at 500 (docs/benchmarks/suggestion.md, "The likelihood's gradient weights in one pass").
_COMPILED_WEIGHTS_MAX_N = 320
# the compiled weights, None where the extension is not built (or was built without GCC vector extensions)
_compiled_likelihood_weights = getattr(_cpp_backend._cpp, "likelihood_weights", None)
# what fastfm._cpp.likelihood_weights says of a factor with a zero or non-finite diagonal (csrc/py/linalg.cpp)
_SINGULAR_FACTOR = "zero or non-finite diagonal entry"


class JitterWarning(RuntimeWarning):
    """The kernel matrix needed diagonal jitter to be factorised."""


def _raise_on_non_finite(K, context):
    """NotPositiveDefiniteError naming the first NaN/inf of K, if it has one.

    One pass of a sum decides the common case without an N² boolean temporary: a finite sum means
    every entry is finite (a NaN or inf propagates); an overflowing sum of finite entries is rechecked."""
    if math.isfinite(float(np.sum(K))):
        return
    bad = np.argwhere(~np.isfinite(K))
    if len(bad):
        i, j = bad[0]
        where = "" if context is None else context()
        raise NotPositiveDefiniteError(
            f"the kernel matrix holds a non-finite value K[{i}, {j}]={float(K[i, j])!r}{where}; "
            "check the inputs and the kernel's hyperparameters")


def _writable_gram(K):
    """K itself when the likelihood may overwrite it (C-contiguous, writable: a fresh Gram), else a copy."""
    return K if K.flags.c_contiguous and K.flags.writeable else np.array(K, order="C")


def _overwrite_strict_lower(M, with_zeros=False):
    """M[j, i] := M[i, j] for j > i (the upper triangle mirrored; 0 with ``with_zeros``), in place, without an
    N² temporary beyond _MASKED_MIRROR_MAX_N.  Works on any strided view: ``_overwrite_strict_lower(M.T)``
    overwrites the strict upper triangle from the lower one."""
    n = M.shape[0]
    if n <= _MASKED_MIRROR_MAX_N:
        np.copyto(M, 0.0 if with_zeros else M.T, where=_strict_lower_mask(n))
        return
    for i0 in range(0, n, _MIRROR_BLOCK):
        i1 = min(n, i0 + _MIRROR_BLOCK)
        diagonal_block = M[i0:i1, i0:i1]
        diagonal_block[...] = np.triu(diagonal_block) + (0.0 if with_zeros else np.triu(diagonal_block, 1).T)
        for j0 in range(i1, n, _MIRROR_BLOCK):
            j1 = min(n, j0 + _MIRROR_BLOCK)
            M[j0:j1, i0:i1] = 0.0 if with_zeros else M[i0:i1, j0:j1].T


@functools.lru_cache(maxsize=8)
def _strict_lower_mask(n):
    mask = np.tril(np.ones((n, n), dtype=bool), -1)
    mask.flags.writeable = False
    return mask


def _cholesky_in_place(K, context=None):
    """Lower Cholesky factor of K written over K's own buffer, adding jitter on the diagonal if needed.

    Parameters
    ----------
    K : C-contiguous writable ndarray of shape (N, N)
        Symmetric K + noise·I, a temporary the caller owns: it is overwritten.
    context : callable or None
        Returns text naming the hyperparameters, for error messages only
        (called lazily: formatting costs more than a small factorisation).

    Returns
    -------
    factor : ndarray of shape (N, N), Fortran-ordered, sharing K's memory
        Its lower triangle is L (L Lᵀ = K + jitter·I); its strict upper triangle still holds K's.
    jitter : float

    LAPACK's dpotrf reads and writes one triangle only.  Factorising Kᵀ (Fortran-ordered, the same memory)
    in place keeps the other triangle, so a failed attempt is undone by mirroring it back, and no copy of K
    is ever made: one N × N buffer serves the Gram, its factor, K⁻¹ and the gradient weights
    (``mll.lml``).
    """
    _raise_on_non_finite(K, context)
    factor = K.T
    diagonal = K.diagonal().copy()
    result, info = dpotrf(factor, lower=1, clean=0, overwrite_a=1)
    if info == 0:
        return result, 0.0
    scale = float(np.mean(diagonal))
    if not scale > 0:
        where = "" if context is None else context()
        raise NotPositiveDefiniteError(
            f"the kernel matrix has a non-positive mean diagonal {scale!r}{where}; it cannot be a covariance")
    for multiple in _JITTER_SCHEDULE:
        jitter = multiple * scale
        _overwrite_strict_lower(factor)    # factor's lower triangle := K's, kept in its upper one
        np.fill_diagonal(factor, diagonal + jitter)
        result, info = dpotrf(factor, lower=1, clean=0, overwrite_a=1)
        if info == 0:
            return result, jitter
    where = "" if context is None else context()
    raise NotPositiveDefiniteError(
        f"the kernel matrix (N={K.shape[0]}) is not positive definite even with jitter "
        f"{_JITTER_SCHEDULE[-1]:.0e}·mean(diag){where}; raise the noise lower bound (noise_bounds), "
        "remove duplicate inputs, or check the kernel")


def _likelihood_weights(factor, alpha):
    """(W, tr W) with W = ½(ααᵀ − K⁻¹) (GPML Eq. 5.9's weights), written over ``factor``.

    ``factor`` is ``_cholesky_in_place``'s (L in the lower triangle of a Fortran-ordered buffer the caller
    owns); W is returned as the buffer's C-ordered view (W is symmetric: the same matrix either way)."""
    if _compiled_likelihood_weights is not None and factor.shape[0] <= _COMPILED_WEIGHTS_MAX_N:
        try:
            return factor.T, _compiled_likelihood_weights(factor.T, alpha)
        except ValueError as error:
            if _SINGULAR_FACTOR not in str(error):     # a bad argument, not a singular factor
                raise
            # a zero or non-finite diagonal: dpotri's info > 0
            raise NotPositiveDefiniteError(f"inverting the Cholesky factor failed ({error})") from None
    # dpotri writes K⁻¹'s lower triangle over L, dsyr adds ½ααᵀ to that triangle, and the mirror completes
    # the symmetric W, so no other N × N array is allocated
    W, info = dpotri(factor, lower=1, overwrite_c=1)
    if info != 0:
        raise NotPositiveDefiniteError(f"inverting the Cholesky factor failed (LAPACK dpotri info={info})")
    W *= -0.5
    W = dsyr(0.5, alpha, lower=1, a=W, overwrite_a=1)
    _overwrite_strict_lower(W.T)
    return W.T, float(np.trace(W))


def _where(kernel_theta, noise):
    """Error-message text naming the hyperparameters of a failed factorisation."""
    theta = np.append(kernel_theta, math.log(noise))
    return f" at theta=[kernel.theta, log noise]={np.array2string(theta, precision=4)}"
