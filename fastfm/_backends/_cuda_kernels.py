"""Numba CUDA kernels of the ``cuda`` backend (imported lazily: it imports numba).

The host side (argument checks, device caches, launch sizes) is in
``fastfm/_backends/cuda.py``; this module holds only device code.  The maths
is that of the NumPy reference (``numpy_backend.py``, SPEC §2 and §4), one
thread per pair (a, b):

* FM Gram (paper Eq. 5):  K_ab = σ² Π_p F_p,
  F_p = Σ_g f(μ_g, α_p r_ab | β_p) P_g[v_ap, v_bp],  r = d^t, d² = Σ_d (C_ad − C_bd)²;
* fused reduction: Σ_ab W_ab ∂K_ab/∂ψ for ψ = (log θ, log α, log β, log σ²),
  each thread accumulating its pairs in registers/local memory, each block
  reducing its threads in shared memory, the host adding the per-block rows
  (no float64 atomics: the sum is deterministic for a given launch size);
* set sums (SPEC §4): K_ab = (1/(m m')) Σ_i Σ_j k_ν(‖(A_ai − B_bj)/ℓ‖);
* hierarchical kernel (SPEC §3, Hutter & Osborne 2013): K_ab = σ² g(Σ_i d_i²(a, b) / ℓ²),
  d_i² in closed form from the activity of column i in both points, and its
  fused reduction (the sums t, u and Σ W∘K of ``numpy_backend.hier_grad_reduction``).

Spectral tables (per discrete variable p, see ``cuda.py``): ``modes[p]`` is
``PROJECTOR`` (F_p reads P_g[v, v'] from a table of Σ_g n_p² entries) or
``EIGENVECTORS`` (for graphs whose projector table would be too large,
P_g[v, v'] = Σ_{i ∈ g} U[v, i] U[v', i] is summed on the fly).
"""
import math

from numba import config, cuda, float64

from .modulation import DIFFUSION

PROJECTOR = 0
EIGENVECTORS = 1

# Per-thread scratch sizes (compile-time constants for cuda.local.array); the
# host refuses larger problems with BackendUnavailableError naming the limit.
MAX_DISCRETE = 64                      # P, discrete variables
MAX_CONTINUOUS = 64                    # Dc, continuous dimensions (also d of the set kernels)
MAX_OUTPUTS = MAX_CONTINUOUS + 2 * MAX_DISCRETE + 1

# Threads per block of the reductions: a power of two (tree reduction in shared
# memory).  The simulator runs every thread as a Python thread, so it gets a
# small block to keep the tests fast.
REDUCTION_BLOCK = 16 if config.ENABLE_CUDASIM else 256
# 2-D tile of the cross Grams (x: columns, so that writes to K[a, b] coalesce)
TILE_X = 8 if config.ENABLE_CUDASIM else 32
TILE_Y = 4 if config.ENABLE_CUDASIM else 8
# 1-D blocks of the symmetric (triangular) Grams
LINEAR_BLOCK = 32 if config.ENABLE_CUDASIM else 256


# ----------------------------------------------------------------- helpers
@cuda.jit(device=True, inline=True)
def triangular_pair(k):
    """k-th pair (a, b) with b ≤ a of the lower triangle, row by row."""
    a = int((math.sqrt(8.0 * k + 1.0) - 1.0) * 0.5)
    # correct the float estimate (exact for any N that fits in memory)
    while a * (a + 1) // 2 > k:
        a -= 1
    while (a + 1) * (a + 2) // 2 <= k:
        a += 1
    return a, k - a * (a + 1) // 2


@cuda.jit(device=True, inline=True)
def squared_distance(C1, a, C2, b, n_continuous):
    sq = 0.0
    for d in range(n_continuous):
        diff = C1[a, d] - C2[b, d]
        sq += diff * diff
    return sq


@cuda.jit(device=True, inline=True)
def continuous_argument(sq, exponent):
    """r = d^t from d² (SPEC §2, generalised family)."""
    if exponent == 2.0:
        return sq
    return sq ** (0.5 * exponent)


@cuda.jit(device=True, inline=True)
def modulation_value(kind, coefficients, lam, s, beta):
    """f(λ, s | β): Σ_n a_n (1 + βλ + s)^(−n), or exp(−(1 + s)βλ) for diffusion.

    Device copy of ``Modulation.value`` (device code cannot call Python); the
    parity tests against the NumPy reference keep the two equal.
    """
    if kind == DIFFUSION:
        return math.exp(-(1.0 + s) * beta * lam)
    inv_u = 1.0 / (1.0 + beta * lam + s)
    total = 0.0
    power = inv_u
    for n in range(coefficients.shape[0]):
        total += coefficients[n] * power
        power *= inv_u
    return total


@cuda.jit(device=True, inline=True)
def modulation_derivatives(kind, coefficients, lam, s, beta):
    """(f, ∂f/∂s, β ∂f/∂β) at (λ, s | β)."""
    if kind == DIFFUSION:
        f = math.exp(-(1.0 + s) * beta * lam)
        return f, -beta * lam * f, -(1.0 + s) * beta * lam * f
    inv_u = 1.0 / (1.0 + beta * lam + s)
    f = 0.0
    df_du = 0.0
    power = inv_u
    for n in range(coefficients.shape[0]):
        f += coefficients[n] * power
        power *= inv_u
        df_du -= (n + 1) * coefficients[n] * power      # d/du u^-n = −n u^-(n+1)
    return f, df_du, df_du * beta * lam


@cuda.jit(device=True, inline=True)
def projector_entry(p, g, v1, v2, n, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets,
                    group_starts, group_sizes):
    """P_g[v1, v2] of variable p (g is the global group index)."""
    if modes[p] == PROJECTOR:
        return projectors[projector_offsets[g] + v1 * n + v2]
    base = eigvec_offsets[p]
    weight = 0.0
    for i in range(group_starts[g], group_starts[g] + group_sizes[g]):
        weight += eigenvectors[base + v1 * n + i] * eigenvectors[base + v2 * n + i]
    return weight


@cuda.jit(device=True, inline=True)
def factor_value(p, v1, v2, s, beta, n_states, group_offsets, group_values, modes, projectors, projector_offsets,
                 eigenvectors, eigvec_offsets, group_starts, group_sizes, kind, coefficients):
    """F_p = Σ_g f(μ_g, s | β) P_g[v1, v2] (SPEC §2, eigenvalues grouped)."""
    n = n_states[p]
    F = 0.0
    for g in range(group_offsets[p], group_offsets[p + 1]):
        weight = projector_entry(p, g, v1, v2, n, modes, projectors, projector_offsets, eigenvectors,
                                 eigvec_offsets, group_starts, group_sizes)
        F += weight * modulation_value(kind, coefficients, group_values[g], s, beta)
    return F


@cuda.jit(device=True, inline=True)
def factor_derivatives(p, v1, v2, s, beta, n_states, group_offsets, group_values, modes, projectors,
                       projector_offsets, eigenvectors, eigvec_offsets, group_starts, group_sizes, kind,
                       coefficients):
    """(F_p, ∂F_p/∂s, β ∂F_p/∂β)."""
    n = n_states[p]
    F = 0.0
    dF_ds = 0.0
    dF_dlogbeta = 0.0
    for g in range(group_offsets[p], group_offsets[p + 1]):
        weight = projector_entry(p, g, v1, v2, n, modes, projectors, projector_offsets, eigenvectors,
                                 eigvec_offsets, group_starts, group_sizes)
        f, df_ds, df_dlogbeta = modulation_derivatives(kind, coefficients, group_values[g], s, beta)
        F += weight * f
        dF_ds += weight * df_ds
        dF_dlogbeta += weight * df_dlogbeta
    return F, dF_ds, dF_dlogbeta


@cuda.jit(device=True, inline=True)
def fm_pair(R, D1, a, D2, b, n_discrete, alphas, betas, variance, n_states, group_offsets, group_values, modes,
            projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts, group_sizes, kind,
            coefficients):
    """K_ab = σ² Π_p F_p(v_ap, v_bp, α_p R_ab) (paper Eq. 5)."""
    K = variance
    for p in range(n_discrete):
        K *= factor_value(p, D1[a, p], D2[b, p], alphas[p] * R, betas[p], n_states, group_offsets, group_values,
                          modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                          group_sizes, kind, coefficients)
    return K


# ------------------------------------------------------------------ FM Grams
@cuda.jit
def fm_gram_cross(C1, D1, C2, D2, n_continuous, n_discrete, alphas, betas, variance, n_states, group_offsets,
                  group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                  group_sizes, kind, coefficients, exponent, K):
    """K (N, M) = k(X1, X2), one thread per entry."""
    b, a = cuda.grid(2)
    if a >= K.shape[0] or b >= K.shape[1]:
        return
    R = continuous_argument(squared_distance(C1, a, C2, b, n_continuous), exponent)
    K[a, b] = fm_pair(R, D1, a, D2, b, n_discrete, alphas, betas, variance, n_states, group_offsets, group_values,
                      modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts, group_sizes,
                      kind, coefficients)


@cuda.jit
def fm_gram_symmetric(C, D, n_continuous, n_discrete, alphas, betas, variance, n_states, group_offsets,
                      group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                      group_sizes, kind, coefficients, exponent, K):
    """K (N, N) = k(X, X): one thread per pair b ≤ a, mirrored (exactly symmetric, half the work)."""
    k = cuda.grid(1)
    N = K.shape[0]
    if k >= N * (N + 1) // 2:
        return
    a, b = triangular_pair(k)
    R = continuous_argument(squared_distance(C, a, C, b, n_continuous), exponent)
    value = fm_pair(R, D, a, D, b, n_discrete, alphas, betas, variance, n_states, group_offsets, group_values,
                    modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts, group_sizes,
                    kind, coefficients)
    K[a, b] = value
    K[b, a] = value


@cuda.jit
def fm_gram_from_argument(R, D1, D2, n_discrete, alphas, betas, variance, n_states, group_offsets, group_values,
                          modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                          group_sizes, kind, coefficients, K):
    """K_ab = σ² Π_p F_p(v_ap, v_bp, α_p R_ab) for a given continuous argument R (N, M)."""
    b, a = cuda.grid(2)
    if a >= K.shape[0] or b >= K.shape[1]:
        return
    K[a, b] = fm_pair(R[a, b], D1, a, D2, b, n_discrete, alphas, betas, variance, n_states, group_offsets,
                      group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                      group_sizes, kind, coefficients)


@cuda.jit
def fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, n_continuous, n_discrete, alphas, betas,
                            variance, n_states, group_offsets, group_values, modes, projectors, projector_offsets,
                            eigenvectors, eigvec_offsets, group_starts, group_sizes, kind, coefficients, exponent, K):
    """Row m: k(x_m, X), x_m = base point owner[m] with variable var_index[m] moved to new_state[m].

    On the GPU recomputing the P factors of a neighbour costs no more memory
    traffic than reading cached base factors, so each entry is evaluated in full.
    """
    n, m = cuda.grid(2)
    if m >= K.shape[0] or n >= K.shape[1]:
        return
    s = owner[m]
    R = continuous_argument(squared_distance(C0, s, C, n, n_continuous), exponent)
    value = variance
    for p in range(n_discrete):
        state = new_state[m] if p == var_index[m] else D0[s, p]
        value *= factor_value(p, state, D[n, p], alphas[p] * R, betas[p], n_states, group_offsets, group_values,
                              modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                              group_sizes, kind, coefficients)
    K[m, n] = value


# ------------------------------------------------------- block reduction
@cuda.jit(device=True, inline=True)
def tree_sum(shared, tid, size):
    """shared[0] ← Σ shared[:size] (size a power of two, one value per thread, all threads of the block
    calling; the caller synchronises after writing its value)."""
    stride = size // 2
    while stride > 0:
        if tid < stride:
            shared[tid] += shared[tid + stride]
        cuda.syncthreads()
        stride //= 2


@cuda.jit(device=True, inline=True)
def store_block_sums(accumulator, n_outputs, partials):
    """partials[block, j] = Σ over this block's threads of accumulator[j] (tree in shared memory)."""
    shared = cuda.shared.array(REDUCTION_BLOCK, float64)
    tid = cuda.threadIdx.x
    for j in range(n_outputs):
        shared[tid] = accumulator[j]
        cuda.syncthreads()
        tree_sum(shared, tid, REDUCTION_BLOCK)
        if tid == 0:
            partials[cuda.blockIdx.x, j] = shared[0]
        cuda.syncthreads()


@cuda.jit(device=True, inline=True)
def pair_weight(W, a, b):
    """The lower triangle visits each unordered pair once: both W_ab and W_ba weigh it."""
    if a == b:
        return W[a, a]
    return W[a, b] + W[b, a]


@cuda.jit(device=True, inline=True)
def add_pair_hyper_gradients(R, D, a, b, w, n_discrete, alphas, betas, variance, n_states, group_offsets,
                             group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets,
                             group_starts, group_sizes, kind, coefficients, F, dF_ds, dF_dlogbeta, prefix,
                             accumulator, offset):
    """Add w·∂K_ab/∂(log α (P), log β (P), log σ²) to accumulator[offset:]; return ∂K_ab/∂R_ab.

    With Q_p = Π_{q≠p} F_q (prefix · suffix products: no division, factors may be 0):
    ∂K/∂R = Σ_p σ² Q_p α_p ∂F_p/∂s, ∂K/∂log α_p = σ² Q_p α_p ∂F_p/∂s · R,
    ∂K/∂log β_p = σ² Q_p β_p ∂F_p/∂β and ∂K/∂log σ² = K (as ``numpy_backend.fm_reduction_from_argument``).
    F, dF_ds, dF_dlogbeta and prefix are the caller's per-thread scratch arrays.
    """
    running = 1.0
    for p in range(n_discrete):
        f, df, dfb = factor_derivatives(p, D[a, p], D[b, p], alphas[p] * R, betas[p], n_states, group_offsets,
                                        group_values, modes, projectors, projector_offsets, eigenvectors,
                                        eigvec_offsets, group_starts, group_sizes, kind, coefficients)
        F[p] = f
        dF_ds[p] = df
        dF_dlogbeta[p] = dfb
        prefix[p] = running                  # Π_{q<p} F_q
        running *= f
    accumulator[offset + 2 * n_discrete] += w * variance * running
    suffix = 1.0
    dK_dR = 0.0
    for p in range(n_discrete - 1, -1, -1):
        sQ = variance * prefix[p] * suffix
        suffix *= F[p]
        dK_dR_p = sQ * alphas[p] * dF_ds[p]
        dK_dR += dK_dR_p
        accumulator[offset + p] += w * dK_dR_p * R
        accumulator[offset + n_discrete + p] += w * sQ * dF_dlogbeta[p]
    return dK_dR


@cuda.jit
def fm_grad_reduction(C, D, W, n_continuous, n_discrete, alphas, betas, variance, n_states, group_offsets,
                      group_values, modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                      group_sizes, kind, coefficients, exponent, partials):
    """Per-block rows of Σ_ab W_ab ∂K_ab/∂ψ, ψ = (log θ (Dc), log α (P), log β (P), log σ²).

    The hyperparameters of the factors as in :func:`add_pair_hyper_gradients`; the
    lengthscales through R = d^t: ∂K/∂log θ_d = ∂K/∂R · (t/2) d^(t−2) · (−2)(C_ad − C_bd)².
    """
    accumulator = cuda.local.array(MAX_OUTPUTS, float64)
    F = cuda.local.array(MAX_DISCRETE, float64)
    dF_ds = cuda.local.array(MAX_DISCRETE, float64)
    dF_dlogbeta = cuda.local.array(MAX_DISCRETE, float64)
    prefix = cuda.local.array(MAX_DISCRETE, float64)
    n_outputs = n_continuous + 2 * n_discrete + 1
    for j in range(n_outputs):
        accumulator[j] = 0.0
    N = C.shape[0]
    for k in range(cuda.grid(1), N * (N + 1) // 2, cuda.gridsize(1)):
        a, b = triangular_pair(k)
        w = pair_weight(W, a, b)
        sq = squared_distance(C, a, C, b, n_continuous)
        R = continuous_argument(sq, exponent)
        dK_dR = add_pair_hyper_gradients(R, D, a, b, w, n_discrete, alphas, betas, variance, n_states,
                                         group_offsets, group_values, modes, projectors, projector_offsets,
                                         eigenvectors, eigvec_offsets, group_starts, group_sizes, kind, coefficients,
                                         F, dF_ds, dF_dlogbeta, prefix, accumulator, n_continuous)
        if exponent == 2.0:
            chain = w * dK_dR
        elif sq > 0.0:
            chain = w * dK_dR * 0.5 * exponent * sq ** (0.5 * exponent - 1.0)
        else:
            chain = 0.0
        for d in range(n_continuous):
            diff = C[a, d] - C[b, d]
            accumulator[d] -= 2.0 * chain * diff * diff
    store_block_sums(accumulator, n_outputs, partials)


@cuda.jit
def fm_reduction_from_argument(R, D, W, n_discrete, alphas, betas, variance, n_states, group_offsets, group_values,
                               modes, projectors, projector_offsets, eigenvectors, eigvec_offsets, group_starts,
                               group_sizes, kind, coefficients, partials, omega):
    """Per-block rows of Σ_ab W_ab ∂K_ab/∂(log α, log β, log σ²) for a given argument R (N, N),
    and omega_ab = W_ab ∂K_ab/∂R_ab (for the caller's chain rule through R, e.g. ModNN)."""
    accumulator = cuda.local.array(MAX_OUTPUTS, float64)
    F = cuda.local.array(MAX_DISCRETE, float64)
    dF_ds = cuda.local.array(MAX_DISCRETE, float64)
    dF_dlogbeta = cuda.local.array(MAX_DISCRETE, float64)
    prefix = cuda.local.array(MAX_DISCRETE, float64)
    n_outputs = 2 * n_discrete + 1
    for j in range(n_outputs):
        accumulator[j] = 0.0
    N = R.shape[0]
    for k in range(cuda.grid(1), N * (N + 1) // 2, cuda.gridsize(1)):
        a, b = triangular_pair(k)
        # R is symmetric for a symmetric Gram, so one pair serves both (a, b) and (b, a)
        dK_dR = add_pair_hyper_gradients(R[a, b], D, a, b, pair_weight(W, a, b), n_discrete, alphas, betas,
                                         variance, n_states, group_offsets, group_values, modes, projectors,
                                         projector_offsets, eigenvectors, eigvec_offsets, group_starts, group_sizes,
                                         kind, coefficients, F, dF_ds, dF_dlogbeta, prefix, accumulator, 0)
        omega[a, b] = W[a, b] * dK_dR
        omega[b, a] = W[b, a] * dK_dR
    store_block_sums(accumulator, n_outputs, partials)


# ---------------------------------------------------------------- set sums
MATERN_12 = 0
MATERN_32 = 1
MATERN_52 = 2


@cuda.jit(device=True, inline=True)
def matern(r, nu_code):
    """k_ν(r) with unit amplitude, ν ∈ {1/2, 3/2, 5/2}."""
    if nu_code == MATERN_12:
        return math.exp(-r)
    if nu_code == MATERN_32:
        z = math.sqrt(3.0) * r
        return (1.0 + z) * math.exp(-z)
    z = math.sqrt(5.0) * r
    return (1.0 + z + z * z / 3.0) * math.exp(-z)


@cuda.jit(device=True, inline=True)
def matern_lengthscale_coefficient(r, nu_code):
    """c(r) with ∂k_ν/∂log ℓ_k = c(r)·u_k², u = (x − x')/ℓ (since ∂r/∂log ℓ_k = −u_k²/r)."""
    if nu_code == MATERN_12:
        return math.exp(-r) / r if r > 0.0 else 0.0     # u_k²/r ≤ r → 0 at r = 0
    if nu_code == MATERN_32:
        return 3.0 * math.exp(-math.sqrt(3.0) * r)
    z = math.sqrt(5.0) * r
    return (5.0 / 3.0) * (1.0 + z) * math.exp(-z)


@cuda.jit(device=True, inline=True)
def scaled_distance(A, a, i, B, b, j, length_scale):
    sq = 0.0
    for k in range(length_scale.shape[0]):
        u = (A[a, i, k] - B[b, j, k]) / length_scale[k]
        sq += u * u
    return math.sqrt(sq)


@cuda.jit(device=True, inline=True)
def set_pair(A, a, B, b, length_scale, nu_code):
    """(1/(m m')) Σ_i Σ_j k_ν(‖(A_ai − B_bj)/ℓ‖)  (SPEC §4)."""
    total = 0.0
    for i in range(A.shape[1]):
        for j in range(B.shape[1]):
            total += matern(scaled_distance(A, a, i, B, b, j, length_scale), nu_code)
    return total / (A.shape[1] * B.shape[1])


@cuda.jit
def set_gram_cross(A, B, length_scale, nu_code, K):
    b, a = cuda.grid(2)
    if a >= K.shape[0] or b >= K.shape[1]:
        return
    K[a, b] = set_pair(A, a, B, b, length_scale, nu_code)


@cuda.jit
def set_gram_symmetric(A, length_scale, nu_code, K):
    k = cuda.grid(1)
    N = K.shape[0]
    if k >= N * (N + 1) // 2:
        return
    a, b = triangular_pair(k)
    value = set_pair(A, a, A, b, length_scale, nu_code)
    K[a, b] = value
    K[b, a] = value


@cuda.jit
def set_grad_reduction(A, W, length_scale, nu_code, partials):
    """Per-block rows of g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k, K = set Gram of A with itself."""
    accumulator = cuda.local.array(MAX_CONTINUOUS, float64)
    n_dims = length_scale.shape[0]
    for k in range(n_dims):
        accumulator[k] = 0.0
    N, m = A.shape[0], A.shape[1]
    scale = 1.0 / (m * m)
    for pair in range(cuda.grid(1), N * (N + 1) // 2, cuda.gridsize(1)):
        a, b = triangular_pair(pair)
        w = pair_weight(W, a, b) * scale
        for i in range(m):
            for j in range(m):
                coefficient = w * matern_lengthscale_coefficient(scaled_distance(A, a, i, A, b, j, length_scale),
                                                                 nu_code)
                for k in range(n_dims):
                    u = (A[a, i, k] - A[b, j, k]) / length_scale[k]
                    accumulator[k] += coefficient * u * u
    store_block_sums(accumulator, n_dims, partials)


# ------------------------------------------------- hierarchical kernel (SPEC §3)
# Per-thread scratch of the reduction: d_i² and ∂d_i²/∂log ρ_i of one pair, then the
# sums t (n_dims), u (n_dims) and Σ W∘K.  The host refuses wider spaces.
MAX_HIER_DIMS = 64
MAX_HIER_OUTPUTS = 2 * MAX_HIER_DIMS + 1
HIER_RBF = 0                           # ``profile`` codes, as ``numpy_backend.HIER_PROFILES``
HIER_MATERN52 = 1


@cuda.jit(device=True, inline=True)
def hier_dimension_terms(V1, M1, a, V2, M2, b, i, is_real, omega, rho_pi):
    """(d_i², ∂d_i²/∂log ρ_i) of column i for the pair (a, b) (Hutter & Osborne 2013, Eqs. 6–7).

    d_i² = 0 (both inactive), ω_i² (one active), ω_i²(2 − 2cos πρ_i(x̂ − x̂')) (both active,
    real), 2ω_i²[v ≠ v'] (both active, categorical): the squared distance of the
    embeddings ω_i(sin πρ_i x̂, cos πρ_i x̂) and ω_i e_v, which are never formed.
    """
    active1 = M1[a, i] != 0
    active2 = M2[b, i] != 0
    w2 = omega[i] * omega[i]
    if active1 and active2:
        if is_real[i] != 0:
            delta = rho_pi[i] * (V1[a, i] - V2[b, i])
            # ∂/∂log ρ of ω²(2 − 2cos δ) with δ ∝ ρ: 2ω² sin δ · δ
            return w2 * (2.0 - 2.0 * math.cos(delta)), w2 * 2.0 * math.sin(delta) * delta
        if V1[a, i] != V2[b, i]:
            return 2.0 * w2, 0.0
        return 0.0, 0.0
    if active1 != active2:
        return w2, 0.0              # the active point's embedding has norm ω_i, the other's is 0
    return 0.0, 0.0


@cuda.jit(device=True, inline=True)
def hier_squared_distance(V1, M1, a, V2, M2, b, n_dims, is_real, omega, rho_pi):
    """Σ_i d_i²(a, b), the squared Euclidean distance of the concatenated embeddings."""
    total = 0.0
    for i in range(n_dims):
        d2, _ = hier_dimension_terms(V1, M1, a, V2, M2, b, i, is_real, omega, rho_pi)
        total += d2
    return total


@cuda.jit(device=True, inline=True)
def hier_profile(profile, sq):
    """(g, dg/d(r²)) of the Euclidean kernel κ at r² = sq (``kernels.continuous`` profiles)."""
    if profile == HIER_RBF:
        g = math.exp(-0.5 * sq)
        return g, -0.5 * g
    r = math.sqrt(sq)
    e = math.exp(-math.sqrt(5.0) * r)
    # Matérn 5/2: g = (1 + √5 r + 5r²/3) e^(−√5 r), dg/d(r²) = −(5/6)(1 + √5 r) e^(−√5 r)
    return (1.0 + math.sqrt(5.0) * r + 5.0 / 3.0 * sq) * e, -(5.0 / 6.0) * (1.0 + math.sqrt(5.0) * r) * e


@cuda.jit
def hier_gram_cross(V1, M1, V2, M2, n_dims, is_real, omega, rho_pi, lengthscale, variance, profile, K):
    """K (N, M) = σ² g(Σ_i d_i² / ℓ²) of X1 against X2, one thread per entry."""
    b, a = cuda.grid(2)
    if a >= K.shape[0] or b >= K.shape[1]:
        return
    sq = hier_squared_distance(V1, M1, a, V2, M2, b, n_dims, is_real, omega, rho_pi)
    g, _ = hier_profile(profile, sq / (lengthscale * lengthscale))
    K[a, b] = variance * g


@cuda.jit
def hier_gram_symmetric(V, M, n_dims, is_real, omega, rho_pi, lengthscale, variance, profile, K):
    """K (N, N) of X with itself: one thread per pair b ≤ a, mirrored (exactly symmetric, half the work)."""
    k = cuda.grid(1)
    N = K.shape[0]
    if k >= N * (N + 1) // 2:
        return
    a, b = triangular_pair(k)
    sq = hier_squared_distance(V, M, a, V, M, b, n_dims, is_real, omega, rho_pi)
    g, _ = hier_profile(profile, sq / (lengthscale * lengthscale))
    value = variance * g
    K[a, b] = value
    K[b, a] = value


@cuda.jit
def hier_grad_reduction(V, M, W, n_dims, is_real, omega, rho_pi, lengthscale, variance, profile, partials):
    """Per-block rows of (t (n_dims), u (n_dims), Σ W∘K) of ``numpy_backend.hier_grad_reduction``.

    With Ω_ab = W_ab σ² g'(r²_ab)/ℓ²: t_i = Σ_ab Ω_ab d_i²(a, b), u_i = Σ_ab Ω_ab ∂d_i²/∂log ρ_i.
    Ω_ab needs the whole r²_ab first, so a pair's d_i² wait in per-thread scratch.
    """
    accumulator = cuda.local.array(MAX_HIER_OUTPUTS, float64)
    d2 = cuda.local.array(MAX_HIER_DIMS, float64)
    dd2 = cuda.local.array(MAX_HIER_DIMS, float64)
    n_outputs = 2 * n_dims + 1
    for j in range(n_outputs):
        accumulator[j] = 0.0
    inverse_square_lengthscale = 1.0 / (lengthscale * lengthscale)
    N = V.shape[0]
    for k in range(cuda.grid(1), N * (N + 1) // 2, cuda.gridsize(1)):
        a, b = triangular_pair(k)
        w = pair_weight(W, a, b)
        sq = 0.0
        for i in range(n_dims):
            term, slope = hier_dimension_terms(V, M, a, V, M, b, i, is_real, omega, rho_pi)
            d2[i] = term
            dd2[i] = slope
            sq += term
        g, dg = hier_profile(profile, sq * inverse_square_lengthscale)
        weight = w * variance * dg * inverse_square_lengthscale
        for i in range(n_dims):
            accumulator[i] += weight * d2[i]
            accumulator[n_dims + i] += weight * dd2[i]
        accumulator[2 * n_dims] += w * variance * g
    store_block_sums(accumulator, n_outputs, partials)
