"""Set-kernel benchmarks per backend (SPEC §4): the full Gram of (N, m, d) = (500, 50, 2) sets
with a Matérn 5/2 inner kernel, exact and with the approximation K̂ on L = 10 points, and the MMD set kernel
(a Gaussian of the distance between the mean embeddings, part of a Set's default kernel since issue 24 §4), and
Gram + gradient reduction; and the cross gradient ∂K(A, B)/∂A of the acquisition optimiser's gradient steps.

Inputs are those of ``fastfm time sets`` (``fastfm.benchmarks.workloads.set_inputs``): seeded, so
every backend and every commit sees the same data.  A backend that is not available here raises
``NotImplementedError`` in ``setup``, which asv reports as skipped.
"""
import numpy as np

from fastfm._backends import available_backends, get_backend
from fastfm.kernels import MMDSetKernel, SetKernel

from ._inputs import DEFAULT_SET_SHAPE, DEFAULT_SET_SUBSAMPLE, SET_LENGTHSCALE, set_inputs

BACKENDS = ["cpp", "numpy", "cuda"]
VARIANTS = ["exact", f"L={DEFAULT_SET_SUBSAMPLE}", "mmd"]


class SetGram:
    """Full set Gram and Gram + gradient reduction, through ``SetKernel`` (K̂'s projection sort included)."""

    params = (BACKENDS, VARIANTS)
    param_names = ["backend", "variant"]
    timeout = 300

    def setup(self, backend, variant):
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        if variant == "mmd":
            self.kernel = MMDSetKernel(lengthscale=SET_LENGTHSCALE, seed=0, backend=backend)
        else:
            subsample = None if variant == "exact" else DEFAULT_SET_SUBSAMPLE
            self.kernel = SetKernel(lengthscale=SET_LENGTHSCALE, n_subsample=subsample, seed=0, backend=backend)
        self.X, self.W = set_inputs(*DEFAULT_SET_SHAPE)

    def time_gram(self, backend, variant):
        self.kernel(self.X)

    def time_gram_and_reduction(self, backend, variant):
        self.kernel.gram_and_gradient_reduction(self.X, self.W)


class SetCrossGradient:
    """K(A, B) and ∂K/∂A at the acquisition optimiser's sizes: NA = 10 starts against NB = 60 observations,
    sets of m points in R² (the backend function ``set_cross_gradient``, and the normalised and MMD kernels'
    ``gram_and_input_gradient``, which add the diagonals and their gradients)."""

    params = (["cpp", "numpy"], [10, 20, 50])
    param_names = ["backend", "n_points"]
    timeout = 300

    def setup(self, backend, n_points):
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        self.module = get_backend(backend)
        self.A = set_inputs(10, n_points, 2, seed=1)[0]
        self.B = set_inputs(60, n_points, 2, seed=2)[0]
        self.length_scale = np.full(2, SET_LENGTHSCALE)
        self.normalised = SetKernel(lengthscale=SET_LENGTHSCALE, normalize=True, backend=backend)
        self.mmd = MMDSetKernel(lengthscale=SET_LENGTHSCALE, backend=backend)

    def time_cross_gradient(self, backend, n_points):
        self.module.set_cross_gradient(self.A, self.B, self.length_scale, 2.5)

    def time_input_gradient_normalised(self, backend, n_points):
        self.normalised.gram_and_input_gradient(self.A, self.B)

    def time_input_gradient_mmd(self, backend, n_points):
        self.mmd.gram_and_input_gradient(self.A, self.B)


class SetLocalSearch:
    """The acquisition optimiser's local search on a set space (issue 24 §3): 50 starts (the default's 40 + 10
    set-point moves) on a GP with the default set kernel (normalised + MMD) fitted to 50 random sets of m points in
    R² of SetPeriodic, log-EI at its incumbent.  ``time_local_search`` is the search's wall time;
    ``track_best_acquisition`` the highest log-EI it reaches, so that an A/B of two trees (``asv_benchmarks/ab.py``)
    shows what a faster search gives up or gains (docs/benchmarks/suggestion.md, "Independent runs of the local
    search on set spaces")."""

    params = (["cpp", "numpy"], [4, 10])
    param_names = ["backend", "n_points"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, backend, n_points):
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        import fastfm
        from fastfm.acquisition import log_expected_improvement_and_grad
        from fastfm.benchmarks import SetPeriodic
        from fastfm.kernels import set_space_kernel
        from fastfm.optim import MixedAcquisitionOptimizer

        problem = SetPeriodic(n_points=n_points)
        self.space = problem.space
        X = self.space.sample_encoded(50, seed=1)
        y = np.array([problem(config) for config in self.space.decode(X)])
        kernel = set_space_kernel("modlap", self.space, backend=backend)
        self.gp = fastfm.GaussianProcessRegressor(kernel, n_restarts=2, random_state=0).fit(X, y)
        best = self.gp.best_y_standardized_
        self.acquisition = lambda mu, sigma: log_expected_improvement_and_grad(mu, sigma, best)
        self.optimizer = MixedAcquisitionOptimizer(self.space)
        candidates = self.space.sample_encoded(2_000, seed=3)
        values = self.optimizer.score(self.gp, self.acquisition, candidates)
        self.starts = candidates[np.argsort(-values, kind="stable")[:50]]
        self.start_values = np.sort(values)[::-1][:50].copy()

    def _search(self):
        return self.optimizer._local_search(self.gp, self.acquisition, self.starts.copy(), self.start_values.copy())

    def time_local_search(self, backend, n_points):
        self._search()

    def track_best_acquisition(self, backend, n_points):
        return float(np.max(self._search()[1]))


def _set_periodic_data(n_sets, backend):
    """(space, X, y, default set kernel) of n_sets random SetPeriodic sets of 10 points in R² (seed 1)."""
    if backend not in available_backends():
        raise NotImplementedError(f"backend {backend!r} is not available here")
    from fastfm.benchmarks import SetPeriodic
    from fastfm.kernels import set_space_kernel

    problem = SetPeriodic(n_points=10)
    space = problem.space
    X = space.sample_encoded(n_sets, seed=1)
    y = np.array([problem(config) for config in space.decode(X)])
    return space, X, y, set_space_kernel("modlap", space, backend=backend)


class SetLikelihood:
    """One GP log-likelihood and its gradient, what each L-BFGS-B step of the hyperparameter fit costs, on a set space
    (issue 24 §3): the default set kernel (normalised + MMD) on N random SetPeriodic sets of 10 points in R²
    (``fastfm.gp.fitting.objective``: the likelihood terms keep the plain Gram per θ, and the cpp backend takes it with
    every pair's ∂/∂log ℓ from one pass; docs/benchmarks/suggestion.md, "One pass for the set Gram and its
    derivatives")."""

    params = (["cpp", "numpy"], [50, 100, 200])
    param_names = ["backend", "n_sets"]
    timeout = 300

    def setup(self, backend, n_sets):
        from fastfm.gp.fitting import objective

        _, X, y, kernel = _set_periodic_data(n_sets, backend)
        self.objective = objective(kernel, X, (y - y.mean()) / y.std(), None)
        self.theta = np.append(kernel.theta, np.log(1e-2))
        self.objective(self.theta)       # the first call builds the likelihood terms' private state

    def time_likelihood_and_gradient(self, backend, n_sets):
        # a new θ every call, as in a fit (the terms keep values per θ)
        self.theta[0] += 1e-9
        self.objective(self.theta)


class SetCandidateScoring:
    """The acquisition optimiser's screen on a set space (issue 24 §3): the posterior mean and std of 10,000 random
    sets of 10 points (SetPeriodic) under a GP with the default set kernel (normalised + MMD) fitted to 100 of them.
    (Kept at 10,000 so the history stays comparable: the optimiser screens 10,000·4²/m² sets since 2026-12-02,
    2,048 at 10 points; the work per set is the same.)
    ``point_reuse`` 1 (the optimiser's default) draws every point anew; 8 (``acq_options={"set_point_reuse": 8}``)
    draws the sets from a pool of points, each in about 8 sets, which the set kernels score through the distinct points
    (docs/benchmarks/suggestion.md, "Random sets from a pool of points")."""

    params = (["cpp", "numpy"], [1, 8])
    param_names = ["backend", "point_reuse"]
    timeout = 600

    def setup(self, backend, point_reuse):
        import fastfm

        space, X, y, kernel = _set_periodic_data(100, backend)
        self.gp = fastfm.GaussianProcessRegressor(kernel, n_restarts=0, random_state=0).fit(X, y)
        self.candidates = space.sample_encoded(10_000, seed=2, set_point_reuse=point_reuse)

    def time_posterior_of_candidates(self, backend, point_reuse):
        self.gp.predict_standardized(self.candidates)
