"""C++ backend (pybind11 + OpenMP): thin wrappers over ``fastfm._cpp``.

Same private signatures as ``numpy_backend`` (the reference, see its module
docstring for the argument conventions).  Loading fails (and the registry
falls back to NumPy) when the extension was not built.

The wrappers only adapt Python objects: a ``PackedSpectra`` becomes a
``_cpp.SpectralTables`` (prepared once per spectra object and cached), a
``Modulation`` becomes (kind, coefficients, exponent), and the thread count
comes from ``fastfm.get_config()["num_threads"]`` (0 = all).  Every shape,
dtype and state-range check happens in the bindings (``csrc/py/``) and raises
``ValueError`` naming the argument.
"""
import os
import weakref

import numpy as np

from .._config import _setting
from ..exceptions import BackendUnavailableError
from ._spectra import cached_per_spectra, terms_per_pair as count_terms_per_pair, terms_per_variable

# With OMP_WAIT_POLICY unset, libgomp's threads spin after every parallel
# region.  When the cores are shared, that spinning takes the cycles the other
# worker needs: on a loaded 2-core machine the 2000×2000 Func3C Gram took 20 ms
# with spinning and 8 ms with sleeping workers (fastfm time kernels; CPU time
# with 2 threads fell from 2× to 1× the 1-thread time).  Calls that go parallel
# take ≥ ~1 ms (smaller ones run on one thread, see PARALLEL_MIN_TERMS), so a
# sleeping worker's wake-up (microseconds) costs nothing measurable.  Only a
# default: a value the user set wins, and it has no effect when another library
# started OpenMP first (libgomp reads it once, when it is loaded).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    # by its full name: the extension is the submodule fastfm._cpp, not a name of the fastfm face
    # (``from .. import _cpp`` reads like an import from fastfm/__init__)
    import fastfm._cpp as _cpp
except ImportError as exc:  # extension not built on this machine
    _cpp = None
    available = False
    unavailable_reason = f"the compiled extension fastfm._cpp is missing ({exc})"
else:
    available = True
    unavailable_reason = None

name = "cpp"


def build_info():
    """How the extension was built: a dict with ``openmp`` (bool), ``max_threads`` (int), ``compiler`` and
    ``simd`` (str).  The one reader of ``fastfm._cpp.build_info`` (``fastfm.show_config`` and the
    ``fastfm time`` machine line call this).  Raises BackendUnavailableError without the extension."""
    if _cpp is None:
        raise BackendUnavailableError(unavailable_reason or "the compiled extension fastfm._cpp is not loaded")
    return dict(_cpp.build_info())

# PackedSpectra -> SpectralTables.  Spaces cache their PackedSpectra, so the
# O(Σ n_p³) table preparation runs once per space, not once per call.
_tables_cache = weakref.WeakKeyDictionary()


def _tables(spectra):
    return cached_per_spectra(_tables_cache, spectra, lambda: _cpp.SpectralTables(
        spectra.n_states, spectra.eigvec_offsets, spectra.eigenvectors, spectra.group_offsets,
        spectra.group_values, spectra.group_sizes, spectra.is_complete))


# Below this many (pair × eigenvalue-group) terms a call runs on one thread.  A parallel
# region costs ~10 µs on an idle machine but milliseconds when the cores are busy (measured:
# a 40×40 Gram took 21 ms with 2 threads and 0.2 ms with 1 on a loaded 2-core machine), and
# BO makes thousands of such small calls per suggestion.
PARALLEL_MIN_TERMS = 1_000_000


def _threads_for(n_terms):
    """Thread count for a call of ``n_terms`` units of work: the configured one, or 1 for small work."""
    configured = int(_setting("num_threads"))
    return 1 if configured == 1 or n_terms < PARALLEL_MIN_TERMS else configured


def _threads(spectra_list, n_pairs):
    """Thread count for an FM call over ``n_pairs`` pairs (pair × eigenvalue-group terms) of each of the parts
    whose spectra are listed (one for an FM kernel; a part sum runs its parts in turn with that many threads)."""
    if int(_setting("num_threads")) == 1:
        return 1   # skip counting the terms
    return _threads_for(n_pairs * sum(_terms_per_pair(spectra) for spectra in spectra_list))


# PackedSpectra -> eigenvalue-group terms per pair (counted once per space: ~40 µs a call, and a kernel made of
# many FM terms, AdditiveFM, makes dozens of calls per likelihood evaluation)
_terms_per_pair_cache = weakref.WeakKeyDictionary()


def _terms_per_pair(spectra):
    return cached_per_spectra(_terms_per_pair_cache, spectra, lambda: count_terms_per_pair(spectra))


_terms_per_variable_cache = weakref.WeakKeyDictionary()


def _neighbour_threads(spectra, var_index, n_points):
    """Thread count for ``fm_neighbour_gram``: its base point's row costs a whole pair's terms per point, each
    neighbour's row only its moved variable's factor (fm.hpp's neighbour_gram shares the product of the others).
    Counted as whole pairs per neighbour, 57 neighbours of a base point on the NAS-like space (20 discrete variables)
    at 200 points were 1.02 million terms, above PARALLEL_MIN_TERMS, for 0.3 ms of work: the acquisition search of
    one suggestion ran 139 such calls on two threads, and beside two busy processes on a 2-core machine they took
    0.75-1.3 s instead of 0.03-0.05 s on one thread (docs/benchmarks/suggestion.md, "On a machine whose cores are
    busy")."""
    if int(_setting("num_threads")) == 1:
        return 1
    per_variable = cached_per_spectra(_terms_per_variable_cache, spectra, lambda: terms_per_variable(spectra))
    # clipped: an index out of range is the binding's to name (ValueError), not this estimate's
    moved = np.take(per_variable, var_index, mode="clip") if len(per_variable) else np.zeros(0)
    return _threads_for(n_points * (_terms_per_pair(spectra) + int(np.sum(moved))))


def _hyper(spectra, alphas, betas, variance, modulation, n_pairs, threads=None):
    """The trailing arguments shared by every ``_cpp`` entry point; the thread count for ``n_pairs`` pairs, or
    ``threads`` where the caller counts its work otherwise (``_neighbour_threads``)."""
    return (_tables(spectra), alphas, betas, float(variance), *_modulation_arguments(modulation),
            _threads([spectra], n_pairs) if threads is None else threads)


def _modulation_arguments(modulation):
    """A ``Modulation`` as the bindings take it: (kind, coefficients, exponent)."""
    return int(modulation.kind), np.asarray(modulation.coefficients, dtype=np.float64), float(modulation.exponent)


def fm_gram(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """The FM Gram matrix, shape (N, M) (or (N, N) when C2 is None)."""
    n_pairs = len(D1) * (len(D1) + 1) // 2 if D2 is None else len(D1) * len(D2)
    return _cpp.fm_gram(C1, D1, C2, D2, *_hyper(spectra, alphas, betas, variance, modulation, n_pairs))


def fm_gram_sum(C, lengthscales, states, spectra_list, alphas, betas, variances, modulation, out=None, weights=None,
                keep_grams=True, grams_out=None, workspace=None):
    """(Σ_k K_k, the parts' diagonals (n_parts, N)): the Grams of FM kernels on the same points, part k on
    C / lengthscales[k] and its own discrete columns ``states[k]`` and ``spectra_list[k]``, with its slice of the
    concatenated ``alphas`` and ``betas`` and ``variances[k]``; added in order into ``out`` (in place) if given.
    ``weights``: per part None or its unit-diagonal row weights w (N,); a weighted part is w_a K_ab w_b, and the
    call returns (K, diagonals, part_grams), each weighted part's scaled Gram (None for the others; None for every
    part with ``keep_grams=False``).  ``grams_out``: per part None or an (N, N) array (not ``out``) that receives
    the part's kept Gram instead of a new array (a previous call's part_grams, reused); ``workspace``: an (N, N)
    scratch array, overwritten."""
    n_pairs = len(C) * (len(C) + 1) // 2
    return _cpp.fm_gram_sum(C, lengthscales, states, [_tables(spectra) for spectra in spectra_list], alphas, betas,
                            variances, *_modulation_arguments(modulation), _threads(spectra_list, n_pairs),
                            out, weights, bool(keep_grams), grams_out, workspace)


def fm_grad_reduction_sum(C, lengthscales, states, W, spectra_list, alphas, betas, variances, modulation,
                          symmetric_weights=False, scalings=None, workspace=None):
    """Per part of ``fm_gram_sum``, ``fm_grad_reduction``'s [g_lengthscale | g_alpha | g_beta | g_variance],
    concatenated into one vector; a part with a scaling ``scalings[k]`` = (w, G = ∂log w/∂log β (N, P_k), its scaled
    Gram from ``fm_gram_sum`` or None) is differentiated as w_a K_ab w_b, its weights' share in its β block (from
    the Gram recomputed a chunk at a time where it is None: no N × N array).  ``workspace``: an (N, N) scratch
    array (not W) for a scaled part's weights W ∘ wwᵀ, overwritten."""
    return _cpp.fm_grad_reduction_sum(C, lengthscales, states, W, [_tables(spectra) for spectra in spectra_list],
                                      alphas, betas, variances, *_modulation_arguments(modulation),
                                      _threads(spectra_list, 2 * np.size(W)), bool(symmetric_weights), scalings,
                                      workspace)


def fm_cross_gram_sum(C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas, variances, modulation,
                      weights1=None, weights2=None):
    """K (M, N): :func:`fm_gram` of the parts of :func:`fm_gram_sum` between rows C1 (states1[k]) and columns C2
    (states2[k]), each on its own lengthscales and scaled by its row and column weights where given, added in order;
    one parallel region for all the parts."""
    return _cpp.fm_cross_gram_sum(C1, states1, C2, states2, lengthscales,
                                  [_tables(spectra) for spectra in spectra_list], alphas, betas, variances,
                                  *_modulation_arguments(modulation), _threads(spectra_list, len(C1) * len(C2)),
                                  weights1, weights2)


def fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra_list, alphas, betas, variances, modulation,
                          out_K=None, out_dK=None, weights1=None, weights2=None):
    """(K (M, N), dK (M, N, Dc)): :func:`fm_cross_gradient` of the parts of :func:`fm_gram_sum` (rows C1 with
    states1[k], columns C2 with states2[k]), each part's dK divided by its lengthscales and, where ``weights1[k]``
    and ``weights2[k]`` are given (unit-diagonal row and column weights), K and dK scaled by them, added in order
    into (out_K, out_dK) (in place) if given."""
    return _cpp.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales,
                                      [_tables(spectra) for spectra in spectra_list], alphas, betas, variances,
                                      *_modulation_arguments(modulation),
                                      _threads(spectra_list, 2 * len(C1) * len(C2)), out_K, out_dK, weights1,
                                      weights2)


def fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation):
    """K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab)."""
    return _cpp.fm_gram_from_argument(R, D1, D2, *_hyper(spectra, alphas, betas, variance, modulation, np.size(R)))


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation, symmetric_weights=False):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    ``symmetric_weights=True`` promises W = Wᵀ: only W's upper triangle is read.

    Returns
    -------
    g_lengthscale : (Dc,), g_alpha : (P,), g_beta : (P,), g_variance : float
    """
    return _cpp.fm_grad_reduction(C, D, W, *_hyper(spectra, alphas, betas, variance, modulation, 2 * np.size(W)),
                                  bool(symmetric_weights))


def fm_unit_diagonal_reduction(C, D, W, w, spectra, alphas, betas, variance, modulation, symmetric_weights=False):
    """(g_lengthscale, g_alpha, g_beta, g_variance, r): :func:`fm_grad_reduction` with the weights W ∘ wwᵀ, and
    r_a = Σ_b (W_ab + W_ba) w_a w_b K_ab, the per-point sums of a unit-diagonal kernel's β share
    (``fm._unit_diagonal_reduction``), without an N × N copy of W or of the Gram."""
    return _cpp.fm_unit_diagonal_reduction(C, D, W, w, *_hyper(spectra, alphas, betas, variance, modulation,
                                                               3 * np.size(W)), bool(symmetric_weights))


def fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation):
    """(g_alpha (P,), g_beta (P,), g_variance, omega (N, N)) given the continuous argument R."""
    return _cpp.fm_reduction_from_argument(R, D, W, *_hyper(spectra, alphas, betas, variance, modulation,
                                                           2 * np.size(W)))


def fm_neighbour_gram(c, v, C, D, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Rows k(x_m, X) of graph neighbours x_m of one point (c, v), shape (M, N)."""
    threads = _neighbour_threads(spectra, np.asarray(var_index, dtype=np.int64), len(D))
    return _cpp.fm_neighbour_gram(c, v, C, D, var_index, new_state,
                                  *_hyper(spectra, alphas, betas, variance, modulation, None, threads=threads))


def fm_cross_gradient(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) (M, N) and dK (M, N, Dc), dK[m, n, d] = ∂K[m, n]/∂C1[m, d]."""
    return _cpp.fm_cross_gradient(C1, D1, C2, D2,
                                  *_hyper(spectra, alphas, betas, variance, modulation, 2 * len(D1) * len(D2)))


# ---------------------------------------------------------------------------- set kernels (SPEC §4)
def set_gram(A, B, length_scale, nu=2.5):
    """The exact set Gram matrix (see ``numpy_backend.set_gram``), shape (NA, NB)."""
    NA, m = np.shape(A)[:2]
    NB, mb = (NA, m) if B is None else np.shape(B)[:2]
    n_pairs = NA * (NA + 1) // 2 if B is None else NA * NB
    return _cpp.set_gram(A, B, length_scale, float(nu), _threads_for(n_pairs * m * mb))


def set_grad_reduction(A, W, length_scale, nu=2.5):
    """g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k (see ``numpy_backend.set_grad_reduction``), shape (d,)."""
    N, m = np.shape(A)[:2]
    return _cpp.set_grad_reduction(A, W, length_scale, float(nu), _threads_for(N * (N + 1) // 2 * m * m))


def set_grad_reduction_and_weighted_gram(A, W, length_scale, nu=2.5):
    """(set_grad_reduction(A, W, ℓ, ν), Σ_ab W_ab K_ab) from one pass over the pairs (an extra of
    this backend: the kernel's variance gradient needs Σ W ∘ K, and the pass shares sqrt and exp)."""
    N, m = np.shape(A)[:2]
    return _cpp.set_grad_reduction_and_weighted_gram(A, W, length_scale, float(nu),
                                                     _threads_for(N * (N + 1) // 2 * m * m))


def set_gram_gradient(A, length_scale, nu=2.5):
    """(K (N, N), dK (N, N, d)) with dK[..., k] = ∂K/∂log ℓ_k (see ``numpy_backend.set_gram_gradient``), from
    one pass over the pairs."""
    N, m = np.shape(A)[:2]
    return _cpp.set_gram_gradient(A, length_scale, float(nu), _threads_for(N * (N + 1) // 2 * m * m))


def set_cross_gradient(A, B, length_scale, nu=2.5):
    """K (NA, NB) and dK (NA, NB, m, d), dK[a, b, i, k] = ∂K[a, b]/∂A[a, i, k] (see
    ``numpy_backend.set_cross_gradient``)."""
    NA, m = np.shape(A)[:2]
    NB, mb = np.shape(B)[:2]
    return _cpp.set_cross_gradient(A, B, length_scale, float(nu), _threads_for(NA * NB * m * mb))


def set_diag(A, length_scale, nu=2.5):
    """K_set(A[a], A[a]) for every set (see ``numpy_backend.set_diag``), shape (NA,)."""
    N, m = np.shape(A)[:2]
    return _cpp.set_diag(A, length_scale, float(nu), _threads_for(N * m * m))


def set_diag_gradient(A, length_scale, nu=2.5):
    """(diag (NA,), ∂diag/∂log ℓ (NA, d), ∂diag_a/∂A[a, i, k] (NA, m, d)) (see
    ``numpy_backend.set_diag_gradient``)."""
    N, m = np.shape(A)[:2]
    return _cpp.set_diag_gradient(A, length_scale, float(nu), _threads_for(N * m * m))


# ------------------------------------------------- hierarchical kernel (SPEC §3)
# Work per pair ≈ one term per dimension plus one, for the thread-count rule.
def hier_gram(V1, M1, V2, M2, is_real, omega, rho_pi, lengthscale, variance, profile):
    """The hierarchical-kernel Gram (see ``numpy_backend.hier_gram``)."""
    n_pairs = len(V1) * (len(V1) + 1) // 2 if V2 is None else len(V1) * len(V2)
    return _cpp.hier_gram(V1, M1, V2, M2, is_real, omega, rho_pi, float(lengthscale), float(variance), int(profile),
                          _threads_for(n_pairs * (V1.shape[1] + 1)))


def hier_grad_reduction(V, M, W, is_real, omega, rho_pi, lengthscale, variance, profile):
    """(t, u, g_variance) of ``numpy_backend.hier_grad_reduction``."""
    return _cpp.hier_grad_reduction(V, M, W, is_real, omega, rho_pi, float(lengthscale), float(variance),
                                    int(profile), _threads_for(len(V) * (len(V) + 1) // 2 * (V.shape[1] + 1)))


def fm_gram_matvec(C1, D1, C2, D2, V, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) V, shape (N, r), computing kernel tiles on the fly (K is never stored)."""
    n_pairs = len(D1) * (len(D1) + 1) // 2 if D2 is None else len(D1) * len(D2)
    return _cpp.fm_gram_matvec(C1, D1, C2, D2, V, *_hyper(spectra, alphas, betas, variance, modulation, n_pairs))


def fm_gram_matvec_single(C1, D1, C2, D2, V, spectra, alphas, betas, variance, modulation):
    """fm_gram_matvec with the kernel values in single precision and the products in double
    (csrc/include/fastfm/matvec_single.hpp), or None where these hyperparameters have no single-precision
    form (then use fm_gram_matvec)."""
    n_pairs = len(D1) * (len(D1) + 1) // 2 if D2 is None else len(D1) * len(D2)
    return _cpp.fm_gram_matvec_single(C1, D1, C2, D2, V, *_hyper(spectra, alphas, betas, variance, modulation,
                                                                  n_pairs))


def fm_grad_reduction_low_rank(C, D, U, Z, spectra, alphas, betas, variance, modulation):
    """Σ_ab (U Zᵀ)_ab ∂K_ab/∂ψ, the weights formed chunk by chunk (never N×N)."""
    return _cpp.fm_grad_reduction_low_rank(C, D, U, Z, *_hyper(spectra, alphas, betas, variance, modulation,
                                                                2 * len(D) * len(D)))
