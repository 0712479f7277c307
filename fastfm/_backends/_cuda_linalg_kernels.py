"""Numba CUDA kernels of the GP likelihood on the device (imported lazily: it imports numba).

The host side (order of launches, jitter, checks) is ``cuda_linalg.py``.  All
matrices are float64, row-major and square (N × N); only their lower triangles
are read unless a kernel says otherwise.

Blocked right-looking algorithms on panels of ``PANEL`` columns, the small
diagonal blocks in shared memory and everything else as rank-``PANEL`` updates
(the level-3 work, N³/3 flops each):

* Cholesky L Lᵀ = A (LAPACK dpotrf): per panel, factor the diagonal block
  (``factor_diagonal_block``), solve the rows below against it
  (``solve_rows_below``), subtract the panel's outer product from the trailing
  lower triangle (``subtract_panel_product``);
* the inverse X = L⁻¹ (solving L X = I, a dtrtri): per panel of rows, solve it
  against the diagonal block (``solve_diagonal_rows``), subtract its product
  with the rows below (``subtract_panel_product`` again);
* K⁻¹ = Xᵀ X (LAPACK dlauum): ``lower_product_of_columns``.

A failed pivot (not > 0, or not finite) writes its 1-based index to
``info[0]``; every later kernel reads ``info[0]`` first and returns, so a
failed factorisation costs no more work and the host reads one integer.
"""
import math

from numba import config, cuda, float64

from ._cuda_kernels import tree_sum

# Panel width: a diagonal block is PANEL × PANEL, factored by PANEL² threads (≤ 1024).
PANEL = 8 if config.ENABLE_CUDASIM else 32
# The rank-PANEL updates compute TILE × TILE outputs per block of TILE_THREADS² threads, each thread
# PER_THREAD² of them held in registers (rows ty + TILE_THREADS·i, columns tx + TILE_THREADS·j: a
# warp's loads and stores stay on consecutive columns).  The simulator runs one Python thread per
# GPU thread, so it gets small blocks.
TILE = 8 if config.ENABLE_CUDASIM else 64
TILE_THREADS = 4 if config.ENABLE_CUDASIM else 16
PER_THREAD = TILE // TILE_THREADS
# Rows of the inner dimension per shared-memory chunk in lower_product_of_columns.
CHUNK = 8 if config.ENABLE_CUDASIM else 16
# 1-D blocks (vectors, reductions over a row): a power of two.
VECTOR_BLOCK = 16 if config.ENABLE_CUDASIM else 256
# Square tiles of the elementwise / transposing kernels.
SQUARE = 8 if config.ENABLE_CUDASIM else 32
# Shared-memory rows are padded by one element so that a warp reading down a column hits 32 different
# banks.  (Shapes of cuda.shared.array must be literal globals: Numba does not fold PANEL + 1.)
PANEL_PADDED = PANEL + 1
TILE_PADDED = TILE + 1
SQUARE_PADDED = SQUARE + 1


# ------------------------------------------------------------------ Cholesky
@cuda.jit
def factor_diagonal_block(A, k0, kb, info):
    """A[k0:k0+kb, k0:k0+kb] (lower) ← its Cholesky factor; block (PANEL, PANEL), x = column."""
    if info[0] != 0:
        return
    block = cuda.shared.array((PANEL, PANEL_PADDED), float64)
    failed = cuda.shared.array(1, float64)
    col = cuda.threadIdx.x
    row = cuda.threadIdx.y
    inside = row < kb and col <= row
    if inside:
        block[row, col] = A[k0 + row, k0 + col]
    if row == 0 and col == 0:
        failed[0] = 0.0
    cuda.syncthreads()
    for j in range(kb):
        if row == j and col == j:
            pivot = block[j, j]
            if pivot > 0.0 and pivot < math.inf:
                block[j, j] = math.sqrt(pivot)
            else:
                failed[0] = 1.0
                info[0] = k0 + j + 1
        cuda.syncthreads()
        if failed[0] != 0.0:   # the same shared value for every thread: a uniform exit
            return
        if col == j and j < row < kb:
            block[row, j] /= block[j, j]
        cuda.syncthreads()
        if j < col <= row < kb:
            block[row, col] -= block[row, j] * block[col, j]
        cuda.syncthreads()
    if inside:
        A[k0 + row, k0 + col] = block[row, col]


@cuda.jit(device=True, inline=True)
def load_diagonal_block(L, k0, kb, diagonal, row, col):
    """diagonal ← the lower triangle of L[k0:k0+kb, k0:k0+kb] (thread (row, col) one entry; no sync)."""
    if row < kb and col <= row:
        diagonal[row, col] = L[k0 + row, k0 + col]


@cuda.jit(device=True, inline=True)
def forward_substitute(diagonal, vectors, v, e, kb):
    """vectors[v, :kb] ← L⁻¹ vectors[v, :kb] for the lower triangular L = diagonal[:kb, :kb]:
    x_e = (b_e − Σ_{j<e} L_ej x_j) / L_ee, thread (v, e) owning element e of vector v."""
    for j in range(kb):
        if e == j:
            vectors[v, j] /= diagonal[j, j]
        cuda.syncthreads()
        if j < e < kb:
            vectors[v, e] -= vectors[v, j] * diagonal[e, j]
        cuda.syncthreads()


@cuda.jit
def solve_rows_below(A, k0, kb, info):
    """Rows r ≥ k0 + kb: A[r, k0:k0+kb] ← A[r, k0:k0+kb] L_kk⁻ᵀ (L_kk: the factored diagonal block),
    i.e. L_kk xᵀ = aᵀ for each row.  Block (PANEL, PANEL) per PANEL rows, x = column within the panel."""
    if info[0] != 0:
        return
    N = A.shape[0]
    diagonal = cuda.shared.array((PANEL, PANEL_PADDED), float64)
    rows = cuda.shared.array((PANEL, PANEL_PADDED), float64)
    col = cuda.threadIdx.x
    local = cuda.threadIdx.y
    r = k0 + kb + cuda.blockIdx.x * PANEL + local
    load_diagonal_block(A, k0, kb, diagonal, local, col)
    if r < N and col < kb:
        rows[local, col] = A[r, k0 + col]
    cuda.syncthreads()
    forward_substitute(diagonal, rows, local, col, kb)
    if r < N and col < kb:
        A[r, k0 + col] = rows[local, col]


@cuda.jit(device=True, inline=True)
def clear(acc):
    for a in range(PER_THREAD):
        for b in range(PER_THREAD):
            acc[a, b] = 0.0


@cuda.jit(device=True, inline=True)
def multiply_add_tiles(acc, left_tile, right_tile, depth, tx, ty, left, right):
    """acc[a, b] += Σ_{l < depth} left_tile[l, ty + TILE_THREADS·a] · right_tile[l, tx + TILE_THREADS·b]:
    this thread's PER_THREAD² outputs, with 2·PER_THREAD shared loads (into ``left``, ``right``) per l."""
    for l in range(depth):
        for a in range(PER_THREAD):
            left[a] = left_tile[l, ty + TILE_THREADS * a]
            right[a] = right_tile[l, tx + TILE_THREADS * a]
        for a in range(PER_THREAD):
            for b in range(PER_THREAD):
                acc[a, b] += left[a] * right[b]


@cuda.jit
def subtract_panel_product(C, A, a_col, B, b_row, b_col, b_by_rows, kb, row_start, col_start, col_end,
                           lower_only, info):
    """C[i, j] −= Σ_{l < kb} A[i, a_col + l] · B̂[l, j] for i ≥ row_start, col_start ≤ j < col_end.

    B̂[l, j] = B[b_row + l, j] when ``b_by_rows`` (a row panel), else B[j, b_col + l] (a column panel:
    the Cholesky update A Aᵀ).  ``lower_only``: only j ≤ i is written (tiles above the diagonal return
    at once).  Grid (column tiles, row tiles), block (TILE_THREADS, TILE_THREADS)."""
    if info[0] != 0:
        return
    N = C.shape[0]
    i0 = row_start + cuda.blockIdx.y * TILE
    j0 = col_start + cuda.blockIdx.x * TILE
    if lower_only and j0 > i0 + TILE - 1:
        return
    a_tile = cuda.shared.array((PANEL, TILE_PADDED), float64)   # [l, t] = A[i0 + t, a_col + l]
    b_tile = cuda.shared.array((PANEL, TILE_PADDED), float64)   # [l, t] = B̂[l, j0 + t]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    thread = ty * TILE_THREADS + tx
    for e in range(thread, TILE * PANEL, TILE_THREADS * TILE_THREADS):
        # A: consecutive threads read consecutive l of one row
        t, l = e // PANEL, e % PANEL
        i = i0 + t
        a_tile[l, t] = A[i, a_col + l] if (i < N and l < kb) else 0.0
        if b_by_rows:   # consecutive threads read consecutive j of one row of B
            l, t = e // TILE, e % TILE
            j = j0 + t
            b_tile[l, t] = B[b_row + l, j] if (j < col_end and l < kb) else 0.0
        else:
            j = j0 + t
            b_tile[l, t] = B[j, b_col + l] if (j < col_end and l < kb) else 0.0
    cuda.syncthreads()
    acc = cuda.local.array((PER_THREAD, PER_THREAD), float64)
    left = cuda.local.array(PER_THREAD, float64)
    right = cuda.local.array(PER_THREAD, float64)
    clear(acc)
    multiply_add_tiles(acc, a_tile, b_tile, kb, tx, ty, left, right)
    for a in range(PER_THREAD):
        i = i0 + ty + TILE_THREADS * a
        for b in range(PER_THREAD):
            j = j0 + tx + TILE_THREADS * b
            if i < N and j < col_end and (not lower_only or j <= i):
                C[i, j] -= acc[a, b]


# ------------------------------------------------------------- the inverse
@cuda.jit
def solve_diagonal_rows(X, L, k0, kb, col_end, info):
    """X[k0:k0+kb, c] ← L_kk⁻¹ X[k0:k0+kb, c] for c < col_end (forward substitution down each column).

    Block (PANEL, PANEL) per PANEL columns, x = column, y = row within the panel; the columns are
    held transposed in shared memory (one vector per row, as in ``solve_rows_below``)."""
    if info[0] != 0:
        return
    diagonal = cuda.shared.array((PANEL, PANEL_PADDED), float64)
    columns = cuda.shared.array((PANEL, PANEL_PADDED), float64)
    tx = cuda.threadIdx.x
    row = cuda.threadIdx.y
    c = cuda.blockIdx.x * PANEL + tx
    load_diagonal_block(L, k0, kb, diagonal, row, tx)
    if row < kb and c < col_end:
        columns[tx, row] = X[k0 + row, c]
    cuda.syncthreads()
    forward_substitute(diagonal, columns, tx, row, kb)
    if row < kb and c < col_end:
        X[k0 + row, c] = columns[tx, row]


@cuda.jit
def lower_product_of_columns(X, out, info):
    """out[i, j] = Σ_l X[l, i] X[l, j] for j ≤ i, X lower triangular (so l ≥ i): K⁻¹ = Xᵀ X for X = L⁻¹.

    Grid (column tiles, row tiles), block (TILE_THREADS, TILE_THREADS); tiles above the diagonal return."""
    if info[0] != 0:
        return
    N = X.shape[0]
    i0 = cuda.blockIdx.y * TILE
    j0 = cuda.blockIdx.x * TILE
    if j0 > i0:
        return
    left = cuda.shared.array((CHUNK, TILE_PADDED), float64)    # X[l, i0 + t]
    right = cuda.shared.array((CHUNK, TILE_PADDED), float64)   # X[l, j0 + t]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    thread = ty * TILE_THREADS + tx
    acc = cuda.local.array((PER_THREAD, PER_THREAD), float64)
    values = cuda.local.array(PER_THREAD, float64)
    others = cuda.local.array(PER_THREAD, float64)
    clear(acc)
    for l0 in range(i0, N, CHUNK):   # X[l, i] = 0 for l < i: start at the tile's first row
        for e in range(thread, CHUNK * TILE, TILE_THREADS * TILE_THREADS):
            l, t = e // TILE, e % TILE
            inside = l0 + l < N
            left[l, t] = X[l0 + l, i0 + t] if (inside and i0 + t < N) else 0.0
            right[l, t] = X[l0 + l, j0 + t] if (inside and j0 + t < N) else 0.0
        cuda.syncthreads()
        multiply_add_tiles(acc, left, right, CHUNK, tx, ty, values, others)
        cuda.syncthreads()
    for a in range(PER_THREAD):
        i = i0 + ty + TILE_THREADS * a
        for b in range(PER_THREAD):
            j = j0 + tx + TILE_THREADS * b
            if i < N and j <= i:
                out[i, j] = acc[a, b]


# ------------------------------------------------------- vectors and setup
@cuda.jit
def lower_times_vector(X, y, z):
    """z[i] = Σ_{j ≤ i} X[i, j] y[j]; one block of VECTOR_BLOCK threads per row."""
    partial = cuda.shared.array(VECTOR_BLOCK, float64)
    i = cuda.blockIdx.x
    t = cuda.threadIdx.x
    total = 0.0
    for j in range(t, i + 1, VECTOR_BLOCK):
        total += X[i, j] * y[j]
    partial[t] = total
    cuda.syncthreads()
    tree_sum(partial, t, VECTOR_BLOCK)
    if t == 0:
        z[i] = partial[0]


@cuda.jit
def lower_transpose_times_vector_partials(X, z, partials, rows_per_part):
    """partials[p, j] = Σ_{i in part p, i ≥ j} X[i, j] z[i]; grid (column blocks, parts), 1-D blocks.

    A warp reads consecutive columns of a row (coalesced); the parts give the GPU enough blocks."""
    N = X.shape[0]
    j = cuda.blockIdx.x * VECTOR_BLOCK + cuda.threadIdx.x
    p = cuda.blockIdx.y
    if j >= N:
        return
    # (no min/max builtins: explicit branches keep the kernel compilable to PTX without a driver)
    first = p * rows_per_part
    if first < j:
        first = j
    end = (p + 1) * rows_per_part
    if end > N:
        end = N
    total = 0.0
    for i in range(first, end):
        total += X[i, j] * z[i]
    partials[p, j] = total


@cuda.jit
def sum_partials(partials, out):
    """out[j] = Σ_p partials[p, j]."""
    j = cuda.grid(1)
    if j < out.shape[0]:
        total = 0.0
        for p in range(partials.shape[0]):
            total += partials[p, j]
        out[j] = total


@cuda.jit
def copy_lower_with_diagonal_shift(source, target, shift):
    """target[i, j] = source[i, j] + shift·δ_ij for j ≤ i (the upper triangle is not touched)."""
    j, i = cuda.grid(2)
    N = source.shape[0]
    if i < N and j <= i:
        value = source[i, j]
        if i == j:
            value += shift
        target[i, j] = value


@cuda.jit
def set_identity(X):
    j, i = cuda.grid(2)
    N = X.shape[0]
    if i < N and j < N:
        X[i, j] = 1.0 if i == j else 0.0


@cuda.jit
def copy_diagonal(A, out):
    i = cuda.grid(1)
    if i < A.shape[0]:
        out[i] = A[i, i]


@cuda.jit
def first_non_finite(A, found):
    """found[0] ← the smallest row-major index of a NaN/inf entry of the lower triangle (found[0] = N² when none)."""
    j, i = cuda.grid(2)
    N = A.shape[0]
    if i < N and j <= i:
        value = A[i, j]
        if not (abs(value) < math.inf):
            cuda.atomic.min(found, 0, i * N + j)


@cuda.jit
def likelihood_weights(K_inv, alpha, w_diag, zero_diagonal):
    """K_inv (lower) ← W = ½(α αᵀ − K⁻¹) (GPML Eq. 5.9), both triangles, W's diagonal copied to w_diag
    and, with ``zero_diagonal``, zeroed in W (the FM reduction sums the a = b pairs apart).

    Grid (tiles, tiles) of SQUARE × SQUARE, block (SQUARE, SQUARE); a lower tile also writes its mirror
    through shared memory, so both writes coalesce."""
    N = K_inv.shape[0]
    ti = cuda.blockIdx.y
    tj = cuda.blockIdx.x
    if tj > ti:
        return
    tile = cuda.shared.array((SQUARE, SQUARE_PADDED), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    i = ti * SQUARE + ty
    j = tj * SQUARE + tx
    value = 0.0
    if i < N and j <= i:
        value = 0.5 * (alpha[i] * alpha[j] - K_inv[i, j])
        if i == j:
            w_diag[i] = value
            if zero_diagonal:
                value = 0.0
    tile[ty, tx] = value
    cuda.syncthreads()
    if i < N and j <= i:
        K_inv[i, j] = value
    # mirror: the thread at (ty, tx) writes W[tj·S + ty, ti·S + tx] = tile[tx, ty]
    mi = tj * SQUARE + ty
    mj = ti * SQUARE + tx
    if mj < N and mi < mj:
        K_inv[mi, mj] = tile[tx, ty]
