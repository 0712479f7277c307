"""Benchmark problems whose input is a set of points (SPEC §4; Kim et al., "BO over sets").

Every objective here is permutation invariant (a function of the set, not of the
order of its points) and has several modes.

* :class:`SetCoverage` — m = 4 points in [−1, 1]² covering four weighted bumps:

      f(X) = −Σ_q w_q exp(−min_i ‖x_i − c_q‖² / (2 s²)),
      c_q = (±0.5, ±0.5), w = (1.0, 0.8, 0.6, 0.4), s = 0.15.

  Each term is at most w_q, so f ≥ −Σ w_q = −2.8, attained exactly when a point
  sits on every centre.  Local minima: sets covering fewer bumps (two points on
  one centre), e.g. −2.4 when the lightest bump is left out.

* :class:`SetChamfer` — m = 5 points in [−1, 1]² matched to a fixed target set T
  of 5 points by the symmetric Chamfer distance:

      f(X) = (1/m) Σ_i min_t ‖x_i − t‖² + (1/|T|) Σ_t min_i ‖x_i − t‖².

  Optimum 0 exactly at X = T; every assignment that doubles up points on one
  target and leaves another uncovered is a local minimum.

* :class:`KMeansInit` — choose the k = 6 initial centres of k-means (scikit-learn
  ``KMeans(n_init=1, init=X)``) on 600 training points of a fixed 8-component
  Gaussian mixture in R²; the objective is the converged clustering loss on 600
  held-out points of the same mixture (mean squared distance to the nearest
  centre).  Optimum unknown; needs scikit-learn (``pip install fastfm[bench]``).

Baselines of the set benchmark (``fastfm bench setcoverage --kernel ...``,
see ``fastfm.cli.runs.run_set_method``): ``set`` (BO with the exact set kernel K_set of SPEC §4), ``set-L<L>``
(BO with the approximation K̂ on L < m points), ``vector`` (BO with a Matérn 5/2
kernel on the m·d coordinates as an ordered vector: a space of m·d Reals, no
canonical order), ``set-norm`` (BO with the normalised set kernel, ``SetKernel(normalize=True)``:
the default kernel of a space with a ``Set``),
``random`` (random search) and, for k-means, ``kmeans++`` (the
best of ``budget`` k-means++ initialisations, scored like any other init).
"""
import numpy as np

from ..space import Set, Space
from .base import Problem

__all__ = ["SetCoverage", "SetChamfer", "KMeansInit"]


class _SetProblem(Problem):
    """A problem on one Set parameter named ``"points"``."""

    set_name = "points"

    @property
    def set_param(self):
        return self.space[self.set_name]

    def _evaluate_config(self, config):
        return self.set_value(np.asarray(config[self.set_name], dtype=np.float64))

    def set_value(self, points):
        """Objective of one set, an array of shape (n_points, dim)."""
        raise NotImplementedError


class SetCoverage(_SetProblem):
    """Four weighted Gaussian bumps to be covered by four points (module docstring)."""

    name = "SetCoverage"
    centres = np.array([[0.5, 0.5], [-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5]])
    weights = np.array([1.0, 0.8, 0.6, 0.4])
    width = 0.15
    optimum = -2.8

    def __init__(self):
        self.space = Space([Set(self.set_name, n_points=4, dim=2, low=-1.0, high=1.0)])
        self.optimal_config = {self.set_name: self.centres.copy()}

    def set_value(self, points):
        nearest = np.min(np.sum((points[:, None, :] - self.centres[None, :, :]) ** 2, axis=2), axis=0)
        return float(-np.sum(self.weights * np.exp(-nearest / (2.0 * self.width ** 2))))


class SetChamfer(_SetProblem):
    """Symmetric Chamfer distance to a fixed target set of five points (module docstring)."""

    name = "SetChamfer"
    targets = np.array([[-0.6, 0.7], [0.1, 0.2], [0.7, 0.6], [-0.3, -0.5], [0.6, -0.7]])
    optimum = 0.0

    def __init__(self):
        self.space = Space([Set(self.set_name, n_points=5, dim=2, low=-1.0, high=1.0)])
        self.optimal_config = {self.set_name: self.targets.copy()}

    def set_value(self, points):
        sq = np.sum((points[:, None, :] - self.targets[None, :, :]) ** 2, axis=2)
        return float(sq.min(axis=1).mean() + sq.min(axis=0).mean())


class KMeansInit(_SetProblem):
    """The initial centres of k-means, scored by the converged loss on held-out data (module docstring).

    Parameters
    ----------
    n_clusters : int, default 6
    n_train, n_test : int, default 600
    seed : int, default 0
        Seed of the mixture's samples (the mixture itself is fixed).
    """

    name = "KMeansInit"
    optimum = None
    # the fixed mixture: means, isotropic standard deviations and weights of 8 components
    means = np.array([[-4.0, -3.0], [-3.5, 3.0], [0.0, 0.0], [3.0, 3.5], [4.0, -3.0], [0.5, -4.0], [-1.0, 4.5],
                      [5.0, 1.0]])
    stds = np.array([0.8, 0.6, 1.2, 0.7, 0.9, 0.5, 0.5, 0.6])
    weights = np.array([0.2, 0.15, 0.2, 0.1, 0.15, 0.08, 0.07, 0.05])

    def __init__(self, n_clusters=6, n_train=600, n_test=600, seed=0):
        from .hpo import _require
        self._KMeans = _require("sklearn.cluster", "KMeansInit").KMeans
        rng = np.random.default_rng(seed)
        self.train, self.test = self.sample(rng, n_train), self.sample(rng, n_test)
        low, high = self.train.min(axis=0), self.train.max(axis=0)
        self.n_clusters = int(n_clusters)
        self.space = Space([Set(self.set_name, n_points=self.n_clusters, dim=2, low=low, high=high)])

    def sample(self, rng, n):
        """``n`` points of the mixture, shape (n, 2)."""
        component = rng.choice(len(self.weights), size=n, p=self.weights)
        return self.means[component] + self.stds[component, None] * rng.standard_normal((n, 2))

    def set_value(self, points):
        model = self._KMeans(n_clusters=self.n_clusters, init=points, n_init=1, max_iter=300,
                             random_state=0).fit(self.train)
        sq = np.sum((self.test[:, None, :] - model.cluster_centers_[None, :, :]) ** 2, axis=2)
        return float(sq.min(axis=1).mean())

    def kmeans_plus_plus(self, rng):
        """One k-means++ initialisation on the training data (scikit-learn's), shape (k, 2)."""
        from sklearn.cluster import kmeans_plusplus
        centres, _ = kmeans_plusplus(self.train, self.n_clusters, random_state=int(rng.integers(1 << 31)))
        return np.clip(centres, self.set_param.low, self.set_param.high)
