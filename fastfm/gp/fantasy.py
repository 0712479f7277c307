"""Condition a fitted exact GP on extra points without refitting: the pending points of asynchronous BO.

A batch or an asynchronous worker pool asks for new points while earlier ones are still being
evaluated.  Each pending point x_p gets a *fantasy* value and is added to the training set at the fitted
hyperparameters, so that the next suggestion sees low variance there and goes elsewhere (Ginsbourger,
Le Riche & Carraro 2010, "Kriging is well-suited to parallelize optimization": the Kriging believer and
the constant liar).

The update is a block extension of the Cholesky factor (a rank-k update of K⁻¹), O(N²k + Nk² + k³)
instead of the O((N+k)³) refit:

    K' = [[K, K_Np], [K_pN, K_pp + σ²I]] = L' L'ᵀ,   L' = [[L, 0], [B, C]],
    B = (L⁻¹ K_Np)ᵀ,   C = chol(K_pp + σ²I − B Bᵀ),

and α' = K'⁻¹ y' by two triangular solves with L'.  Only the exact (Cholesky) posterior can be extended
this way; the matrix-free solver's fits are returned unchanged (callers then exclude pending points as
duplicates only).
"""
import copy

import numpy as np
from scipy.linalg import solve_triangular

from . import _linalg, mll

__all__ = ["condition_on", "FANTASY_STRATEGIES"]

# "believer": y_p = the posterior mean at x_p (the Kriging believer): the mean is unchanged, only the
#   variance near pending points shrinks.
# "liar_min": y_p = the best value seen (the constant liar, CL-min): also pulls the mean down around
#   pending points, which pushes further suggestions away from them more strongly.
FANTASY_STRATEGIES = ("believer", "liar_min")


def condition_on(model, X_pending, strategy="believer"):
    """A copy of the fitted exact ``model`` conditioned on ``X_pending`` with fantasy values.

    Parameters
    ----------
    model : fitted GaussianProcessRegressor (``solver_ == "cholesky"``)
    X_pending : array of shape (k, n_dims), encoded
    strategy : {"believer", "liar_min"}

    Returns
    -------
    A shallow copy of ``model`` whose ``X_train_``, ``y_train_``, ``L_`` and ``alpha_`` include the k
    pending points (hyperparameters and noise unchanged), or ``model`` itself when there is nothing to
    add or the fit is not exact.  Its ``best_y_standardized_`` counts the fantasy values as observations
    (Ginsbourger et al.: the believer's values are treated as real ones): where the mean at a pending point
    lies below the best value seen, expected improvement next to it would otherwise stay as large as
    before, and the next point of a batch lands beside it.
    """
    if strategy not in FANTASY_STRATEGIES:
        raise ValueError(f"strategy must be one of {list(FANTASY_STRATEGIES)}, got strategy={strategy!r}")
    X_pending = np.asarray(X_pending, dtype=np.float64).reshape(-1, model.X_train_.shape[1])
    if X_pending.shape[0] == 0 or getattr(model, "solver_", "cholesky") != "cholesky":
        return model
    kernel, X, L = model.kernel_, model.X_train_, model.L_
    noise = model.noise_ + model.jitter_
    K_Np = kernel(X, X_pending)                                                   # (N, k)
    B = solve_triangular(L, K_Np, lower=True, check_finite=False).T             # (k, N)
    S = _linalg._writable_gram(kernel(X_pending))
    S -= B @ B.T
    S.flat[::S.shape[0] + 1] += noise
    # S is a Schur complement of a positive definite matrix: positive definite up to round-off; the same
    # jitter ladder as the fit guards the round-off (pending points next to a training point)
    C, _ = _linalg._cholesky_in_place(np.ascontiguousarray(0.5 * (S + S.T)))
    C = np.tril(C)
    n, k = X.shape[0], X_pending.shape[0]
    L_new = np.zeros((n + k, n + k), order="F")
    L_new[:n, :n] = L
    L_new[n:, :n] = B
    L_new[n:, n:] = C
    if strategy == "believer":
        y_pending = K_Np.T @ model.alpha_          # the posterior mean at the pending points
    else:
        y_pending = np.full(k, float(np.min(model.y_train_)))
    y_new = np.concatenate([model.y_train_, y_pending])
    _, alpha = mll.lml_from_factor(L_new, y_new)
    fantasy = copy.copy(model)
    fantasy.__dict__.pop("_L_inverse", None)       # the cached inverse belongs to the old factor
    fantasy.X_train_ = np.vstack([X, X_pending])
    fantasy.y_train_ = y_new
    fantasy.L_ = L_new
    fantasy.alpha_ = alpha
    fantasy.n_pending_ = k
    fantasy.best_y_standardized_ = min(float(model.best_y_standardized_), float(np.min(y_pending)))
    return fantasy
