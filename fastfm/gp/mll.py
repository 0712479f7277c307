"""The exact log marginal likelihood log p(y|X,θ) and its gradient (GPML = Rasmussen & Williams 2006).

* The value follows GPML Alg. 2.1 with one Cholesky factor.
* The gradient is GPML Eq. 5.9, ∂ log p(y|X,θ)/∂θ_j = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ_j), evaluated as the kernel's
  fused ``gradient_reduction(X, W)`` with W = ½(ααᵀ − K⁻¹): the N×N×n_theta tensor is never formed.
* On the host one N × N buffer holds K, then L, then W (``_linalg._cholesky_in_place``, then
  ``_linalg._likelihood_weights``: up to its _COMPILED_WEIGHTS_MAX_N points the compiled weights hold U⁻¹ in a
  scratch of their own, at most 0.8 MB); where the kernel's Gram stays on the GPU (``terms.device``) the same
  steps run there (``fastfm._backends.cuda_linalg``), with the host as the fallback when the device has no room.
"""
import math

import numpy as np
from scipy.linalg.lapack import dpotrs

from ..exceptions import BackendUnavailableError
from . import _linalg, _warnings

__all__ = ["lml", "lml_from_factor", "lml_gradient"]

_LOG_2PI = math.log(2.0 * math.pi)


def lml_from_factor(L, y):
    """(log p(y|X,θ), α) from the Cholesky factor: GPML Alg. 2.1, lines 3 and 8.

    Only L's lower triangle is read (LAPACK potrs), so ``_cholesky_in_place``'s factor serves as is."""
    # line 3: α := Lᵀ \ (L \ y), both solves in one LAPACK call (scipy's solve_triangular costs ~10 µs a call
    # around ~2 µs of work at N = 100, and the GP fit evaluates this thousands of times)
    alpha, info = dpotrs(L, y, lower=1)
    if info != 0:
        raise ValueError(f"LAPACK dpotrs failed with info={info}")
    # line 8 (Eq. 2.30): log p = −½ yᵀα − Σ log L_ii − (n/2) log 2π, yᵀα = |L⁻¹y|²
    lml = -0.5 * float(y @ alpha) - float(np.sum(np.log(np.diag(L)))) - 0.5 * len(y) * _LOG_2PI
    return lml, alpha


def lml_gradient(reduction, factor, alpha, noise):
    """∂ log p/∂[θ, log noise] by GPML Eq. 5.9 without the N×N×n_theta tensor.

    ``factor`` is ``_cholesky_in_place``'s (L in the lower triangle of a Fortran-ordered buffer the
    caller owns); it is overwritten by W.  ``reduction(W)`` is the kernel's Σ_ab W_ab ∂K_ab/∂θ_j at
    the factorised θ.
    """
    # W = ½(ααᵀ − K⁻¹): Eq. 5.9 reads ∂/∂θ_j = Σ_ab W_ab ∂K_ab/∂θ_j, formed in the factor's buffer
    W, trace = _linalg._likelihood_weights(factor, alpha)
    # ∂K/∂log noise = noise·I, so the noise term is noise·tr(W)
    grad_noise = noise * trace
    grad_kernel = reduction(W)
    return np.append(grad_kernel, grad_noise)


def lml(terms, theta, y, log_noise, eval_gradient):
    """log p(y|X,θ) (and its gradient) at kernel θ = ``theta`` and noise = exp(log_noise).

    ``terms`` is ``kernel._likelihood_terms(X)``.  Raises NotPositiveDefiniteError when
    K + noise·I cannot be factorised.
    """
    noise = math.exp(log_noise)
    if getattr(terms, "device", None) is not None:
        try:
            return _lml_on_device(terms, theta, y, noise, eval_gradient)
        except BackendUnavailableError as error:   # e.g. no room for the N × N buffers: the host path
            _warnings.warn(f"fastfm: the GP likelihood cannot stay on the GPU ({error}); factorising on the "
                           "host instead", RuntimeWarning)
            terms.device = None
    K = _linalg._writable_gram(terms.gram(theta))
    K.flat[::K.shape[0] + 1] += noise
    # one N × N buffer for the whole evaluation: K, then L, then W (_cholesky_in_place)
    factor, _ = _linalg._cholesky_in_place(K, lambda: _linalg._where(theta, noise))
    value, alpha = lml_from_factor(factor, y)
    if not eval_gradient:
        return value
    return value, lml_gradient(terms.reduction, factor, alpha, noise)


def _lml_on_device(terms, theta, y, noise, eval_gradient):
    """``lml`` with the Gram, its factor and W kept on the GPU (``fastfm._backends.cuda_linalg``).

    The same GPML Alg. 2.1 and Eq. 5.9; only O(N) numbers cross the bus."""
    from .._backends.cuda_linalg import DeviceCholesky

    context = (lambda: _linalg._where(theta, noise))
    factor = DeviceCholesky(terms.gram_on_device(theta), noise, _linalg._JITTER_SCHEDULE, context)  # line 2
    quad, alpha = factor.solve(y)                                                                  # line 3
    value = -0.5 * quad - 0.5 * factor.log_determinant - 0.5 * len(y) * _LOG_2PI                   # line 8
    if not eval_gradient:
        return value
    W, w_diag = factor.likelihood_weights(alpha, terms.splits_diagonal)   # W = ½(ααᵀ − K⁻¹)
    grad_kernel = terms.reduction_on_device(W, w_diag)
    return value, np.append(grad_kernel, noise * float(np.sum(w_diag)))
