"""The exact solver: one Cholesky factor of K + noise·I (GPML Alg. 2.1), its fit and its posterior.

``ExactSolver.fit`` factorises at the fitted hyperparameters; ``ExactPosterior`` predicts from a fitted
regressor's attributes (``kernel_``, ``X_train_``, ``alpha_``, ``L_``, ``_diag_depends_on_continuous``), so
the model itself stays plain attributes (clone, pickles) and the posterior is a view rebuilt on each call.
"""
import weakref

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dtrtri

from ...exceptions import NotPositiveDefiniteError
from ...kernels import matvec
from .. import _linalg, _warnings, mll

__all__ = ["ExactSolver", "ExactPosterior", "factorise", "probe_diag"]

# Predictive variances of at least this many points (and at least N) per call use v = L⁻¹k* as a
# triangular matrix product (BLAS dtrmm) with the explicit inverse of the Cholesky factor instead of a
# triangular solve (dtrsm): on the acquisition scoring's 4,096 × 200 batches 5.7 ms instead of 10.3 ms
# (OpenBLAS, one thread).  The inverse costs N³/3 once per fit, repaid by the first such call.
_TRMM_MIN_ROWS = 256

# The exact solver's predictive std is computed for blocks of test points whose cross-covariance k(X*, X)
# takes at most this many bytes (and as much again for L⁻¹k*): at N = 20,000, 100,000 test points would
# otherwise hold two 16 GB arrays.
_CROSS_BLOCK_BYTES = 256 * 2 ** 20

def factorise(kernel, X, noise):
    """(L, jitter) for k(X, X) + noise·I: L lower triangular (zeros above), Fortran-ordered.

    Factorised in the Gram's own buffer (``_cholesky_in_place``): the fit's final factorisation
    holds one N × N array, the one kept as ``L_``."""
    K = _linalg._writable_gram(kernel(X))
    K.flat[::K.shape[0] + 1] += noise
    L, jitter = _linalg._cholesky_in_place(K, lambda: _linalg._where(kernel.theta, noise))
    _linalg._overwrite_strict_lower(L.T, with_zeros=True)   # L_ is used as a matrix too: zeros above
    return L, jitter


class ExactSolver:
    """The Cholesky solver: exact, O(N²) memory, O(N³) time."""

    name = "cholesky"
    # the best start of a hyperparameter subset is refined by L-BFGS-B on all N points (one N-point Cholesky
    # per evaluation, which this solver pays anyway)
    refine_on_all_points = True

    @staticmethod
    def fit(kernel, X, y, noise):
        """(L, jitter, log p(y|X,θ), α) at the kernel's θ and ``noise``; warns with JitterWarning if jitter was needed.

        Serial BLAS: outside it a threaded 200×200 Cholesky took 250 ms instead of 0.15 ms on a busy machine."""
        with _linalg._serial_blas(X.shape[0]):
            L, jitter = factorise(kernel, X, noise)
        if jitter > 0:
            _warnings.warn(f"fastfm: the kernel matrix needed jitter {jitter:.3g} on its diagonal to be "
                           f"factorised (noise={noise:.3g}); predictions are slightly smoothed", _linalg.JitterWarning)
        lml, alpha = mll.lml_from_factor(L, y)
        return L, jitter, lml, alpha


def _kernel_space(kernel):
    """The Space a kernel reads its inputs through (searched in the operands of Sum/Product), or None."""
    space = getattr(kernel, "space", None)
    if space is not None:
        return space
    for operand in (getattr(kernel, "k1", None), getattr(kernel, "k2", None)):
        if operand is not None:
            space = _kernel_space(operand)
            if space is not None:
                return space
    return None


def probe_diag(kernel, X):
    """Whether k(x, x) changes with the continuous columns (True for ModNN, False for FM/RBF/Matérn).

    FM, RBF and Matérn kernels are stationary in c, so k(x, x) depends on the
    discrete part only and ∂k(x,x)/∂c = 0; checking on a few points keeps any
    other kernel (non-stationary ones) correct via finite differences.
    """
    space = _kernel_space(kernel)
    n_continuous = X.shape[1] if space is None else space.n_continuous
    if n_continuous == 0:
        return False
    if getattr(kernel, "diag_varies_with_continuous", False):
        return True
    probe = X[:4]
    shifted = probe.copy()
    # move every continuous coordinate by 0.37 or 0.63, staying in the unit cube
    shifted[:, :n_continuous] = np.mod(probe[:, :n_continuous] + 0.37, 1.0)
    d0, d1 = kernel.diag(probe), kernel.diag(shifted)
    return not np.allclose(d0, d1, rtol=1e-12, atol=0.0)


# fitted model -> (its X_train_, its kernel_, X_train_ checked by that kernel): ExactPosterior._training_inputs
_checked_training_inputs = weakref.WeakKeyDictionary()


class ExactPosterior:
    """The posterior of an exact fit, in the standardised latent units (GPML Alg. 2.1, lines 4-6).

    A view of the fitted regressor ``model``: it reads the fitted attributes and caches L⁻¹ on the model
    (``_L_inverse``, keyed by the ``L_`` it inverts), so it costs nothing to rebuild.
    """

    def __init__(self, model):
        self.model = model

    def mean(self, X):
        """K(X*, X) α by the matrix-free product (no M×N block, no triangular solve)."""
        model = self.model
        return matvec.kernel_matvec(model.kernel_, X, model.alpha_, Y=model.X_train_)

    def predict_standardized(self, X):
        """(mu, sigma) at encoded X, in blocks of rows: a block's M × N cross-covariance and L⁻¹k* stay within
        _CROSS_BLOCK_BYTES."""
        kernel, X_train = self.model.kernel_, self._training_inputs()
        X = kernel._check_X(X)
        rows = max(_TRMM_MIN_ROWS, _CROSS_BLOCK_BYTES // (8 * X_train.shape[0]))
        blocks = [self.predict_standardized_from_cross(kernel._gram(X[i:i + rows], X_train),
                                                       kernel._diag(X[i:i + rows]))
                  for i in range(0, X.shape[0], rows)] or [(np.zeros(0), np.zeros(0))]
        return np.concatenate([mu for mu, _ in blocks]), np.concatenate([sigma for _, sigma in blocks])

    def predict_standardized_from_cross(self, K_cross, k_diag):
        """(mu, sigma) from k(X*, X_train_) of shape (M, N) and k(x*, x*) of shape (M,)."""
        model = self.model
        K_cross = np.asarray(K_cross, dtype=np.float64)
        # GPML Alg. 2.1, line 4: f̄* = k*ᵀ α
        mu = K_cross @ model.alpha_
        # lines 5-6: v := L \ k*,  V[f*] = k(x*, x*) − vᵀv
        if K_cross.shape[0] >= max(K_cross.shape[1], _TRMM_MIN_ROWS):
            v = dtrmm(1.0, self._cholesky_inverse(), K_cross.T, lower=1)
        else:
            v = solve_triangular(model.L_, K_cross.T, lower=True, check_finite=False)
        var = np.asarray(k_diag, dtype=np.float64) - np.einsum("nm,nm->m", v, v)
        return mu, np.sqrt(np.maximum(var, 0.0))

    def _training_inputs(self):
        """X_train_ as the kernel's private methods take it (``Kernel._check_X``), checked once per fitted model
        and kept on it: the acquisition search predicts hundreds of times per suggestion, and checking the N
        training rows at each call (the discrete codes' range and integrality) was a tenth of its time on the HPO
        problems (docs/benchmarks/suggestion.md, "Less Python per prediction").  Kept beside the model, not in it:
        a fitted model's attributes (and its pickle) stay what fit made."""
        model = self.model
        kept = _checked_training_inputs.get(model)
        if kept is None or kept[0] is not model.X_train_ or kept[1] is not model.kernel_:
            kept = (model.X_train_, model.kernel_, model.kernel_._check_X(model.X_train_, "X_train_"))
            _checked_training_inputs[model] = kept
        return kept[2]

    def _cholesky_inverse(self):
        """L⁻¹ (lower triangular), computed on first use after a fit (O(N³/3)) and kept on the model."""
        model = self.model
        L_inverse = model.__dict__.get("_L_inverse")
        if L_inverse is None or L_inverse[0] is not model.L_:
            inverse, info = dtrtri(model.L_, lower=1)
            if info != 0:
                raise NotPositiveDefiniteError(f"inverting the Cholesky factor failed (LAPACK dtrtri info={info})")
            # concurrent scoring threads may both compute it: the same value, one assignment wins
            L_inverse = (model.L_, np.asfortranarray(np.tril(inverse)))
            model._L_inverse = L_inverse
        return L_inverse[1]

    def predict_standardized_with_input_gradient(self, X):
        """(mu, sigma, ∂mu/∂c, ∂sigma/∂c) at encoded X; the derivatives of shape (M, n_continuous)."""
        model, kernel = self.model, self.model.kernel_
        X = kernel._check_X(X)
        K, dK = kernel._gram_and_input_gradient(X, self._training_inputs())   # (M, N), (M, N, Dc)
        mu = K @ model.alpha_
        dmu = np.einsum("mnd,n->md", dK, model.alpha_)
        v = solve_triangular(model.L_, K.T, lower=True, check_finite=False)          # (N, M)
        var = kernel._diag(X) - np.einsum("nm,nm->m", v, v)
        # ∂V/∂c = ∂k(x,x)/∂c − 2 k*ᵀ K⁻¹ ∂k*/∂c, with K⁻¹k* = Lᵀ \ v
        w = solve_triangular(model.L_, v, lower=True, trans="T", check_finite=False)  # (N, M)
        dvar = -2.0 * np.einsum("mnd,nm->md", dK, w)
        if model._diag_depends_on_continuous:
            dvar += model.kernel_.diag_input_gradient(X, dK.shape[2])
        # Otherwise the kernel is stationary in c (FM, RBF, Matérn: probed in fit), so k(x, x) depends only
        # on the discrete part and ∂k(x,x)/∂c = 0.
        sigma = np.sqrt(np.maximum(var, 0.0))
        positive = sigma > 0
        dsigma = np.zeros_like(dvar)
        dsigma[positive] = 0.5 * dvar[positive] / sigma[positive, None]
        return mu, sigma, dmu, dsigma

    def mean_and_cov(self, X):
        """Mean and full covariance at encoded X (GPML Alg. 2.1, line 6, for the full covariance)."""
        model = self.model
        K_cross = model.kernel_(X, model.X_train_)
        mu = K_cross @ model.alpha_
        v = solve_triangular(model.L_, K_cross.T, lower=True, check_finite=False)
        return mu, model.kernel_(X) - v.T @ v
