"""Matrix-free GP regression for large N: the machinery behind ``GaussianProcessRegressor(method="cg")``.

Nothing here stores an N×N matrix.  The pieces:

* :func:`kernel_matvec` — K(X, Y) V for a block of vectors V, computed tile by
  tile in the backend (``fm_gram_matvec``: C++ ``csrc/include/fastfm/matvec.hpp``,
  blocked NumPy reference; a CUDA backend slots in with the same signature).
  Kernels without a backend matvec fall back to blocked ``kernel(X_block, Y) @ V``.
* :func:`pivoted_cholesky` — the greedy rank-k pivoted Cholesky K ≈ LᵀL
  (Harbrecht, Peters & Schneider 2012), which is also the Nyström
  approximation on the pivot set.  It preconditions CG as
  P = LᵀL + blockdiag(K − LᵀL) + σ²I, applied by Woodbury: the
  pivoted-Cholesky preconditioner of Gardner et al. 2018 ("GPyTorch", §4)
  with the PITC block correction of Cutajar et al. 2016 ("Preconditioning
  kernel matrices", §4) — blocks of points grouped by their most correlated
  pivot (:func:`pivot_blocks`); block size 1 is the FITC diagonal.
* :func:`pcg` — preconditioned conjugate gradients on several right-hand
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

Hyperparameters at large N (strategy; measured cost in BENCHMARKS.md):
the regressor maximises the exact log marginal likelihood on a random
subset of ``hyperparameter_subset`` points (default 2000, a Cholesky-sized
problem), then solves the full-N system by PCG at those hyperparameters.
(The exact solver refines them on all N points; here one refinement step
would be a PCG solve with ``n_probes`` + 1 right-hand sides plus the
stochastic gradient, more than the whole fixed-θ fit at N = 50,000 on a CPU.)
"""
import logging
import math
from dataclasses import InitVar, dataclass, field

import numpy as np
from scipy.linalg import blas, cho_factor, cho_solve, solve_triangular

from ._backends import backend_function, gpu_module_for
from .exceptions import InvalidConfigError, NumericalError

__all__ = ["kernel_matvec", "pivoted_cholesky", "pivot_blocks", "PivotedCholeskyPreconditioner", "pcg", "CGInfo",
           "stochastic_lml_gradient", "dtc_variance", "DEFAULT_CG_OPTIONS", "check_cg_options", "default_rank",
           "default_block_size"]

# Defaults of ``GaussianProcessRegressor(cg_options=...)``.
#   tol: relative residual ‖r‖/‖b‖ at which a PCG column stops.  1e-2, GPyTorch's tolerance for
#        predictions (``eval_cg_tolerance``): on the mixed regression set it gives the converged test
#        RMSE to 0.1-0.5 % at N = 5,000-20,000, while 1e-4 takes about 3× the iterations (N = 5,000:
#        76 against ≈ 25; N = 50,000, fitted θ, rank 300: 308 to 1e-2, 1e-4 not reached after 365).
#        Pass a smaller tol for an α exact to more digits.
#   max_iter: PCG iterations before giving up (a NumericalError names the residual reached).
#   rank: pivoted-Cholesky preconditioner rank, or None for :func:`default_rank` (N/10 between 300 and
#        4,000).  PCG iterations to 1e-2 at N = 20,000 (fitted θ): 110 at rank 300, 48 at 2,000, 31 at
#        4,000; its setup costs O(rank² N) flops (BENCHMARKS.md, "Preconditioner rank").
#   n_probes: Rademacher probes of the stochastic trace estimator.
#   block_size: points per diagonal block of the PITC correction (1: the FITC diagonal), or None for
#        :func:`default_block_size` (4,000, fewer where N·block_size would pass 2·10⁸ entries).  Blocks
#        of 1,000 took 35-50 % fewer PCG iterations than the diagonal at N = 5k-20k; blocks of 4,000
#        fewer again at the fitted θ of the regression set: N = 20,000, 45 -> 32 iterations, fit
#        42.3 -> 35.6 s; N = 50,000, 88 -> 61 iterations, fit 392 -> 323 s (BENCHMARKS.md).
#   precision: the kernel values inside PCG's products K·V.  "double"; "mixed": single-precision kernel
#        values, everything else (the products' sums, the preconditioner, the recurrences) in double, and the
#        solve certified by a double-precision residual, from which double-precision iterations continue if it
#        misses tol; "auto": "mixed" where tol ≥ 1e-4 and the CPU backend has single-precision products for
#        the kernel (FM kernels with rational factor forms), else "double".  A kernel value's few float ulps
#        move the residual by ~1e-5 of ‖b‖, far below 1e-2; the products are 3.8-4.0× faster on AVX2
#        (BENCHMARKS.md, "Single-precision K·V inside PCG").  A single-precision solve that breaks down
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

# default_rank: N/10 pivots, at least 300 and at most 4,000, and at most this many entries in one k × N
# factor (the preconditioner holds two: 2 GB each in float64).
_DEFAULT_RANK_BOUNDS = (300, 4000)
_RANK_MEMORY_ENTRIES = 250_000_000


def default_rank(n):
    """The preconditioner rank ``cg_options["rank"] = None`` chooses for N = n training points.

    A larger rank takes fewer PCG iterations (each a full N² kernel product) and costs O(rank² N)
    flops once; N/10 keeps that setup at a few products' worth up to the cap (measured in
    BENCHMARKS.md: at N = 20,000 ranks 2,000 and 4,000 cost the same in total, at N = 50,000 the
    iterations dominate).
    """
    low, high = _DEFAULT_RANK_BOUNDS
    return int(min(n, max(low, min(n // 10, high, _RANK_MEMORY_ENTRIES // max(n, 1)))))

# Relative trace of the residual diagonal at which the pivoted Cholesky stops early
# (its approximation is then exact to this fraction: more pivots cannot help CG).
_PIVOTED_CHOLESKY_TOL = 1e-10
# Candidates per batch of the blocked pivoted Cholesky (see pivoted_cholesky).  A rejected candidate
# costs only its b × b block, while every batch reads the whole factor so far (k × N) for its pivots' rows,
# so batches are large from the start: fitted θ of the regression set, N = 50,000, rank 4,000 (same
# pivots throughout): 53.9 s with full rows for every candidate and batches from 16, 40.4 s from 128,
# 29.3-33.3 s with the rejected candidates' rows kept and updated; with full rows for the pivots only,
# 23.0 s for batches of 128-512 and 19.3 s for batches of 512 (BENCHMARKS.md, "Fused rational blocks").
_PIVOT_BATCH_MIN, _PIVOT_BATCH_MAX = 512, 512
# Residual variances at or below this fraction of the largest diagonal entry count as zero.
_PIVOT_RELATIVE_FLOOR = 1e-13


# default_block_size: 4,000 points per PITC block, at least 1,000, and at most this many entries in the
# N × block_size of block matrices the preconditioner holds (their Cholesky factors: 1.6 GB at N = 50,000; the
# residual matrices are factored in place, one block at a time).
_DEFAULT_BLOCK_BOUNDS = (1000, 4000)
_BLOCK_MEMORY_ENTRIES = 200_000_000


def default_block_size(n):
    """The PITC block size ``cg_options["block_size"] = None`` chooses for N = n training points.

    Larger blocks make the preconditioner exact on more of K (fewer PCG iterations) for O(N·block²)
    flops and O(N·block) memory once: 4,000 up to N = 50,000, then 2·10⁸/N down to 1,000.
    """
    low, high = _DEFAULT_BLOCK_BOUNDS
    return int(max(low, min(high, _BLOCK_MEMORY_ENTRIES // max(n, 1))))


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


# --------------------------------------------------------------------------- matvec
def kernel_matvec(kernel, X, V, Y=None):
    """K(X, Y) V without storing K(X, Y).

    Parameters
    ----------
    kernel : fastfm.kernels.Kernel
    X : ndarray of shape (N, n_dims)
    V : ndarray of shape (M, r) or (M,)
        M = N when Y is None (the symmetric K(X, X)).
    Y : ndarray of shape (M, n_dims) or None

    Returns
    -------
    ndarray of shape (N, r), or (N,) for a 1-d V
    """
    V = np.asarray(V, dtype=np.float64)
    vector = V.ndim == 1
    V2 = np.ascontiguousarray(V[:, None] if vector else V)
    scaled = getattr(kernel, "_scaled", None)
    if scaled is not None and hasattr(kernel, "_args"):
        # FM kernels: the backend computes kernel tiles on the fly (C++/CUDA, or the blocked reference)
        C1, D1 = scaled(kernel._check_X(X))
        C2, D2 = (None, None) if Y is None else scaled(kernel._check_X(Y, "Y"))
        function = backend_function(kernel._backend_module(), "fm_gram_matvec")
        out = function(C1, D1, C2, D2, V2, *kernel._args())
    else:
        out = _blocked_matvec(kernel, X, V2, Y)
    return out[:, 0] if vector else out


def _single_precision_product(kernel, X, Y=None):
    """V ↦ K(X, Y) V (K(X, X) V where Y is None) with single-precision kernel values and double sums, the
    points packed once; None where the backend has no such product for this kernel at its hyperparameters,
    or would run the double product on a GPU."""
    scaled = getattr(kernel, "_scaled", None)
    if scaled is None or not hasattr(kernel, "_args"):
        return None
    backend = kernel._backend_module()
    function = getattr(backend, "fm_gram_matvec_single", None)
    if function is None:
        return None
    C1, D1 = scaled(kernel._check_X(X))
    C2, D2 = (None, None) if Y is None else scaled(kernel._check_X(Y, "Y"))
    args = kernel._args()
    if gpu_module_for(backend, "fm_gram_matvec", (C1, D1, C2, D2, None, *args)) is not None:
        return None
    # the single-precision form depends on the hyperparameters only: one point tells
    if function(C1[:1], D1[:1], None, None, np.zeros((1, 1)), *args) is None:
        return None
    return lambda V: function(C1, D1, C2, D2, np.ascontiguousarray(V, dtype=np.float64), *args)


def _blocked_matvec(kernel, X, V, Y):
    """Any kernel: row blocks of K(X, Y) of at most ~32 MB, each multiplied at once."""
    Y_ = X if Y is None else Y
    block = max(1, (1 << 22) // max(1, Y_.shape[0]))
    out = np.empty((X.shape[0], V.shape[1]))
    for a0 in range(0, X.shape[0], block):
        out[a0:a0 + block] = kernel(X[a0:a0 + block], Y_) @ V
    return out


# --------------------------------------------------------------- preconditioner
def pivoted_cholesky(kernel, X, max_rank, tol=_PIVOTED_CHOLESKY_TOL):
    """Greedy pivoted Cholesky: K(X, X) ≈ LᵀL with L of shape (k, N), k ≤ max_rank.

    The pivots are those of Harbrecht et al. 2012, Alg. 1: each is the point with
    the largest residual variance d_i = diag(K − LᵀL)_i, and the factor stops
    early when Σ d < tol·tr K.  They are found in batches, so that the work is
    matrix products rather than one kernel row and one k × N matrix-vector
    product per pivot (which made a rank of 2,000 at N = 50,000 take minutes):

    1. the b points of largest d become candidates, and their b × b residual
       block S = K(C, C) − L[:, C]ᵀ L[:, C] is formed (b²k flops);
    2. a small pivoted Cholesky of S accepts them in greedy order while the
       next one's updated residual variance is at least the largest d outside
       the batch.  Residual variances only decrease as pivots are added, so each
       accepted candidate is exactly the point the one-at-a-time algorithm picks
       next (ties aside); the others stay candidates for later batches;
    3. only the accepted candidates' rows G = K(A, X) − L[:, A]ᵀ L are computed
       (one kernel call and one matrix product), and the new factor rows are G's
       through one triangular solve.

    Full rows are thus computed for the pivots alone, k²N flops in all: the
    rejected candidates (most of each batch at the fitted θ of the regression
    set, N = 50,000: about 40 of 128 accepted) cost only their b × b block.

    b doubles while whole batches are accepted and shrinks to what was accepted
    otherwise (between :data:`_PIVOT_BATCH_MIN` and :data:`_PIVOT_BATCH_MAX`).
    Residual variances at most :data:`_PIVOT_RELATIVE_FLOOR` of the largest
    diagonal entry count as zero, so a repeated point never becomes a pivot.

    Returns
    -------
    L : ndarray of shape (k, N)
    pivots : ndarray of shape (k,) int64
    residual : ndarray of shape (N,)
        diag(K − LᵀL) ≥ 0, the variance the low-rank part misses.
    """
    N = X.shape[0]
    d = np.array(kernel.diag(X), dtype=np.float64)
    trace = float(np.sum(d))
    k_max = min(int(max_rank), N)
    L = np.zeros((k_max, N))
    pivots = np.zeros(k_max, dtype=np.int64)
    # residual variances at rounding level (a duplicate of a pivot: ~1e-16 of the diagonal) are zero
    floor = _PIVOT_RELATIVE_FLOOR * float(np.max(d, initial=0.0))
    k, batch = 0, _PIVOT_BATCH_MIN
    while k < k_max:
        remaining = float(np.sum(d))
        if not np.max(d) > floor or remaining <= tol * trace:
            break
        b = min(batch, k_max - k)
        if b < N:
            partition = np.argpartition(-d, b)
            candidates, outside = partition[:b], float(d[partition[b]])   # d[partition[b]]: largest d left out
        else:
            candidates, outside = np.arange(N), 0.0
        candidates = candidates[np.argsort(-d[candidates], kind="stable")]
        L_candidates = np.take(L[:k], candidates, axis=1)                   # (k, b)
        S = np.asarray(kernel(X[candidates]), dtype=np.float64)
        if k:
            S -= L_candidates.T @ L_candidates
        accepted, T = _greedy_in_batch(S, d[candidates], max(outside, floor))
        chosen = candidates[accepted]
        G = np.asarray(kernel(X[chosen], X), dtype=np.float64)
        if k:
            G -= L_candidates[:, accepted].T @ L[:k]
        rows = solve_triangular(T, G, trans="T", lower=False, check_finite=False, overwrite_b=True)
        # Harbrecht's stopping rule, pivot by pivot: pivot m is kept while Σ d before it exceeds tol·tr K
        removed = np.cumsum(np.einsum("ij,ij->i", rows, rows))
        keep = 1 + int(np.sum(remaining - removed[:-1] > tol * trace))
        rows, chosen = rows[:keep], chosen[:keep]
        L[k:k + keep] = rows
        pivots[k:k + keep] = chosen
        d -= np.einsum("ij,ij->j", rows, rows)
        d[chosen] = 0.0
        np.maximum(d, 0.0, out=d)  # rounding can take a residual variance below zero
        k += keep
        batch = min(2 * b, _PIVOT_BATCH_MAX) if keep == b else max(keep, _PIVOT_BATCH_MIN)
    if k < k_max:
        # stopped early: give the unused rows' memory back (in place; the first k rows are contiguous), where a
        # view L[:k] would keep the whole k_max × N buffer alive for as long as the preconditioner holds L
        L.resize((k, N), refcheck=False)
    return L, pivots[:k], d


def _greedy_in_batch(S, d, outside):
    """Greedy pivoted Cholesky of one batch's residual block S (b × b, residual variances d).

    Accepts candidates in order of largest updated residual variance while it is positive and,
    after the first, at least ``outside``.  Returns (accepted candidate indices, T) with T the
    m × m upper-triangular factor, S[accepted][:, accepted] = TᵀT, so that the accepted residual
    rows G[accepted] = Tᵀ L_new give the new factor rows by one triangular solve.
    """
    b = len(d)
    residual = np.array(d, dtype=np.float64)
    C = np.zeros((b, b))
    accepted = []
    for m in range(b):
        j = int(np.argmax(residual))
        if not residual[j] > 0 or (m and residual[j] < outside):
            break
        C[m] = (S[j] - C[:m, j] @ C[:m]) / math.sqrt(residual[j])
        residual -= C[m] * C[m]
        residual[j] = -np.inf      # taken
        accepted.append(j)
    accepted = np.array(accepted, dtype=np.int64)
    return accepted, C[:len(accepted)][:, accepted]


def pivot_blocks(L, pivots, block_size, kernel=None, X=None):
    """Index blocks of at most ``block_size`` points, each point grouped with its most correlated pivot.

    Points are sorted by the pivot of largest covariance K(pivot, x) and the order
    is cut into consecutive blocks.  Points near one pivot then share a block, and
    the block correction of :class:`PivotedCholeskyPreconditioner` keeps their
    residual correlation.  K(pivots, X) = L[:, pivots]ᵀ L exactly (the pivoted
    Cholesky reproduces the pivot rows); given ``kernel`` and ``X`` it is
    evaluated instead, k·N kernel pairs against the k²N flops of the product
    (at k = 4,000, N = 20,000 on two idle cores: 2.0 s against 9.3 s, the same blocks).

    Returns
    -------
    list of int64 arrays, a partition of range(N)
    """
    N = L.shape[1]
    if block_size <= 1 or len(pivots) == 0:
        return [np.arange(N)[i:i + max(1, block_size)] for i in range(0, N, max(1, block_size))]
    owner = np.empty(N, dtype=np.int64)
    slab = max(1, (1 << 26) // len(pivots))   # (k, slab) covariances at a time: 512 MB at most
    pivot_side = X[pivots] if kernel is not None else L[:, pivots].T
    for a0 in range(0, N, slab):
        if kernel is not None:
            covariance = kernel(pivot_side, X[a0:a0 + slab])
        else:
            covariance = pivot_side @ L[:, a0:a0 + slab]
        owner[a0:a0 + slab] = np.argmax(covariance, axis=0)
    order = np.argsort(owner, kind="stable")
    # each block's indices ascending: the preconditioner gathers its columns of the k × N factor, and an
    # ascending gather streams through memory (N = 50,000, blocks of 4,000: 0.48 -> 0.15 s per block
    # with np.take)
    return [np.sort(order[i:i + block_size]) for i in range(0, N, block_size)]


@dataclass
class PivotedCholeskyPreconditioner:
    """P = LᵀL + D, D = residual + noise·I, applied as P⁻¹ by Woodbury with one k×k Cholesky.

    P⁻¹ v = D⁻¹v − D⁻¹Lᵀ (I_k + L D⁻¹ Lᵀ)⁻¹ L D⁻¹v, evaluated with D = C Cᵀ (C diagonal, or one
    Cholesky factor per block) and Z = C⁻¹Lᵀ as C⁻ᵀ (I − Z (I_k + ZᵀZ)⁻¹ Zᵀ) C⁻¹ v.

    The residual part of D is one of
    * None: D = noise·I (the plain low-rank + noise preconditioner);
    * a vector diag(K − LᵀL): the FITC correction, P matches K on the diagonal
      (Cutajar et al. 2016, "Preconditioning kernel matrices", §4);
    * ``blocks`` with their matrices (K − LᵀL)[b, b]: the PITC correction, P
      matches K on those blocks, D⁻¹ is one small Cholesky per block.

    The corrections matter for kernels whose spectrum decays slowly, where LᵀL +
    noise·I leaves most of K out (the FM kernel on many discrete variables).

    Parameters
    ----------
    L : ndarray of shape (k, N)
    pivots : ndarray of shape (k,)
    noise : float
    residual : ndarray of shape (N,), or None
    blocks : list of index arrays partitioning range(N), or None
    block_residuals : list of ndarrays (len(b), len(b)), or None
        (K − LᵀL)[b, b] for each block b (given with ``blocks``; ``residual`` is then unused).  Left as
        given, and not kept: the preconditioner holds their Cholesky factors.
    kernel, X : Kernel and ndarray of shape (N, n_dims), or None
        Given with ``blocks`` instead of ``block_residuals``: each block's residual matrix is evaluated,
        factored in place and dropped, one block at a time (see :meth:`with_blocks`).
    """

    L: np.ndarray
    pivots: np.ndarray
    noise: float
    residual: np.ndarray = None
    blocks: list = None
    block_residuals: InitVar[list] = None
    kernel: InitVar[object] = None
    X: InitVar[np.ndarray] = None
    _inner: tuple = field(init=False, repr=False)
    _d_sqrt: np.ndarray = field(init=False, repr=False)
    # with blocks: per block, the lower Cholesky factor C_b of (K − LᵀL)[b, b] + noise·I and Z_b = C_b⁻¹ L[:, b]ᵀ
    # (both Fortran-ordered, as LAPACK writes them); without: Z = C⁻¹Lᵀ of shape (N, k)
    _block_factors: list = field(init=False, repr=False)
    _Z_blocks: list = field(init=False, repr=False)
    _Z: np.ndarray = field(init=False, repr=False)
    _dtc_cache: tuple = field(default=None, init=False, repr=False)   # (noise, factor) of dtc_factor

    def __post_init__(self, block_residuals, kernel, X):
        k, n = self.L.shape
        self._block_factors = self._Z_blocks = self._Z = self._d_sqrt = None
        # inner = I_k + ZᵀZ, accumulated in its lower triangle (Fortran order: syrk and potrf work in place)
        inner = np.asfortranarray(np.eye(k))
        if self.blocks is not None:
            if block_residuals is None and (kernel is None or X is None):
                raise ValueError("blocks need one residual matrix each (block_residuals), or kernel and X")
            if block_residuals is not None and len(block_residuals) != len(self.blocks):
                raise ValueError("blocks need one residual matrix each (block_residuals)")
            self._block_factors, self._Z_blocks = [], []
            for i, block in enumerate(self.blocks):
                # L_b: (k, b) C-ordered, so L_bᵀ is Fortran-ordered: BLAS reads it and trsm overwrites it
                L_b = np.take(self.L, block, axis=1)
                if block_residuals is None:
                    # (K − L_bᵀL_b)[b, b] in place: K_b is symmetric, so its C-ordered array is the Fortran
                    # array of the same matrix, and syrk updates its lower triangle without a copy
                    S = np.asarray(kernel(X[block]), dtype=np.float64, order="C").T
                    S = _syrk(-1.0, L_b.T, 1.0, S)
                else:
                    S = np.array(block_residuals[i], dtype=np.float64, order="F")   # the caller's stays as given
                S[np.diag_indices_from(S)] += self.noise
                factor, _ = cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
                Z_b = None
                if k:
                    Z_b = solve_triangular(factor, L_b.T, lower=True, overwrite_b=True, check_finite=False)
                    inner = _syrk(1.0, Z_b, 1.0, inner, trans=1)
                self._block_factors.append(factor)
                self._Z_blocks.append(Z_b)
        else:
            diagonal = np.full(n, float(self.noise)) if self.residual is None else self.residual + self.noise
            self._d_sqrt = np.sqrt(diagonal)
            if k:
                self._Z = self.L.T / self._d_sqrt[:, None]
                inner = _syrk(1.0, self._Z, 1.0, inner, trans=1)
        # With D = C Cᵀ and Z = C⁻¹Lᵀ: P = C (I + Z Zᵀ) Cᵀ, so P⁻¹ = C⁻ᵀ (I − Z (I_k + ZᵀZ)⁻¹ Zᵀ) C⁻¹.
        # One triangular solve per block and the symmetric products Z_bᵀZ_b: half the flops of D⁻¹Lᵀ by
        # Cholesky solves and the general product L (D⁻¹Lᵀ).
        self._inner = cho_factor(inner, lower=True, overwrite_a=True, check_finite=False) if k else None

    @classmethod
    def with_blocks(cls, kernel, X, L, pivots, noise, block_size):
        """The PITC preconditioner: blocks from :func:`pivot_blocks`, (K − LᵀL)[b, b] evaluated, factored and
        dropped block by block (one kernel call, one gather of L's columns, one syrk, one Cholesky and one
        triangular solve each), so no N × block_size array of residuals is ever held."""
        blocks = pivot_blocks(L, pivots, block_size, kernel, X)
        return cls(L, pivots, noise, blocks=blocks, kernel=kernel, X=X)

    @property
    def rank(self):
        return self.L.shape[0]

    def dtc_factor(self, noise):
        """Cholesky factor of noise·I + L Lᵀ (k × k) for :func:`dtc_variance`, computed once per noise:
        the k²N product costs more than the rest of a prediction once k is in the thousands."""
        cached = self._dtc_cache
        if cached is None or cached[0] != noise:
            factor = cho_factor(noise * np.eye(self.rank) + self.L @ self.L.T, lower=True, check_finite=False)
            self._dtc_cache = cached = (noise, factor)
        return cached[1]

    def solve(self, R):
        """P⁻¹ R for R of shape (N, r)."""
        R = np.asarray(R, dtype=np.float64)
        if self._block_factors is None:
            scaled = R / self._d_sqrt[:, None]
            if self._inner is not None:
                scaled = scaled - self._Z @ cho_solve(self._inner, self._Z.T @ scaled, check_finite=False)
            return scaled / self._d_sqrt[:, None]
        # C⁻¹R block by block, then Zᵀ(C⁻¹R) = Σ_b Z_bᵀ (C⁻¹R)_b, then C⁻ᵀ(C⁻¹R − Z u) block by block
        scaled = [solve_triangular(factor, R[block], lower=True, check_finite=False)
                  for block, factor in zip(self.blocks, self._block_factors)]
        out = np.empty(R.shape)
        if self._inner is not None:
            projected = sum(Z_b.T @ s for Z_b, s in zip(self._Z_blocks, scaled))
            u = cho_solve(self._inner, projected, check_finite=False)
            scaled = [s - Z_b @ u for Z_b, s in zip(self._Z_blocks, scaled)]
        for block, factor, s in zip(self.blocks, self._block_factors, scaled):
            out[block] = solve_triangular(factor, s, lower=True, trans="T", overwrite_b=True, check_finite=False)
        return out


def _syrk(alpha, A, beta, C, trans=0):
    """alpha·A Aᵀ + beta·C (trans=0) or alpha·AᵀA + beta·C (trans=1) in the lower triangle of the Fortran-ordered
    C, in place (BLAS syrk; the upper triangle is left as it was)."""
    return blas.dsyrk(alpha, A, beta=beta, c=C, trans=trans, lower=1, overwrite_c=1)


# --------------------------------------------------------------------------- PCG
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


# ------------------------------------------------------------- the large-N model
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
        return kernel_matvec(kernel, X, V) + noise * V

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
    product = _single_precision_product(kernel, X)
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
