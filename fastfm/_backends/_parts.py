"""A sum of FM kernels on the same points, part by part: the definition of ``fm_gram_sum``,
``fm_grad_reduction_sum``, ``fm_cross_gram_sum`` and ``fm_cross_gradient_sum`` (the reference backend's; the CUDA
backend's first two with its own per-part calls).

Part k is the FM kernel on the continuous columns C / lengthscales[k] and on discrete columns of its own,
``states[k]`` with ``spectra_list[k]``; its α and β are the next n_k entries of the concatenated ``alphas`` and
``betas`` (n_k = states[k].shape[1]) and its variance is variances[k].  AdditiveFM is such a sum; the C++
backend computes it in one call (csrc/py/fm.cpp).
"""
import numpy as np


def _parts(C, lengthscales, states, spectra_list, alphas, betas, variances):
    """Per part: (C / lengthscale, states, spectra, α, β, variance)."""
    start = 0
    for k, (D, spectra) in enumerate(zip(states, spectra_list)):
        stop = start + D.shape[1]
        yield C / lengthscales[k], D, spectra, alphas[start:stop], betas[start:stop], variances[k]
        start = stop


def sum_of_part_grams(fm_gram, C, lengthscales, states, spectra_list, alphas, betas, variances, modulation,
                      out=None, weights=None, keep_grams=True, grams_out=None, workspace=None):
    """(Σ_k K_k, diagonals (n_parts, N)) with ``fm_gram`` per part, added in order into ``out`` (in place) when
    given, else into part 0's Gram.

    ``weights``: per part None or its unit-diagonal row weights w (N,): such a part is K̃_k = w_a K_k,ab w_b (its
    diagonal the scaled one), and the result is (K, diagonals, part_grams), part_grams[k] = K̃_k (a new array) or
    None, which ``concatenated_part_reductions`` reads for the weights' β share (None for every part with
    ``keep_grams=False``: the reduction then recomputes them); ``grams_out[k]``, where given, receives part k's
    instead of a new array (the compiled backend's reuse of a previous call's; here a copy).  ``workspace`` is
    the compiled backend's scratch, not needed here."""
    del workspace
    K, diagonals, part_grams = out, [], []
    for k, (C_k, D, spectra, alphas_k, betas_k, variance) in enumerate(
            _parts(C, lengthscales, states, spectra_list, alphas, betas, variances)):
        part = fm_gram(C_k, D, None, None, spectra, alphas_k, betas_k, variance, modulation)
        w = None if weights is None else weights[k]
        if w is not None:
            w = np.asarray(w, dtype=np.float64)
            part = part * w[:, None]
            part *= w[None, :]
        if w is not None and keep_grams and grams_out is not None and grams_out[k] is not None:
            np.copyto(grams_out[k], part)
            part = grams_out[k]
        part_grams.append(None if w is None or not keep_grams else part)
        diagonals.append(part.diagonal().copy())
        if K is None:
            K = part if w is None else part.copy()
        else:
            np.add(K, part, out=K)
    if weights is None:
        return K, np.array(diagonals)
    return K, np.array(diagonals), part_grams


def concatenated_part_reductions(fm_grad_reduction, C, lengthscales, states, W, spectra_list, alphas, betas,
                                 variances, modulation, symmetric_weights=False, scalings=None, fm_gram=None,
                                 workspace=None):
    """Per part, ``fm_grad_reduction``'s (g_lengthscale, g_alpha, g_beta, g_variance), all in one vector.

    ``scalings``: per part None or (w, G, K̃): the part is the unit-diagonal kernel K̃_ab = w_a K_ab w_b
    (``sum_of_part_grams``' part_grams[k], or None: recomputed here by ``fm_gram``) whose weights move with β,
    G_ap = ∂log w_a/∂log β_p.  Its sums are Σ_ab W_ab ∂K̃_ab/∂log ψ: the backend's with the weights W ∘ wwᵀ, and
    in the β block the weights' own share Σ_ab W_ab K̃_ab (G_ap + G_bp) (``fm._unit_diagonal_reduction`` with
    K̃ = wwᵀ ∘ K).  ``workspace`` is the compiled backend's scratch, not needed here."""
    del workspace
    pieces, W_both = [], None          # W + Wᵀ, formed once for the scaled parts' shares
    for k, (C_k, D, spectra, alphas_k, betas_k, variance) in enumerate(
            _parts(C, lengthscales, states, spectra_list, alphas, betas, variances)):
        scaling = None if scalings is None else scalings[k]
        weights = W
        if scaling is not None:
            w = np.asarray(scaling[0], dtype=np.float64)
            weights = W * w[:, None]
            weights *= w[None, :]
        g_lengthscale, g_alpha, g_beta, g_variance = fm_grad_reduction(C_k, D, weights, spectra, alphas_k, betas_k,
                                                                       variance, modulation, symmetric_weights)
        if scaling is not None:
            G = np.asarray(scaling[1], dtype=np.float64)
            if scaling[2] is None:
                K_scaled = fm_gram(C_k, D, None, None, spectra, alphas_k, betas_k, variance, modulation) * w[:, None]
                K_scaled *= w[None, :]
            else:
                K_scaled = np.asarray(scaling[2], dtype=np.float64)
            W_both = W + W.T if W_both is None else W_both
            per_point = np.einsum("ab,ab->a", W_both, K_scaled)
            g_beta = np.asarray(g_beta) + per_point @ G
        pieces += [g_lengthscale, g_alpha, g_beta, [g_variance]]
    return np.concatenate(pieces)


def sum_of_part_cross_grams(fm_gram, C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas, variances,
                            modulation, weights1=None, weights2=None):
    """Σ_k K_k(X1, X2) with ``fm_gram`` per part on C1 / lengthscales[k] (states1[k]) and C2 / lengthscales[k]
    (states2[k]), where ``weights1[k]`` (rows) and ``weights2[k]`` (columns) are given multiplied by them (FMKernel's
    ``_scale_in_place``, rows first), added in order."""
    K = None
    for k, (C2_k, D2, spectra, alphas_k, betas_k, variance) in enumerate(
            _parts(C2, lengthscales, states2, spectra_list, alphas, betas, variances)):
        K_k = fm_gram(C1 / lengthscales[k], states1[k], C2_k, D2, spectra, alphas_k, betas_k, variance, modulation)
        if weights1 is not None and weights1[k] is not None:
            K_k = K_k * np.asarray(weights1[k], dtype=np.float64)[:, None]
            K_k *= np.asarray(weights2[k], dtype=np.float64)[None, :]
        K = K_k if K is None else np.add(K, K_k, out=K)
    return K


def sum_of_part_cross_gradients(fm_cross_gradient, C1, states1, C2, states2, lengthscales, spectra_list, alphas,
                                betas, variances, modulation, out_K=None, out_dK=None, weights1=None, weights2=None):
    """(Σ_k K_k(X1, X2), Σ_k ∂K_k/∂C1) with ``fm_cross_gradient`` per part, each part's derivative in its scaled
    coordinates divided by its lengthscales (C1's units) and, where ``weights1[k]`` (rows) and ``weights2[k]``
    (columns) are given, K_k and its derivative multiplied by them (a unit-diagonal part: FMKernel's
    ``_scale_in_place``, rows first), added in order into (out_K, out_dK) when given."""
    K, dK = out_K, out_dK
    parts = _parts(C2, lengthscales, states2, spectra_list, alphas, betas, variances)
    for k, (C2_k, D2, spectra, alphas_k, betas_k, variance) in enumerate(parts):
        K_k, dK_k = fm_cross_gradient(C1 / lengthscales[k], states1[k], C2_k, D2, spectra, alphas_k, betas_k,
                                      variance, modulation)
        dK_k = dK_k / lengthscales[k]
        if weights1 is not None and weights1[k] is not None:
            w1, w2 = np.asarray(weights1[k], dtype=np.float64), np.asarray(weights2[k], dtype=np.float64)
            K_k = K_k * w1[:, None] * w2[None, :]
            dK_k = dK_k * w1[:, None, None] * w2[None, :, None]
        K, dK = (K_k, dK_k) if K is None else (np.add(K, K_k, out=K), np.add(dK, dK_k, out=dK))
    return K, dK
