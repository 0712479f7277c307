"""A sum of FM kernels on the same points, part by part: the definition of ``fm_gram_sum`` and
``fm_grad_reduction_sum`` (the reference backend's, and the CUDA backend's with its own per-part calls).

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
                      out=None):
    """(Σ_k K_k, diagonals (n_parts, N)) with ``fm_gram`` per part, added in order into ``out`` (in place) when
    given, else into part 0's Gram."""
    K, diagonals = out, []
    for C_k, D, spectra, alphas_k, betas_k, variance in _parts(C, lengthscales, states, spectra_list, alphas, betas,
                                                               variances):
        part = fm_gram(C_k, D, None, None, spectra, alphas_k, betas_k, variance, modulation)
        diagonals.append(part.diagonal().copy())
        K = part if K is None else np.add(K, part, out=K)
    return K, np.array(diagonals)


def concatenated_part_reductions(fm_grad_reduction, C, lengthscales, states, W, spectra_list, alphas, betas,
                                 variances, modulation, symmetric_weights=False):
    """Per part, ``fm_grad_reduction``'s (g_lengthscale, g_alpha, g_beta, g_variance), all in one vector."""
    pieces = []
    for C_k, D, spectra, alphas_k, betas_k, variance in _parts(C, lengthscales, states, spectra_list, alphas, betas,
                                                               variances):
        g_lengthscale, g_alpha, g_beta, g_variance = fm_grad_reduction(C_k, D, W, spectra, alphas_k, betas_k,
                                                                       variance, modulation, symmetric_weights)
        pieces += [g_lengthscale, g_alpha, g_beta, [g_variance]]
    return np.concatenate(pieces)
