"""Preconditioned conjugate gradients on several right-hand sides at once.  It knows no kernel: the operator
and the preconditioner are callables (the counterpart of ``linear_operator/utils/linear_cg.py``).
"""
import logging
from dataclasses import dataclass

import numpy as np

from ...exceptions import NumericalError

__all__ = ["CGInfo", "pcg"]

_LOGGER = logging.getLogger(__name__)


@dataclass
class CGInfo:
    """How a PCG solve went: iterations, final relative residual per column, convergence."""

    n_iter: int
    residuals: np.ndarray
    converged: bool
    n_matvecs: int
    # of n_iter, the iterations with single-precision kernel values (cg_options["precision"])
    n_single_precision_iter: int = 0


def pcg(apply_A, B, apply_M_inv, tol, max_iter, X0=None):
    """Preconditioned CG on the columns of B at once (GPML-free; Saad 2003, Alg. 9.1).

    Every column runs its own recurrence (step sizes are per column), but all
    columns share one call of ``apply_A`` per iteration, so the kernel tiles are
    computed once for all right-hand sides.  A column stops updating once
    ‖r‖ ≤ tol·‖b‖.

    Parameters
    ----------
    apply_A : callable (N, r) -> (N, r)
        The SPD operator (K + noise·I).
    B : ndarray of shape (N, r)
    apply_M_inv : callable (N, r) -> (N, r)
        The preconditioner solve P⁻¹.
    tol : float
    max_iter : int
    X0 : ndarray of shape (N, r) or None
        Warm start (zero when None).

    Returns
    -------
    X : ndarray of shape (N, r)
    info : CGInfo
    """
    B = np.asarray(B, dtype=np.float64)
    X = np.zeros_like(B) if X0 is None else np.array(X0, dtype=np.float64)
    R = B - apply_A(X) if X0 is not None else B.copy()
    n_matvecs = int(X0 is not None)
    b_norm = np.linalg.norm(B, axis=0)
    b_norm[b_norm == 0] = 1.0
    residual = np.linalg.norm(R, axis=0) / b_norm
    active = residual > tol
    Z = apply_M_inv(R)
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    n_iter = 0
    while np.any(active) and n_iter < max_iter:
        AP = apply_A(P)
        n_matvecs += 1
        n_iter += 1
        pAp = np.einsum("ij,ij->j", P, AP)
        step = np.where(active, rz / np.where(pAp > 0, pAp, 1.0), 0.0)
        if np.any(active & ~(pAp > 0)):
            raise NumericalError(f"PCG broke down at iteration {n_iter}: pᵀAp = {pAp[active].min()!r} ≤ 0; "
                                 "the kernel matrix plus noise is not positive definite")
        X += step * P
        R -= step * AP
        residual = np.linalg.norm(R, axis=0) / b_norm
        active &= residual > tol
        _LOGGER.debug("PCG iteration %d: largest relative residual %.3g, %d column(s) active",
                      n_iter, float(np.max(residual)), int(np.sum(active)))
        if not np.any(active):
            break
        Z = apply_M_inv(R)
        rz_new = np.einsum("ij,ij->j", R, Z)
        beta = np.where(active, rz_new / np.where(rz != 0, rz, 1.0), 0.0)
        P = Z + beta * P
        rz = rz_new
    return X, CGInfo(n_iter=n_iter, residuals=residual, converged=not np.any(active), n_matvecs=n_matvecs)
