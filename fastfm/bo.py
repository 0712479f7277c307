"""Bayesian optimisation on mixed spaces: the ask/tell ``Optimizer`` and one-call ``minimize``.

The BO loop of SPEC §5: an exact GP on an FM kernel (hyperparameters by
marginal likelihood, 10 restarts), expected improvement in log form, and the
mixed acquisition optimiser.  This layer is thin: it keeps the history, turns
configs into arrays (``Space.encode``) and back, and never loses an
observation — a failed evaluation (NaN, inf, an exception) is recorded as
failed, and a failed model fit falls back to a random suggestion.
"""
import math
import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from .acquisition import UCB_BETA, acquisition_function  # noqa: F401  (UCB_BETA: public here too)
from .exceptions import FastFMError, InvalidValueError
from .gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior  # noqa: F401  (public names of bo)
from .kernels import Kernel, make_kernel
from .optim import MixedAcquisitionOptimizer, SearchSpaceExhaustedError

__all__ = ["Optimizer", "minimize", "OptimizeResult", "Trial", "ModelFitWarning", "default_hyperparameter_prior"]

_FM_KERNEL_NAMES = ("modlap", "moddif", "modnn", "fm", "prodlap", "addlap", "proddif", "adddif")

class ModelFitWarning(RuntimeWarning):
    """The surrogate could not be fitted; a random point was suggested instead."""


@dataclass(frozen=True)
class Trial:
    """One evaluation: the config, its value (NaN if it failed) and timings in seconds."""

    config: dict
    value: float
    failed: bool
    eval_time: float = float("nan")
    suggest_time: float = float("nan")
    error: str = None


@dataclass
class OptimizeResult:
    """What ``minimize`` returns.

    Attributes
    ----------
    x : dict          best config found (None if every evaluation failed)
    fun : float       its value
    history : list of (config, value, eval_time)   every evaluation, in order
    trials : list of Trial                          the same with failure flags and suggestion times
    n_evals, n_failed : int
    interrupted : bool  the run was stopped by KeyboardInterrupt (the history is complete up to it)
    """

    x: dict
    fun: float
    history: list
    trials: list = field(repr=False)
    n_evals: int = 0
    n_failed: int = 0
    interrupted: bool = False

    @property
    def suggest_times(self):
        return np.array([t.suggest_time for t in self.trials])

    @property
    def best_so_far(self):
        """Running minimum of the values (failed evaluations count as +inf)."""
        values = np.array([t.value if not t.failed else np.inf for t in self.trials])
        return np.minimum.accumulate(values) if len(values) else values


class Optimizer:
    """Ask/tell Bayesian optimiser on a mixed ``Space`` (minimisation).

    Parameters
    ----------
    space : Space
    kernel : str or Kernel, default "modlap"
        A kernel name ("modlap", "moddif", "prodlap", "hierarchical", ... see
        ``kernels.make_kernel``), a kernel object, or "random" for random search.  On
        a space without discrete variables the FM names fall back to Matern52 (FM
        needs a graph).  On a conditional space (SPEC §3) "hierarchical" is the
        kernel made for it; the FM kernels work there too.
    n_init : int, default 10
        Random initial points before the model is used.
    seed : int or None
        The same seed gives the same run.
    acquisition : {"logei", "ei", "ucb"}
    n_restarts : int, default 10
        Random restarts of the marginal-likelihood maximisation.
    log_transform_y : {"shift", False, True}, default "shift"
        Model log-transformed values: "shift" is log(1 + (y − min y)/std y), for
        objectives of any sign (it tames heavy upper tails, which otherwise squash
        the differences that matter near the minimum; see DEFAULT_LOG_PRIORS for
        the measured effect); True is log(y) (y > 0); False models y as is.
    hyperparameter_prior : "default", None or callable
        "default": weak Gaussian priors on the log hyperparameters
        (``default_hyperparameter_prior``); None: plain marginal likelihood; a
        callable ``kernel -> prior`` (see ``GaussianLogPrior``).
    gp_options : dict, optional
        Passed to ``GaussianProcessRegressor`` (noise_bounds, ...); overrides the above.
    acq_options : dict, optional
        Passed to ``MixedAcquisitionOptimizer`` (n_random, n_spray, n_starts, ...).
    backend : {"auto", "numpy", "cpp", "cuda"}
        Kernel backend when ``kernel`` is a name.

    Examples
    --------
    >>> opt = Optimizer(space, kernel="modlap", n_init=10, seed=0)   # doctest: +SKIP
    >>> x = opt.ask(); opt.tell(x, f(x))                              # doctest: +SKIP
    """

    def __init__(self, space, kernel="modlap", n_init=10, seed=None, acquisition="logei", n_restarts=10,
                 log_transform_y="shift", acq_options=None, backend="auto", gp_options=None,
                 hyperparameter_prior="default"):
        if not isinstance(n_init, numbers.Integral) or n_init < 1:
            raise ValueError(f"n_init must be a positive integer, got n_init={n_init!r}")
        acquisition_function(acquisition, 0.0)  # validate the name now
        self.space = space
        self.n_init = int(n_init)
        self.seed = seed
        self.acquisition = acquisition
        self.n_restarts = int(n_restarts)
        if log_transform_y not in (False, True, "shift"):
            raise ValueError(f"log_transform_y must be False, True or 'shift', got log_transform_y={log_transform_y!r}")
        self.log_transform_y = log_transform_y
        self.backend = backend
        self.gp_options = dict(gp_options or {})
        if hyperparameter_prior == "default":
            hyperparameter_prior = default_hyperparameter_prior
        if hyperparameter_prior is not None and not callable(hyperparameter_prior):
            raise ValueError("hyperparameter_prior must be 'default', None or a callable kernel -> prior, "
                             f"got hyperparameter_prior={hyperparameter_prior!r}")
        self.hyperparameter_prior = hyperparameter_prior
        self._rng = np.random.default_rng(seed)
        self._random_search = isinstance(kernel, str) and kernel.lower() == "random"
        self._kernel = None if self._random_search else self._build_kernel(kernel)
        self._acq_optimizer = MixedAcquisitionOptimizer(space, **(acq_options or {}))
        self._trials = []
        self._X = np.zeros((0, space.n_dims))      # encoded, every told point (failed too)
        self._pending = []                         # (encoded point, suggestion seconds) asked, not told
        self._gp = None
        self.last_suggestion_info = {}

    def _build_kernel(self, kernel):
        if isinstance(kernel, Kernel):
            return kernel
        if not isinstance(kernel, str):
            raise ValueError(f"kernel must be a name or a Kernel object, got kernel={kernel!r}")
        name = kernel.lower()
        # a space with Set parameters: make_kernel multiplies the named kernel on the other
        # parameters (Matern52 when they have no discrete one) by a SetKernel per set
        if self.space.n_discrete == 0 and name in _FM_KERNEL_NAMES and not self.space.set_params:
            warnings.warn(f"kernel {kernel!r} needs discrete variables; using Matern52 on this continuous space",
                          RuntimeWarning, stacklevel=3)
            name = "matern52"
        return make_kernel(name, self.space, backend=self.backend)

    # ------------------------------------------------------------------ state
    @property
    def trials(self):
        """Every told evaluation, in order (a copy)."""
        return list(self._trials)

    @property
    def n_told(self):
        return len(self._trials)

    def best(self):
        """(config, value) of the best successful evaluation, or (None, nan)."""
        ok = [t for t in self._trials if not t.failed]
        if not ok:
            return None, float("nan")
        best = min(ok, key=lambda t: t.value)
        return best.config, best.value

    # ---------------------------------------------------------------- ask/tell
    def ask(self):
        """Suggest the next config to evaluate (a dict); it is remembered as pending."""
        # The suggestion works on small matrices (n_obs × n_obs, batches of candidates): one
        # BLAS thread is far faster there than several spinning ones (see pyproject.toml).
        with threadpool_limits(limits=1, user_api="blas"):
            return self._ask()

    def _ask(self):
        start = time.perf_counter()
        successes = [t for t in self._trials if not t.failed]
        if self._random_search or self.n_told + len(self._pending) < self.n_init or len(successes) < 2:
            x = self._random_point()
            self.last_suggestion_info = {"source": "random"}
        else:
            x = self._model_point()
        self._pending.append((x, time.perf_counter() - start))
        return self.space.decode(x)

    def tell(self, config, y):
        """Record the value ``y`` of ``config``.

        ``y`` = NaN, ±inf or None marks a failed evaluation: it is kept in the
        history and never suggested again, but not modelled.  A config outside
        the space (unknown/missing parameter, bad value or type) raises a typed
        error and changes nothing.
        """
        x = self.space.encode(config)             # typed errors; nothing recorded yet
        failed = y is None
        if not failed:
            if isinstance(y, (bool, np.bool_)) or not isinstance(y, (numbers.Real, np.floating, np.integer)):
                raise InvalidValueError(f"y must be a real number (or NaN/None for a failed evaluation), got y={y!r}",
                                        "y", y)
            y = float(y)
            failed = not math.isfinite(y)
        self._record(config, x, float("nan") if failed else y, failed, float("nan"), None)

    def _record(self, config, x, value, failed, eval_time, error):
        suggest_time = float("nan")   # known when the config came from ask()
        for i, (pending, seconds) in enumerate(self._pending):
            if np.allclose(pending, x, rtol=0, atol=1e-12):
                suggest_time = seconds
                del self._pending[i]
                break
        self._trials.append(Trial(dict(config), value, failed, eval_time, suggest_time, error))
        self._X = np.vstack([self._X, x[None, :]])

    # ------------------------------------------------------------- suggestion
    def _excluded(self):
        pending = np.array([x for x, _ in self._pending]).reshape(-1, self.space.n_dims)
        return np.vstack([self._X, pending])

    def _random_point(self):
        excluded = self._excluded()
        for _ in range(1000):
            x = self.space.sample_encoded(1, seed=self._rng)[0]
            if not self._acq_optimizer._is_duplicate(x, excluded):
                return x
        raise SearchSpaceExhaustedError("could not draw a random point that is not already evaluated or pending")

    def _model_point(self):
        from .gp import GaussianProcessRegressor

        ok = np.array([not t.failed for t in self._trials])
        X = self._X[ok]
        y = np.array([t.value for t in self._trials])[ok]
        # warm start: the previous fit's hyperparameters are the first restart
        kernel = self._gp.kernel_ if self._gp is not None else self._kernel
        options = {"n_restarts": self.n_restarts, "log_transform_y": self.log_transform_y}
        if self.hyperparameter_prior is not None:
            options["theta_prior"] = self.hyperparameter_prior(kernel)
        if self._gp is not None:
            options["noise"] = self._gp.noise_
        options.update(self.gp_options)
        gp = GaussianProcessRegressor(kernel, random_state=self._rng.integers(1 << 31), **options)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # jitter notices: expected at times in BO
                gp.fit(X, y)
        except (FastFMError, np.linalg.LinAlgError, ValueError) as exc:
            warnings.warn(f"fastfm: GP fit failed ({type(exc).__name__}: {exc}); suggesting a random point",
                          ModelFitWarning, stacklevel=3)
            self.last_suggestion_info = {"source": "random (fit failed)", "error": str(exc)}
            return self._random_point()
        self._gp = gp
        acquisition = acquisition_function(self.acquisition, gp.best_y_standardized_)
        incumbent = X[int(np.argmin(y))]
        result = self._acq_optimizer.optimize(gp, acquisition, incumbent, self._excluded(), self._rng)
        self.last_suggestion_info = {"source": "model", "acquisition": result.value, "rounds": result.n_rounds}
        return result.x


def minimize(fun, space, n_iter=200, n_init=10, kernel="modlap", seed=0, progress=True, callback=None, **options):
    """Minimise ``fun(config) -> float`` over ``space`` with Bayesian optimisation.

    Parameters
    ----------
    fun : callable
        Takes a config dict, returns a float.  NaN/inf or an exception marks
        the evaluation as failed; the run goes on.
    space : Space
    n_iter : int, default 200
        Total number of evaluations, the ``n_init`` random ones included.
    n_init : int, default 10
    kernel : str or Kernel, default "modlap"
    seed : int or None, default 0
    progress : bool, default True
        Show a progress bar with the best value so far.
    callback : callable, optional
        Called as ``callback(trial)`` after each evaluation; returning True stops the run.
    **options
        Passed to :class:`Optimizer` (acquisition, n_restarts, acq_options, backend, ...).

    Returns
    -------
    OptimizeResult
    """
    if not isinstance(n_iter, numbers.Integral) or n_iter < 1:
        raise ValueError(f"n_iter must be a positive integer, got n_iter={n_iter!r}")
    optimizer = Optimizer(space, kernel=kernel, n_init=n_init, seed=seed, **options)
    bar = progress_bar(n_iter, desc=f"fastfm[{kernel if isinstance(kernel, str) else type(kernel).__name__}]",
                       enabled=progress)
    interrupted = False
    try:
        for _ in range(n_iter):
            config = optimizer.ask()
            start = time.perf_counter()
            error = None
            try:
                value = fun(config)
                value = float(value)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # a failed evaluation is data, not a crash
                value, error = float("nan"), f"{type(exc).__name__}: {exc}"
                warnings.warn(f"fastfm: evaluation failed ({error}); recorded as failed", RuntimeWarning, stacklevel=2)
            elapsed = time.perf_counter() - start
            failed = not math.isfinite(value)
            optimizer._record(config, space.encode(config), float("nan") if failed else value, failed, elapsed, error)
            best_config, best_value = optimizer.best()
            bar.set_postfix_str(f"best={best_value:.6g}")
            bar.update(1)
            if callback is not None and callback(optimizer._trials[-1]):
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    best_config, best_value = optimizer.best()
    trials = optimizer.trials
    return OptimizeResult(
        x=best_config, fun=best_value, history=[(t.config, t.value, t.eval_time) for t in trials], trials=trials,
        n_evals=len(trials), n_failed=sum(t.failed for t in trials), interrupted=interrupted)


from ._progress import progress_bar  # noqa: E402  (kept last: a light import)
