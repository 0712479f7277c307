"""Stationary kernels on the continuous columns of a space: RBF and Matérn 5/2 (GPML §4.2).

Built without a ``space`` (``Matern52(length_scale=0.3)``, scikit-learn's
spelling) they act on plain arrays of points of shape (N, d), every column
continuous, with one isotropic lengthscale or d ARD ones; that form is also
the inner kernel of a set kernel (``SetKernel(inner=Matern52(...))``).
"""
import numpy as np

from ..exceptions import InvalidConfigError, InvalidValueError
from .._backends.profiles import matern52_profile, rbf_profile
from ._space_kernel import LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS, SpaceKernel

__all__ = ["RBF", "Matern52", "rbf_profile", "matern52_profile"]


class _Stationary(SpaceKernel):
    """σ² g(d²) with the ARD distance d² = Σ_d (c_d − c'_d)²/θ_d² over the continuous columns."""

    def __init__(self, space=None, lengthscale=None, variance=1.0, lengthscale_bounds=LENGTHSCALE_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, backend="auto", length_scale=None):
        super().__init__(space, backend)
        if lengthscale is not None and length_scale is not None:
            raise InvalidValueError(f"give lengthscale or its alias length_scale, not both (got lengthscale="
                                    f"{lengthscale!r}, length_scale={length_scale!r})", "length_scale", length_scale)
        lengthscale = length_scale if lengthscale is None else lengthscale
        self.lengthscale = 0.5 if lengthscale is None else lengthscale
        self.variance = variance
        self.lengthscale_bounds = lengthscale_bounds
        self.variance_bounds = variance_bounds

    @property
    def n_dims(self):
        return None if self.space is None else self.space.n_dims

    def _n_lengthscales(self):
        """ARD over the space's continuous columns; without a space, as many as given (1: isotropic)."""
        return self.space.n_continuous if self.space is not None else int(np.size(self.lengthscale))

    def _hyperparameter_specs(self):
        return [("lengthscale", self._n_lengthscales()), ("variance", 1)]

    def _check_X(self, X, name="X"):
        if self.space is not None:
            return super()._check_X(X, name)
        X = np.asarray(X, dtype=np.float64)
        n = self._n_lengthscales()
        if X.ndim != 2 or (n > 1 and X.shape[1] != n):
            want = "(n_points, dim)" if n == 1 else f"(n_points, {n}) (one column per lengthscale)"
            raise InvalidConfigError(f"{name} must have shape {want}, got {np.shape(X)}", name)
        if not np.all(np.isfinite(X)):
            raise InvalidValueError(f"{name} holds non-finite values", name, X[~np.isfinite(X)][0])
        return np.ascontiguousarray(X)

    def _scaled(self, X):
        C = X if self.space is None else self._split(X)[0]
        return C / self._values("lengthscale", self._n_lengthscales())

    def _per_lengthscale(self, per_column):
        """∂/∂log ℓ per column → per lengthscale (an isotropic one collects every column)."""
        per_column = np.asarray(per_column, dtype=float)
        if self._n_lengthscales() == 1 and per_column.shape[-1] != 1:
            return per_column.sum(axis=-1, keepdims=True)
        return per_column

    @staticmethod
    def _sqdist(A, B):
        sq = np.zeros((A.shape[0], B.shape[0]))
        for d in range(A.shape[1]):
            sq += (A[:, d, None] - B[None, :, d]) ** 2
        return sq

    def _profile(self, sq):
        """(g(d²), dg/d(d²))."""
        raise NotImplementedError

    def _gram(self, X, Y):
        A = self._scaled(X)
        B = A if Y is None else self._scaled(Y)
        g, _ = self._profile(self._sqdist(A, B))
        return float(self.variance) * g

    def _diag(self, X):
        return np.full(X.shape[0], float(self.variance))

    def _gram_and_input_gradient(self, X1, X2):
        A, B = self._scaled(X1), self._scaled(X2)
        g, dg = self._profile(self._sqdist(A, B))
        var = float(self.variance)
        # ∂d²/∂c_d = 2 (a_d − b_d)/θ_d
        lengthscale = self._values("lengthscale", self._n_lengthscales())
        dK = 2.0 * var * dg[:, :, None] * (A[:, None, :] - B[None, :, :]) / lengthscale[None, None, :]
        return var * g, dK

    def _full_reduction(self, X, W):
        A = self._scaled(X)
        g, dg = self._profile(self._sqdist(A, A))
        weighted = float(self.variance) * W * dg
        # ∂d²/∂log θ_d = −2 (a_d − a'_d)²  (a already divided by θ)
        g_ls = [-2.0 * np.sum(weighted * (A[:, d, None] - A[None, :, d]) ** 2) for d in range(A.shape[1])]
        return np.concatenate([self._per_lengthscale(g_ls), [float(self.variance) * np.sum(W * g)]])

    def _full_gradient(self, X):
        A = self._scaled(X)
        g, dg = self._profile(self._sqdist(A, A))
        var = float(self.variance)
        dK_ls = np.empty((X.shape[0], X.shape[0], A.shape[1]))
        for d in range(A.shape[1]):
            dK_ls[:, :, d] = var * dg * (-2.0) * (A[:, d, None] - A[None, :, d]) ** 2
        return var * g, np.concatenate([self._per_lengthscale(dK_ls), (var * g)[:, :, None]], axis=2)


class RBF(_Stationary):
    """k = σ² exp(−d²/2) on the continuous columns of ``space`` (discrete columns are ignored)."""

    def _profile(self, sq):
        return rbf_profile(sq)


class Matern52(_Stationary):
    """k = σ² (1 + √5 d + 5d²/3) exp(−√5 d) on the continuous columns of ``space``.

    Without a space, on arrays of points (N, d); e.g. the inner kernel of
    ``SetKernel(inner=Matern52(length_scale=0.3))``.
    """

    nu = 2.5    # the Matérn order, read by SetKernel

    def _profile(self, sq):
        return matern52_profile(sq)
