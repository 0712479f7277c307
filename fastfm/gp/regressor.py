"""The Gaussian process regressor on encoded mixed-space arrays (SPEC §5): the scikit-learn estimator.

The regressor follows scikit-learn's ``GaussianProcessRegressor``: ``__init__``
only stores its arguments, ``fit`` sets the trailing-underscore attributes, and
the kernel is only ever touched through its ``theta``/``bounds`` contract
(``fastfm.kernels.base``).  The hyperparameter vector the regressor optimises
is ``[kernel.theta, log noise]``.

The estimator checks its inputs and orchestrates; the work is elsewhere in ``fastfm.gp``:
``fitting`` (the hyperparameters: multi-start L-BFGS-B, racing, subset-then-refine), ``solvers``
(the exact Cholesky solver and the matrix-free PCG one, their posteriors), ``mll`` (the exact log
marginal likelihood and its gradient), ``_data`` (encoding X, transforming y).  The class itself
writes the fitted state (``fit``); ``_PredictionMixin`` reads it (``predict``, ``sample_y``, the
posterior protocol) and ``_RegressorMixin`` is the scikit-learn protocol (parameters, ``score``, tags).

Units
-----
``y`` is optionally log-transformed and then standardised (``normalize_y``);
the GP models the *standardised latent* f with a zero prior mean, and the
noise variance ``noise_`` lives in those standardised units.  ``predict``
returns the original units, ``predict_standardized*`` the latent units the
acquisition functions work in.

Numerics (GPML = Rasmussen & Williams 2006)
-------------------------------------------
* Prediction and likelihood follow GPML Alg. 2.1 with one Cholesky factor.
* The likelihood gradient is GPML Eq. 5.9,
  ∂ log p(y|X,θ)/∂θ_j = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ_j),
  evaluated as the kernel's fused ``gradient_reduction(X, W)`` with
  W = ½(ααᵀ − K⁻¹): the N×N×n_theta tensor is never formed.
* A Cholesky that fails is retried with an escalating diagonal jitter
  (``_linalg._JITTER_SCHEDULE``); ``fit`` warns with :class:`JitterWarning` when the
  final model needed one.
"""
import copy
import logging
import math
import numbers

import numpy as np

from ..exceptions import InvalidConfigError, NotFittedError, sklearn_compatible
from . import _data, _warnings, fitting, mll, solvers
from ._linalg import JitterWarning
from .solvers import cholesky
from .solvers.cg import CGSolver
from .solvers.cholesky import ExactPosterior, ExactSolver

__all__ = ["GaussianProcessRegressor", "JitterWarning"]

_LOGGER = logging.getLogger(__name__)


class _RegressorMixin:
    """The scikit-learn estimator protocol around ``_PARAM_NAMES`` (what sklearn's ``BaseEstimator`` and
    ``RegressorMixin`` provide, without depending on scikit-learn): parameters by name, so that
    ``sklearn.base.clone``, ``GridSearchCV`` and ``cross_val_score`` work, the R² score and the tags."""

    _PARAM_NAMES = ()

    def get_params(self, deep=True):
        """The constructor arguments by name (``deep`` is accepted for scikit-learn compatibility)."""
        return {name: getattr(self, name) for name in self._PARAM_NAMES}

    def set_params(self, **params):
        """Set constructor arguments by name; returns self."""
        for name, value in params.items():
            if name not in self._PARAM_NAMES:
                raise ValueError(f"unknown parameter {name!r} for {type(self).__name__}; "
                                 f"valid ones are {list(self._PARAM_NAMES)}")
            setattr(self, name, value)
        return self

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R² of ``predict(X)`` against y, as scikit-learn's regressors.

        ``cross_val_score`` and ``GridSearchCV`` use it by default.  1 is a perfect fit; a constant y
        scores 1 when predicted exactly and 0 otherwise (scikit-learn's ``r2_score``)."""
        y = np.asarray(y, dtype=np.float64)
        prediction = self.predict(X)
        if y.shape != prediction.shape:
            raise InvalidConfigError(f"y must have one value per row of X ({prediction.shape[0]}), got shape "
                                     f"{y.shape}", "y")
        weight = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != y.shape:
            raise InvalidConfigError(f"sample_weight must have shape {y.shape}, got {weight.shape}",
                                     "sample_weight")
        residual = float(np.sum(weight * (y - prediction) ** 2))
        total = float(np.sum(weight * (y - np.average(y, weights=weight)) ** 2))
        if total == 0.0:
            return 1.0 if residual == 0.0 else 0.0
        return 1.0 - residual / total

    # scikit-learn's view of the estimator: a regressor (is_regressor, the default scorer, CV splitting)
    _estimator_type = "regressor"     # scikit-learn < 1.6

    def __sklearn_tags__(self):
        """Estimator tags for scikit-learn ≥ 1.6 (only scikit-learn calls this, so it is importable)."""
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags
        # requires_fit=False: before ``fit`` the regressor predicts from the prior (documented, and what
        # scikit-learn's own GaussianProcessRegressor does and tags the same way), so ``predict`` does not raise
        # NotFittedError then; the methods that need a fit do (``_check_fitted``)
        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True),
                    regressor_tags=RegressorTags(), non_deterministic=self.random_state is None,
                    requires_fit=False, input_tags=InputTags(sparse=False))


class _PredictionMixin:
    """What a fitted regressor computes from its fitted attributes, without changing them: ``predict`` and
    ``sample_y`` in the units of y, and the posterior protocol of ``fastfm.optim`` in the standardised latent
    units (``predict_standardized*``), each delegated to the view of the solver it was fitted with
    (``solvers.posterior``).  Before ``fit`` these are the prior's."""

    def _check_fitted(self):
        if not hasattr(self, "alpha_"):
            # NotFittedError is an AttributeError, as this error was before it existed
            raise sklearn_compatible(NotFittedError)("this GaussianProcessRegressor is not fitted yet; call "
                                                     "fit(X, y) first")

    def _is_fitted(self):
        return hasattr(self, "alpha_")

    def predict_standardized(self, X):
        """Predictive mean and std of the standardised latent f (noise excluded).

        Before ``fit`` this is the prior: mean 0, std sqrt(k(x, x)).

        Parameters
        ----------
        X : array of shape (M, n_dims)

        Returns
        -------
        mu, sigma : ndarrays of shape (M,)
        """
        if not self._is_fitted():
            X = self._as_array(X, validate=False)
            return np.zeros(X.shape[0]), np.sqrt(np.maximum(self.kernel.diag(X), 0.0))
        return self._posterior().predict_standardized(self._as_array(X, validate=False))

    def predict_standardized_from_cross(self, K_cross, k_diag):
        """Predictive mean and std of the standardised latent f from precomputed kernel values.

        Parameters
        ----------
        K_cross : array of shape (M, N)
            k(X*, X_train_), e.g. from ``kernel_.neighbour_gram``.
        k_diag : array of shape (M,)
            k(x*, x*).

        Returns
        -------
        mu, sigma : ndarrays of shape (M,)
        """
        self._check_fitted()
        self._require_exact("predict_standardized_from_cross")
        return ExactPosterior(self).predict_standardized_from_cross(K_cross, k_diag)

    def predict_standardized_with_input_gradient(self, X):
        """Predictive mean/std of the standardised latent f and their derivatives w.r.t. the continuous inputs.

        Parameters
        ----------
        X : array of shape (M, n_dims)

        Returns
        -------
        mu, sigma : ndarrays of shape (M,)
        dmu, dsigma : ndarrays of shape (M, n_continuous)
            ∂mu/∂X[:, d] and ∂sigma/∂X[:, d] for the encoded continuous columns
            d (the first n_continuous columns).  Where sigma = 0 its derivative
            is set to 0.
        """
        self._check_fitted()
        self._require_exact("predict_standardized_with_input_gradient")
        return ExactPosterior(self).predict_standardized_with_input_gradient(self._as_array(X, validate=False))

    def _posterior(self):
        return solvers.posterior(self)

    def _predict_mean(self, X):
        """Mean of the standardised latent f at encoded X, K(X*, X) α, by the matrix-free product (either solver)."""
        return self._posterior().mean(X)

    def predict(self, X, return_std=False, return_cov=False):
        """Predictive distribution in the original units of y.

        Parameters
        ----------
        X : array of shape (M, n_dims), or a list of config dicts when ``space`` is set
        return_std : bool
            Also return the predictive std of the latent function (noise excluded).
        return_cov : bool
            Also return the predictive covariance, shape (M, M).  Not together with ``return_std``.

        Returns
        -------
        mean : ndarray of shape (M,)
            y_mean_ + y_std_·mu; with ``log_transform_y``, t⁻¹ of that: the predictive median of y.
        std : ndarray of shape (M,), only with ``return_std``
            y_std_·sigma; with ``log_transform_y`` the std of t(y) (natural log units).
        cov : ndarray of shape (M, M), only with ``return_cov``
            Same units as ``std`` squared.
        """
        if return_std and return_cov:
            raise ValueError("at most one of return_std and return_cov can be True")
        X = self._as_array(X)
        fitted = self._is_fitted()
        y_mean, y_std = (self.y_mean_, self.y_std_) if fitted else (0.0, 1.0)
        if fitted and not (return_std or return_cov):
            # the mean alone: K(X*, X) α by the matrix-free product (no M×N block, no triangular solve)
            return self._untransform_mean(y_mean + y_std * self._predict_mean(X))
        if return_cov:
            mu, cov = self._standardized_mean_and_cov(X, "predict(return_cov=True)")
            mean = y_mean + y_std * mu
            out_cov = cov * y_std ** 2
        else:
            mu, sigma = self.predict_standardized(X)
            mean = y_mean + y_std * mu
        if fitted:
            mean = self._untransform_mean(mean)
        if return_cov:
            return mean, out_cov
        if return_std:
            return mean, sigma * y_std
        return mean

    def _standardized_mean_and_cov(self, X, what):
        """Mean and full covariance of the standardised latent f at encoded X (the prior before ``fit``)."""
        if not self._is_fitted():
            return np.zeros(X.shape[0]), self.kernel(X)
        self._require_exact(what)
        return ExactPosterior(self).mean_and_cov(X)

    def sample_y(self, X, n_samples=1, random_state=0):
        """Joint draws of the latent function at X from the posterior (the prior before ``fit``).

        Parameters
        ----------
        X : array of shape (M, n_dims), or a list of config dicts when ``space`` is set
        n_samples : int, default 1
        random_state : None, int or numpy Generator, default 0

        Returns
        -------
        samples : ndarray of shape (M, n_samples)
            In the units of y (as scikit-learn's ``sample_y``); with ``log_transform_y`` each draw of t(f)
            is mapped back by t⁻¹.  Needs the exact solver (the full M × M covariance).
        """
        if not isinstance(n_samples, numbers.Integral) or isinstance(n_samples, bool) or n_samples < 1:
            raise InvalidConfigError(f"n_samples must be a positive integer, got n_samples={n_samples!r}",
                                     "n_samples", n_samples)
        X = self._as_array(X)
        mu, cov = self._standardized_mean_and_cov(X, "sample_y")
        # cov is PSD up to rounding (and singular at repeated points): its eigendecomposition with the
        # negative rounding clipped is a square root that never fails, where a Cholesky would need jitter
        eigenvalues, eigenvectors = np.linalg.eigh(cov)
        root = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
        rng = np.random.default_rng(random_state)
        draws = mu[:, None] + root @ rng.standard_normal((X.shape[0], int(n_samples)))
        if not self._is_fitted():
            return draws
        return self._untransform_mean(self.y_mean_ + self.y_std_ * draws)

    def _untransform_mean(self, t):
        """Back to the original units of y from the (de-standardised) modelled scale."""
        # fitted before y_transform_ existed: the option was the transform
        transform = getattr(self, "y_transform_", self.log_transform_y)
        if transform == "shift":
            return self.y_shift_ + self.y_log_scale_ * np.expm1(t)
        if transform == "copula":
            # the observed (score, y) pairs joined by straight lines, flat beyond the smallest and largest
            scores, values = self.y_copula_
            return np.interp(t, scores, values)
        if transform:
            return np.exp(t)
        return t

    def _require_exact(self, what):
        if getattr(self, "solver_", "cholesky") != "cholesky":
            raise InvalidConfigError(f"{what} needs the exact solver, but this model was fitted with "
                                     f"solver_={self.solver_!r}; refit with method='cholesky'", "method", self.method)


class GaussianProcessRegressor(_PredictionMixin, _RegressorMixin):
    """Exact GP regression with hyperparameters by type-II maximum likelihood.

    Parameters
    ----------
    kernel : fastfm.kernels.Kernel
        Prior covariance; not modified (``fit`` works on a clone, ``kernel_``).
        Its current ``theta`` is the first L-BFGS-B start.
    space : Space or None
        When given, ``fit``/``predict`` also accept lists of config dicts
        (encoded with ``space.encode``) and validate encoded arrays.
    optimizer : "fmin_l_bfgs_b" or None
        None keeps the kernel's hyperparameters and ``noise`` fixed.
    n_restarts : int, default 10
        Extra L-BFGS-B starts, after the start at the kernel's current theta,
        drawn from ``theta_prior`` when it has a ``sample`` method, else from
        :func:`restart_distribution` (not uniformly in the wide log bounds:
        most such draws start on the likelihood's flat "everything is noise"
        plateau).  On a refit of the same estimator on other data the
        previous optimum is one more start (a refit on the same data repeats
        the first fit: ``fit`` is idempotent).
    noise : float, default 1e-4
        Initial (or, with ``optimizer=None``/``noise_bounds="fixed"``, fixed)
        noise variance, in standardised-y units.
    noise_bounds : (low, high) or "fixed", default (1e-6, 1.0)
        Bounds of the noise variance (standardised units).  The lower bound is
        also the floor that keeps duplicate inputs factorisable.
    normalize_y : bool, default True
        Standardise y (after the optional log) to zero mean and unit variance;
        a constant y or a single observation uses a unit scale.
    log_transform_y : {False, True, "shift", "copula", "auto"}, default False
        Model t(y) instead of y (the option's name is that of its first values): True gives
        t(y) = log(y) and needs every y > 0 (InvalidValueError naming the first bad value
        otherwise); "shift" gives t(y) = log(1 + (y − min y)/s), defined for any y and
        scale-free (``y_shift_`` = min y, ``y_log_scale_`` = s = min(std y, median y − min y), at least
        a tenth of the std of y clipped at its 90th percentile; std y where the median is the minimum, 1 if y
        is constant; ``fastfm.gp._data.shift_scale``); "copula" gives the
        normal scores of the ranks of y, Φ⁻¹((rank − ½)/n), which no outlier or heavy tail can
        squash (``y_copula_`` holds the sorted (score, y) pairs that invert it); "auto" is
        "copula" when the largest y lies more than ``AUTO_COPULA_SPAN`` interquartile ranges
        above the median and "shift" otherwise (``y_transform_`` says which was used).
        ``predict`` then returns t⁻¹ of the predictive mean of t(y), i.e. the predictive
        *median* of y (t is monotone; the copula's t⁻¹ interpolates the observed values), while
        std/cov stay in the units of t(y).  ``predict_standardized*`` and the incumbent
        ordering are unaffected (t is increasing).
    random_state : None, int or numpy Generator
        Seeds the random restarts; an int makes ``fit`` deterministic.
    copy_X_train : bool, default True
        Store a copy of X (otherwise a reference).
    theta_prior : callable or None, default None
        Optional log prior over ``[kernel.theta, log noise]``: a callable
        returning (log p(θ), ∂ log p/∂θ), e.g. :class:`GaussianLogPrior`.
        ``fit`` then maximises log p(y|θ) + log p(θ) (MAP-II); the reported
        ``log_marginal_likelihood_value_`` excludes the prior.
    noise_restarts : int, default 1
        L-BFGS-B runs after the starts, each from the best optimum so far with
        its noise raised (to ten times its value and at least 1e-3 of y's
        variance, ten times more at each further one), kept where the objective
        ends higher.  With many hyperparameters (``AdditiveFM``) the best start
        often ends at a point L-BFGS-B cannot leave; raising the noise lets the
        kernel's hyperparameters reorganise (docs/benchmarks/large-n.md, "A
        restart of the noise").  The BO loop runs none (``gp_options``).
    n_finalists : int or None, default None
        Race the starts: each runs at most ``_SCREEN_MAXITER`` (10) L-BFGS-B
        iterations, then only the ``n_finalists`` with the best objective
        continue to convergence (about half the likelihood evaluations; the
        same optimum in 23 of 24 measured fits).  None runs every start to
        convergence.
    method : {"auto", "cholesky", "cg"}, default "auto"
        Linear-algebra solver.  "cholesky": exact (GPML Alg. 2.1), O(N²) memory.
        "cg": matrix-free (``fastfm.gp.solvers.cg``): preconditioned conjugate
        gradients with kernel matrix-vector products computed on the fly,
        hyperparameters fitted exactly on a random subset of
        ``hyperparameter_subset`` points; predictive std from the DTC
        approximation on the preconditioner's pivots.  "auto": "cholesky"
        for N ≤ ``max_exact_n``, else "cg".  The choice is ``solver_``.
    max_exact_n : int or "auto", default "auto"
        Largest N that ``method="auto"`` factorises exactly.  "auto": 20,000, or less where the
        memory available at ``fit`` (MemAvailable, or the room under a container's cgroup limit) holds
        fewer than three N × N float64 arrays in 75% of it (e.g. 15,800 with 8 GB available).  The
        value used is ``max_exact_n_``.
    cg_options : dict or None
        Overrides of ``fastfm.gp.solvers.cg.DEFAULT_CG_OPTIONS``: tol (relative
        PCG residual, default 1e-2), max_iter, rank (pivoted-Cholesky
        preconditioner rank; default None = ``preconditioner.default_rank(N)``,
        N/10 between 300 and 4,000: the fitted model keeps two rank × N
        float64 arrays, 3.2 GB at N = 50,000), n_probes, block_size
        (the PITC block size of the preconditioner, 1 for the FITC diagonal;
        default None = ``preconditioner.default_block_size(N)``, 4,000 up to
        N = 50,000: the fitted model keeps the blocks' Cholesky factors, an
        N × 4,000 float64 array in all, 1.6 GB at N = 50,000),
        precision ("auto", "double" or "mixed": single-precision kernel values
        inside PCG's products, certified by a double-precision residual, and
        then in the predictive mean's K(X*, X)α; "auto" takes "mixed" for
        tol ≥ 1e-4 on the cpp backend).  The solve's
        iterations are in ``cg_info_``.
    hyperparameter_subset : int, None or "auto", default "auto"
        Large-N hyperparameter strategy.  An int m < N: the L-BFGS-B starts
        (the kernel's θ plus ``n_restarts`` random ones) maximise the exact
        log marginal likelihood of a random subset of m training points
        (seeded by ``random_state``); the exact solver then refines the best
        of them by one more L-BFGS-B run on all N points (at most 25
        iterations: each is an N-point Cholesky and inverse), while the
        matrix-free solver uses it as it is (a refinement step at N = 50,000
        would cost more than its whole fit on a CPU).  None: every start runs
        on all N points.  "auto": 2,000 points when N > 4,000 or the solver
        is "cg", else all points.  ``hyperparameter_subset_`` reports the
        points the starts used.

    Attributes
    ----------
    kernel_ : Kernel
        Fitted clone of ``kernel``.
    noise_ : float
        Fitted noise variance (standardised units).
    X_train_ : ndarray of shape (N, n_dims)
    n_features_in_ : int
        Columns of X in ``fit`` (n_dims); ``predict`` needs as many.
    y_train_ : ndarray of shape (N,)
        Standardised (and, if asked, log-transformed) targets.
    y_mean_, y_std_ : float
        Standardisation: ``y_train_ = (t(y) − y_mean_)/y_std_``, t the ``log_transform_y`` map or identity.
    y_transform_ : False, True, "shift" or "copula"
        The transform of y used (``log_transform_y`` with "auto" resolved).
    y_copula_ : (ndarray, ndarray) or None
        The "copula" transform's sorted (normal score, y) pairs.
    y_shift_, y_log_scale_ : float
        Parameters of the "shift" log transform (0.0 and 1.0 otherwise).
    alpha_ : ndarray of shape (N,)
        (K + noise·I)⁻¹ ``y_train_``.
    L_ : ndarray of shape (N, N)
        Lower Cholesky factor of K + noise·I + jitter·I.
    jitter_ : float
        Jitter added to the diagonal of the final factor (0.0 when none).
    log_marginal_likelihood_value_ : float
        log p(``y_train_`` | X, θ) at the fitted hyperparameters (exact solver); with ``solver_ == "cg"``
        the exact value on the hyperparameter subset (the full-N value is not computed).
    hyperparameter_subset_ : int
        Points the L-BFGS-B starts ran on: N when they used all of them, 0 with ``optimizer=None``
        (see ``hyperparameter_subset``).
    solver_ : {"cholesky", "cg"}
        The solver ``fit`` used (``method``, or what ``method="auto"`` picked for this N).  With
        ``method="auto"`` an exact fit that runs out of memory (MemoryError) falls back to "cg" with
        a RuntimeWarning.
    max_exact_n_ : int
        The ``max_exact_n`` this fit compared N with (``max_exact_n="auto"`` resolved).
    cg_info_ : fastfm.gp.solvers._pcg.CGInfo or None
        PCG iterations and final relative residuals (``solver_ == "cg"`` only).
    n_restarts_failed_ : int
        Starts whose optimisation failed (skipped).
    best_y_standardized_ : float
        min(``y_train_``): the incumbent for expected improvement (minimisation).
    """

    def __init__(self, kernel, space=None, optimizer="fmin_l_bfgs_b", n_restarts=10, noise=1e-4,
                 noise_bounds=(1e-6, 1.0), normalize_y=True, log_transform_y=False, random_state=None,
                 copy_X_train=True, theta_prior=None, n_finalists=None, method="auto", max_exact_n="auto",
                 cg_options=None, hyperparameter_subset="auto", noise_restarts=1):
        self.kernel = kernel
        self.space = space
        self.optimizer = optimizer
        self.n_restarts = n_restarts
        self.noise = noise
        self.noise_bounds = noise_bounds
        self.normalize_y = normalize_y
        self.log_transform_y = log_transform_y
        self.random_state = random_state
        self.copy_X_train = copy_X_train
        self.theta_prior = theta_prior
        self.n_finalists = n_finalists
        self.method = method
        self.max_exact_n = max_exact_n
        self.cg_options = cg_options
        self.hyperparameter_subset = hyperparameter_subset
        self.noise_restarts = noise_restarts

    # a model pickled before the parameter existed has no noise_restarts of its own: a refit runs as its fit did
    noise_restarts = 0

    # scikit-learn estimator protocol: the constructor arguments, so that sklearn.base.clone works (the
    # kernel itself is deep-copied: Kernel.__sklearn_clone__)
    _PARAM_NAMES = ("kernel", "space", "optimizer", "n_restarts", "noise", "noise_bounds", "normalize_y",
                    "log_transform_y", "random_state", "copy_X_train", "theta_prior", "n_finalists", "method",
                    "max_exact_n", "cg_options", "hyperparameter_subset", "noise_restarts")

    # ------------------------------------------------------------------ inputs
    def _as_array(self, X, name="X", validate=True, check_width=True):
        """Encoded float64 array (N, n_dims) from an array or, with a space, config dicts (``_data.as_array``);
        validated, it must have the training data's ``n_features_in_`` columns (unless ``check_width`` is off)."""
        X = _data.as_array(X, self.space, self.kernel, name, validate)
        if validate and check_width:
            _data.check_n_features(X, getattr(self, "n_features_in_", None), name)
        return X

    def _transform_y(self, y):
        """(y_train_, y_mean_, y_std_, y_shift_, y_log_scale_, y_transform_, y_copula_) with the checks of ``fit``
        (``_data.transform_y``)."""
        return _data.transform_y(y, self.log_transform_y, self.normalize_y)

    def _check_params(self):
        if not _data.is_y_transform(self.log_transform_y):
            raise ValueError("log_transform_y must be False, True, 'shift', 'copula' or 'auto', "
                             f"got log_transform_y={self.log_transform_y!r}")
        if self.optimizer not in ("fmin_l_bfgs_b", None):
            raise ValueError(f"optimizer must be 'fmin_l_bfgs_b' or None, got optimizer={self.optimizer!r}")
        if not isinstance(self.n_restarts, numbers.Integral) or self.n_restarts < 0:
            raise ValueError(f"n_restarts must be a non-negative integer, got n_restarts={self.n_restarts!r}")
        if (isinstance(self.noise_restarts, bool) or not isinstance(self.noise_restarts, numbers.Integral)
                or self.noise_restarts < 0):
            raise ValueError("noise_restarts must be a non-negative integer, "
                             f"got noise_restarts={self.noise_restarts!r}")
        if self.n_finalists is not None and (not isinstance(self.n_finalists, numbers.Integral)
                                             or self.n_finalists < 1):
            raise ValueError(f"n_finalists must be a positive integer or None, got n_finalists={self.n_finalists!r}")
        noise = float(self.noise)
        if not (math.isfinite(noise) and noise > 0):
            raise ValueError(f"noise must be positive and finite, got noise={self.noise!r}")
        return noise, fitting._check_noise_bounds(self.noise_bounds, noise)

    def _lml(self, terms, theta, y, log_noise, eval_gradient):
        """``mll.lml``: kept for callers of the private method (asv's bench_gp, cuda_bench, the peers' scripts)."""
        return mll.lml(terms, theta, y, log_noise, eval_gradient)

    # ------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Fit the GP: standardise y, maximise the log marginal likelihood, factorise.

        With a ``hyperparameter_subset`` smaller than N (the default above 4,000 points) the
        L-BFGS-B starts run on that many random points and the best is refined on all N.

        Parameters
        ----------
        X : array of shape (N, n_dims), or a list of N config dicts when ``space`` is set
            Encoded inputs (``Space.encode``).
        y : array of shape (N,)
            Finite targets (to be minimised, in BO).

        Returns
        -------
        self

        Raises
        ------
        InvalidValueError
            A non-finite y (or y ≤ 0 with ``log_transform_y=True``), naming index and value.
        FitError
            Every L-BFGS-B start failed; the previously fitted state is untouched.
        NotPositiveDefiniteError
            The final kernel matrix cannot be factorised (e.g. ``optimizer=None``
            with hyperparameters that give a NaN or indefinite matrix).
        """
        noise, noise_log_bounds = self._check_params()
        X = self._as_array(X, check_width=False)
        y_train, y_mean, y_std, y_shift, y_log_scale, y_transform_name, y_copula = self._transform_y(y)
        if X.shape[0] != y_train.shape[0]:
            raise InvalidConfigError(f"X has {X.shape[0]} rows but y has {y_train.shape[0]} values", "y")
        if X.shape[0] == 0:
            raise InvalidConfigError("fit needs at least one observation, got X with 0 rows", "X")
        if self.copy_X_train:
            X = X.copy()
        solver, max_exact_n = solvers.select_solver(self.method, self.max_exact_n, self.cg_options, X.shape[0])
        y_transform = (y_mean, y_std, y_shift, y_log_scale, y_transform_name, y_copula)
        # fit works on a copy: using a kernel fills its caches, and fit leaves its parameters as they were
        kernel = copy.deepcopy(self.kernel)
        if solver is ExactSolver:
            try:
                return self._fit_with(solver, kernel, X, y_train, y_transform, noise, noise_log_bounds, max_exact_n)
            except MemoryError:
                if self.method != "auto":
                    raise
                # the N × N arrays did not fit after all (max_exact_n_ is an estimate): nothing fitted was
                # replaced yet, and the matrix-free solver needs O(N·rank) memory
                _warnings.warn(f"fastfm: the exact GP fit of N={X.shape[0]} points ran out of memory; fitting "
                               "with the matrix-free solver (method='cg') instead", RuntimeWarning)
                solver = CGSolver
        return self._fit_with(solver, kernel, X, y_train, y_transform, noise, noise_log_bounds, max_exact_n)

    def _fit_with(self, solver, kernel, X, y_train, y_transform, noise, noise_log_bounds, max_exact_n):
        """``fit`` with one solver: the hyperparameters (``fitting``), then the solver's fit at them; only
        when both succeeded is the fitted state replaced."""
        n = X.shape[0]
        # a refit on new data also starts at the previous optimum; on the same data it repeats the first fit
        previous = None if _data.same_data(X, y_train, getattr(self, "X_train_", None),
                                           getattr(self, "y_train_", None)) else getattr(self, "_fitted_theta", None)
        subset = fitting.hyperparameter_subset(self.hyperparameter_subset, n, solver, self.optimizer, self.random_state)
        fitted = fitting.fit_hyperparameters(
            kernel, X, y_train, noise, noise_log_bounds, optimizer=self.optimizer, theta_prior=self.theta_prior,
            n_restarts=self.n_restarts, n_finalists=self.n_finalists, random_state=self.random_state,
            warm_start=fitting.warm_start(previous, kernel.n_theta), subset=subset,
            refine=solver.refine_on_all_points, noise_restarts=self.noise_restarts)
        if solver is ExactSolver:
            # the final factorisation (GPML Alg. 2.1, lines 2-3), warning if jitter was needed
            L, jitter, lml, alpha = ExactSolver.fit(fitted.kernel, X, y_train, fitted.noise)
            info = preconditioner = None
        else:
            alpha, info, preconditioner = CGSolver.fit(fitted.kernel, X, y_train, fitted.noise, self.cg_options)
            L, jitter, lml = None, 0.0, float(fitted.lml)

        self.kernel_ = fitted.kernel
        self.noise_ = float(fitted.noise)
        self.X_train_ = X
        self.n_features_in_ = X.shape[1]
        self.y_train_ = y_train
        self.y_mean_, self.y_std_, self.y_shift_, self.y_log_scale_, self.y_transform_, self.y_copula_ = y_transform
        self.L_ = L
        self.jitter_ = jitter
        self.alpha_ = alpha
        self.log_marginal_likelihood_value_ = lml
        self.n_restarts_failed_ = fitted.n_failed
        self.best_y_standardized_ = float(np.min(y_train))
        self._fitted_theta = fitted.theta
        self._diag_depends_on_continuous = cholesky.probe_diag(fitted.kernel, X)
        self.solver_ = solver.name
        self.max_exact_n_ = max_exact_n
        self.cg_info_ = info
        self._preconditioner = preconditioner
        self.hyperparameter_subset_ = self._points_fitted_on(n, subset)
        if info is None:
            _LOGGER.info("fastfm GP fit: N=%d, solver=cholesky (max_exact_n=%d), hyperparameter starts on %d points%s",
                         n, max_exact_n, self.hyperparameter_subset_, "" if subset is None else ", refined on all")
        else:
            _LOGGER.info("fastfm GP fit: N=%d, solver=cg (max_exact_n=%d; %d PCG iterations, %d of them with "
                         "single-precision kernel values; residual %.2g in double; preconditioner rank %d)", n,
                         max_exact_n, info.n_iter, info.n_single_precision_iter, float(np.max(info.residuals)),
                         preconditioner.rank)
        return self

    # ------------------------------------------------------------ likelihood
    def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
        """log p(y_train_ | X_train_, θ) (GPML Eq. 2.30) and optionally its gradient (Eq. 5.9).

        Parameters
        ----------
        theta : array of shape (n_theta + 1,) or None
            ``[kernel.theta, log noise]``; None returns the fitted value.
        eval_gradient : bool
            Also return the gradient w.r.t. theta, shape (n_theta + 1,).
        clone_kernel : bool
            Evaluate on a copy of ``kernel_`` (otherwise ``kernel_.theta`` is set in place).

        Returns
        -------
        lml : float
        grad : ndarray of shape (n_theta + 1,), only with ``eval_gradient``

        Raises
        ------
        NotPositiveDefiniteError
            K + noise·I cannot be factorised at ``theta``.
        """
        self._check_fitted()
        if theta is None:
            if not eval_gradient:
                return self.log_marginal_likelihood_value_
            theta = self._fitted_theta
        theta = np.asarray(theta, dtype=float)
        n_kernel = self.kernel_.n_theta
        if theta.shape != (n_kernel + 1,):
            raise ValueError(f"theta must have shape ({n_kernel + 1},) = [kernel.theta, log noise], "
                             f"got theta.shape={theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be finite, got theta={theta!r}")
        if not clone_kernel:
            self.kernel_.theta = theta[:n_kernel]
        terms = self.kernel_._likelihood_terms(self.X_train_)
        return self._lml(terms, theta[:n_kernel], self.y_train_, float(theta[n_kernel]), eval_gradient)

    def __repr__(self):
        solver = f", solver_={self.solver_!r}" if hasattr(self, "solver_") else ""
        return (f"GaussianProcessRegressor(kernel={self.kernel!r}, optimizer={self.optimizer!r}, "
                f"n_restarts={self.n_restarts}, noise={self.noise!r}, normalize_y={self.normalize_y}, "
                f"log_transform_y={self.log_transform_y}, method={self.method!r}{solver})")

    def _points_fitted_on(self, n, subset):
        """``hyperparameter_subset_``: 0 without an optimizer, else the subset's size or all n."""
        return 0 if self.optimizer is None else n if subset is None else len(subset)
