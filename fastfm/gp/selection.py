"""Choosing between GPs fitted to the same data: the leave-one-out predictive log density (GPML §5.4.2).

Why not the marginal likelihood: the fitted models are maximum a posteriori points of different
hyperparameter spaces, and the larger one (``AdditiveFM`` contains ModLap: its terms' variances → 0) can
always reach at least the smaller one's likelihood at the price of more fitted parameters.  Leave-one-out
cross-validation scores how each model predicts the points it was not conditioned on, which penalises that
overfit, and an exact GP has it in closed form from the factor it already holds (GPML Eq. 5.10–5.12).
"""
import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["loo_log_predictive_density", "select_by_loo"]


def loo_log_predictive_density(gp):
    """Σ_i log p(y_i | X, y_−i, θ) of a fitted exact GP, on its standardised training targets.

    GPML Eq. 5.12: with K = K_θ + σ²_n·I (the factor ``L_``) and α = K⁻¹y, the leave-one-out mean is
    μ_i = y_i − α_i / [K⁻¹]_ii and its variance σ²_i = 1 / [K⁻¹]_ii, so
    log p(y_i | ...) = −½ log σ²_i − α_i² / (2 [K⁻¹]_ii) − ½ log 2π.

    Parameters
    ----------
    gp : GaussianProcessRegressor
        Fitted with the exact (Cholesky) solver.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        The GP holds no Cholesky factor (the matrix-free solver, ``gp.solver_ == "cg"``).
    """
    if getattr(gp, "L_", None) is None:
        raise ValueError(f"loo_log_predictive_density needs an exact GP fit (a Cholesky factor), got "
                         f"solver_={getattr(gp, 'solver_', None)!r}")
    L = gp.L_
    L_inverse = solve_triangular(L, np.eye(L.shape[0]), lower=True)
    precision_diagonal = np.einsum("ij,ij->j", L_inverse, L_inverse)     # [K⁻¹]_ii = Σ_j (L⁻¹)²_ji
    alpha = np.asarray(gp.alpha_, dtype=np.float64)
    return float(np.sum(0.5 * np.log(precision_diagonal / (2.0 * np.pi))
                        - 0.5 * alpha ** 2 / precision_diagonal))


def select_by_loo(gps):
    """The name of the best of ``gps`` (a dict name → GP fitted to the same X and y) by
    ``loo_log_predictive_density``; the first name on a tie, or when any fit has no Cholesky factor.

    Raises
    ------
    ValueError
        The GPs were fitted to different standardised targets (their densities would not be comparable).
    """
    names = list(gps)
    if any(getattr(gp, "L_", None) is None for gp in gps.values()):
        return names[0]
    reference = gps[names[0]].y_train_
    for name in names[1:]:
        if not np.array_equal(gps[name].y_train_, reference):
            raise ValueError(f"select_by_loo: the GP {name!r} was fitted to other targets than {names[0]!r}")
    scores = {name: loo_log_predictive_density(gp) for name, gp in gps.items()}
    return max(names, key=lambda name: (scores[name], -names.index(name)))
