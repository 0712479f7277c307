"""A linear kernel on how many of a set's points are lost to crowding (issue 24 §4).

    K(X, X') = σ² w(X) w(X'),   w(X) = m − m² / Σ_ij exp(−‖x_i − x_j‖² / (2h²)),

over the set's m points in unit-scaled coordinates.  The sum counts each point once (i = j) and every pair of
points closer than about h once more, so m²/Σ is the set's effective number of distinct points and w the number
it loses to crowding: 0 for m well-separated points, 2m/(m + 2) for one coincident pair, m − 1 for m copies of
one point.  The kernel is rank one (PSD) and permutation invariant; in a GP it adds a linear trend β·w with
β ~ N(0, σ²) to the set kernels' model.

Why: the set kernels see a set through its mean embedding, and a set whose points coincide is an extreme point
of the embeddings' hull, where every training set is far and the posterior variance is largest.  After random
sets, expected improvement proposes such sets first (on SetCoverage, PMedian and SetChamfer, 12-14 of the first
30 model-based sets had coincident points), and since two collapsed sets at different places are unrelated
under those kernels, what one bad collapsed set showed does not carry to the next.  w is the coordinate along
which all crowded sets are alike: the fit learns its sign from the first few, a penalty where points must cover
(coverage, facility location, clustering starts) and a reward where the objective sums over the points and the
best set is m copies of the best point.

``h = CROWDING_SCALE · m^(−1/d)``: a tenth of the spacing of m points spread evenly over the unit cube.
"""
import numpy as np

from ._space_kernel import VARIANCE_BOUNDS, SpaceKernel
from .sets import set_parameter

__all__ = ["SetCrowdingKernel", "crowding_and_gradient"]

CROWDING_SCALE = 0.1


def crowding_and_gradient(sets, scale, with_gradient=True):
    """w of every set and ∂w/∂(its points).

    Parameters
    ----------
    sets : ndarray of shape (N, m, d)
    scale : float, h

    Returns
    -------
    w : ndarray of shape (N,)
    dw : ndarray of shape (N, m, d), or None without ``with_gradient``
    """
    n_sets, m, d = sets.shape
    first, second = np.triu_indices(m, 1)
    diff = sets[:, first, :] - sets[:, second, :]                      # (N, pairs, d)
    inv_2h2 = 1.0 / (2.0 * scale * scale)
    k = np.exp(np.einsum("npd,npd->np", diff, diff) * -inv_2h2)       # (N, pairs)
    total = m + 2.0 * k.sum(axis=1)                                    # Σ_ij: the diagonal, and each pair twice
    w = m - m * m / total
    if not with_gradient:
        return w, None
    # ∂(2k_ij)/∂x_i = −2 k_ij (x_i − x_j)/h², and the opposite for x_j
    g = (-4.0 * inv_2h2) * k[:, :, None] * diff
    dtotal = np.zeros(sets.shape)
    for i in range(m - 1):      # scatter the pairs' terms to their points (np.add.at is slower)
        rows = slice(first.searchsorted(i), first.searchsorted(i + 1))
        dtotal[:, i, :] += g[:, rows, :].sum(axis=1)
        dtotal[:, i + 1:, :] -= g[:, rows, :]
    return w, (m * m / (total * total))[:, None, None] * dtotal


class SetCrowdingKernel(SpaceKernel):
    """σ² w(X) w(X') for one ``Set`` parameter of ``space`` (module docstring).

    Parameters
    ----------
    space : Space
    parameter : str, optional
        The Set's name (needed when the space has several).
    variance : float, default 1.0
        σ², the prior variance of the trend per point lost to crowding (y standardised).
    variance_bounds : (low, high) or "fixed"
    scale : float, optional
        h in unit-scaled coordinates; default CROWDING_SCALE · m^(−1/d).
    """

    # k(x, x) = σ² w(x)² is invariant under a common shift of the set's points, which is how the GP's probe of a
    # non-stationary diagonal moves its points
    diag_varies_with_continuous = True

    def __init__(self, space, parameter=None, variance=1.0, variance_bounds=VARIANCE_BOUNDS, scale=None):
        param = set_parameter(space, parameter, "SetCrowdingKernel")
        super().__init__(space)
        self.parameter = param.name
        self.variance = variance
        self.variance_bounds = variance_bounds
        self.scale = CROWDING_SCALE * param.n_points ** (-1.0 / param.dim) if scale is None else float(scale)
        self._columns = space.column(param.name)
        self._set_shape = (param.n_points, param.dim)

    def _hyperparameter_specs(self):
        return [("variance", 1)]

    def _static_key(self):
        return (self.scale,)

    def _sets(self, X):
        return X[:, self._columns].reshape(X.shape[0], *self._set_shape)

    def _crowding(self, X, with_gradient=False):
        """(w of the sets of X, ∂w per continuous column of the space (N, n_continuous) or None).

        The last two arrays' values are kept, compared by content (O(N·n_dims) against w's O(N m² d)): the fit and
        every prediction ask for the training sets' again and again, and a prediction with input gradients asks for
        its test points' w and ∂w three times (the cross-covariance, the prior variance and its gradient)."""
        kept = self.__dict__.setdefault("_kept_crowding", [])
        for inputs, w, dw in list(kept):     # a snapshot: the scoring threads share the list
            if inputs.shape == X.shape and np.array_equal(inputs, X) and (dw is not None or not with_gradient):
                return w, dw
        w, dw_points = crowding_and_gradient(self._sets(X), self.scale, with_gradient)
        dw = None
        if dw_points is not None:
            dw = np.zeros((len(X), self.space.n_continuous))
            dw[:, self._columns] = dw_points.reshape(len(X), -1)
        for array in (w, dw):
            if array is not None:
                array.setflags(write=False)     # kept: a caller writing into it would corrupt the next call's value
        kept.insert(0, (X.copy(), w, dw))
        del kept[2:]
        return w, dw

    def _gram(self, X, Y):
        w = self._crowding(X)[0]
        return float(self.variance) * np.outer(w, w if Y is None else self._crowding(Y)[0])

    def _diag(self, X):
        return float(self.variance) * self._crowding(X)[0] ** 2

    def diag_input_gradient(self, X, n_continuous):
        w, dw = self._crowding(self._check_X(X), with_gradient=True)
        return 2.0 * float(self.variance) * w[:, None] * dw

    def _full_reduction(self, X, W):
        return np.array([np.sum(W * self._gram(X, None))])

    def _full_gradient(self, X):
        K = self._gram(X, None)
        return K, K[:, :, None]

    def _gram_and_input_gradient(self, X1, X2):
        w1, dw1 = self._crowding(X1, with_gradient=True)
        w2 = self._crowding(X2)[0]
        variance = float(self.variance)
        return variance * np.outer(w1, w2), variance * dw1[:, None, :] * w2[None, :, None]

    def __repr__(self):
        return f"SetCrowdingKernel(parameter={self.parameter!r}, variance={float(self.variance):.3g}, " \
               f"scale={self.scale:.3g})"

