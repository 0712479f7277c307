"""The matrix-free solver behind ``GaussianProcessRegressor(method="cg")``, for large N.

Nothing here stores an N×N matrix.  The pieces:

* ``fastfm.kernels.matvec.kernel_matvec`` — K(X, Y) V for a block of vectors V, computed tile by
  tile in the backend (``fm_gram_matvec``: C++ ``csrc/include/fastfm/matvec.hpp``,
  blocked NumPy reference; a CUDA backend slots in with the same signature).
  Kernels without a backend matvec fall back to blocked ``kernel(X_block, Y) @ V``.
* ``preconditioner.pivoted_cholesky`` — the greedy rank-k pivoted Cholesky K ≈ LᵀL
  (Harbrecht, Peters & Schneider 2012), which is also the Nyström
  approximation on the pivot set.  It preconditions CG as
  P = LᵀL + blockdiag(K − LᵀL) + σ²I, applied by Woodbury: the
  pivoted-Cholesky preconditioner of Gardner et al. 2018 ("GPyTorch", §4)
  with the PITC block correction of Cutajar et al. 2016 ("Preconditioning
  kernel matrices", §4) — blocks of points grouped by their most correlated
  pivot (``preconditioner.pivot_blocks``); block size 1 is the FITC diagonal.
* ``_pcg.pcg`` — preconditioned conjugate gradients on several right-hand
  sides at once (one batched matvec per iteration), each column with its own
  step sizes and its own convergence test.
* Mixed precision (``cg_options["precision"]``, "auto" by default): PCG's
  products use single-precision kernel values (``fm_gram_matvec_single``,
  C++ ``csrc/include/fastfm/matvec_single.hpp``; sums, preconditioner and
  recurrences stay double), then the solution's residual is recomputed in
  double and double-precision iterations continue from it if it misses tol:
  the solve is certified to ``tol`` in double, as LAPACK's dsposv certifies
  its single-precision factorisation by iterative refinement.
* :func:`stochastic_lml_gradient` — ∂ log p/∂θ (GPML Eq. 5.9) with the trace
  tr(K⁻¹ ∂K/∂θ_j) replaced by Hutchinson's estimator
  (1/S) Σ_s (K⁻¹z_s)ᵀ (∂K/∂θ_j) z_s over Rademacher probes z_s, the K⁻¹z_s
  coming from the same batched PCG as α = K⁻¹y.
* :func:`dtc_variance` — predictive variances from the pivot set (the DTC
  approximation of Quiñonero-Candela & Rasmussen 2005, Eq. 20b); the
  predictive *mean* of the CG solver is exact up to the CG tolerance.

Hyperparameters at large N (strategy; measured cost in docs/benchmarks/large-n.md,
"Hyperparameters at large N" and "Subset, then refine"):
the regressor maximises the exact log marginal likelihood on a random
subset of ``hyperparameter_subset`` points (default 2000, a Cholesky-sized
problem), then solves the full-N system by PCG at those hyperparameters.
(The exact solver refines them on all N points; here one refinement step
would be a PCG solve with ``n_probes`` + 1 right-hand sides plus the
stochastic gradient, more than the whole fixed-θ fit at N = 50,000 on a CPU.)
"""
import logging

import numpy as np
from scipy.linalg import solve_triangular

from ...exceptions import InvalidConfigError, NumericalError
from ...kernels import matvec
from ._pcg import CGInfo, pcg
from .preconditioner import PivotedCholeskyPreconditioner, default_block_size, default_rank, pivoted_cholesky

__all__ = ["CGSolver", "CGPosterior", "DEFAULT_CG_OPTIONS", "check_cg_options", "solve_system", "dtc_variance",
           "stochastic_lml_gradient", "low_rank_gradient_reduction"]

# Defaults of ``GaussianProcessRegressor(cg_options=...)``.
#   tol: relative residual ‖r‖/‖b‖ at which a PCG column stops.  1e-2, GPyTorch's tolerance for
#        predictions (``eval_cg_tolerance``): on the mixed regression set it gives the converged test
#        RMSE to 0.1-0.5 % at N = 5,000-20,000, while 1e-4 takes about 3× the iterations (N = 5,000:
#        76 against ≈ 25; N = 50,000, fitted θ, rank 300: 308 to 1e-2, 1e-4 not reached after 365).
#        Pass a smaller tol for an α exact to more digits.
#   max_iter: PCG iterations before giving up (a NumericalError names the residual reached).
#   rank: pivoted-Cholesky preconditioner rank, or None for ``default_rank`` (N/10 between 300 and
#        4,000).  PCG iterations to 1e-2 at N = 20,000 (fitted θ): 110 at rank 300, 48 at 2,000, 31 at
#        4,000; its setup costs O(rank² N) flops (docs/benchmarks/large-n.md, "Preconditioner rank").
#   n_probes: Rademacher probes of the stochastic trace estimator.
#   block_size: points per diagonal block of the PITC correction (1: the FITC diagonal), or None for
#        ``default_block_size`` (4,000, fewer where N·block_size would pass 2·10⁸ entries).  Blocks
#        of 1,000 took 35-50 % fewer PCG iterations than the diagonal at N = 5k-20k; blocks of 4,000
#        fewer again at the fitted θ of the regression set: N = 20,000, 45 -> 32 iterations, fit
#        42.3 -> 35.6 s; N = 50,000, 88 -> 61 iterations, fit 392 -> 323 s
#        (docs/benchmarks/large-n.md, "PCG iterations" and "Rational factor form").
#   precision: the kernel values inside PCG's products K·V.  "double"; "mixed": single-precision kernel
#        values, everything else (the products' sums, the preconditioner, the recurrences) in double, and the
#        solve certified by a double-precision residual, from which double-precision iterations continue if it
#        misses tol; "auto": "mixed" where tol ≥ 1e-4 and the CPU backend has single-precision products for
#        the kernel (FM kernels with rational factor forms), else "double".  A kernel value's few float ulps
#        move the residual by ~1e-5 of ‖b‖, far below 1e-2; the products are 3.8-4.0× faster on AVX2
#        (docs/benchmarks/large-n.md, "Single-precision K·V inside PCG").  A single-precision solve that breaks down
#        (pᵀAp ≤ 0) is redone in double; one that stalls is continued in double with max_iter of its own.
#        A model fitted with single-precision products also predicts its mean K(X*, X)α with them.
DEFAULT_CG_OPTIONS = {"tol": 1e-2, "max_iter": 1000, "rank": None, "n_probes": 16, "block_size": None,
                      "precision": "auto"}
_PRECISIONS = ("auto", "double", "mixed")
# "auto" takes single-precision products only for tolerances at least this large: the products' relative
# error (~1e-7 per kernel value, ~1e-5 of ‖b‖ in the residual at the regression set's fitted θ) stays
# two orders below it.
_MIXED_PRECISION_MIN_TOL = 1e-4

_LOGGER = logging.getLogger(__name__)


def check_cg_options(cg_options):
    """``cg_options`` merged into the defaults, each value checked (InvalidConfigError naming the key)."""
    options = dict(DEFAULT_CG_OPTIONS)
    if cg_options is None:
        return options
    if not isinstance(cg_options, dict):
        raise InvalidConfigError(f"cg_options must be a dict or None, got cg_options={cg_options!r}",
                                 "cg_options", cg_options)
    for key, value in cg_options.items():
        if key == "subset":   # the hyperparameter subset is the regressor's own option, for either solver
            raise InvalidConfigError(f"cg_options has no 'subset' key (got cg_options['subset']={value!r}): pass "
                                     f"GaussianProcessRegressor(hyperparameter_subset={value!r}), which applies to "
                                     "both solvers", "cg_options['subset']", value)
        if key not in DEFAULT_CG_OPTIONS:
            raise InvalidConfigError(f"unknown cg_options key {key!r}; valid keys are {sorted(DEFAULT_CG_OPTIONS)}",
                                     f"cg_options[{key!r}]", value)
        if key == "tol":
            ok = isinstance(value, (int, float)) and 0 < value < 1
        elif key == "precision":
            if not (isinstance(value, str) and value in _PRECISIONS):
                raise InvalidConfigError(f"cg_options['precision'] must be one of {list(_PRECISIONS)}, got "
                                         f"{value!r}", "cg_options['precision']", value)
            ok = True
        elif key in ("rank", "block_size") and value is None:
            ok = True
        else:
            ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= (
                0 if key == "rank" else 1)
        if not ok:
            expected = "a float in (0, 1)" if key == "tol" else (
                "an integer >= 0 or None" if key == "rank" else
                "an integer >= 1 or None" if key == "block_size" else "an integer >= 1")
            raise InvalidConfigError(f"cg_options[{key!r}] must be {expected}, got {value!r}",
                                     f"cg_options[{key!r}]", value)
        options[key] = value
    return options


def solve_system(kernel, X, noise, B, options, preconditioner=None, X0=None):
    """(K + noise·I)⁻¹ B by PCG with the pivoted-Cholesky preconditioner.

    Returns
    -------
    solution : ndarray of shape (N, r)
    info : CGInfo
    preconditioner : PivotedCholeskyPreconditioner

    Raises
    ------
    NumericalError
        PCG did not reach ``options["tol"]`` within ``options["max_iter"]`` iterations.
    """
    if preconditioner is None:
        rank = default_rank(X.shape[0]) if options["rank"] is None else options["rank"]
        L, pivots, residual = pivoted_cholesky(kernel, X, rank)
        block_size = default_block_size(X.shape[0]) if options["block_size"] is None else options["block_size"]
        if block_size > 1:
            preconditioner = PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, noise, block_size)
        else:
            preconditioner = PivotedCholeskyPreconditioner(L, pivots, noise, residual)

    def apply_A(V):
        return matvec.kernel_matvec(kernel, X, V) + noise * V

    single = None
    apply_single = _mixed_precision_operator(kernel, X, noise, options)
    if apply_single is not None:
        try:
            single_solution, single = pcg(apply_single, B, preconditioner.solve, options["tol"], options["max_iter"],
                                          X0)
            X0 = single_solution
        except NumericalError as error:   # K + noise·I with single-precision values not positive definite
            _LOGGER.warning("single-precision PCG broke down (%s); solving in double", error)
    # With a single-precision solution as X0 this is the certificate: pcg computes its residual in double and
    # iterates in double only if it misses tol (0 iterations in the measured runs).
    solution, info = pcg(apply_A, B, preconditioner.solve, options["tol"], options["max_iter"], X0)
    if single is not None:
        info = CGInfo(n_iter=single.n_iter + info.n_iter, residuals=info.residuals, converged=info.converged,
                      n_matvecs=single.n_matvecs + info.n_matvecs, n_single_precision_iter=single.n_iter)
    if not info.converged:
        raise NumericalError(
            f"PCG did not converge in max_iter={options['max_iter']} iterations (N={X.shape[0]}, "
            f"worst relative residual {float(np.max(info.residuals)):.3g} > tol={options['tol']:g}); raise "
            "cg_options['max_iter'] or cg_options['rank'], or the noise lower bound")
    return solution, info, preconditioner


def _mixed_precision_operator(kernel, X, noise, options):
    """V ↦ (K + noise·I) V with single-precision kernel values, where ``options["precision"]`` asks for it
    ("mixed", or "auto" with tol ≥ 1e-4) and the backend has it; else None (double precision)."""
    precision = options.get("precision", "auto")
    if precision == "double" or (precision == "auto" and options["tol"] < _MIXED_PRECISION_MIN_TOL):
        return None
    product = matvec._single_precision_product(kernel, X)
    if product is None:
        if precision == "mixed":
            _LOGGER.info("cg_options['precision'] = 'mixed': no single-precision product for this kernel and "
                         "backend; PCG runs in double")
        return None

    def apply_single(V):
        return product(V) + noise * V

    return apply_single


def dtc_variance(kernel, X_train, preconditioner, X, noise):
    """Latent predictive variance from the pivot set (DTC; Quiñonero-Candela & Rasmussen 2005, Eq. 20b).

    With φ(x) = L_S⁻ᵀ k_S(x) the Nyström features of the pivots S (so that
    φ(x_n) = L[:, n] on the training points) and A = noise·I + L Lᵀ,

        V_DTC[f*] = k(x*, x*) − φ*ᵀφ* + noise · φ*ᵀ A⁻¹ φ*.

    Parameters
    ----------
    kernel : Kernel
    X_train : ndarray of shape (N, n_dims)
    preconditioner : PivotedCholeskyPreconditioner
    X : ndarray of shape (M, n_dims)
    noise : float

    Returns
    -------
    var : ndarray of shape (M,), ≥ 0
    """
    k_diag = np.asarray(kernel.diag(X), dtype=np.float64)
    if preconditioner.rank == 0:
        return np.maximum(k_diag, 0.0)
    L, S = preconditioner.L, preconditioner.pivots
    L_S = np.triu(L[:, S])                         # (k, k): L[m, S_j] = 0 for m > j (exact up to rounding)
    K_S = kernel(X_train[S], X)                    # (k, M)
    phi = solve_triangular(L_S, K_S, trans="T", lower=False, check_finite=False)
    # φᵀA⁻¹φ = ‖C⁻¹φ‖² with A = C Cᵀ: one triangular solve instead of cho_solve's two
    factor, lower = preconditioner.dtc_factor(noise)
    psi = solve_triangular(factor, phi, lower=lower, check_finite=False)
    var = k_diag - np.einsum("km,km->m", phi, phi) + noise * np.einsum("km,km->m", psi, psi)
    return np.maximum(var, 0.0)


def stochastic_lml_gradient(kernel, X, y, noise, options, rng, preconditioner=None, X0=None):
    """Stochastic ∂ log p(y|X,θ)/∂[θ, log noise] by PCG and Hutchinson's trace estimator.

    GPML Eq. 5.9, ∂/∂θ_j = ½ αᵀ(∂K/∂θ_j)α − ½ tr(K⁻¹ ∂K/∂θ_j), with
    tr(K⁻¹ ∂K) ≈ (1/S) Σ_s u_sᵀ ∂K z_s, u_s = K⁻¹ z_s, z_s Rademacher
    (unbiased: E[z zᵀ] = I).  α and every u_s come from one batched PCG.
    Both terms are one fused reduction with the rank-(S+1) weight
    W = ½ααᵀ − (1/2S) Σ_s u_s z_sᵀ (:func:`low_rank_gradient_reduction`).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray of shape (N, n_dims)
    y : ndarray of shape (N,)
    noise : float
    options : dict
        ``check_cg_options`` output (tol, max_iter, rank, n_probes).
    rng : numpy Generator
    preconditioner, X0 :
        Reused preconditioner / warm start of the (N, 1 + n_probes) solve.

    Returns
    -------
    grad : ndarray of shape (n_theta + 1,)
    solution : ndarray of shape (N, 1 + n_probes)
        [α, u_1..u_S], for warm starts.
    preconditioner : PivotedCholeskyPreconditioner
    """
    N = X.shape[0]
    S = int(options["n_probes"])
    Z = rng.choice([-1.0, 1.0], size=(N, S))
    B = np.column_stack([y, Z])
    solution, _, preconditioner = solve_system(kernel, X, noise, B, options, preconditioner, X0)
    alpha, U = solution[:, 0], solution[:, 1:]
    grad_kernel = low_rank_gradient_reduction(kernel, X, np.column_stack([alpha, U]),
                                              np.column_stack([alpha, -Z]) / np.r_[2.0, np.full(S, 2.0 * S)])
    # ∂K/∂log noise = noise·I: ½ noise (αᵀα − tr K⁻¹), tr K⁻¹ ≈ (1/S) Σ u_sᵀ z_s
    grad_noise = 0.5 * noise * (float(alpha @ alpha) - float(np.sum(U * Z)) / S)
    return np.append(grad_kernel, grad_noise), solution, preconditioner


def low_rank_gradient_reduction(kernel, X, U, Z):
    """Σ_ab W_ab ∂K_ab/∂θ_j over the free θ_j for W = U Zᵀ, U and Z of shape (N, r).

    FM kernels (``_low_rank_reduction``) run the fused backend reduction, which
    forms W_ab + W_ba chunk by chunk and never stores W; other kernels fall
    back to ``gradient_reduction`` with the dense W (N² memory).
    """
    U = np.ascontiguousarray(U, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    fused = getattr(kernel, "_low_rank_reduction", None)
    if fused is None:
        return kernel.gradient_reduction(X, U @ Z.T)
    return fused(kernel._check_X(X), U, Z)[kernel._free_mask()]


class CGSolver:
    """The matrix-free solver: PCG with the pivoted-Cholesky preconditioner, O(N·rank) memory."""

    name = "cg"
    # The subset's hyperparameters are used as they are: one refinement step on all N points would be a PCG
    # solve with n_probes + 1 right-hand sides plus the stochastic gradient, more than the whole fixed-θ fit
    # at N = 50,000 on a CPU.
    refine_on_all_points = False

    @staticmethod
    def fit(kernel, X, y, noise, cg_options):
        """(α, CGInfo, preconditioner) with α = (K + noise·I)⁻¹ y by PCG (NumericalError if it misses tol)."""
        solution, info, preconditioner = solve_system(kernel, X, noise, y[:, None], check_cg_options(cg_options))
        return solution[:, 0], info, preconditioner


class CGPosterior:
    """The posterior of a matrix-free fit: exact mean (to PCG's tol), DTC std.  A view of the fitted regressor
    ``model`` (``kernel_``, ``X_train_``, ``alpha_``, ``noise_``, ``cg_info_``, ``_preconditioner``)."""

    def __init__(self, model):
        self.model = model

    def mean(self, X):
        """K(X*, X) α by the matrix-free product.

        Where PCG ran with single-precision kernel values (``cg_options["precision"]``), so does this product:
        α is exact only to PCG's tol (≥ 1e-4 under "auto"), and the single-precision values move the mean by
        about 1e-5 of y's scale (docs/benchmarks/large-n.md, "Single-precision K·V inside PCG"), for a product 3.8× faster."""
        model = self.model
        if model.cg_info_.n_single_precision_iter:
            product = matvec._single_precision_product(model.kernel_, X, Y=model.X_train_)
            if product is not None:
                return product(model.alpha_[:, None])[:, 0]
        return matvec.kernel_matvec(model.kernel_, X, model.alpha_, Y=model.X_train_)

    def predict_standardized(self, X):
        """(mu, sigma) at encoded X: the mean above, the DTC std of the preconditioner's pivots."""
        model = self.model
        var = dtc_variance(model.kernel_, model.X_train_, model._preconditioner, X, model.noise_)
        return self.mean(X), np.sqrt(var)
