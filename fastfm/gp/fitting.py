"""The GP's hyperparameters by type-II maximum likelihood (MAP-II with a ``theta_prior``): multi-start
L-BFGS-B over ``[kernel.theta, log noise]``, optionally raced, on all points or on a random subset whose
optimum is then refined on all points (the counterpart of ``botorch/fit.py``).

``fit_hyperparameters`` returns the fitted kernel and noise; the solver's own fit (``solvers``) then uses
them.  The random draws are those of the regressor before the split, in the same order: the subset
(``hyperparameter_subset``) from one ``default_rng(random_state)``, the restarts from another, and the
starts in the order [the kernel's θ, the previous fit's optimum, the restarts...].
"""
import logging
import math
import numbers
import threading
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize

from .. import _parallel
from .._parallel import thread_map
from ..exceptions import FitError, InvalidConfigError, NotPositiveDefiniteError
from . import _linalg, mll, solvers
from .priors import restart_distribution
from .solvers.cholesky import ExactSolver

__all__ = ["Hyperparameters", "fit_hyperparameters", "hyperparameter_subset", "objective"]

_LOGGER = logging.getLogger(__name__)

# ``hyperparameter_subset="auto"``: the L-BFGS-B starts run on a random subset of this many points once N
# passes _AUTO_SUBSET_MIN_N (always, for the matrix-free solver).  One exact likelihood evaluation at 2,000
# points is a 2,000² Gram, its Cholesky and inverse and the fused gradient reduction (0.5–1 s on two cores
# for the 15-variable regression set), so the starts cost minutes whatever N is.  The exact solver then refines
# the best start on all N (_REFINE_OPTIONS): on the regression set at N = 10,000 the refinement took the
# test RMSE / NLL from 0.5747 / 1.042 at the subset's optimum to 0.3704 / 0.390, in 13 minutes in all on
# two cores, where every start on all points would take about 60 (docs/benchmarks/large-n.md, "Subset, then refine" and
# "One N × N buffer").
_AUTO_SUBSET = 2000
_AUTO_SUBSET_MIN_N = 2 * _AUTO_SUBSET

# Value of −log marginal likelihood returned to L-BFGS-B for a θ where the Cholesky fails or the result is
# non-finite: large enough to be worse than any attainable value (|log p| ≲ N²/noise_min stays far below
# it for N ≤ 10⁵), finite so the line search backs off instead of breaking.
_FAILED_OBJECTIVE = 1e25

# L-BFGS-B settings per start.  ftol is relative: a start stops once an iteration improves −log p by less
# than 1e-5·|log p| (3e-3 nats at N = 200), far below what matters for hyperparameters.  Measured on the
# NAS-like ModLap fit of the suggestion benchmark (N = 200, 11 starts, four data sets): 1e-6 → 1e-5 took
# 20-25 % fewer likelihood evaluations and moved the best optimum by ≤ 0.05 nats
# (docs/benchmarks/suggestion.md, "The likelihood loop: target met"); scipy's
# default 2.2e-9 took twice as many as 1e-6.  maxiter bounds flat ridges.  A memory of 40 pairs instead of
# scipy's 10 (maxcor) took 20-40 % fewer evaluations for AdditiveFM's 17-76 hyperparameters at the same optima,
# but BO runs ended worse at 30-60 evaluations on Func3C and Ackley5C (80 paired seeds, 1.7-2.0 s.e.), and whole
# runs were no faster (suggestions 50-100: 2.66 -> 2.71 s and 2.83 -> 2.66 s a run): not adopted
# (docs/benchmarks/suggestion.md, "A longer L-BFGS-B memory, measured").
_LBFGSB_OPTIONS = {"maxiter": 200, "ftol": 1e-5}

# The refinement on all N points after starts on a subset (``hyperparameter_subset``) stops after 25
# L-BFGS-B iterations: each costs an N-point Cholesky and inverse (≈ 22 s at N = 10,000 on two cores),
# and a relative ftol asks for ever smaller gains as |log p| grows with N.  On the regression set the
# test error stops moving well before: N = 10,000, RMSE 0.5747 at the subset's optimum, 0.3724 after 20
# evaluations, 0.3721 after 30 (log ML −3,416 → −857 → −844); N = 3,000, 0.5886 after 20 iterations
# against 0.5860 at convergence (36 evaluations).  docs/benchmarks/large-n.md, "Subset, then refine".
_REFINE_OPTIONS = dict(_LBFGSB_OPTIONS, maxiter=25)

# Racing the restarts (``n_finalists``, opt-in): every start first runs at most this many L-BFGS-B
# iterations, then only the ``n_finalists`` best continue, from where they stopped, to the convergence
# test above.  Measured on ModLap fits with the BO priors (NAS-like, Func2C, Func3C, Ackley5C; N = 30, 100,
# 200; 2 seeds: 24 fits of 11 starts) the raced optimum equalled the best of all starts run to convergence
# (< 0.001 nats) in 23 cases and was 1.05 nats lower in one, for 40-55 % fewer likelihood evaluations
# (docs/benchmarks/suggestion.md, "Racing the GP restarts").  The regressor runs every start to convergence unless
# asked; the BO loop races its fits on the spaces where it considers AdditiveFM (fastfm.bo.surrogate: WARM_FINALISTS,
# FULL_FINALISTS, and the measurements beside them).
_SCREEN_MAXITER = 10

# Restarts run in parallel threads (the kernel backends and LAPACK release the GIL, fastfm._parallel) when a
# likelihood evaluation's GIL-free work, about N² pairs × d encoded columns, outweighs its Python part (about
# 0.2-0.3 ms: L-BFGS-B and the likelihood's bookkeeping, which the threads take turns at).  On two cores, one
# suggestion (serial / threaded restarts): Func3C (d = 5) at N = 100, a full refit of ModLap 223 / 281 ms and
# of ModLap and AdditiveFM (kernel="auto") 590 / 801 ms, at N = 150 the mean suggestion 80 / 87 ms; at N = 200
# AdditiveFM's full refit 2532 / 2367 ms; Contamination (d = 25) at N = 60 187 / 174 ms, at N = 100 334 / 279 ms.
# (Until issue 24 §3 the rule was N ≥ 64 whatever d.)
_PARALLEL_RESTART_MIN_WORK = 150_000


class Hyperparameters(NamedTuple):
    """What ``fit_hyperparameters`` found."""

    kernel: object        # a clone of the prior kernel, at the fitted θ
    noise: float
    theta: np.ndarray     # [kernel.theta, log noise], as the regressor keeps it (``_fitted_theta``)
    n_failed: int         # starts whose optimisation failed
    lml: float            # log p(y|X,θ) on the subset the starts ran on, where it is final (else None)


def _check_noise_bounds(noise_bounds, noise):
    """Log bounds of the noise (1, 2); a fixed noise gets equal bounds (L-BFGS-B keeps it in place)."""
    if isinstance(noise_bounds, str):
        if noise_bounds != "fixed":
            raise ValueError(f"noise_bounds must be a (low, high) pair or 'fixed', got noise_bounds={noise_bounds!r}")
        return np.array([[math.log(noise), math.log(noise)]])
    b = np.asarray(noise_bounds, dtype=float)
    if b.shape != (2,) or not np.all(np.isfinite(b)) or b[0] <= 0 or b[0] >= b[1]:
        raise ValueError(f"noise_bounds must be a positive (low, high) pair with low < high, "
                         f"got noise_bounds={noise_bounds!r}")
    return np.log(b)[None, :]


def _concurrent_factorisations(n):
    """How many L-BFGS-B starts on n points may run at once: each holds an n × n array (None: no limit).

    Matters when every start runs on all points of a large N (``hyperparameter_subset=None``): on 16
    cores, 11 starts at N = 20,000 would hold 35 GB."""
    available = _parallel.available_memory()
    if available is None:
        return None
    return max(1, int(solvers._EXACT_MEMORY_SHARE * available / (8.0 * n * n)) - (solvers._EXACT_FOOTPRINT_ARRAYS - 1))


def hyperparameter_subset(size, n, solver, optimizer, random_state):
    """Sorted indices of the points the L-BFGS-B starts run on, or None for all n.

    ``size`` is the regressor's ``hyperparameter_subset``: an int, None or "auto" (InvalidConfigError
    otherwise); "auto" takes _AUTO_SUBSET points above _AUTO_SUBSET_MIN_N, and always for a solver that
    does not refine on all points (cg)."""
    if isinstance(size, str) and size == "auto":
        size = _AUTO_SUBSET if not solver.refine_on_all_points or n > _AUTO_SUBSET_MIN_N else None
    elif size is not None and (not isinstance(size, numbers.Integral) or isinstance(size, bool) or size < 1):
        raise InvalidConfigError(f"hyperparameter_subset must be a positive integer, None or 'auto', got "
                                 f"hyperparameter_subset={size!r}", "hyperparameter_subset", size)
    if optimizer is None or size is None or size >= n:
        return None
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n, size=int(size), replace=False))


def warm_start(previous, n_kernel):
    """A previous fit's [θ, log noise] when it has the kernel's shape (a refit starts there too), else None."""
    return previous if previous is not None and previous.shape == (n_kernel + 1,) else None


def objective(kernel, X, y, prior):
    """f(θ) = −log p(y|X,θ) − log p(θ) and its gradient for L-BFGS-B (a failed θ gives a large value).

    θ = [kernel.theta, log noise]; ``prior`` is the ``theta_prior`` or None."""
    n_kernel = kernel.n_theta
    terms = kernel._likelihood_terms(X)

    def f(theta):
        try:
            lml, grad = mll.lml(terms, theta[:n_kernel], y, theta[n_kernel], True)
            if prior is not None:
                lp, dlp = prior(theta)
                lml += lp
                grad = grad + dlp
        except (NotPositiveDefiniteError, np.linalg.LinAlgError, FloatingPointError, ValueError):
            return _FAILED_OBJECTIVE, np.zeros_like(theta)
        if not (math.isfinite(lml) and np.all(np.isfinite(grad))):
            return _FAILED_OBJECTIVE, np.zeros_like(theta)
        return -lml, -grad

    return f


# the key of a thread's objective in _best_of_starts (a test replaces it, not threading.get_ident itself, which the
# threading module needs for every thread it starts and ends)
_thread_key = threading.get_ident


def _best_of_starts(kernel, X, y, starts, bounds, options, theta_prior, n_finalists):
    """(best [θ, log noise] or None, starts that failed, its objective −log p(y|θ) − log p(θ), inf if every start
    failed): L-BFGS-B from every start, raced if asked."""
    racing = n_finalists is not None and n_finalists < len(starts)
    screen_options = dict(_LBFGSB_OPTIONS, maxiter=_SCREEN_MAXITER) if racing else options

    # one objective (its likelihood terms) per thread, not per start: the terms hold each evaluation's state, so
    # threads must not share them, but the starts that one thread runs in turn may.  Building them is X's checks and
    # splits, 0.2-0.3 ms for ModLap and 0.9-1.6 ms for AdditiveFM (its parts') at 50-100 points, 3-5 likelihood
    # evaluations: a warm refit built three (two starts and the raced one's finish), a full refit twelve
    objectives = {}

    def run_start(start, options=screen_options):
        f = objectives.get(_thread_key())
        if f is None:
            f = objectives[_thread_key()] = objective(kernel, X, y, theta_prior)
        try:
            result = minimize(f, start, method="L-BFGS-B", jac=True, bounds=bounds, options=options)
        except (NotPositiveDefiniteError, np.linalg.LinAlgError, FloatingPointError, ValueError):
            return None
        if not (np.isfinite(result.fun) and result.fun < _FAILED_OBJECTIVE and np.all(np.isfinite(result.x))):
            return None
        return result

    # On a GPU the starts run one after another: in threads they would queue on the one device, each
    # holding two N × N buffers of its memory (fastfm._backends.cuda_linalg)
    on_gpu = kernel._device_module(X) is not None
    parallel = X.shape[0] ** 2 * X.shape[1] >= _PARALLEL_RESTART_MIN_WORK and not on_gpu
    with _linalg._serial_blas(X.shape[0]), thread_map(len(starts), parallel=parallel,
                                                      max_workers=_concurrent_factorisations(X.shape[0])) as run_all:
        results = run_all(run_start, starts)
        if racing:
            # the finalists: best screened objectives that stopped on the iteration cap (a start
            # that met the convergence test within the screen is already final)
            order = sorted((i for i, r in enumerate(results) if r is not None), key=lambda i: results[i].fun)
            finalists = [i for i in order[:n_finalists] if results[i].nit >= _SCREEN_MAXITER]
            refined = run_all(lambda i: run_start(results[i].x, _LBFGSB_OPTIONS), finalists)
            for i, result in zip(finalists, refined):
                if result is not None and result.fun <= results[i].fun:
                    results[i] = result
    best_theta, best_value, n_failed = None, np.inf, 0
    for result in results:          # in start order: the choice is deterministic
        if result is None:
            n_failed += 1
        elif result.fun < best_value:
            best_theta, best_value = np.array(result.x, dtype=float), float(result.fun)
    return best_theta, n_failed, best_value


def _fit_on_all(kernel, X, y, noise, noise_log_bounds, *, theta_prior, n_restarts, n_finalists, random_state,
                warm_start, noise_restarts=0):
    """Every start on all of X: the kernel's θ, the previous optimum, ``n_restarts`` random ones (FitError if
    all fail), then ``noise_restarts`` starts from the best optimum with its noise raised (``_noise_restarts``)."""
    kernel = kernel.clone_with_theta(kernel.theta)
    n_kernel = kernel.n_theta
    lo, hi = noise_log_bounds[0]
    log_noise = min(max(math.log(noise), lo), hi)
    bounds = np.vstack([kernel.bounds, noise_log_bounds])
    starts = [np.append(np.clip(kernel.theta, bounds[:n_kernel, 0], bounds[:n_kernel, 1]), log_noise)]
    if warm_start is not None:
        starts.append(np.clip(warm_start, bounds[:, 0], bounds[:, 1]))  # warm start of a refit
    rng = np.random.default_rng(random_state)
    if n_restarts:
        # restarts come from the prior when it can be sampled (where MAP-II optima lie),
        # else from restart_distribution
        distribution = theta_prior if hasattr(theta_prior, "sample") else restart_distribution(kernel)
        starts.extend(distribution.sample(rng, n_restarts, bounds))
    best_theta, n_failed, best_value = _best_of_starts(kernel, X, y, starts, bounds, _LBFGSB_OPTIONS, theta_prior,
                                                       n_finalists)
    if best_theta is None:
        raise FitError(
            f"all {len(starts)} L-BFGS-B starts failed to evaluate the log marginal likelihood "
            f"of {type(kernel).__name__} on N={X.shape[0]} points (non positive definite or "
            "non-finite kernel matrix everywhere tried); the previous fit is kept. Check the kernel "
            "bounds and raise the noise lower bound")
    if noise_restarts:
        best_theta = _noise_restarts(kernel, X, y, best_theta, best_value, noise_restarts, bounds, theta_prior)
    kernel.theta = best_theta[:n_kernel]
    log_noise = float(best_theta[n_kernel])
    return Hyperparameters(kernel, math.exp(log_noise), np.append(kernel.theta, log_noise), n_failed, None)


# A noise restart begins at the optimum's kernel θ with its noise raised to at least this (standardised y) and
# to ten times the optimum's, then ten times more at each further restart (``noise_restarts``).
NOISE_RESTART_FLOOR = 1e-3


def _noise_restarts(kernel, X, y, best_theta, best_value, count, bounds, theta_prior):
    """The best of ``best_theta`` (objective ``best_value``) and ``count`` L-BFGS-B runs, each from the best so far
    with its noise raised.

    Why: with many hyperparameters (AdditiveFM: 106 on the 15-column regression set) the starts end in local optima
    far apart (log ML 24, 280 and 324 nats below one another at N = 300), and the best of them is often not a
    stationary point that L-BFGS-B can leave: a start from it again stops at once.  Raising the noise smooths the
    likelihood and lets the kernel's hyperparameters reorganise before the noise comes back down: on the regression
    set at N = 300 one such start gained 12 and 59 nats on two of four data sets (test RMSE 0.270 → 0.209 on one;
    docs/benchmarks/large-n.md, "A restart of the noise").  A restart is kept only if it ends higher (the objective,
    prior included, never gets worse)."""
    n_kernel = kernel.n_theta
    hi = bounds[n_kernel, 1]
    for i in range(count):
        start = best_theta.copy()
        start[n_kernel] = min(max(best_theta[n_kernel] + math.log(10.0), math.log(NOISE_RESTART_FLOOR))
                              + i * math.log(10.0), hi)
        if start[n_kernel] <= best_theta[n_kernel]:
            continue          # the noise is at its upper bound already
        theta, _, value = _best_of_starts(kernel, X, y, [start], bounds, _LBFGSB_OPTIONS, theta_prior, None)
        if value < best_value:
            best_theta, best_value = theta, value
    return best_theta


def _fit_on_subset(kernel, X, y, subset, noise, noise_log_bounds, **starts):
    """Every start on X[subset], then the subset's own factorisation, which gives log p there (the value a
    fit that does not refine reports) and warns or raises as a fit on those points would."""
    X, y = np.ascontiguousarray(X[subset]), y[subset]
    fitted = _fit_on_all(kernel, X, y, noise, noise_log_bounds, **starts)
    _, _, lml, _ = ExactSolver.fit(fitted.kernel, X, y, fitted.noise)
    _LOGGER.info("fastfm GP hyperparameters: L-BFGS-B starts on %d points, log ML %.6g there", len(subset), lml)
    return fitted._replace(lml=lml)


def fit_hyperparameters(kernel, X, y, noise, noise_log_bounds, *, optimizer, theta_prior, n_restarts, n_finalists,
                        random_state, warm_start, subset, refine, noise_restarts=0):
    """The hyperparameters of an exact or matrix-free fit of standardised y at X.

    Parameters
    ----------
    kernel : Kernel
        The prior kernel; not modified (its θ is the first start).
    noise : float
        The initial noise (the fixed one with ``optimizer=None``); ``noise_log_bounds`` of shape (1, 2).
    optimizer, theta_prior, n_restarts, n_finalists, random_state, noise_restarts :
        The regressor's parameters.
    warm_start : array of shape (n_theta + 1,) or None
        The previous fit's optimum, one more start.
    subset : int array or None
        From :func:`hyperparameter_subset`: the starts run on X[subset] (None: on all points).
    refine : bool
        The solver's ``refine_on_all_points``.  True (exact): the subset's optimum is refined by one
        L-BFGS-B run on all points (at most _REFINE_OPTIONS iterations).  False (cg): the subset's
        optimum is final, and so is its log ML (``lml``); with no subset the "subset" is all points.

    Returns
    -------
    Hyperparameters
    """
    n_kernel = kernel.n_theta
    if optimizer is None:
        kernel = kernel.clone_with_theta(kernel.theta)
        if not refine:
            return Hyperparameters(kernel, float(noise), np.append(kernel.theta, math.log(noise)), 0, float("nan"))
        lo, hi = noise_log_bounds[0]
        log_noise = min(max(math.log(noise), lo), hi)
        return Hyperparameters(kernel, math.exp(log_noise), np.append(kernel.theta, log_noise), 0, None)
    starts = dict(theta_prior=theta_prior, n_restarts=n_restarts, n_finalists=n_finalists, random_state=random_state,
                  warm_start=warm_start, noise_restarts=noise_restarts)
    if not refine:
        fitted = _fit_on_subset(kernel, X, y, np.arange(X.shape[0]) if subset is None else subset, noise,
                                noise_log_bounds, **starts)
        return fitted._replace(theta=np.append(fitted.kernel.theta, math.log(fitted.noise)))
    if subset is None:
        return _fit_on_all(kernel, X, y, noise, noise_log_bounds, **starts)
    # subset, then refine: the starts on the subset, their best refined on all points
    tuned = _fit_on_subset(kernel, X, y, subset, noise, noise_log_bounds, **starts)
    kernel = kernel.clone_with_theta(kernel.theta)
    bounds = np.vstack([kernel.bounds, noise_log_bounds])
    start = np.clip(tuned.theta, bounds[:, 0], bounds[:, 1])
    best_theta, n_failed, _ = _best_of_starts(kernel, X, y, [start], bounds, _REFINE_OPTIONS, theta_prior, n_finalists)
    if best_theta is None:
        # the refinement failed on all N points: keep the subset's optimum (the final factorisation
        # then reports a θ whose matrix cannot be factorised)
        best_theta = start
    kernel.theta = best_theta[:n_kernel]
    log_noise = float(best_theta[n_kernel])
    return Hyperparameters(kernel, math.exp(log_noise), np.append(kernel.theta, log_noise), tuned.n_failed + n_failed,
                           None)
