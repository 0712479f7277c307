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
import os
import weakref

import numpy as np

from .._config import get_config

# With OMP_WAIT_POLICY unset, libgomp's threads spin after every parallel
# region.  When the cores are shared, that spinning takes the cycles the other
# worker needs: on a loaded 2-core machine the 2000×2000 Func3C Gram took 20 ms
# with spinning and 8 ms with sleeping workers (fastfm.bench kernels; CPU time
# with 2 threads fell from 2× to 1× the 1-thread time).  Calls that go parallel
# take ≥ ~1 ms (smaller ones run on one thread, see PARALLEL_MIN_TERMS), so a
# sleeping worker's wake-up (microseconds) costs nothing measurable.  Only a
# default: a value the user set wins, and it has no effect when another library
# started OpenMP first (libgomp reads it once, when it is loaded).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

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


# Below this many (pair × eigenvalue-group) terms a call runs on one thread.  A parallel
# region costs ~10 µs on an idle machine but milliseconds when the cores are busy (measured:
# a 40×40 Gram took 21 ms with 2 threads and 0.2 ms with 1 on a loaded 2-core machine), and
# BO makes thousands of such small calls per suggestion.
PARALLEL_MIN_TERMS = 1_000_000


def _threads(spectra, n_pairs):
    """Thread count for a call over ``n_pairs`` pairs: the configured one, or 1 for small work."""
    configured = int(get_config()["num_threads"])
    if configured == 1:
        return 1
    terms_per_pair = int(np.sum(np.where(spectra.is_complete, 2, np.diff(spectra.group_offsets)))) + 1
    return 1 if n_pairs * terms_per_pair < PARALLEL_MIN_TERMS else configured


def _hyper(spectra, alphas, betas, variance, modulation, n_pairs):
    """The trailing arguments shared by every ``_cpp`` entry point."""
    return (_tables(spectra), alphas, betas, float(variance), int(modulation.kind),
            np.asarray(modulation.coefficients, dtype=np.float64), float(modulation.exponent),
            _threads(spectra, n_pairs))


def fm_gram(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """The FM Gram matrix, shape (N, M) (or (N, N) when C2 is None)."""
    n_pairs = len(D1) * (len(D1) + 1) // 2 if D2 is None else len(D1) * len(D2)
    return _cpp.fm_gram(C1, D1, C2, D2, *_hyper(spectra, alphas, betas, variance, modulation, n_pairs))


def fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation):
    """K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab)."""
    return _cpp.fm_gram_from_argument(R, D1, D2, *_hyper(spectra, alphas, betas, variance, modulation, np.size(R)))


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    Returns
    -------
    g_lengthscale : (Dc,), g_alpha : (P,), g_beta : (P,), g_variance : float
    """
    return _cpp.fm_grad_reduction(C, D, W, *_hyper(spectra, alphas, betas, variance, modulation, 2 * np.size(W)))


def fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation):
    """(g_alpha (P,), g_beta (P,), g_variance, omega (N, N)) given the continuous argument R."""
    return _cpp.fm_reduction_from_argument(R, D, W, *_hyper(spectra, alphas, betas, variance, modulation,
                                                           2 * np.size(W)))


def fm_neighbour_gram(c, v, C, D, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Rows k(x_m, X) of graph neighbours x_m of one point (c, v), shape (M, N)."""
    return _cpp.fm_neighbour_gram(c, v, C, D, var_index, new_state,
                                  *_hyper(spectra, alphas, betas, variance, modulation, (len(var_index) + 1) * len(D)))


def fm_cross_gradient(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) (M, N) and dK (M, N, Dc), dK[m, n, d] = ∂K[m, n]/∂C1[m, d]."""
    return _cpp.fm_cross_gradient(C1, D1, C2, D2,
                                  *_hyper(spectra, alphas, betas, variance, modulation, 2 * len(D1) * len(D2)))


def fm_gram_matvec(C1, D1, C2, D2, V, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) V, shape (N, r), computing kernel tiles on the fly (K is never stored)."""
    n_pairs = len(D1) * (len(D1) + 1) // 2 if D2 is None else len(D1) * len(D2)
    return _cpp.fm_gram_matvec(C1, D1, C2, D2, V, *_hyper(spectra, alphas, betas, variance, modulation, n_pairs))


def fm_grad_reduction_low_rank(C, D, U, Z, spectra, alphas, betas, variance, modulation):
    """Σ_ab (U Zᵀ)_ab ∂K_ab/∂ψ, the weights formed chunk by chunk (never N×N)."""
    return _cpp.fm_grad_reduction_low_rank(C, D, U, Z, *_hyper(spectra, alphas, betas, variance, modulation,
                                                                2 * len(D) * len(D)))
