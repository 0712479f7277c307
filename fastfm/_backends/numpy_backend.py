"""NumPy reference backend: the readable definition of the FM kernel (SPEC §2, paper Eq. 5).

Every fast backend (``cpp``, ``cuda``) implements the same private functions
with the same signatures, and is tested against this module.

Shared argument conventions
---------------------------
C1, C2 : (N, Dc), (M, Dc) float64
    Continuous coordinates already divided by the lengthscales θ, so that the
    ARD distance is d²(a, b) = Σ_d (C1[a, d] − C2[b, d])².
D1, D2 : (N, P), (M, P) int64
    Discrete state indices.  ``C2 = D2 = None`` means the symmetric Gram of C1/D1.
spectra : PackedSpectra
alphas, betas : (P,) float64;  variance : float
modulation : Modulation
    The continuous argument is r = d^t (t = ``modulation.exponent``) and the
    factor of variable p is  F_p = Σ_g f(μ_g, α_p r | β_p) P_g[v_p, v'_p].
"""
import numpy as np

from . import _parts
from .modulation import Modulation  # noqa: F401  (documented type)
from .profiles import matern52_profile, rbf_profile

name = "numpy"


def _unpack(spectra, p):
    n = int(spectra.n_states[p])
    U = spectra.eigenvectors[spectra.eigvec_offsets[p]:spectra.eigvec_offsets[p + 1]].reshape(n, n)
    g0, g1 = spectra.group_offsets[p], spectra.group_offsets[p + 1]
    values = spectra.group_values[g0:g1]
    starts = np.concatenate([[0], np.cumsum(spectra.group_sizes[g0:g1])])
    projectors = [U[:, starts[g]:starts[g + 1]] @ U[:, starts[g]:starts[g + 1]].T for g in range(g1 - g0)]
    return values, projectors


def continuous_argument(C1, C2, exponent):
    """r = d^t for every pair: shape (N, M)."""
    C2 = C1 if C2 is None else C2
    sq = np.zeros((C1.shape[0], C2.shape[0]))
    for d in range(C1.shape[1]):
        sq += (C1[:, d, None] - C2[None, :, d]) ** 2
    return sq if exponent == 2.0 else sq ** (0.5 * exponent)


def _factor(spectra, p, v1, v2, s, beta, modulation, with_derivatives):
    """F_p and optionally (∂F_p/∂s, β ∂F_p/∂β) for every pair; s has shape (N, M)."""
    values, projectors = _unpack(spectra, p)
    F = np.zeros_like(s)
    dF_ds = np.zeros_like(s) if with_derivatives else None
    dF_dlogbeta = np.zeros_like(s) if with_derivatives else None
    for mu, P in zip(values, projectors):
        weights = P[np.ix_(v1, v2)]
        if with_derivatives:
            f, df_ds, df_dlogbeta = modulation.derivatives(mu, s, beta)
            dF_ds += weights * df_ds
            dF_dlogbeta += weights * df_dlogbeta
        else:
            f = modulation.value(mu, s, beta)
        F += weights * f
    return F, dF_ds, dF_dlogbeta


def fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation):
    """K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab)."""
    D2 = D1 if D2 is None else D2
    K = np.full(R.shape, float(variance))
    for p in range(spectra.n_variables):
        F, _, _ = _factor(spectra, p, D1[:, p], D2[:, p], alphas[p] * R, betas[p], modulation, False)
        K *= F
    return K


def fm_gram(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """The FM Gram matrix, shape (N, M) (or (N, N) when C2 is None)."""
    R = continuous_argument(C1, C2, modulation.exponent)
    return fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation)


def fm_gram_sum(C, lengthscales, states, spectra_list, alphas, betas, variances, modulation, out=None, weights=None,
                keep_grams=True, grams_out=None, workspace=None):
    """(Σ_k K_k, diagonals (n_parts, N)): the Grams of FM kernels on the same points, each on its own lengthscales
    and discrete columns (``_parts``' module docstring), added in order into ``out`` (in place) if given; with
    ``weights``, (K, diagonals, part_grams) (``_parts.sum_of_part_grams``)."""
    return _parts.sum_of_part_grams(fm_gram, C, lengthscales, states, spectra_list, alphas, betas, variances,
                                    modulation, out, weights, keep_grams, grams_out, workspace)


def fm_grad_reduction_sum(C, lengthscales, states, W, spectra_list, alphas, betas, variances, modulation,
                          symmetric_weights=False, scalings=None, workspace=None):
    """Per part of ``fm_gram_sum``, ``fm_grad_reduction``'s (g_lengthscale, g_alpha, g_beta, g_variance), the
    parts' concatenated into one vector (``_parts.concatenated_part_reductions``: ``scalings``)."""
    return _parts.concatenated_part_reductions(fm_grad_reduction, C, lengthscales, states, W, spectra_list, alphas,
                                               betas, variances, modulation, symmetric_weights, scalings, fm_gram,
                                               workspace)


def fm_cross_gram_sum(C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas, variances, modulation,
                      weights1=None, weights2=None):
    """K (M, N): the parts of ``fm_gram_sum`` between rows C1 (states1[k]) and columns C2 (states2[k]), each scaled by
    its row and column weights where given, added in order (``_parts.sum_of_part_cross_grams``)."""
    return _parts.sum_of_part_cross_grams(fm_gram, C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas,
                                          variances, modulation, weights1, weights2)


def fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas, variances, modulation,
                          out_K=None, out_dK=None, weights1=None, weights2=None):
    """(K (M, N), dK (M, N, Dc)): ``fm_cross_gradient`` of the parts of ``fm_gram_sum`` (rows C1 with states1[k],
    columns C2 with states2[k]), each part's dK divided by its lengthscales and scaled by its row and column weights
    where given, added in order into (out_K, out_dK)."""
    return _parts.sum_of_part_cross_gradients(fm_cross_gradient, C1, states1, C2, states2, lengthscales,
                                              spectra_list, alphas, betas, variances, modulation, out_K, out_dK,
                                              weights1, weights2)


def _products_of_others(factors):
    """Q_p = Π_{q≠p} F_q by prefix/suffix products (no division: factors may be 0)."""
    P = len(factors)
    prefix = [None] * P
    running = np.ones_like(factors[0])
    for p in range(P):
        prefix[p] = running
        running = running * factors[p]
    others = [None] * P
    running = np.ones_like(factors[0])
    for p in reversed(range(P)):
        others[p] = prefix[p] * running
        running = running * factors[p]
    return others


def fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation):
    """Weighted sums of the Gram derivatives, given the continuous argument R (N, N).

    Returns
    -------
    g_alpha : (P,)   Σ_ab W_ab ∂K_ab/∂log α_p
    g_beta : (P,)    Σ_ab W_ab ∂K_ab/∂log β_p
    g_variance : float   Σ_ab W_ab ∂K_ab/∂log σ² (= Σ W∘K)
    omega : (N, N)   W_ab ∂K_ab/∂R_ab, for chain rules through R
    """
    P = spectra.n_variables
    g_alpha, g_beta = np.zeros(P), np.zeros(P)
    if P == 0:
        K = np.full(R.shape, float(variance))
        return g_alpha, g_beta, float(np.sum(W * K)), np.zeros_like(R)
    Fs, dFs, dFbs = [], [], []
    for p in range(P):
        F, dF_ds, dF_dlogbeta = _factor(spectra, p, D[:, p], D[:, p], alphas[p] * R, betas[p], modulation, True)
        Fs.append(F); dFs.append(dF_ds); dFbs.append(dF_dlogbeta)
    others = _products_of_others(Fs)
    omega = np.zeros_like(R)
    for p in range(P):
        sQ = variance * others[p]
        # ∂K/∂R through s_p = α_p R:  σ² Q_p α_p ∂F_p/∂s
        dK_dR_p = sQ * alphas[p] * dFs[p]
        omega += W * dK_dR_p
        g_alpha[p] = np.sum(W * dK_dR_p * R)            # ∂s_p/∂log α_p = α_p R
        g_beta[p] = np.sum(W * sQ * dFbs[p])
    K = variance * others[0] * Fs[0]
    return g_alpha, g_beta, float(np.sum(W * K)), omega


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation, symmetric_weights=False):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    The N×N×n_params derivative tensor is never formed.  ``symmetric_weights``
    (W = Wᵀ promised, which lets the C++ backend read one triangle) changes
    nothing here: the full sum is the definition.

    Returns
    -------
    g_lengthscale : (Dc,), g_alpha : (P,), g_beta : (P,), g_variance : float
    """
    t = modulation.exponent
    sq = continuous_argument(C, None, 2.0)
    R = sq if t == 2.0 else sq ** (0.5 * t)
    g_alpha, g_beta, g_variance, omega = fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation)
    # ∂R/∂log θ_d = (t/2) sq^(t/2 - 1) · ∂sq/∂log θ_d, and ∂sq/∂log θ_d = −2 (C_a,d − C_b,d)²
    if t == 2.0:
        chain = omega
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            chain = np.where(sq > 0, omega * 0.5 * t * sq ** (0.5 * t - 1.0), 0.0)
    g_lengthscale = np.array([-2.0 * np.sum(chain * (C[:, d, None] - C[None, :, d]) ** 2) for d in range(C.shape[1])])
    return g_lengthscale, g_alpha, g_beta, g_variance


def fm_gram_gradient(C, D, spectra, alphas, betas, variance, modulation):
    """K and the full derivative tensor dK/dψ, shape (N, N, Dc + 2P + 1), same order as
    :func:`fm_grad_reduction`.  Reference only (memory N²·n_params)."""
    N, Dc = C.shape
    P = spectra.n_variables
    t = modulation.exponent
    sq = continuous_argument(C, None, 2.0)
    R = sq if t == 2.0 else sq ** (0.5 * t)
    dK = np.zeros((N, N, Dc + 2 * P + 1))
    Fs, dFs, dFbs = [], [], []
    for p in range(P):
        F, dF_ds, dF_dlogbeta = _factor(spectra, p, D[:, p], D[:, p], alphas[p] * R, betas[p], modulation, True)
        Fs.append(F); dFs.append(dF_ds); dFbs.append(dF_dlogbeta)
    others = _products_of_others(Fs) if P else []
    K = variance * (others[0] * Fs[0] if P else np.ones((N, N)))
    dK_dR = np.zeros((N, N))
    for p in range(P):
        dK_dR_p = variance * others[p] * alphas[p] * dFs[p]
        dK_dR += dK_dR_p
        dK[:, :, Dc + p] = dK_dR_p * R
        dK[:, :, Dc + P + p] = variance * others[p] * dFbs[p]
    dK[:, :, -1] = K
    with np.errstate(divide="ignore", invalid="ignore"):
        dR_dsq = np.ones_like(sq) if t == 2.0 else np.where(sq > 0, 0.5 * t * sq ** (0.5 * t - 1.0), 0.0)
    for d in range(Dc):
        dK[:, :, d] = dK_dR * dR_dsq * (-2.0) * (C[:, d, None] - C[None, :, d]) ** 2
    return K, dK


def fm_neighbour_gram(c, v, C, D, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Cross-covariances of graph neighbours of one point against N points.

    Row m is k(x_m, X) where x_m is (c, v) with discrete variable
    ``var_index[m]`` moved to state ``new_state[m]``.  Only that variable's
    factor changes, so each row reuses Q_p = Π_{q≠p} F_q of the base point
    (SPEC §2): the cost of all rows is about one kernel row plus one factor
    per neighbour.

    Parameters
    ----------
    c : (Dc,) scaled continuous part;  v : (P,) int64 states
    C : (N, Dc), D : (N, P)
    var_index, new_state : (M,) int64

    Returns
    -------
    K : (M, N)
    """
    R = continuous_argument(c[None, :], C, modulation.exponent)[0]              # (N,)
    P = spectra.n_variables
    Fs = [_factor(spectra, p, np.array([v[p]]), D[:, p], alphas[p] * R[None, :], betas[p], modulation, False)[0][0]
          for p in range(P)]
    others = _products_of_others(Fs)
    K = np.empty((len(var_index), C.shape[0]))
    for m, (p, u) in enumerate(zip(var_index, new_state)):
        F_new = _factor(spectra, p, np.array([u]), D[:, p], alphas[p] * R[None, :], betas[p], modulation, False)[0][0]
        K[m] = variance * others[p] * F_new
    return K


def fm_cross_gradient(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) and its derivative w.r.t. the scaled continuous inputs of X1.

    Returns
    -------
    K : (M, N)
    dK : (M, N, Dc), dK[m, n, d] = ∂K[m, n]/∂C1[m, d]
    """
    t = modulation.exponent
    sq = continuous_argument(C1, C2, 2.0)
    R = sq if t == 2.0 else sq ** (0.5 * t)
    P = spectra.n_variables
    Fs, dFs = [], []
    for p in range(P):
        F, dF, _ = _factor(spectra, p, D1[:, p], D2[:, p], alphas[p] * R, betas[p], modulation, True)
        Fs.append(F); dFs.append(dF)
    if P == 0:
        return np.full(R.shape, float(variance)), np.zeros(R.shape + (C1.shape[1],))
    others = _products_of_others(Fs)
    K = variance * others[0] * Fs[0]
    dK_dR = sum(variance * others[p] * alphas[p] * dFs[p] for p in range(P))
    if t != 2.0:
        with np.errstate(divide="ignore", invalid="ignore"):
            dK_dR = np.where(sq > 0, dK_dR * 0.5 * t * sq ** (0.5 * t - 1.0), 0.0)
    diff = C1[:, None, :] - C2[None, :, :]                                        # (M, N, Dc)
    return K, 2.0 * dK_dR[:, :, None] * diff


def fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """:func:`fm_neighbour_gram` for several base points at once.

    Row m is k(x_m, X) where x_m is base point ``owner[m]`` (a row of C0/D0) with
    discrete variable ``var_index[m]`` moved to state ``new_state[m]``.

    Parameters
    ----------
    C0 : (S, Dc), D0 : (S, P)   base points
    C : (N, Dc), D : (N, P)     the points to score against
    owner, var_index, new_state : (M,) int64

    Returns
    -------
    K : (M, N)
    """
    K = np.empty((len(owner), C.shape[0]))
    for s in np.unique(owner):
        rows = np.flatnonzero(owner == s)
        K[rows] = fm_neighbour_gram(C0[s], D0[s], C, D, var_index[rows], new_state[rows], spectra, alphas, betas,
                                    variance, modulation)
    return K


# ----------------------------------------------------------------------------------------
# Set kernels (SPEC §4; Kim et al., BO over sets).  Shared private signatures:
#   set_gram(A, B, length_scale, nu) -> K                 K[a,b] = 1/(m m') Σ_ij k_ν(‖(A[a,i]−B[b,j])/ℓ‖)
#   set_grad_reduction(A, W, length_scale, nu) -> g      g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k, K = set_gram(A, A)
# A: (NA, m, d), B: (NB, m', d) float64 or None (the symmetric Gram of A); length_scale: (d,);
# nu ∈ {0.5, 1.5, 2.5}.  Unit amplitude: the kernel applies its variance.
# ----------------------------------------------------------------------------------------
MATERN_ORDERS = (0.5, 1.5, 2.5)
SET_BLOCK_TERMS = 32_768     # pair terms per block of the set Gram loops (see set_gram)


def matern_profile(sq, nu=2.5, with_slope=True):
    """Unit-amplitude Matérn k_ν and ∂k_ν/∂(r²) as functions of the squared scaled distance r².

    Parameters
    ----------
    sq : ndarray
        r² ≥ 0.
    nu : {0.5, 1.5, 2.5}
    with_slope : bool
        Also return the slope (otherwise ``slope`` is None).

    Returns
    -------
    value, slope : ndarrays shaped like ``sq``
    """
    if nu not in MATERN_ORDERS:
        raise ValueError(f"nu must be one of {MATERN_ORDERS}, got nu={nu!r}")
    r = np.sqrt(sq)
    if nu == 0.5:
        e = np.exp(-r)
        if not with_slope:
            return e, None
        # −e^{−r}/(2r) is singular at r = 0, where every coordinate difference is 0 too
        # (the gradient terms slope·Δ² vanish): define the slope as 0 there.
        with np.errstate(divide="ignore", invalid="ignore"):
            return e, np.where(r > 0, -0.5 * e / np.where(r > 0, r, 1.0), 0.0)
    t = r * np.sqrt(2.0 * nu)                      # √5 r or √3 r
    e = np.exp(-t)
    if nu == 2.5:
        value = (1.0 + t + t * t / 3.0) * e
        return value, (-(5.0 / 6.0) * (1.0 + t) * e if with_slope else None)
    return (1.0 + t) * e, (-1.5 * e if with_slope else None)


def _scaled_sets(A, length_scale):
    return np.asarray(A, dtype=np.float64) / np.asarray(length_scale, dtype=np.float64)[None, None, :]


def _squared_distances(P, Q):
    """Squared distances between the rows of P (m, d) and Q (n, d), shape (m, n), one coordinate at a time."""
    sq = np.zeros((P.shape[0], Q.shape[0]))
    for k in range(P.shape[1]):
        sq += np.subtract.outer(P[:, k], Q[:, k]) ** 2
    return sq


def set_gram(A, B, length_scale, nu=2.5):
    """The exact set Gram matrix, shape (NA, NB) (pairs of a symmetric Gram computed once)."""
    if B is not None and len(B) < len(A):
        # one Python iteration per row: loop over the shorter side (BO scores many candidates
        # against few observations)
        return set_gram(B, A, length_scale, nu).T.copy()
    SA = _scaled_sets(A, length_scale)
    symmetric = B is None
    SB = SA if symmetric else _scaled_sets(B, length_scale)
    NA, m, _ = SA.shape
    NB, mb, d = SB.shape
    B_flat = SB.reshape(NB * mb, d)
    # blocks of whole sets of B with ~SET_BLOCK_TERMS pair terms: the temporaries stay in cache
    # (one (m, NB·m') block per row was 3× slower at (500, 50, 2), mostly page faults)
    sets_per_block = max(1, SET_BLOCK_TERMS // (m * mb))
    K = np.empty((NA, NB))
    for a in range(NA):
        start = a if symmetric else 0            # symmetric: b ≥ a only, then mirror
        for b0 in range(start, NB, sets_per_block):
            b1 = min(NB, b0 + sets_per_block)
            sq = _squared_distances(SA[a], B_flat[b0 * mb:b1 * mb])             # (m, (b1 − b0)·m')
            K[a, b0:b1] = matern_profile(sq, nu, False)[0].reshape(m, b1 - b0, mb).sum(axis=(0, 2)) / (m * mb)
        if symmetric:
            K[start:, a] = K[a, start:]
    return K


def _slope_weighted_squares(P, Q, nu, n_sets):
    """Σ_ij slope(r²_ij) Δ_ijk² per set of Q and coordinate k, shape (n_sets, d); Q holds n_sets sets."""
    slope = matern_profile(_squared_distances(P, Q), nu)[1]
    m, d = P.shape
    return np.stack([(slope * np.subtract.outer(P[:, k], Q[:, k]) ** 2).reshape(m, n_sets, -1).sum(axis=(0, 2))
                     for k in range(d)], axis=1)


def set_grad_reduction(A, W, length_scale, nu=2.5):
    """g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k for K = set_gram(A, None, ℓ, ν), shape (d,).

    ∂K_ab/∂log ℓ_k = (1/m²) Σ_ij ∂k_ν/∂(r²) · (−2 Δ_ijk²), Δ the scaled difference.
    """
    SA = _scaled_sets(A, length_scale)
    N, m, d = SA.shape
    W = np.asarray(W, dtype=np.float64)
    flat = SA.reshape(N * m, d)
    g = np.zeros(d)
    sets_per_block = max(1, SET_BLOCK_TERMS // (m * m))
    for a in range(N):
        weights = W[a, a:] + W[a:, a]
        weights[0] = W[a, a]                                                  # each unordered pair once
        for b0 in range(a, N, sets_per_block):
            b1 = min(N, b0 + sets_per_block)
            g += weights[b0 - a:b1 - a] @ _slope_weighted_squares(SA[a], flat[b0 * m:b1 * m], nu, b1 - b0)
    return -2.0 / (m * m) * g


def set_gram_gradient(A, length_scale, nu=2.5):
    """(K (N, N), dK (N, N, d)) with dK[..., k] = ∂K/∂log ℓ_k (for tests and ``eval_gradient``)."""
    SA = _scaled_sets(A, length_scale)
    N, m, d = SA.shape
    flat = SA.reshape(N * m, d)
    K = np.empty((N, N))
    dK = np.empty((N, N, d))
    for a in range(N):
        K[a] = matern_profile(_squared_distances(SA[a], flat), nu, False)[0].reshape(m, N, m).sum(axis=(0, 2)) / (m * m)
        dK[a] = -2.0 / (m * m) * _slope_weighted_squares(SA[a], flat, nu, N)
    return K, dK


def set_diag(A, length_scale, nu=2.5):
    """K_set(A[a], A[a]) for every set, shape (NA,), in O(NA m² d)."""
    SA = _scaled_sets(A, length_scale)
    sq = np.zeros(SA.shape[:2] + SA.shape[1:2])
    for k in range(SA.shape[2]):
        sq += (SA[:, :, None, k] - SA[:, None, :, k]) ** 2
    return matern_profile(sq, nu, False)[0].mean(axis=(1, 2))


def set_cross_gradient(A, B, length_scale, nu=2.5):
    """K (NA, NB) and dK (NA, NB, m, d) with dK[a, b, i, k] = ∂K[a, b]/∂A[a, i, k].

    ∂K_ab/∂A_aik = 1/(m m') Σ_j ∂k_ν/∂(r²) · 2 Δ_ijk / ℓ_k (Δ the scaled difference).
    """
    length_scale = np.asarray(length_scale, dtype=np.float64)
    SA, SB = _scaled_sets(A, length_scale), _scaled_sets(B, length_scale)
    NA, m, d = SA.shape
    NB, mb, _ = SB.shape
    B_flat = SB.reshape(NB * mb, d)
    K = np.empty((NA, NB))
    dK = np.empty((NA, NB, m, d))
    for a in range(NA):
        value, slope = matern_profile(_squared_distances(SA[a], B_flat), nu)
        K[a] = value.reshape(m, NB, mb).sum(axis=(0, 2)) / (m * mb)
        for k in range(d):
            diff = np.subtract.outer(SA[a, :, k], B_flat[:, k])
            dK[a, :, :, k] = (2.0 / (m * mb * length_scale[k]) * (slope * diff).reshape(m, NB, mb).sum(axis=2)).T
    return K, dK


def set_diag_gradient(A, length_scale, nu=2.5):
    """K_set(A[a], A[a]) and its derivatives, for the normalised set kernel.

    Returns
    -------
    diag : (NA,)
    ddiag_dloglength : (NA, d), ∂diag_a/∂log ℓ_k = (1/m²) Σ_ij slope_ij (−2 Δ_ijk²)
    ddiag_dpoints : (NA, m, d), ∂diag_a/∂A[a, i, k] = (4/m²) Σ_j slope_ij Δ_ijk / ℓ_k
        (each point enters the double sum twice)
    """
    length_scale = np.asarray(length_scale, dtype=np.float64)
    SA = _scaled_sets(A, length_scale)
    m = SA.shape[1]
    diff = SA[:, :, None, :] - SA[:, None, :, :]                              # (NA, m, m, d)
    value, slope = matern_profile(np.sum(diff * diff, axis=3), nu)
    diag = value.mean(axis=(1, 2))
    d_loglength = -2.0 / (m * m) * np.einsum("aij,aijk->ak", slope, diff * diff)
    d_points = 4.0 / (m * m) * np.einsum("aij,aijk->aik", slope, diff) / length_scale[None, None, :]
    return diag, d_loglength, d_points

# ---------------------------------------------------------------------------
# Hierarchical (conditional-space) kernel, SPEC §3 (Hutter & Osborne 2013).
#
# Argument conventions
# --------------------
# V1, V2 : (N, n_dims), (M, n_dims) float64
#     Per encoded column: x̂ (the unit-scaled value, times 1/(n−1) for an ordinal)
#     for "real" columns, the state index for categorical ones.  Values of
#     inactive entries are ignored.
# M1, M2 : (N, n_dims), (M, n_dims) uint8   activity of each entry (1 = active).
# is_real : (n_dims,) uint8;  omega : (n_dims,) ω_i;  rho_pi : (n_dims,) π ρ_i (0 for categorical)
# lengthscale, variance : float;  profile : 0 = RBF, 1 = Matérn 5/2
# K = σ² g(r²), r² = Σ_i d_i² / ℓ², d_i of SPEC §3.
# ---------------------------------------------------------------------------
HIER_PROFILES = ("rbf", "matern52")


def _hier_profile(profile, sq):
    return (rbf_profile, matern52_profile)[int(profile)](sq)


def hier_distance_terms(V1, M1, V2, M2, is_real, omega, rho_pi, with_derivatives=False):
    """Per-dimension squared distances d_i² (N, M, n_dims) and, optionally, ∂d_i²/∂log ρ_i.

    d_i² = 0 (both inactive), ω_i² (one active), ω_i²(2 − 2cos(πρ_i(x̂ − x̂'))) (both active,
    real), 2ω_i²[v ≠ v'] (both active, categorical): the squared distance of the embeddings
    ω_i(sin πρ_i x̂, cos πρ_i x̂) and ω_i e_v (Hutter & Osborne 2013, Eqs. 6–7).
    """
    V2 = V1 if V2 is None else V2
    M2 = M1 if M2 is None else M2
    n_dims = V1.shape[1]
    D2 = np.zeros((V1.shape[0], V2.shape[0], n_dims))
    dD2 = np.zeros_like(D2) if with_derivatives else None
    for i in range(n_dims):
        a1, a2 = M1[:, i, None].astype(bool), M2[None, :, i].astype(bool)
        both = a1 & a2
        w2 = omega[i] ** 2
        if is_real[i]:
            delta = rho_pi[i] * (V1[:, i, None] - V2[None, :, i])
            both_term = w2 * (2.0 - 2.0 * np.cos(delta))
            if with_derivatives:
                dD2[:, :, i] = np.where(both, w2 * 2.0 * np.sin(delta) * delta, 0.0)
        else:
            both_term = w2 * 2.0 * (V1[:, i, None] != V2[None, :, i])
        D2[:, :, i] = np.where(both, both_term, np.where(a1 != a2, w2, 0.0))
    return D2, dD2


def hier_gram(V1, M1, V2, M2, is_real, omega, rho_pi, lengthscale, variance, profile):
    """The hierarchical-kernel Gram K (N, M) (or (N, N) when V2 is None)."""
    D2, _ = hier_distance_terms(V1, M1, V2, M2, is_real, omega, rho_pi)
    g, _ = _hier_profile(profile, D2.sum(axis=2) / lengthscale ** 2)
    return variance * g


def hier_grad_reduction(V, M, W, is_real, omega, rho_pi, lengthscale, variance, profile):
    """Weighted sums of the hierarchical Gram derivatives (the N×N×n tensor is never needed).

    With Ω_ab = W_ab σ² g'(r²_ab)/ℓ²:

    Returns
    -------
    t : (n_dims,)   Σ_ab Ω_ab d_i²(a, b); since d_i² ∝ ω_i², Σ W ∂K/∂log γ_j = 2 Σ_{i: j ∈ anc(i)∪{i}} t_i,
                    and Σ W ∂K/∂log ℓ = −2 Σ_i t_i
    u : (n_dims,)   Σ_ab Ω_ab ∂d_i²/∂log ρ_i  (= Σ W ∂K/∂log ρ_i; 0 for categorical dims)
    g_variance : float   Σ W∘K
    """
    D2, dD2 = hier_distance_terms(V, M, None, None, is_real, omega, rho_pi, with_derivatives=True)
    g, dg = _hier_profile(profile, D2.sum(axis=2) / lengthscale ** 2)
    Omega = W * variance * dg / lengthscale ** 2
    t = np.einsum("ab,abi->i", Omega, D2)
    u = np.einsum("ab,abi->i", Omega, dD2)
    return t, u, float(np.sum(W * variance * g))


def hier_cross_gradient(V1, M1, V2, M2, is_real, omega, rho_pi, lengthscale, variance, profile):
    """K(X1, X2) (M, N) and ∂K[m, n]/∂V1[m, i] (M, N, n_dims); zero where dim i is not real
    or not active in both points."""
    D2, _ = hier_distance_terms(V1, M1, V2, M2, is_real, omega, rho_pi)
    g, dg = _hier_profile(profile, D2.sum(axis=2) / lengthscale ** 2)
    dK = np.zeros(D2.shape)
    for i in np.flatnonzero(is_real):
        both = M1[:, i, None].astype(bool) & M2[None, :, i].astype(bool)
        delta = rho_pi[i] * (V1[:, i, None] - V2[None, :, i])
        # ∂/∂x̂ of ω²(2 − 2cos(πρ(x̂ − x̂'))) = 2ω² sin(πρ(x̂ − x̂'))·πρ
        dK[:, :, i] = np.where(both, 2.0 * omega[i] ** 2 * np.sin(delta) * rho_pi[i], 0.0)
    dK *= (variance * dg / lengthscale ** 2)[:, :, None]
    return variance * g, dK


# Rows of K computed at a time by the blocked reference matvec: a (512, M) slab
# is 4 MB per 1000 columns, so memory stays O(M) however large N is.
_MATVEC_BLOCK_ROWS = 512


def fm_gram_matvec(C1, D1, C2, D2, V, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) V without forming K: row blocks of K, each multiplied at once.

    Parameters
    ----------
    C1, D1 : (N, Dc), (N, P)
    C2, D2 : (M, Dc), (M, P), or both None for the symmetric K(X1, X1)
    V : (M, r) float64
        The block of vectors (M = N when symmetric).

    Returns
    -------
    KV : (N, r)
    """
    C2_, D2_ = (C1, D1) if C2 is None else (C2, D2)
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] != C2_.shape[0]:
        raise ValueError(f"V must have shape ({C2_.shape[0]}, n_vectors), got {V.shape}")
    out = np.empty((C1.shape[0], V.shape[1]))
    for a0 in range(0, C1.shape[0], _MATVEC_BLOCK_ROWS):
        a1 = min(C1.shape[0], a0 + _MATVEC_BLOCK_ROWS)
        block = fm_gram(C1[a0:a1], D1[a0:a1], C2_, D2_, spectra, alphas, betas, variance, modulation)
        out[a0:a1] = block @ V
    return out


def fm_grad_reduction_low_rank(C, D, U, Z, spectra, alphas, betas, variance, modulation):
    """:func:`fm_grad_reduction` with the low-rank weights W = U Zᵀ, U and Z of shape (N, r).

    The stochastic trace estimator's reduction Σ_ab Σ_s U_as ∂K_ab/∂ψ Z_bs.  The
    reference forms W (N² memory: small N only); the compiled backends form each
    chunk of W_ab + W_ba on the fly.
    """
    U = np.asarray(U, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] != C.shape[0] or Z.shape != U.shape:
        raise ValueError(f"U and Z must both have shape ({C.shape[0]}, rank), got {U.shape} and {Z.shape}")
    return fm_grad_reduction(C, D, U @ Z.T, spectra, alphas, betas, variance, modulation)
