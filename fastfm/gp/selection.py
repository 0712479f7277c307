"""Choosing between GPs fitted to the same data: the leave-one-out predictive log density (GPML §5.4.2).

Why not the marginal likelihood: the fitted models are maximum a posteriori points of different
hyperparameter spaces, and the larger one (``AdditiveFM`` contains ModLap: its terms' variances → 0) can
always reach at least the smaller one's likelihood at the price of more fitted parameters.  Leave-one-out
cross-validation scores how each model predicts the points it was not conditioned on, which penalises that
overfit, and an exact GP has it in closed form from the factor it already holds (GPML Eq. 5.10–5.12).

Models of different transforms of y (``log_transform_y``) are compared by the density of y itself: the density of
the standardised transformed target z = (t(y) − m)/s times |dz/dy| (the change of variables a warped GP's marginal
likelihood has, Snelson et al. 2004), so that a transform cannot win by stretching the targets it predicts.
"""
import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["loo_log_predictive_density", "loo_log_predictive_densities", "log_jacobian_of_targets",
           "select_by_loo", "loo_difference"]


def loo_log_predictive_density(gp, y=None):
    """Σ_i log p(y_i | X, y_−i, θ) of a fitted exact GP: on its standardised training targets, or with ``y`` the
    raw targets it was fitted to, on y itself (``log_jacobian_of_targets`` added).

    GPML Eq. 5.12: with K = K_θ + σ²_n·I (the factor ``L_``) and α = K⁻¹y, the leave-one-out mean is
    μ_i = y_i − α_i / [K⁻¹]_ii and its variance σ²_i = 1 / [K⁻¹]_ii, so
    log p(y_i | ...) = −½ log σ²_i − α_i² / (2 [K⁻¹]_ii) − ½ log 2π.

    Parameters
    ----------
    gp : GaussianProcessRegressor
        Fitted with the exact (Cholesky) solver.
    y : array of shape (n,), optional
        The targets ``gp`` was fitted to, before its transform.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        The GP holds no Cholesky factor (the matrix-free solver, ``gp.solver_ == "cg"``); with ``y``, a
        transform without a density in y (see ``log_jacobian_of_targets``).
    """
    return float(np.sum(loo_log_predictive_densities(gp, y)))


def loo_log_predictive_densities(gp, y=None):
    """The terms log p(y_i | X, y_−i, θ) of ``loo_log_predictive_density``, one per training point (shape (n,)):
    what a paired comparison of two models needs (``select_by_loo``'s ``preferred``)."""
    if getattr(gp, "L_", None) is None:
        raise ValueError(f"the leave-one-out densities need an exact GP fit (a Cholesky factor), got "
                         f"solver_={getattr(gp, 'solver_', None)!r}")
    L = gp.L_
    L_inverse = solve_triangular(L, np.eye(L.shape[0]), lower=True)
    precision_diagonal = np.einsum("ij,ij->j", L_inverse, L_inverse)     # [K⁻¹]_ii = Σ_j (L⁻¹)²_ji
    alpha = np.asarray(gp.alpha_, dtype=np.float64)
    densities = 0.5 * np.log(precision_diagonal / (2.0 * np.pi)) - 0.5 * alpha ** 2 / precision_diagonal
    return densities if y is None else densities + _log_slopes_of_targets(gp, y)


def log_jacobian_of_targets(gp, y):
    """Σ_i log |dz_i/dy_i|, z = (t(y) − y_mean_)/y_std_ the standardised targets of the fitted ``gp`` and y the raw
    targets: 1/y_std_ for the identity, 1/(y·y_std_) for the log (True), 1/((s + y − min y)·y_std_) for "shift".

    Raises
    ------
    ValueError
        The "copula" transform: the normal scores of the ranks are a step function of y, with no density there.
    """
    return float(np.sum(_log_slopes_of_targets(gp, y)))


def _log_slopes_of_targets(gp, y):
    """The terms log |dz_i/dy_i| of ``log_jacobian_of_targets``, shape (n,)."""
    y = np.asarray(y, dtype=np.float64)
    transform = getattr(gp, "y_transform_", gp.log_transform_y)
    if isinstance(transform, str) and transform == "copula":
        raise ValueError("the 'copula' transform of y has no density in y: its models compare only among themselves")
    log_slope = np.full(y.shape, -np.log(gp.y_std_))
    if isinstance(transform, str) and transform == "shift":
        log_slope -= np.log(gp.y_log_scale_ + (y - gp.y_shift_))
    elif transform is True:
        log_slope -= np.log(y)
    return log_slope


def select_by_loo(gps, y=None, preferred=None, standard_errors=0.0):
    """The name of the best of ``gps`` (a dict name → GP fitted to the same X and y) by
    ``loo_log_predictive_density``; the first name on a tie, or when any fit has no Cholesky factor.

    With ``preferred`` (a name of ``gps``) that one is kept unless another's density is ahead of it by more than
    ``standard_errors`` standard errors of the paired difference: se = √n · std_i(d_i), d_i the difference of
    the two models' leave-one-out log densities at point i (the comparison of Vehtari, Gelman & Gabry 2017,
    "Practical Bayesian model evaluation using leave-one-out cross-validation and WAIC", §5.2).

    Parameters
    ----------
    gps : dict
    y : array of shape (n,), optional
        The raw targets every GP was fitted to.  Needed where the GPs model different transforms of y: they are
        then compared by the density of y itself.
    preferred : str, optional
    standard_errors : float, default 0.0

    Raises
    ------
    ValueError
        Without ``y``, the GPs were fitted to different standardised targets (their densities would not be
        comparable); with it, one of several transforms has no density in y.
    """
    names = list(gps)
    if any(getattr(gp, "L_", None) is None for gp in gps.values()):
        return names[0]
    transforms = {repr(getattr(gp, "y_transform_", None)) for gp in gps.values()}
    if y is None or len(transforms) == 1:
        reference = gps[names[0]].y_train_
        for name in names[1:]:
            if not np.array_equal(gps[name].y_train_, reference):
                raise ValueError(f"select_by_loo: the GP {name!r} was fitted to other targets than {names[0]!r}")
        points = {name: loo_log_predictive_densities(gp) for name, gp in gps.items()}
    else:
        points = {name: loo_log_predictive_densities(gp, y) for name, gp in gps.items()}
    scores = {name: float(np.sum(values)) for name, values in points.items()}
    best = max(names, key=lambda name: (scores[name], -names.index(name)))
    if preferred in gps and best != preferred:
        ahead, standard_error = _paired_difference(points[best], points[preferred])
        if ahead <= standard_errors * standard_error:
            return preferred
    return best


def loo_difference(gp, other):
    """(Σ_i d_i, its standard error √n · std_i(d_i)) for d_i = log p(y_i | ...) of ``gp`` minus ``other``'s:
    how far ``gp`` is ahead of ``other`` by leave-one-out predictive density (``select_by_loo``'s paired
    comparison).  Both fitted exactly to the same standardised targets."""
    if not np.array_equal(gp.y_train_, other.y_train_):
        raise ValueError("loo_difference: the two GPs were fitted to different targets")
    return _paired_difference(loo_log_predictive_densities(gp), loo_log_predictive_densities(other))


def _paired_difference(first, second):
    difference = first - second
    standard_error = np.sqrt(len(difference)) * np.std(difference, ddof=1) if len(difference) > 1 else 0.0
    return float(np.sum(difference)), float(standard_error)
