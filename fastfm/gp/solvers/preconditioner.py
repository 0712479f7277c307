"""The pivoted-Cholesky preconditioner of the matrix-free solver, with its FITC/PITC correction.

:func:`pivoted_cholesky` is the greedy rank-k pivoted Cholesky K ≈ LᵀL (Harbrecht, Peters & Schneider
2012), which is also the Nyström approximation on the pivot set.  It preconditions CG as
P = LᵀL + blockdiag(K − LᵀL) + σ²I, applied by Woodbury: the pivoted-Cholesky preconditioner of Gardner et
al. 2018 ("GPyTorch", §4; ``linear_operator/functions/_pivoted_cholesky.py``) with the PITC block correction
of Cutajar et al. 2016 ("Preconditioning kernel matrices", §4): blocks of points grouped by their most
correlated pivot (:func:`pivot_blocks`); block size 1 is the FITC diagonal.
"""
import math
from dataclasses import InitVar, dataclass, field

import numpy as np
from scipy.linalg import blas, cho_factor, cho_solve, solve_triangular

__all__ = ["pivoted_cholesky", "pivot_blocks", "PivotedCholeskyPreconditioner", "default_rank",
           "default_block_size"]

# default_rank: N/10 pivots, at least 300 and at most 4,000, and at most this many entries in one k × N
# factor (the preconditioner holds two: 2 GB each in float64).
_DEFAULT_RANK_BOUNDS = (300, 4000)
_RANK_MEMORY_ENTRIES = 250_000_000


def default_rank(n):
    """The preconditioner rank ``cg_options["rank"] = None`` chooses for N = n training points.

    A larger rank takes fewer PCG iterations (each a full N² kernel product) and costs O(rank² N)
    flops once; N/10 keeps that setup at a few products' worth up to the cap (measured in
    docs/benchmarks/large-n.md, "Preconditioner rank": at N = 20,000 ranks 2,000 and 4,000 cost the same in total, at N = 50,000 the
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
# 23.0 s for batches of 128-512 and 19.3 s for batches of 512 (docs/benchmarks/large-n.md, "Fused rational blocks").
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
        """Cholesky factor of noise·I + L Lᵀ (k × k) for ``cg.dtc_variance``, computed once per noise:
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
