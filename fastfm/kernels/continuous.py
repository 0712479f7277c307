"""Stationary kernels on the continuous columns of a space: RBF and Matérn 5/2 (GPML §4.2)."""
import numpy as np

from ._space_kernel import LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS, SpaceKernel

__all__ = ["RBF", "Matern52", "rbf_profile", "matern52_profile"]


def rbf_profile(sq):
    """(g, dg/d(d²)) of the squared exponential g = exp(−d²/2)."""
    g = np.exp(-0.5 * sq)
    return g, -0.5 * g


def matern52_profile(sq):
    """(g, dg/d(d²)) of Matérn 5/2, g = (1 + √5 d + 5d²/3) exp(−√5 d)."""
    d = np.sqrt(sq)
    e = np.exp(-np.sqrt(5.0) * d)
    g = (1.0 + np.sqrt(5.0) * d + 5.0 / 3.0 * sq) * e
    # dg/d(d²) = −(5/6)(1 + √5 d) e^(−√5 d)
    return g, -(5.0 / 6.0) * (1.0 + np.sqrt(5.0) * d) * e


class _Stationary(SpaceKernel):
    """σ² g(d²) with the ARD distance d² = Σ_d (c_d − c'_d)²/θ_d² over the continuous columns."""

    def __init__(self, space, lengthscale=0.5, variance=1.0, lengthscale_bounds=LENGTHSCALE_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        super().__init__(space, backend)
        self.lengthscale = lengthscale
        self.variance = variance
        self.lengthscale_bounds = lengthscale_bounds
        self.variance_bounds = variance_bounds

    def _hyperparameter_specs(self):
        return [("lengthscale", self.space.n_continuous), ("variance", 1)]

    def _scaled(self, X):
        C, _ = self._split(X)
        return C / self._values("lengthscale", self.space.n_continuous)

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
        lengthscale = self._values("lengthscale", self.space.n_continuous)
        dK = 2.0 * var * dg[:, :, None] * (A[:, None, :] - B[None, :, :]) / lengthscale[None, None, :]
        return var * g, dK

    def _full_reduction(self, X, W):
        A = self._scaled(X)
        g, dg = self._profile(self._sqdist(A, A))
        weighted = float(self.variance) * W * dg
        # ∂d²/∂log θ_d = −2 (a_d − a'_d)²  (a already divided by θ)
        g_ls = [-2.0 * np.sum(weighted * (A[:, d, None] - A[None, :, d]) ** 2) for d in range(A.shape[1])]
        return np.concatenate([g_ls, [float(self.variance) * np.sum(W * g)]])

    def _full_gradient(self, X):
        A = self._scaled(X)
        g, dg = self._profile(self._sqdist(A, A))
        var = float(self.variance)
        dK = np.empty((X.shape[0], X.shape[0], A.shape[1] + 1))
        for d in range(A.shape[1]):
            dK[:, :, d] = var * dg * (-2.0) * (A[:, d, None] - A[None, :, d]) ** 2
        dK[:, :, -1] = var * g
        return var * g, dK


class RBF(_Stationary):
    """k = σ² exp(−d²/2) on the continuous columns of ``space`` (discrete columns are ignored)."""

    def _profile(self, sq):
        return rbf_profile(sq)


class Matern52(_Stationary):
    """k = σ² (1 + √5 d + 5d²/3) exp(−√5 d) on the continuous columns of ``space``."""

    def _profile(self, sq):
        return matern52_profile(sq)
