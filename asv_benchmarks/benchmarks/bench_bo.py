"""The BO hot paths above the kernels, per backend: neighbourhood scoring (hill
climbing), batched acquisition scoring (cross-covariance + predictive formulas
+ log-EI), a GP hyperparameter fit, and one whole suggestion (fit + acquisition
optimisation, the quantity of issue 3's speed target).

Backends are selected with ``fastfm.config_context(backend=...)``; a backend
that is not available raises ``NotImplementedError`` in ``setup`` (asv: skipped),
and so do the NumPy reference's largest sizes.  Data are seeded and shared with
``fastfm time kernels`` (``fastfm.benchmarks.workloads.benchmark_spaces``).
"""
import warnings

import numpy as np

import fastfm
from fastfm._backends import available_backends
from fastfm.acquisition import log_expected_improvement_and_grad
from fastfm.optim import MixedAcquisitionOptimizer

from ._inputs import benchmark_spaces

BACKENDS = ["cpp", "numpy", "cuda"]
_spaces = benchmark_spaces()


def _check_backend(name, too_big_for_numpy=False):
    if name not in available_backends():
        raise NotImplementedError(f"backend {name!r} is not available here")
    if name == "numpy" and too_big_for_numpy:
        raise NotImplementedError("the NumPy reference is only timed on small problems")


def _objective(X):
    """A smooth mixed test function on encoded rows (cheap, deterministic)."""
    return np.sin(3.0 * X[:, 0]) + np.cos(2.0 * X[:, -1]) + 0.1 * X.sum(axis=1)


def _fitted_gp(space, n_observations, backend, seed=0):
    X = space.sample_encoded(n_observations, seed=seed)
    kernel = fastfm.kernels.ModLap(space, backend=backend)
    gp = fastfm.GaussianProcessRegressor(kernel, optimizer=None).fit(X, _objective(X))
    return gp, X


class _AcquisitionBench:
    """Shared setup: a GP with fixed hyperparameters on ``n_observations`` points, the SPEC §5
    optimiser and log-EI at the GP's incumbent."""

    def _prepare(self, backend, space, n_observations, too_big_for_numpy):
        _check_backend(backend, too_big_for_numpy=too_big_for_numpy)
        self.space = _spaces[space]
        self.gp, _ = _fitted_gp(self.space, n_observations, backend)
        self.optimizer = MixedAcquisitionOptimizer(self.space)
        best = self.gp.best_y_standardized_
        self.acquisition = lambda mu, sigma: log_expected_improvement_and_grad(mu, sigma, best)


class NeighbourScoring(_AcquisitionBench):
    """All graph neighbours of 40 starts scored against N observations (one hill-climbing step)."""

    params = (BACKENDS, ["NAS-like", "Ackley5C"], [200, 1000])
    param_names = ["backend", "space", "n_observations"]
    timeout = 300

    def setup(self, backend, space, n):
        self._prepare(backend, space, n, too_big_for_numpy=n > 200)
        self.starts = self.space.sample_encoded(40, seed=3)

    def time_hill_climb_step(self, backend, space, n):
        self.optimizer._hill_climb_step(self.gp, self.acquisition, self.starts, np.full(40, -np.inf))


class AcquisitionScoring(_AcquisitionBench):
    """Predictive mean/std and log-EI of many random candidates against 200 observations."""

    params = (BACKENDS, ["NAS-like", "Ackley5C"], [10_000, 100_000])
    param_names = ["backend", "space", "n_candidates"]
    timeout = 300

    def setup(self, backend, space, n_candidates):
        self._prepare(backend, space, 200, too_big_for_numpy=n_candidates > 10_000)
        self.candidates = self.space.sample_encoded(n_candidates, seed=5)

    def time_score_candidates(self, backend, space, n_candidates):
        self.optimizer.score(self.gp, self.acquisition, self.candidates)


class GPFit:
    """Hyperparameters by maximum marginal likelihood: 10 restarts, as in BO."""

    params = (BACKENDS, ["NAS-like", "Func3C"], [50, 200])
    param_names = ["backend", "space", "n_observations"]
    timeout = 600
    number = 1
    repeat = 3

    def setup(self, backend, space, n):
        _check_backend(backend, too_big_for_numpy=n > 50)
        self.space = _spaces[space]
        self.X = self.space.sample_encoded(n, seed=1)
        self.y = _objective(self.X)
        self.kernel = fastfm.kernels.ModLap(self.space, backend=backend)

    def time_fit(self, backend, space, n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fastfm.GaussianProcessRegressor(self.kernel, random_state=0).fit(self.X, self.y)


class AdditiveGPFit(GPFit):
    """``GPFit`` of AdditiveFM, the kernel ``kernel="auto"`` keeps on the paper's small spaces (issue 24 §3: its
    fused likelihood terms, docs/benchmarks/suggestion.md, "Cheaper suggestions where AdditiveFM is kept")."""

    params = (BACKENDS, ["Func3C"], [50, 100])

    def setup(self, backend, space, n):
        super().setup(backend, space, n)
        self.kernel = fastfm.kernels.AdditiveFM(self.space, backend=backend)


class WarmSuggestion:
    """The steady state of a BO loop with the default kernel: one more value told, then a suggestion (a warm
    refit, raced on small spaces, and the acquisition), at N observations; issue 24 §3 compares it with Optuna's
    GPSampler (asv_benchmarks/peers/suggestion_vs_gpsampler.py)."""

    params = (BACKENDS, ["Func3C", "NAS-like"], [100])
    param_names = ["backend", "space", "n_observations"]
    timeout = 600
    number = 1          # asv runs setup before each repeat: every timed ask follows its own tell
    repeat = 5
    warmup_time = 0     # a warm-up call would tell the same value twice

    def setup(self, backend, space, n):
        _check_backend(backend, too_big_for_numpy=True)
        self.space = _spaces[space]
        X = self.space.sample_encoded(n + 1, seed=3)
        configs, values = self.space.decode(X), _objective(X)
        self.optimizer = fastfm.Optimizer(self.space, seed=0, backend=backend)
        for config, value in zip(configs[:n], values[:n]):
            self.optimizer.tell(config, float(value))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.optimizer.ask()                       # the first (full) fit, outside the timing
        self.next = (configs[n], float(values[n]))

    def time_warm_ask(self, backend, space, n):
        self.optimizer.tell(*self.next)
        self.optimizer.ask()


class _ToldOptimizer:
    """N random observations of a space, told to a fresh optimizer inside each timed call."""

    timeout = 600
    number = 1
    repeat = 3

    def _observe(self, backend, space, n):
        _check_backend(backend, too_big_for_numpy=True)   # the NumPy reference takes minutes per suggestion
        self.space = _spaces[space]
        X = self.space.sample_encoded(n, seed=2)
        self.configs = self.space.decode(X)
        self.values = _objective(X)

    def _told_optimizer(self, backend):
        optimizer = fastfm.Optimizer(self.space, kernel="modlap", seed=0, backend=backend)
        for config, value in zip(self.configs, self.values):
            optimizer.tell(config, float(value))
        return optimizer


class Suggestion(_ToldOptimizer):
    """One BO suggestion (GP fit with 10 restarts + SPEC §5 acquisition optimisation) at N observations."""

    params = (BACKENDS, ["NAS-like"], [50, 200])
    param_names = ["backend", "space", "n_observations"]

    def setup(self, backend, space, n):
        self._observe(backend, space, n)

    def time_ask(self, backend, space, n):
        self._told_optimizer(backend).ask()


class BatchSuggestion(_ToldOptimizer):
    """A joint batch ``ask(n=q)`` (one GP fit, points 2..q conditioned on the ones before by fantasies) at N
    observations; issue 22's target: q = 8 at N = 200 on NAS-like within 2 s (docs/benchmarks/parallel.md).
    Not a subclass of ``Suggestion``: asv would run its ``time_ask`` with this class's four parameters."""

    params = (BACKENDS, ["NAS-like"], [200], [1, 8])
    param_names = ["backend", "space", "n_observations", "q"]

    def setup(self, backend, space, n, q):
        self._observe(backend, space, n)

    def time_ask_batch(self, backend, space, n, q):
        self._told_optimizer(backend).ask(n=q)


class BatchedQuasiNewton:
    """The acquisition search's batched L-BFGS runs (``fastfm.optim.batched_lbfgs.minimize_batched``) on a cheap
    function, so that the time is the bookkeeping: the compiled state (``fastfm._cpp.BatchedLBFGS``, the default
    where the extension is built) against the NumPy loop, which is its definition.  50 starts, as the local search
    of every suggestion."""

    params = (["compiled", "numpy"], [4, 20])
    param_names = ["bookkeeping", "n_dims"]

    def setup(self, bookkeeping, n_dims):
        from fastfm.optim import batched_lbfgs
        self.module = batched_lbfgs
        self.compiled = batched_lbfgs._compiled_state
        if bookkeeping == "compiled" and self.compiled is None:
            raise NotImplementedError("the compiled extension is not built here")
        rng = np.random.default_rng(0)
        shift, scale = rng.uniform(-1.0, 1.0, (50, n_dims)), rng.uniform(0.5, 4.0, (50, n_dims))

        def fun(starts, X):
            Z = scale[starts] * (X - shift[starts])
            return np.sum(np.cos(Z), axis=1) + 0.05 * np.sum(X * X, axis=1), -scale[starts] * np.sin(Z) + 0.1 * X
        self.fun, self.X0 = fun, rng.uniform(-1.0, 1.0, (50, n_dims))
        batched_lbfgs._compiled_state = self.compiled if bookkeeping == "compiled" else None

    def teardown(self, bookkeeping, n_dims):
        self.module._compiled_state = self.compiled

    def time_minimize_batched(self, bookkeeping, n_dims):
        self.module.minimize_batched(self.fun, self.X0, -1.0, 1.0, maxiter=200)
