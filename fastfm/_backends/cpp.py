"""C++ backend (pybind11 + OpenMP): thin wrappers over ``fastfm._cpp``.

Same private signatures as ``numpy_backend`` (the reference, see its module
docstring for the argument conventions).  Loading fails (and the registry
falls back to NumPy) when the extension was not built.

The wrappers only adapt Python objects: a ``PackedSpectra`` becomes a
``_cpp.SpectralTables`` (prepared once per spectra object and cached), a
``Modulation`` becomes (kind, coefficients, exponent), and the thread count
comes from ``fastfm.get_config()["num_threads"]`` (0 = all).  Every shape,
dtype and state-range check happens in ``csrc/bindings.cpp`` and raises
``ValueError`` naming the argument.
"""
import weakref

import numpy as np

from .._config import get_config

try:
    from .. import _cpp
except ImportError as exc:  # extension not built on this machine
    _cpp = None
    available = False
    unavailable_reason = f"the compiled extension fastfm._cpp is missing ({exc})"
else:
    available = True

name = "cpp"

# PackedSpectra -> SpectralTables.  Spaces cache their PackedSpectra, so the
# O(Σ n_p³) table preparation runs once per space, not once per call.
_tables_cache = weakref.WeakKeyDictionary()


def _tables(spectra):
    try:
        return _tables_cache[spectra]
    except (KeyError, TypeError):
        pass
    tables = _cpp.SpectralTables(spectra.n_states, spectra.eigvec_offsets, spectra.eigenvectors,
                                 spectra.group_offsets, spectra.group_values, spectra.group_sizes,
                                 spectra.is_complete)
    try:
        _tables_cache[spectra] = tables
    except TypeError:  # not weak-referenceable: just don't cache
        pass
    return tables


def _hyper(spectra, alphas, betas, variance, modulation):
    """The trailing arguments shared by every ``_cpp`` entry point."""
    return (_tables(spectra), alphas, betas, float(variance), int(modulation.kind),
            np.asarray(modulation.coefficients, dtype=np.float64), float(modulation.exponent),
            int(get_config()["num_threads"]))


def fm_gram(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """The FM Gram matrix, shape (N, M) (or (N, N) when C2 is None)."""
    return _cpp.fm_gram(C1, D1, C2, D2, *_hyper(spectra, alphas, betas, variance, modulation))


def fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation):
    """K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab)."""
    return _cpp.fm_gram_from_argument(R, D1, D2, *_hyper(spectra, alphas, betas, variance, modulation))


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    Returns
    -------
    g_lengthscale : (Dc,), g_alpha : (P,), g_beta : (P,), g_variance : float
    """
    return _cpp.fm_grad_reduction(C, D, W, *_hyper(spectra, alphas, betas, variance, modulation))


def fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation):
    """(g_alpha (P,), g_beta (P,), g_variance, omega (N, N)) given the continuous argument R."""
    return _cpp.fm_reduction_from_argument(R, D, W, *_hyper(spectra, alphas, betas, variance, modulation))


def fm_neighbour_gram(c, v, C, D, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Rows k(x_m, X) of graph neighbours x_m of one point (c, v), shape (M, N)."""
    return _cpp.fm_neighbour_gram(c, v, C, D, var_index, new_state,
                                  *_hyper(spectra, alphas, betas, variance, modulation))


def fm_cross_gradient(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) (M, N) and dK (M, N, Dc), dK[m, n, d] = ∂K[m, n]/∂C1[m, d]."""
    return _cpp.fm_cross_gradient(C1, D1, C2, D2, *_hyper(spectra, alphas, betas, variance, modulation))
