"""Numba CUDA kernel of the matrix-free FM product K(X1, X2) V (imported lazily: it imports numba).

The large-N GP solver (``fastfm/gp/solvers/cg.py``, PCG) needs K V for a new block
of r vectors V (M, r) at every iteration, with N too large to store K.  Each
kernel entry is evaluated on the fly by the Gram's own device function
(``_cuda_kernels.fm_pair``, paper Eq. 5: K_ab = σ² Π_p F_p(v_ap, v_bp, α_p r_ab),
SPEC §2) and folded into the product at once, so device memory stays
O((N + M) r): no N×M temporary.

Layout (the GPU counterpart of the C++ row tiles in ``csrc/include/fastfm/matvec.hpp``):

* one thread block per tile of ``MATVEC_TILE_ROWS`` rows of K; within it
  ``threadIdx.y`` picks the row and the ``MATVEC_TILE_COLUMNS`` threads along
  ``threadIdx.x`` stride over the columns b, each accumulating Σ_b k_ab V[b, :]
  for its share of the columns in registers (r ≤ ``MAX_VECTORS``; the host
  launches once per chunk of at most that many vectors);
* the block walks the columns in tiles of ``MATVEC_TILE_COLUMNS``: each tile of
  V is staged once in shared memory and read by all the block's rows;
* the partial sums of a row's threads are added by a tree in shared memory (no
  float64 atomics: the result is deterministic for a given launch size) and
  written to out[a, :] by one thread.

The symmetric product K(X, X) V evaluates every ordered pair (a, b), not the
triangle: the mirrored contribution K_ba V[a] belongs to another block's row,
and scattering it would need float64 atomics or one partial output per block
(O(N r × blocks) memory), while the kernel is bound by the FM factors, not by
memory.
"""
from numba import config, cuda, float64

from ._cuda_kernels import continuous_argument, fm_pair, squared_distance

# Vectors per launch (per-thread accumulator and shared tile of V, compile-time
# sizes); the host splits wider V into chunks of this many columns.
MAX_VECTORS = 16
# Block = MATVEC_TILE_ROWS rows × MATVEC_TILE_COLUMNS column threads.  x spans a
# warp, so that its threads read consecutive columns of C2/D2/V; the simulator
# runs each thread as a Python thread and gets a small block.  MATVEC_TILE_COLUMNS
# must be a power of two (tree reduction).
MATVEC_TILE_COLUMNS = 8 if config.ENABLE_CUDASIM else 32
MATVEC_TILE_ROWS = 4 if config.ENABLE_CUDASIM else 8


@cuda.jit
def fm_gram_matvec(C1, D1, C2, D2, V, n_continuous, n_discrete, alphas, betas, variance, n_states, group_offsets,
                   group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                   group_sizes, kind, coefficients, exponent, out):
    """out (N, r) = K(X1, X2) V, V (M, r) with r ≤ MAX_VECTORS; K_ab is computed, used and dropped."""
    staged_V = cuda.shared.array((MATVEC_TILE_COLUMNS, MAX_VECTORS), float64)
    partial = cuda.shared.array((MATVEC_TILE_ROWS, MATVEC_TILE_COLUMNS), float64)
    accumulator = cuda.local.array(MAX_VECTORS, float64)
    column_thread = cuda.threadIdx.x
    row_thread = cuda.threadIdx.y
    a = cuda.blockIdx.x * MATVEC_TILE_ROWS + row_thread
    N = out.shape[0]
    M = V.shape[0]
    r = V.shape[1]
    # rows past N still take part in staging and in every barrier (syncthreads must
    # be reached by the whole block); they only skip the kernel entries
    active = a < N
    for c in range(r):
        accumulator[c] = 0.0
    for first_column in range(0, M, MATVEC_TILE_COLUMNS):
        # stage V[first_column : first_column + tile, :] (the block's rows share it)
        b_stage = first_column + column_thread
        for c in range(row_thread, r, MATVEC_TILE_ROWS):
            staged_V[column_thread, c] = V[b_stage, c] if b_stage < M else 0.0
        cuda.syncthreads()
        b = first_column + column_thread
        if active and b < M:
            R = continuous_argument(squared_distance(C1, a, C2, b, n_continuous), exponent)
            k_ab = fm_pair(R, D1, a, D2, b, n_discrete, alphas, betas, variance, n_states, group_offsets,
                           group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets,
                           group_starts, group_sizes, kind, coefficients)
            for c in range(r):
                accumulator[c] += k_ab * staged_V[column_thread, c]
        cuda.syncthreads()            # the tile of V is overwritten next iteration
    for c in range(r):
        partial[row_thread, column_thread] = accumulator[c]
        cuda.syncthreads()
        stride = MATVEC_TILE_COLUMNS // 2
        while stride > 0:
            if column_thread < stride:
                partial[row_thread, column_thread] += partial[row_thread, column_thread + stride]
            cuda.syncthreads()
            stride //= 2
        if active and column_thread == 0:
            out[a, c] = partial[row_thread, 0]
        cuda.syncthreads()            # partial is reused for the next vector
