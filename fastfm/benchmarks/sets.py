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

* :class:`GMMInit` — choose the k = 12 initial means of a Gaussian mixture fitted by EM
  (scikit-learn ``GaussianMixture``, full covariances) on 600 training points of a fixed
  12-component mixture in R², from a start that depends on the set alone (weights and
  covariances of the nearest-mean assignment); the objective is the held-out negative
  log-likelihood per point.  The set-BO paper's §4.3 (b).  Optimum unknown (the true means
  give 4.4084; the best of 50 k-means runs ≈ 4.4082, of 50 random sets ≈ 4.416); needs
  scikit-learn.

* :class:`PMedian` — the p-median facility location problem: p = 6 facilities in the unit
  square serving 280 fixed demand points (nine clusters of unequal size and spread, and a
  uniform background); the objective is the mean Euclidean distance from a demand point to
  its nearest facility.  Best known 0.11408 (Cooper's alternating heuristic from 3,000
  random starts reached it 252 times); the best of 60 uniformly random sets is ≈ 0.16.

* :class:`SetPeriodic` and :class:`SetDensity` — the paper's §4.2 "Synthetic 1" and
  "Synthetic 2" (its eq. 11 and Supp. eqs. s.15–s.16): f(X) = (1/m) Σ_i g(x_i), an
  auxiliary function g summed over the set's points, m = 10 by default.  The text
  extraction of the paper lost the formulas of g, the domain and m; the concrete forms
  here are our choice, following the words ("a simple periodic function"; "the summation
  of probability density functions").

Baselines of the set benchmark (``fastfm bench setcoverage --kernel ...``,
see ``fastfm.cli.runs.run_set_method``): ``set`` (BO with the exact set kernel K_set of SPEC §4), ``set-L<L>``
(BO with the approximation K̂ on L < m points), ``vector`` (BO with a Matérn 5/2
kernel on the m·d coordinates as an ordered vector: a space of m·d Reals, no
canonical order), ``set-norm`` (BO with the normalised set kernel, ``SetKernel(normalize=True)``:
the default kernel of a space with a ``Set``), ``set-learn`` (the power γ of that normalisation
fitted, ``SetKernel(normalize="learn")``), ``split`` (the set-BO paper's Split baseline: m independent
BOs, one per point, each told f of the whole set),
``random`` (random search) and the clustering problems' own initialisations, each the best of
``budget`` draws scored like any other init: ``kmeans++`` (KMeansInit), ``kmeans`` (GMMInit: the
centres of one k-means run, the paper's baseline for the GMM) and ``data`` (both: k training points).
"""
import numpy as np

from ..space import Set, Space
from .base import Problem

__all__ = ["SetCoverage", "SetChamfer", "KMeansInit", "GMMInit", "PMedian", "SetPeriodic", "SetDensity"]


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


class _ClusteringInit(_SetProblem):
    """The initial centres of a clustering method on a fixed Gaussian mixture in R² (``means``, ``stds``, ``weights``).

    ``train`` and ``test`` are independent samples of the mixture; the set is the ``n_clusters``
    initial centres, in the bounding box of the training data.  Subclasses score a set by the
    converged model on the held-out ``test`` points.

    Parameters
    ----------
    n_clusters : int, default 6
    n_train, n_test : int, default 600
    seed : int, default 0
        Seed of the mixture's samples (the mixture itself is fixed).
    """

    optimum = None
    #: The paper's baselines for this method (Supp. s.c.3), each run as the best of ``budget`` draws
    #: (:meth:`baseline_centres`).
    init_baselines = ("data",)
    # the fixed mixture (KMeansInit's; GMMInit has its own): means, isotropic standard deviations and weights of
    # 8 components
    means = np.array([[-4.0, -3.0], [-3.5, 3.0], [0.0, 0.0], [3.0, 3.5], [4.0, -3.0], [0.5, -4.0], [-1.0, 4.5],
                      [5.0, 1.0]])
    stds = np.array([0.8, 0.6, 1.2, 0.7, 0.9, 0.5, 0.5, 0.6])
    weights = np.array([0.2, 0.15, 0.2, 0.1, 0.15, 0.08, 0.07, 0.05])

    def __init__(self, n_clusters=6, n_train=600, n_test=600, seed=0):
        from .hpo import _require
        self._cluster = _require("sklearn.cluster", self.name)
        rng = np.random.default_rng(seed)
        self.train, self.test = self.sample(rng, n_train), self.sample(rng, n_test)
        low, high = self.train.min(axis=0), self.train.max(axis=0)
        self.n_clusters = int(n_clusters)
        self.space = Space([Set(self.set_name, n_points=self.n_clusters, dim=2, low=low, high=high)])

    def sample(self, rng, n):
        """``n`` points of the mixture, shape (n, 2)."""
        component = rng.choice(len(self.weights), size=n, p=self.weights)
        return self.means[component] + self.stds[component, None] * rng.standard_normal((n, 2))

    def baseline_centres(self, method, rng):
        """One draw of the baseline initialisation ``method`` (one of ``init_baselines``), shape (k, 2).

        "data": k distinct training points (the paper's Data baseline); "kmeans++": scikit-learn's
        k-means++ seeding on the training data; "kmeans": the converged centres of one k-means run
        (k-means++ seeded) on the training data.
        """
        if method not in self.init_baselines:
            raise ValueError(f"method {method!r} is not a baseline of {self.name}; choose from {self.init_baselines}")
        state = int(rng.integers(1 << 31))
        if method == "data":
            centres = self.train[rng.choice(len(self.train), size=self.n_clusters, replace=False)]
        elif method == "kmeans++":
            centres, _ = self._cluster.kmeans_plusplus(self.train, self.n_clusters, random_state=state)
        else:   # "kmeans"
            centres = self._cluster.KMeans(n_clusters=self.n_clusters, n_init=1, random_state=state).fit(
                self.train).cluster_centers_
        return np.clip(centres, self.set_param.low, self.set_param.high)


class KMeansInit(_ClusteringInit):
    """The initial centres of k-means, scored by the converged loss on held-out data (module docstring)."""

    name = "KMeansInit"
    init_baselines = ("kmeans++", "data")

    def set_value(self, points):
        model = self._cluster.KMeans(n_clusters=self.n_clusters, init=points, n_init=1, max_iter=300,
                                     random_state=0).fit(self.train)
        sq = np.sum((self.test[:, None, :] - model.cluster_centers_[None, :, :]) ** 2, axis=2)
        return float(sq.min(axis=1).mean())


class GMMInit(_ClusteringInit):
    """The initial means of a Gaussian mixture fitted by EM, scored by the held-out negative log-likelihood.

        f(X) = −(1/n_test) Σ_t log p(t | θ*(X)),   θ*(X) = EM on ``train`` started from the means X

    The set-BO paper's §4.3 (b): ``GaussianMixture(n_components=k, covariance_type="full")`` of
    scikit-learn, fitted on the training sample from an initial state that depends on the set
    alone, so f is a function of X (scikit-learn's own start would draw its weights and covariances
    from a random k-means run):

    * each training point is assigned to its nearest proposed mean;
    * weight_j = (n_j + 1) / (n + k), with n_j points assigned to mean j;
    * covariance_j = (S_j + Σ) / (n_j + 1), where S_j is the scatter of the assigned points about
      x_j and Σ the covariance of the whole training sample: one pseudo-point of the global spread,
      so a mean that wins no point starts as a broad component instead of a degenerate one.

    The paper scores the converged mixture by the adjusted Rand index on its test split; the
    held-out log-likelihood here is the mixture's own objective, and it separates mixtures that
    the Rand index ties.  Optimum unknown.  Baselines: "kmeans" (the paper's: the converged centres
    of k-means as the initial means) and "data".
    """

    name = "GMMInit"
    init_baselines = ("kmeans", "data")
    # 12 components on a jittered 4 x 3 grid of spacing 3: on k-means' 8-component mixture (k = 6 or 8) the
    # best of 50 random sets already reaches the best value seen, so nothing would separate the methods
    means = np.array([[-5.2, -4.9], [-4.0, -1.4], [-5.1, 1.4], [-4.5, 4.0], [-1.1, -5.1], [-1.7, -1.5], [-1.6, 1.6],
                      [-1.1, 5.2], [1.2, -4.3], [1.8, -1.8], [0.7, 2.3], [1.2, 4.2]])
    stds = np.array([0.94, 0.75, 0.68, 0.86, 0.42, 0.82, 0.62, 0.45, 0.8, 0.96, 0.52, 0.78])
    weights = np.array([6, 10, 9, 6, 10, 9, 9, 10, 7, 10, 10, 5]) / 101.0
    # EM: scikit-learn's defaults but a larger covariance floor, so no component collapses onto one point
    max_iter, tol, reg_covar = 200, 1e-4, 1e-3

    def __init__(self, n_clusters=12, n_train=600, n_test=600, seed=0):
        super().__init__(n_clusters, n_train, n_test, seed)
        from sklearn.mixture import GaussianMixture
        self._GaussianMixture = GaussianMixture
        self._global_covariance = np.cov(self.train, rowvar=False)

    def em_start(self, points):
        """The EM start of ``points``: weights (k,), means (k, 2) and precisions (k, 2, 2) (class docstring)."""
        points = np.asarray(points, dtype=np.float64)
        k = len(points)
        nearest = np.argmin(np.sum((self.train[:, None, :] - points[None, :, :]) ** 2, axis=2), axis=1)
        counts = np.bincount(nearest, minlength=k)
        weights = (counts + 1.0) / (len(self.train) + k)
        covariances = np.empty((k, 2, 2))
        for j in range(k):
            offsets = self.train[nearest == j] - points[j]
            covariances[j] = (offsets.T @ offsets + self._global_covariance) / (counts[j] + 1.0)
        return weights, points, np.linalg.inv(covariances)

    def fit(self, points):
        """The mixture EM converges to from the start of ``points`` (a fitted ``GaussianMixture``)."""
        weights, means, precisions = self.em_start(points)
        return self._GaussianMixture(n_components=len(means), covariance_type="full", weights_init=weights,
                                     means_init=means, precisions_init=precisions, max_iter=self.max_iter,
                                     tol=self.tol, reg_covar=self.reg_covar, init_params="random_from_data",
                                     random_state=0).fit(self.train)

    def set_value(self, points):
        return float(-self.fit(points).score(self.test))


class PMedian(_SetProblem):
    """The p-median problem: p = 6 facility locations for 280 fixed demand points (module docstring).

        f(X) = (1/n) Σ_d min_i ‖d − x_i‖   over the n = 280 demand points d,   x_i ∈ [0, 1]²

    The continuous p-median (Weber) problem of facility location, a classic set-valued objective
    (issue 24 §4): it depends on the facilities, not on their order, and every assignment of
    facilities to clusters is a local minimum.  The demand points are fixed (``numpy``'s
    ``default_rng(2024)``); the best known set, ``optimal_config``, is a fixed point of Cooper's
    location-allocation iteration (each facility at the Weiszfeld median of the demand it serves).
    """

    name = "PMedian"
    n_facilities = 6
    # the best known facilities (Cooper's heuristic, 3,000 random starts), and its value
    best_known = np.array([[0.4808654354098236, 0.4624933032918636], [0.14282251383193847, 0.21286521697769298],
                           [0.8137589053864315, 0.21665909779584716], [0.7620490918364785, 0.7313347841225745],
                           [0.30961180653008225, 0.7711745323156618], [0.18844043602534855, 0.5399725322195179]])
    optimum = 0.11408184413971628
    # the demand: nine Gaussian clusters (centre, number of points, std) and 50 uniform points
    clusters = (((0.15, 0.2), 40, 0.06), ((0.35, 0.75), 30, 0.05), ((0.5, 0.45), 35, 0.08), ((0.8, 0.8), 25, 0.05),
                ((0.85, 0.25), 30, 0.07), ((0.2, 0.55), 20, 0.04), ((0.6, 0.1), 15, 0.05), ((0.65, 0.65), 20, 0.04),
                ((0.1, 0.9), 15, 0.05))
    n_background = 50

    def __init__(self):
        rng = np.random.default_rng(2024)
        demand = [np.asarray(centre) + std * rng.standard_normal((size, 2)) for centre, size, std in self.clusters]
        demand.append(rng.random((self.n_background, 2)))
        self.demand = np.clip(np.vstack(demand), 0.0, 1.0)
        self.space = Space([Set(self.set_name, n_points=self.n_facilities, dim=2, low=0.0, high=1.0)])
        self.optimal_config = {self.set_name: self.best_known.copy()}

    def distances(self, points):
        """Distance of every demand point to every facility, shape (n_demand, n_points)."""
        return np.sqrt(np.sum((self.demand[:, None, :] - np.asarray(points, dtype=np.float64)[None, :, :]) ** 2,
                              axis=2))

    def set_value(self, points):
        return float(self.distances(points).min(axis=1).mean())


class _SummedSetProblem(_SetProblem):
    """f(X) = (1/m) Σ_i g(x_i): the paper's eq. (11), an auxiliary function g summed over the points.

    The mean rather than the sum keeps the scale of f independent of m; the minimisers are the same.
    f is minimal exactly when every point sits on a global minimiser of g, so ``optimum`` is min g.

    Parameters
    ----------
    n_points : int, default 10
        m, the number of points per set (the paper's value was lost in the text extraction).
    """

    dim = 2
    low, high = -1.0, 1.0

    def __init__(self, n_points=10):
        if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1:
            raise ValueError(f"n_points must be a positive integer, got n_points={n_points!r}")
        self.n_points = int(n_points)
        self.space = Space([Set(self.set_name, n_points=self.n_points, dim=self.dim, low=self.low, high=self.high)])
        best_point = self.point_minimiser()
        self.optimum = float(self.point_value(best_point[None, :])[0])
        self.optimal_config = {self.set_name: np.repeat(best_point[None, :], self.n_points, axis=0)}

    def point_value(self, points):
        """g at each of ``points`` (shape (n, dim)), shape (n,)."""
        raise NotImplementedError

    def point_minimiser(self):
        """A global minimiser of g in the box, shape (dim,)."""
        raise NotImplementedError

    def set_value(self, points):
        return float(np.mean(self.point_value(points)))


class SetPeriodic(_SummedSetProblem):
    """The paper's Synthetic 1: a simple periodic g summed over the set (Kim et al. §4.2, Supp. eq. s.15).

        g(x) = sin(2π x₁) · sin(2π x₂),   x ∈ [−1, 1]²,   f(X) = (1/m) Σ_i g(x_i)

    Our guess at s.15 (lost in the text extraction; the paper says only "a simple periodic
    function" with a multimodal surface): g has 8 global minima g = −1 at (±¼, ∓¼) and
    (±¾, ∓¾) with the signs of the two coordinates opposite, so f = −1 exactly when every
    point sits on one of them, and many local optima mix minima with maxima and saddles.
    """

    name = "SetPeriodic"

    def point_value(self, points):
        points = np.asarray(points, dtype=np.float64)
        return np.sin(2.0 * np.pi * points[:, 0]) * np.sin(2.0 * np.pi * points[:, 1])

    def point_minimiser(self):
        return np.array([0.25, -0.25])


class SetDensity(_SummedSetProblem):
    """The paper's Synthetic 2: a sum of Gaussian densities summed over the set (Kim et al. §4.2, Supp. eq. s.16).

        g(x) = −Σ_k w_k N(x; μ_k, σ_k² I),   x ∈ [−1, 1]²,   f(X) = (1/m) Σ_i g(x_i)

    with four components μ = (0.5, 0.5), (−0.5, −0.5), (0.5, −0.5), (−0.5, 0.5), σ = 0.15, 0.2,
    0.25, 0.3 and weights w_k = σ_k² / σ₁² (so the unnormalised bumps have heights 1/(2π σ₁²)
    each, and the widest holds the most mass).  Our guess at s.16: the paper's means, widths and
    weights were lost in the text extraction.  Every mode of g is nearly as deep as the others
    (the densities' tails tilt them slightly), so f has many near-optimal sets: points clustered in
    one mode or spread over several, as the paper describes.
    """

    name = "SetDensity"
    means = np.array([[0.5, 0.5], [-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5]])
    stds = np.array([0.15, 0.2, 0.25, 0.3])
    weights = stds ** 2 / stds[0] ** 2

    def point_value(self, points):
        points = np.asarray(points, dtype=np.float64)
        sq = np.sum((points[:, None, :] - self.means[None, :, :]) ** 2, axis=2)
        density = np.exp(-sq / (2.0 * self.stds ** 2)) / (2.0 * np.pi * self.stds ** 2)
        return -density @ self.weights

    def point_minimiser(self):
        from scipy.optimize import minimize
        # the deepest mode: each component's mean moved by the others' tails, polished by L-BFGS-B
        best = None
        for mean in self.means:
            result = minimize(lambda x: float(self.point_value(x[None, :])[0]), mean, method="L-BFGS-B",
                              bounds=[(self.low, self.high)] * self.dim, options={"gtol": 1e-12, "ftol": 1e-15})
            if best is None or result.fun < best.fun:
                best = result
        return best.x
