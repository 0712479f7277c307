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

from .modulation import Modulation  # noqa: F401  (documented type)

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


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    The N×N×n_params derivative tensor is never formed.

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
