"""The compiled backend (``cpp``) against the NumPy reference, to 1e-12 relative.

Every private backend function is compared on the shared random spaces
(``tests/_spaces.py``) and on extra spaces that drive each evaluation path
of the C++ core: complete graphs (O(1) per pair), tridiagonal graphs
(continuants, unrolled up to 12 states and generic beyond), general graphs
(projector tables, or eigenvectors for very large graphs), with every
modulation.  Tolerances: ``rtol=1e-12`` and ``atol=1e-12 * scale``, where
``scale`` is the size of the compared quantity (its largest entry, or, for
sums, the sum of absolute values of the summed terms: the rounding bound).

The tests skip only when the extension is not built; ``test_cpp_backend_is_built``
fails in that case unless ``FASTFM_ALLOW_NO_EXTENSION=1``.
"""
import os
from fractions import Fraction

import numpy as np
import pytest
from _spaces import SPACES

import fastfm as ff
from fastfm._backends import available_backends, backend_status, numpy_backend
from fastfm._backends.modulation import DIFFUSION, LAP_FAMILY, Modulation
from fastfm.kernels.additive import _standalone

RTOL = 1e-12


def _path_edges(n):
    return [(i, i + 1) for i in range(n - 1)]


# Spaces that reach the C++ paths the shared ones do not.
EXTRA_SPACES = {
    # Dc = 0; a star has eigenvalue 1 with multiplicity n − 2 (grouping matters)
    "discrete_only": ff.Space([ff.Categorical("c", list("abc")), ff.Integer("i", 0, 4),
                               ff.Graph("star", 5, [(0, k) for k in range(1, 5)])]),
    # paths longer than the unrolled continuants (12), a 2-state path, a 1-state variable
    "long_paths": ff.Space([ff.Real("x", 0.0, 1.0), ff.Integer("long", 0, 20, encoding="graph"),
                            ff.Ordinal("twelve", list(range(12))),
                            ff.Integer("two", 0, 1), ff.Categorical("single", ["only"]),
                            ff.Graph("weighted_path", 6, _path_edges(6), weights=[1.0, 0.5, 2.0, 1.0, 3.0])]),
    # symmetric normalised Laplacians: different eigenvalues, same paths
    "normalized": ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", 0.0, 1.0),
                            ff.Categorical("c", list("abcd"), normalized_laplacian=True),
                            ff.Integer("i", 0, 6, normalized_laplacian=True),
                            ff.Graph("cycle", 5, [(k, (k + 1) % 5) for k in range(5)], normalized_laplacian=True)]),
}
# More than 8 variables mixing nominal and projector (ordinal, path, cycle) variables: the mixed vector
# reduction kernel (fm.hpp, mixed_reduction_vectors), with variables of ≤ 8 states (permuted weights)
# and > 8 (gathered).  With 12 factors K falls off steeply away from its diagonal, so the kernel-level
# β gradients of the nominal, 2-state and cycle variables are ~10⁻⁴ of the a = b terms that cancel in
# them: the case FMKernel._reduction_split_at_the_diagonal is for (see fastfm.kernels.fm).
MANY_MIXED_SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", -1.0, 1.0)]
                            + [ff.Categorical(f"c{i}", list(range(n))) for i, n in enumerate([2, 3, 5, 8, 4])]
                            + [ff.Ordinal(f"o{i}", list(range(n))) for i, n in enumerate([3, 8, 9, 2, 6])]
                            + [ff.Integer("i", 0, 10), ff.Graph("cycle", 5, [(k, (k + 1) % 5) for k in range(5)])])
# 170 states: the projector table would exceed its size limit, eigenvectors are used instead
HUGE_PATH_SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Integer("big", 0, 169, encoding="graph"),
                            ff.Categorical("c", [0, 1])])

ALL_SPACES = {**SPACES, **EXTRA_SPACES, "many_mixed": MANY_MIXED_SPACE}

MODULATIONS = {
    "modlap": Modulation(),
    "family_t1.3": Modulation(LAP_FAMILY, (0.5, 1.0, 0.25), 1.3),
    "single_term_t1": Modulation(LAP_FAMILY, (2.0,), 1.0),
    "diffusion": Modulation(DIFFUSION),
    "diffusion_t0.7": Modulation(DIFFUSION, exponent=0.7),
}


@pytest.fixture(scope="module")
def cpp():
    pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")
    from fastfm._backends import cpp as cpp_backend
    return cpp_backend


@pytest.fixture(params=sorted(ALL_SPACES), ids=sorted(ALL_SPACES))
def any_space(request):
    return ALL_SPACES[request.param]


@pytest.fixture(params=sorted(MODULATIONS), ids=sorted(MODULATIONS))
def modulation(request):
    return MODULATIONS[request.param]


def _inputs(space, n, seed, lengthscale=0.4):
    """Scaled continuous and state arrays, with a repeated point (zero distance)."""
    X = space.sample_encoded(n, seed=seed)
    if n > 4:
        X[4] = X[1]
    C, D = space.split(X)
    return np.ascontiguousarray(C / lengthscale), D


def _hyper(space, seed, modulation, alpha_range=(0.05, 5.0), beta_range=(0.05, 5.0)):
    rng = np.random.default_rng(seed)
    P = space.n_discrete
    return (space.packed_spectra, rng.uniform(*alpha_range, P), rng.uniform(*beta_range, P), 1.7, modulation)


def assert_close(actual, desired, scale=None, err_msg=""):
    """|actual − desired| ≤ RTOL·|desired| + RTOL·scale elementwise; scale is a scalar or per element
    (default: the largest |desired|)."""
    actual = np.asarray(actual, dtype=float)
    desired = np.asarray(desired, dtype=float)
    assert actual.shape == desired.shape, f"{err_msg}: shape {actual.shape} != {desired.shape}"
    if scale is None:
        scale = np.max(np.abs(desired)) if desired.size else 0.0
    scale = np.asarray(scale, dtype=float)
    scale = scale.reshape(()) if scale.size == 1 else scale
    tolerance = RTOL * np.abs(desired) + RTOL * np.broadcast_to(scale, desired.shape)
    error = np.abs(actual - desired)
    bad = ~(error <= tolerance)  # also catches NaN
    if np.any(bad):
        worst = np.unravel_index(np.argmax(np.where(bad, error / np.maximum(tolerance, 1e-300), 0.0)), desired.shape)
        raise AssertionError(f"{err_msg}: {int(bad.sum())} of {bad.size} entries differ; worst at {worst}: "
                             f"{actual[worst]!r} vs {desired[worst]!r} (tolerance {tolerance[worst]:.3g})")


def _reduction_scales(C, D, W, args):
    """Σ_ab |W_ab ∂K_ab/∂ψ_j| per hyperparameter: the rounding bound of each gradient sum."""
    _, dK = numpy_backend.fm_gram_gradient(C, D, *args)
    return np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1))


# ------------------------------------------------------------------- build
def test_cpp_backend_is_built():
    """CI must build the extension: only FASTFM_ALLOW_NO_EXTENSION=1 excuses its absence."""
    if os.environ.get("FASTFM_ALLOW_NO_EXTENSION", "") == "1":
        pytest.skip("FASTFM_ALLOW_NO_EXTENSION=1")
    assert "cpp" in available_backends(), f"cpp backend unavailable: {backend_status()['cpp']}"


def test_build_info_and_threads(cpp):
    from fastfm import _cpp
    info = _cpp.build_info()
    assert set(info) >= {"openmp", "max_threads", "compiler", "simd"}
    assert isinstance(info["openmp"], bool) and isinstance(info["max_threads"], int) and info["max_threads"] >= 1
    assert isinstance(info["compiler"], str) and isinstance(info["simd"], str)
    before = _cpp.get_num_threads()
    try:
        _cpp.set_num_threads(1)
        assert _cpp.get_num_threads() == (1 if info["openmp"] else 1)
    finally:
        _cpp.set_num_threads(before)
    with pytest.raises(ValueError, match="num_threads"):
        _cpp.set_num_threads(0)


def test_a_neighbour_gram_counts_its_work_by_the_moved_variables(cpp):
    """fm_neighbour_gram's thread count: the base row costs every variable's terms per point, a neighbour's row its
    moved variable's alone (a complete graph 2, a path G_p), so that calls of well under a millisecond stay on one
    thread (each parallel region costs milliseconds when other processes hold the cores); a call with enough work
    still takes the configured threads."""
    from fastfm._backends import _spectra
    space = ff.Space([ff.Real("x", 0.0, 1.0)] + [ff.Categorical(f"c{i}", list(range(5))) for i in range(10)]
                     + [ff.Integer(f"i{i}", 0, 7) for i in range(10)])
    spectra = space.packed_spectra
    per_variable = _spectra.terms_per_variable(spectra)
    assert list(per_variable[:10]) == [2] * 10 and np.all(per_variable[10:] > 2)   # complete graphs, then paths
    var_index = np.arange(20).repeat(3)                       # 60 neighbours, three moves of each variable
    n_points = 200
    work = n_points * (_spectra.terms_per_pair(spectra) + int(np.sum(per_variable[var_index])))
    assert work < cpp.PARALLEL_MIN_TERMS <= n_points * (len(var_index) + 1) * _spectra.terms_per_pair(spectra)
    with ff.config_context(num_threads=4):
        assert cpp._neighbour_threads(spectra, var_index, n_points) == 1
        many = n_points * cpp.PARALLEL_MIN_TERMS // work + 1  # the same moves on enough points to pass the line
        assert cpp._neighbour_threads(spectra, var_index, many) == 4
        # an index out of range is left to the binding to name
        assert cpp._neighbour_threads(spectra, np.array([99]), n_points) == 1
    with ff.config_context(num_threads=1):
        assert cpp._neighbour_threads(spectra, var_index, 10 ** 9) == 1


def test_factor_paths_are_the_fast_ones(cpp):
    """Nominal → O(1) complete path, ordinal → continuants, other graphs → projector tables."""
    tables = cpp._tables(EXTRA_SPACES["long_paths"].packed_spectra)
    assert tables.paths == ["tridiagonal", "tridiagonal", "tridiagonal", "general", "tridiagonal"]
    tables = cpp._tables(EXTRA_SPACES["discrete_only"].packed_spectra)
    assert tables.paths == ["complete", "tridiagonal", "general"]
    tables = cpp._tables(SPACES["mixed"].packed_spectra)
    assert tables.paths == ["tridiagonal", "tridiagonal", "complete", "general"]
    # prepared once per spectra object
    assert cpp._tables(SPACES["mixed"].packed_spectra) is tables


# ------------------------------------------------------------------- Grams
def test_symmetric_gram(cpp, any_space, modulation):
    C, D = _inputs(any_space, 37, seed=1)
    args = _hyper(any_space, 2, modulation)
    expected = numpy_backend.fm_gram(C, D, None, None, *args)
    actual = cpp.fm_gram(C, D, None, None, *args)
    assert actual.shape == expected.shape
    assert_close(actual, expected)
    np.testing.assert_array_equal(actual, actual.T)  # each pair computed once and mirrored


def test_cross_gram(cpp, any_space, modulation):
    C1, D1 = _inputs(any_space, 23, seed=3)
    C2, D2 = _inputs(any_space, 150, seed=4)  # > one column chunk
    args = _hyper(any_space, 5, modulation)
    assert_close(cpp.fm_gram(C1, D1, C2, D2, *args), numpy_backend.fm_gram(C1, D1, C2, D2, *args))


def test_gram_from_argument(cpp, any_space, modulation):
    C1, D1 = _inputs(any_space, 19, seed=6)
    C2, D2 = _inputs(any_space, 31, seed=7)
    args = _hyper(any_space, 8, modulation)
    R = numpy_backend.continuous_argument(C1, C2, modulation.exponent)
    assert_close(cpp.fm_gram_from_argument(R, D1, D2, *args), numpy_backend.fm_gram_from_argument(R, D1, D2, *args))
    R11 = numpy_backend.continuous_argument(C1, None, modulation.exponent)
    assert_close(cpp.fm_gram_from_argument(R11, D1, None, *args),
                 numpy_backend.fm_gram_from_argument(R11, D1, None, *args))


def test_gram_on_huge_path(cpp):
    """170 states: eigenvector storage and the generic continuant recurrence."""
    C, D = _inputs(HUGE_PATH_SPACE, 25, seed=9)
    C2, D2 = _inputs(HUGE_PATH_SPACE, 7, seed=10)
    for modulation in (Modulation(), Modulation(LAP_FAMILY, (1.0, 0.5), 2.0)):
        args = _hyper(HUGE_PATH_SPACE, 11, modulation)
        assert_close(cpp.fm_gram(C, D, None, None, *args), numpy_backend.fm_gram(C, D, None, None, *args))
        assert_close(cpp.fm_gram(C, D, C2, D2, *args), numpy_backend.fm_gram(C, D, C2, D2, *args))


@pytest.mark.parametrize("alpha", [1e4, 1e8, 1e12], ids=["alpha1e4", "alpha1e8", "alpha1e12"])
def test_gram_with_large_modulation_argument(cpp, alpha):
    """Large α·d² makes the continuants huge: the overflow guards must fall back, not return inf/NaN."""
    space = EXTRA_SPACES["long_paths"]
    C, D = _inputs(space, 30, seed=12, lengthscale=0.05)
    args = _hyper(space, 13, Modulation(), alpha_range=(alpha, 2 * alpha))
    expected = numpy_backend.fm_gram(C, D, None, None, *args)
    actual = cpp.fm_gram(C, D, None, None, *args)
    assert np.all(np.isfinite(actual))
    assert_close(actual, expected)


def test_gram_with_tiny_beta(cpp):
    """β so small that the scaled continuants' coupling products leave their safe range."""
    space = EXTRA_SPACES["long_paths"]
    C, D = _inputs(space, 30, seed=14)
    args = _hyper(space, 15, Modulation(), beta_range=(1e-40, 1e-39))
    assert_close(cpp.fm_gram(C, D, None, None, *args), numpy_backend.fm_gram(C, D, None, None, *args))


# ---------------------------------------------------- rational factor form
# Single-term Laplace factors of complete graphs and of tridiagonal graphs with ≤ 8 states are evaluated as
# Num(s)/Den(s) with one division per pair for all of them (fm.hpp, prepare_rational_factor); distant pairs,
# whose Den product would leave [1, ≈ 1e151], fall back to the per-factor paths.
RATIONAL_SPACE = ff.Space([ff.Real(f"c{d}", 0.0, 1.0) for d in range(3)]
                          + [ff.Categorical("n4", list(range(4))), ff.Categorical("n2", [0, 1]),
                             ff.Categorical("n17", list(range(17)))]
                          + [ff.Ordinal(f"o{n}", list(range(n))) for n in range(2, 9)]
                          + [ff.Graph("weighted_path", 6, _path_edges(6), weights=[1.0, 0.5, 2.0, 1.0, 3.0]),
                             ff.Ordinal("o9", list(range(9))),
                             ff.Graph("cycle", 5, [(k, (k + 1) % 5) for k in range(5)])])
RATIONAL_EXPECTED = ["complete"] * 3 + ["tridiagonal"] * 8 + ["general"] * 2
# Every factor rational, as on the large-N regression set: the distances are then computed inside the
# rational blocks of 32 columns (16 with four-lane vectors; no argument pass), and the columns after the last
# whole block by one more block that ends at the chunk's last column (one by one where the points are fewer).
ALL_RATIONAL_SPACE = ff.Space([ff.Real(f"c{d}", 0.0, 1.0) for d in range(5)]
                              + [ff.Categorical(f"n{i}", list(range(k))) for i, k in enumerate((2, 4, 4, 7))]
                              + [ff.Ordinal(f"o{i}", list(range(n))) for i, n in enumerate((3, 5, 5, 8))])


def _rational_forms(cpp, space, args):
    spectra, alphas, betas, variance, modulation = args
    return cpp._cpp.fm_gram_rational_forms(cpp._tables(spectra), alphas, betas, variance, int(modulation.kind),
                                           np.asarray(modulation.coefficients, dtype=float),
                                           float(modulation.exponent))


def test_rational_form_covers_nominal_and_short_path_factors(cpp):
    args = _hyper(RATIONAL_SPACE, 30, Modulation())
    assert _rational_forms(cpp, RATIONAL_SPACE, args) == {"factors": RATIONAL_EXPECTED, "rational": True}
    # single-term with another exponent and coefficient: still rational
    args = _hyper(RATIONAL_SPACE, 30, MODULATIONS["single_term_t1"])
    assert _rational_forms(cpp, RATIONAL_SPACE, args)["rational"]
    # several Laplace terms, or the diffusion modulation: no rational form
    for name in ("family_t1.3", "diffusion"):
        forms = _rational_forms(cpp, RATIONAL_SPACE, _hyper(RATIONAL_SPACE, 30, MODULATIONS[name]))
        assert forms == {"factors": ["general"] * len(RATIONAL_EXPECTED), "rational": False}, name
    # β so small that the numerators' product could underflow: the plan keeps the per-factor paths
    tiny = _hyper(RATIONAL_SPACE, 30, Modulation(), beta_range=(1e-40, 1e-39))
    assert not _rational_forms(cpp, RATIONAL_SPACE, tiny)["rational"]


def _exact_resolvent_entry(T, v, w):
    """[T⁻¹]_vw of a matrix of Fractions, by Gauss-Jordan elimination on T x = e_w (no rounding)."""
    n = len(T)
    A = [list(row) + [Fraction(int(i == w))] for i, row in enumerate(T)]
    for k in range(n):  # T is positive definite: no pivoting needed
        for i in range(n):
            if i != k and A[i][k] != 0:
                ratio = A[i][k] / A[k][k]
                A[i] = [x - ratio * y for x, y in zip(A[i], A[k])]
    return A[v][n] / A[v][v]


def _exact_kernel(space, c1, d1, c2, d2, args):
    """K between two points in exact rational arithmetic: σ² Π_p a_1 [((1 + α_p r) I + β_p L_p)⁻¹]_{v v'}
    (paper Eq. 5 with f = a_1/u), r = d² of the scaled coordinates; L_p as the space builds it."""
    _, alphas, betas, variance, modulation = args
    leading = Fraction(float(modulation.coefficients[0]))
    r = sum((Fraction(float(x)) - Fraction(float(y))) ** 2 for x, y in zip(c1, c2))
    if modulation.exponent == 1.0:
        r = Fraction(np.sqrt(float(r)))  # rounded once, as every backend does
    value = Fraction(float(variance))
    for p, param in enumerate(space.discrete_params):
        L = np.round(param.spectrum.laplacian() * 2 ** 20) / 2 ** 20  # the graph's exact (dyadic) weights
        s = Fraction(float(alphas[p])) * r
        beta = Fraction(float(betas[p]))
        n = len(L)
        T = [[(1 + s if i == k else 0) + beta * Fraction(float(L[i, k])) for k in range(n)] for i in range(n)]
        value *= leading * _exact_resolvent_entry(T, int(d1[p]), int(d2[p]))
    return value


@pytest.mark.parametrize("beta_range", [(1e-3, 2e-3), (0.05, 5.0), (20.0, 60.0)], ids=["beta_small", "beta_mid",
                                                                                        "beta_large"])
@pytest.mark.parametrize("alpha_range", [(1e-3, 2e-3), (0.05, 5.0), (20.0, 60.0)], ids=["alpha_small", "alpha_mid",
                                                                                         "alpha_large"])
@pytest.mark.parametrize("modulation", [Modulation(), MODULATIONS["single_term_t1"]], ids=["modlap", "t1"])
@pytest.mark.parametrize("space", [RATIONAL_SPACE, ALL_RATIONAL_SPACE], ids=["some_rational", "all_rational"])
def test_rational_gram_matches_exact_arithmetic(cpp, space, alpha_range, beta_range, modulation):
    """Every entry to 1e-12 relative, however small: off-diagonal states of a short path at small β give
    factors ~β^7, where the NumPy reference's eigen-sum cancels (its error is ~1e-16 absolute per factor),
    so the reference here is exact rational arithmetic on sampled pairs, and NumPy only where it is accurate."""
    C, D = _inputs(space, 41, seed=31)
    C2, D2 = _inputs(space, 150, seed=32)  # > one column chunk
    args = _hyper(space, 33, modulation, alpha_range=alpha_range, beta_range=beta_range)
    if space is RATIONAL_SPACE:
        # the cycle's factor is an eigen-sum (general path), accurate to ~1e-16 of its largest term only: a
        # moderate β and a small α keep its entries well above that
        args[1][-1], args[2][-1] = 0.01, 0.7
    assert _rational_forms(cpp, space, args)["rational"]
    K = cpp.fm_gram(C, D, C2, D2, *args)
    K_sym = cpp.fm_gram(C, D, None, None, *args)
    rng = np.random.default_rng(37)
    for a, b in zip(rng.integers(0, 41, 12), rng.integers(0, 150, 12)):
        exact = _exact_kernel(space, C[a], D[a], C2[b], D2[b], args)
        assert abs(K[a, b] - float(exact)) <= 1e-12 * float(exact), (a, b, K[a, b], float(exact))
    for a, b in zip(rng.integers(0, 41, 6), rng.integers(0, 41, 6)):
        exact = _exact_kernel(space, C[a], D[a], C[b], D[b], args)
        assert abs(K_sym[a, b] - float(exact)) <= 1e-12 * float(exact), (a, b, K_sym[a, b], float(exact))
    if beta_range[0] >= 0.05:  # where the reference's eigen-sums are accurate to 1e-12 of the largest entry
        assert_close(K, numpy_backend.fm_gram(C, D, C2, D2, *args))
        assert_close(K_sym, numpy_backend.fm_gram(C, D, None, None, *args))
    V = np.random.default_rng(34).standard_normal((150, 3))
    assert_close(cpp.fm_gram_matvec(C, D, C2, D2, V, *args), K @ V, scale=np.abs(K) @ np.abs(V))


@pytest.mark.parametrize("lengthscale", [0.05, 0.01], ids=["some_chunks_fall_back", "most_chunks_fall_back"])
@pytest.mark.parametrize("space", [RATIONAL_SPACE, ALL_RATIONAL_SPACE], ids=["some_rational", "all_rational"])
def test_rational_gram_falls_back_for_distant_pairs(cpp, space, lengthscale):
    """Short lengthscales make s = α d² large: chunks whose Den product passes ≈ 1e151 take the per-factor path
    and must agree with the reference as well (tiny but nonzero kernel values, no inf or NaN)."""
    C, D = _inputs(space, 60, seed=35, lengthscale=lengthscale)
    args = _hyper(space, 36, Modulation(), alpha_range=(0.5, 2.0))
    assert _rational_forms(cpp, space, args)["rational"]
    expected = numpy_backend.fm_gram(C, D, None, None, *args)
    actual = cpp.fm_gram(C, D, None, None, *args)
    assert np.all(np.isfinite(actual)) and np.all(actual > 0)
    assert_close(actual, expected)
    V = np.random.default_rng(38).standard_normal((60, 2))
    assert_close(cpp.fm_gram_matvec(C, D, None, None, V, *args), expected @ V, scale=np.abs(expected) @ np.abs(V))


def test_rational_denominator_overflow_keeps_per_factor_paths(cpp):
    """α so large that the product of the Den polynomials (coefficients ~α^k, degree 27 here) is not finite
    at r = 1: the plan keeps the per-factor paths, whose values must still match the reference."""
    args = _hyper(ALL_RATIONAL_SPACE, 39, Modulation(), alpha_range=(1e20, 2e20))
    assert not _rational_forms(cpp, ALL_RATIONAL_SPACE, args)["rational"]
    moderate = _hyper(ALL_RATIONAL_SPACE, 39, Modulation(), alpha_range=(1e5, 2e5))
    assert _rational_forms(cpp, ALL_RATIONAL_SPACE, moderate)["rational"]
    C, D = _inputs(ALL_RATIONAL_SPACE, 50, seed=40, lengthscale=1e6)  # distances ~1e-12: α r of order 1e8
    for hyper in (args, moderate):
        expected = numpy_backend.fm_gram(C, D, None, None, *hyper)
        actual = cpp.fm_gram(C, D, None, None, *hyper)
        assert np.all(np.isfinite(actual))
        assert_close(actual, expected)


def test_rational_denominator_underflow_keeps_per_factor_paths(cpp):
    """α so small that the top coefficients of the Den products (~α^14 in each of the two groups) underflow
    while each factor's own (≤ α^8) do not: those terms matter where αr is large, so the plan keeps the
    per-factor paths, which must match the reference there."""
    args = _hyper(ALL_RATIONAL_SPACE, 44, Modulation(), alpha_range=(1e-25, 2e-25))
    assert not _rational_forms(cpp, ALL_RATIONAL_SPACE, args)["rational"]
    assert _rational_forms(cpp, ALL_RATIONAL_SPACE, args)["factors"] == ["complete"] * 4 + ["tridiagonal"] * 4
    C, D = _inputs(ALL_RATIONAL_SPACE, 50, seed=45, lengthscale=3e-13)  # r ~ 1e25: αr of order 1
    expected = numpy_backend.fm_gram(C, D, None, None, *args)
    actual = cpp.fm_gram(C, D, None, None, *args)
    assert np.all(np.isfinite(actual))
    assert_close(actual, expected)


@pytest.mark.parametrize("space", [RATIONAL_SPACE, ALL_RATIONAL_SPACE], ids=["some_rational", "all_rational"])
def test_rational_blocks_and_remaining_columns_agree_bitwise(cpp, space, forced_lanes):
    """A column is computed in a vector block, in the block that ends at its chunk's last column (overlapping
    the whole blocks before it, or columns before the chunk) or, among fewer points than a block, one by one,
    depending on where its chunk starts and ends; all must give the same bits (batched and unbatched calls
    must agree exactly), with either lane count."""
    C, D = _inputs(space, 7, seed=41)
    C2, D2 = _inputs(space, 99, seed=42)
    args = _hyper(space, 43, Modulation())
    full = cpp.fm_gram(C, D, C2, D2, *args)
    for offset in (1, 5, 31, 32, 33, 67):
        np.testing.assert_array_equal(cpp.fm_gram(C, D, C2[offset:], D2[offset:], *args), full[:, offset:])
        np.testing.assert_array_equal(cpp.fm_gram(C, D, C2[:offset], D2[:offset], *args), full[:, :offset])
    # the symmetric Gram starts row a's columns at a: every alignment, mirrored
    K_sym = cpp.fm_gram(C2, D2, None, None, *args)
    np.testing.assert_array_equal(K_sym, cpp.fm_gram(C2, D2, C2, D2, *args))


# -------------------------------------------------------------- reductions
def test_grad_reduction(cpp, any_space, modulation):
    C, D = _inputs(any_space, 29, seed=16)
    args = _hyper(any_space, 17, modulation)
    rng = np.random.default_rng(18)
    W = rng.standard_normal((len(C), len(C)))  # not symmetric: pairs use W_ab + W_ba
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args)
    assert len(actual) == 4
    assert actual[0].shape == (any_space.n_continuous,)
    assert actual[1].shape == actual[2].shape == (any_space.n_discrete,)
    assert isinstance(actual[3], float)
    scales = _reduction_scales(C, D, W, args)
    Dc, P = any_space.n_continuous, any_space.n_discrete
    for got, want, scale, name in zip(actual, expected, np.split(scales, [Dc, Dc + P, Dc + 2 * P]),
                                      ["lengthscale", "alpha", "beta", "variance"]):
        assert_close(got, want, scale=scale, err_msg=name)


def test_grad_reduction_spans_several_tiles(cpp, modulation):
    """N larger than a row tile and a column chunk: tile partial sums and the Wᵀ blocks."""
    space = SPACES["mixed"]
    C, D = _inputs(space, 203, seed=19)
    args = _hyper(space, 20, modulation)
    A = np.random.default_rng(21).standard_normal((203, 203))
    W = A + A.T
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args)
    scales = _reduction_scales(C, D, W, args)
    assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                 np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]), scale=scales)


@pytest.mark.parametrize("n", [29, 203])
def test_grad_reduction_with_symmetric_weights(cpp, any_space, modulation, n):
    """symmetric_weights=True (the GP's W = ½(ααᵀ − K⁻¹)) reads one triangle of W: same sums."""
    C, D = _inputs(any_space, n, seed=40)
    args = _hyper(any_space, 41, modulation)
    A = np.random.default_rng(42).standard_normal((n, n))
    W = A + A.T
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args, True)
    scales = _reduction_scales(C, D, W, args)
    assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                 np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]), scale=scales)
    # the promise is what it uses: the lower triangle is not read
    lower_zeroed = np.triu(W)
    again = cpp.fm_grad_reduction(C, D, lower_zeroed, *args, True)
    np.testing.assert_array_equal(np.concatenate([again[0], again[1], again[2], [again[3]]]),
                                  np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]))


def _part_sum(space, n, seed, n_terms=3):
    """Inputs of fm_gram_sum: the product on ``space`` and one term per discrete variable among the first
    ``n_terms`` (AdditiveFM's parts), each with lengthscales, α, β and a variance of its own."""
    X = space.sample_encoded(n, seed=seed)
    if n > 4:
        X[4] = X[1]                                             # a zero distance
    C, D = space.split(X)
    rng = np.random.default_rng(seed + 1)
    P = space.n_discrete
    terms = list(range(min(P, n_terms)))
    states = [D] + [np.ascontiguousarray(D[:, [p]]) for p in terms]
    spectra = [space.packed_spectra] + [ff.Space([_standalone(space.discrete_params[p])]).packed_spectra for p in terms]
    n_variables = P + len(terms)
    return (np.ascontiguousarray(C), rng.uniform(0.2, 2.0, (len(states), space.n_continuous)), states, spectra,
            rng.uniform(0.05, 5.0, n_variables), rng.uniform(0.05, 5.0, n_variables),
            rng.uniform(0.3, 2.0, len(states)))


def test_gram_sum_is_the_sum_of_the_parts_grams(cpp, any_space, modulation):
    """fm_gram_sum: part k's Gram as fm_gram gives it (C / lengthscales[k], its states and spectra, its slice of α
    and β), summed in order bit for bit, and each part's diagonal; the NumPy reference to rounding."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    C, lengthscales, states, spectra, alphas, betas, variances = args = _part_sum(any_space, 31, seed=60)
    K, diagonals = cpp.fm_gram_sum(*args, modulation)
    ends = np.cumsum([D.shape[1] for D in states])
    parts = [cpp.fm_gram(np.ascontiguousarray(C / lengthscales[k]), D, None, None, spectra[k], a, b, variances[k],
                         modulation)
             for k, (D, a, b) in enumerate(zip(states, np.split(alphas, ends[:-1]), np.split(betas, ends[:-1])))]
    expected = parts[0].copy()
    for part in parts[1:]:
        expected += part
    np.testing.assert_array_equal(K, expected)
    np.testing.assert_array_equal(diagonals, np.array([part.diagonal() for part in parts]))
    reference, reference_diagonals = numpy_backend.fm_gram_sum(*args, modulation)
    assert_close(K, reference)
    assert_close(diagonals, reference_diagonals)
    # added into a given array, in place
    out = np.full_like(K, 0.25)
    again, _ = cpp.fm_gram_sum(*args, modulation, out=out)
    assert np.shares_memory(again, out)
    np.testing.assert_allclose(out, 0.25 + K, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("n", [29, 203])
def test_grad_reduction_sum_is_the_parts_reductions(cpp, any_space, modulation, n):
    """fm_grad_reduction_sum: per part fm_grad_reduction's four outputs, concatenated, bit for bit; the NumPy
    reference within each sum's rounding."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    C, lengthscales, states, spectra, alphas, betas, variances = args = _part_sum(any_space, n, seed=61)
    A = np.random.default_rng(62).standard_normal((n, n))
    W = A + A.T
    actual = cpp.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances, modulation, True)
    ends = np.cumsum([D.shape[1] for D in states])
    pieces, scales = [], []
    for k, (D, a, b) in enumerate(zip(states, np.split(alphas, ends[:-1]), np.split(betas, ends[:-1]))):
        part_args = (spectra[k], a, b, variances[k], modulation)
        C_k = np.ascontiguousarray(C / lengthscales[k])
        g = cpp.fm_grad_reduction(C_k, D, W, *part_args, True)
        pieces += [g[0], g[1], g[2], [g[3]]]
        scales.append(_reduction_scales(C_k, D, W, part_args))
    np.testing.assert_array_equal(actual, np.concatenate(pieces))
    reference = numpy_backend.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances,
                                                    modulation)
    assert_close(actual, reference, scale=np.concatenate(scales))


def _scalings(states, n, seed):
    """Unit-diagonal row weights w (N,) and log-weight derivatives G (N, P_k) for parts 0 and 2 (parts 1 and 3
    unscaled): random, so the binding's arithmetic is checked whatever a kernel's tables give."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(0.5, 1.5, n), rng.standard_normal((n, D.shape[1]))) if k % 2 == 0 else None
            for k, D in enumerate(states)]


def test_gram_sum_scales_the_weighted_parts(cpp, any_space, modulation):
    """fm_gram_sum with weights: a weighted part is w_a K_ab w_b (numpy's K * w[:, None] * w[None, :], bit for
    bit), its diagonal the scaled one, its scaled Gram returned (None for the others), the sum in order bit for bit;
    the NumPy reference to rounding; in place into ``out``."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    C, lengthscales, states, spectra, alphas, betas, variances = args = _part_sum(any_space, 31, seed=70)
    scalings = _scalings(states, 31, seed=71)
    weights = [None if s is None else s[0] for s in scalings]
    K, diagonals, part_grams = cpp.fm_gram_sum(*args, modulation, weights=weights)
    ends = np.cumsum([D.shape[1] for D in states])
    parts = []
    for k, (D, a, b) in enumerate(zip(states, np.split(alphas, ends[:-1]), np.split(betas, ends[:-1]))):
        part = cpp.fm_gram(np.ascontiguousarray(C / lengthscales[k]), D, None, None, spectra[k], a, b, variances[k],
                           modulation)
        if weights[k] is not None:
            part = part * weights[k][:, None]
            part *= weights[k][None, :]
            np.testing.assert_array_equal(part_grams[k], part)
        else:
            assert part_grams[k] is None
        parts.append(part)
    expected = parts[0].copy()
    for part in parts[1:]:
        expected += part
    np.testing.assert_array_equal(K, expected)
    np.testing.assert_array_equal(diagonals, np.array([part.diagonal() for part in parts]))
    reference, reference_diagonals, reference_grams = numpy_backend.fm_gram_sum(*args, modulation, weights=weights)
    assert_close(K, reference)
    assert_close(diagonals, reference_diagonals)
    assert_close(part_grams[0], reference_grams[0])
    assert not np.shares_memory(K, part_grams[0])          # K is summed into; the part's Gram is kept
    out = np.full_like(K, 0.25)
    again = cpp.fm_gram_sum(*args, modulation, out=out, weights=weights)[0]
    assert np.shares_memory(again, out)
    np.testing.assert_allclose(out, 0.25 + K, rtol=1e-15, atol=1e-15)
    # a previous call's kept Grams and a scratch given back (overwritten, whatever they held): the same sums bit for
    # bit, each kept Gram written into the array given for it; the reference writes into them too
    grams_out = [None if g is None else np.full_like(g, np.nan) for g in part_grams]
    for backend in (cpp, numpy_backend):
        K_again, diagonals_again, grams_again = backend.fm_gram_sum(
            *args, modulation, weights=weights, grams_out=grams_out, workspace=np.full_like(K, np.nan))
        assert all(g is None if given is None else np.shares_memory(g, given)
                   for g, given in zip(grams_again, grams_out))
        compare = np.testing.assert_array_equal if backend is cpp else assert_close
        compare(K_again, K)
        compare(diagonals_again, diagonals)
        for g, expected_gram in zip(grams_again, part_grams):
            if g is not None:
                compare(g, expected_gram)


@pytest.mark.parametrize("symmetric", [True, False])
def test_grad_reduction_sum_differentiates_the_scaled_parts(cpp, any_space, modulation, symmetric):
    """fm_grad_reduction_sum with scalings: a scaled part's sums are the unscaled reduction of W ∘ wwᵀ (bit for
    bit) plus, in its β block, Σ_ab W_ab K̃_ab (G_a + G_b); the NumPy reference within rounding; the others as
    without scalings, bit for bit (the gradient of a likelihood through them against finite differences:
    tests/kernels/test_additive.py)."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    n = 29
    C, lengthscales, states, spectra, alphas, betas, variances = args = _part_sum(any_space, n, seed=72)
    A = np.random.default_rng(73).standard_normal((n, n))
    W = A + A.T if symmetric else A
    np.fill_diagonal(W, 0.0)
    scalings = _scalings(states, n, seed=74)
    weights = [None if s is None else s[0] for s in scalings]
    _, _, part_grams = cpp.fm_gram_sum(*args, modulation, weights=weights)
    full = [None if s is None else (s[0], s[1], part_grams[k]) for k, s in enumerate(scalings)]
    actual = cpp.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances, modulation,
                                       symmetric, scalings=full)
    ends = np.cumsum([D.shape[1] for D in states])
    pieces = []
    for k, (D, a, b) in enumerate(zip(states, np.split(alphas, ends[:-1]), np.split(betas, ends[:-1]))):
        C_k = np.ascontiguousarray(C / lengthscales[k])
        weights_k = W
        if full[k] is not None:
            w = full[k][0]
            weights_k = W * w[:, None]
            weights_k *= w[None, :]
        g = cpp.fm_grad_reduction(C_k, D, weights_k, spectra[k], a, b, variances[k], modulation, symmetric)
        g_beta = g[2]
        if full[k] is not None:
            g_beta = g_beta + np.einsum("ab,ab->a", W + W.T, full[k][2]) @ full[k][1]
        pieces += [g[0], g[1], g_beta, [g[3]]]
    expected = np.concatenate(pieces)
    np.testing.assert_allclose(actual, expected, rtol=1e-11, atol=1e-11 * np.max(np.abs(expected)))
    # the unscaled parts' sums, and a scaled part's outside its β block, bit for bit
    start = 0
    for k in range(len(states)):
        stop = start + sum(len(np.atleast_1d(piece)) for piece in pieces[4 * k:4 * k + 4])
        exact = np.concatenate(pieces[4 * k:4 * k + 4]) if full[k] is None else np.concatenate(pieces[4 * k:4 * k + 2])
        np.testing.assert_array_equal(actual[start:start + len(exact)], exact)
        start = stop
    reference = numpy_backend.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances,
                                                    modulation, symmetric, scalings=full)
    np.testing.assert_allclose(actual, reference, rtol=1e-9, atol=1e-9 * np.max(np.abs(reference)))
    # W ∘ wwᵀ formed in a scratch the caller gives (overwritten, whatever it held): the same sums bit for bit
    in_workspace = cpp.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances, modulation,
                                             symmetric, scalings=full, workspace=np.full((n, n), np.nan))
    np.testing.assert_array_equal(in_workspace, actual)
    with pytest.raises(ValueError, match=r"scalings\[0\]\[1\] \(G\)"):
        cpp.fm_grad_reduction_sum(C, lengthscales, states, W, spectra, alphas, betas, variances, modulation,
                                  symmetric, scalings=[(full[0][0], full[0][1][:, :0], full[0][2])] + full[1:])


def test_cross_gradient_sum_is_the_parts_cross_gradients(cpp, any_space, modulation):
    """fm_cross_gradient_sum: per part fm_cross_gradient on C1 / lengthscales[k] and C2 / lengthscales[k], its dK
    divided by the lengthscales, summed in order bit for bit; the NumPy reference to rounding; in place."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    C2, lengthscales, states2, spectra, alphas, betas, variances = _part_sum(any_space, 23, seed=64)
    C1, _, states1, _, _, _, _ = _part_sum(any_space, 7, seed=65)
    K, dK = cpp.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas, variances,
                                      modulation)
    assert K.shape == (7, 23) and dK.shape == (7, 23, any_space.n_continuous)
    ends = np.cumsum([D.shape[1] for D in states2])

    def parts_added(weights1, weights2):
        """Each part's own fm_cross_gradient, dK divided by its lengthscales, scaled by its weights where given
        as FMKernel scales its own (fm._scale_in_place after the division), added in order."""
        expected = None
        for k, (a, b) in enumerate(zip(np.split(alphas, ends[:-1]), np.split(betas, ends[:-1]))):
            K_k, dK_k = cpp.fm_cross_gradient(np.ascontiguousarray(C1 / lengthscales[k]), states1[k],
                                              np.ascontiguousarray(C2 / lengthscales[k]), states2[k], spectra[k], a,
                                              b, variances[k], modulation)
            dK_k = dK_k / lengthscales[k]
            if weights1[k] is not None:
                K_k *= weights1[k][:, None]
                K_k *= weights2[k][None, :]
                dK_k *= weights1[k][:, None, None]
                dK_k *= weights2[k][None, :, None]
            expected = (K_k, dK_k) if expected is None else (expected[0] + K_k, expected[1] + dK_k)
        return expected

    expected = parts_added([None] * len(states1), [None] * len(states2))
    np.testing.assert_array_equal(K, expected[0])
    np.testing.assert_array_equal(dK, expected[1])
    reference = numpy_backend.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas,
                                                    variances, modulation)
    assert_close(K, reference[0])
    assert_close(dK, reference[1])
    out_K, out_dK = np.full_like(K, 0.5), np.full_like(dK, -0.25)
    again = cpp.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas, variances,
                                      modulation, out_K, out_dK)
    assert again[0] is out_K and again[1] is out_dK
    np.testing.assert_allclose(out_K, 0.5 + K, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(out_dK, dK - 0.25, rtol=1e-15, atol=1e-15)
    # parts with unit-diagonal weights (all but the first here): each part's K and dK times its row weight, then its
    # column weight, bit for bit
    rng = np.random.default_rng(66)
    weights1 = [None] + [rng.uniform(0.5, 1.5, 7) for _ in states1[1:]]
    weights2 = [None] + [rng.uniform(0.5, 1.5, 23) for _ in states2[1:]]
    K_w, dK_w = cpp.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas, variances,
                                          modulation, weights1=weights1, weights2=weights2)
    expected = parts_added(weights1, weights2)
    np.testing.assert_array_equal(K_w, expected[0])
    np.testing.assert_array_equal(dK_w, expected[1])
    reference = numpy_backend.fm_cross_gradient_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas,
                                                    variances, modulation, weights1=weights1, weights2=weights2)
    assert_close(K_w, reference[0])
    assert_close(dK_w, reference[1])


@pytest.mark.parametrize("n_rows", [7, 301])
def test_cross_gram_sum_is_the_parts_grams(cpp, any_space, modulation, n_rows):
    """fm_cross_gram_sum: per part fm_gram on C1 / lengthscales[k] and C2 / lengthscales[k], scaled by its row weight
    and then its column weight where given (numpy's K * w1[:, None] * w2[None, :]), summed in order, bit for bit, on
    fewer rows than a tile and on several tiles (one parallel region for every part); the NumPy reference to rounding
    and bit for bit with the same per-part Grams."""
    if any_space.n_discrete == 0:
        pytest.skip("parts need a discrete variable")
    C2, lengthscales, states2, spectra, alphas, betas, variances = _part_sum(any_space, 23, seed=67)
    C1, _, states1, _, _, _, _ = _part_sum(any_space, n_rows, seed=68)
    ends = np.cumsum([D.shape[1] for D in states2])
    rng = np.random.default_rng(69)
    for weighted in (False, True):
        weights1 = [None] + [rng.uniform(0.5, 1.5, n_rows) for _ in states1[1:]] if weighted else None
        weights2 = [None] + [rng.uniform(0.5, 1.5, 23) for _ in states2[1:]] if weighted else None
        K = cpp.fm_cross_gram_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas, variances,
                                  modulation, weights1=weights1, weights2=weights2)
        expected = None
        for k, (a, b) in enumerate(zip(np.split(alphas, ends[:-1]), np.split(betas, ends[:-1]))):
            K_k = cpp.fm_gram(np.ascontiguousarray(C1 / lengthscales[k]), states1[k],
                              np.ascontiguousarray(C2 / lengthscales[k]), states2[k], spectra[k], a, b, variances[k],
                              modulation)
            if weighted and weights1[k] is not None:
                K_k *= weights1[k][:, None]
                K_k *= weights2[k][None, :]
            expected = K_k if expected is None else expected + K_k
        np.testing.assert_array_equal(K, expected)
        reference = numpy_backend.fm_cross_gram_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas,
                                                    variances, modulation, weights1=weights1, weights2=weights2)
        assert_close(K, reference)
        with ff.config_context(num_threads=1):                   # the same bits on one thread
            np.testing.assert_array_equal(
                cpp.fm_cross_gram_sum(C1, states1, C2, states2, lengthscales, spectra, alphas, betas, variances,
                                      modulation, weights1=weights1, weights2=weights2), K)


def test_part_sums_name_a_bad_argument(cpp):
    space = SPACES["mixed"]
    C, lengthscales, states, spectra, alphas, betas, variances = _part_sum(space, 12, seed=63)
    modulation = Modulation()
    good = dict(C=C, lengthscales=lengthscales, states=states, spectra_list=spectra, alphas=alphas, betas=betas,
                variances=variances, modulation=modulation)
    cases = [
        (dict(lengthscales=lengthscales[:-1]), "lengthscales must have shape"),
        (dict(lengthscales=-lengthscales), "lengthscales must be positive"),
        (dict(states=states[:-1]), "states must hold one state matrix per part"),
        (dict(states=[states[0]] + [states[1] + 7] + states[2:]), r"states\[1\]\[0, 0\]"),
        (dict(alphas=alphas[:-1]), "alphas must have shape"),
        (dict(betas=-betas), "alphas and betas must be finite and >= 0"),
        (dict(variances=variances[:1]), "variances must have shape"),
        (dict(spectra_list=[]), "at least one part"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            cpp.fm_gram_sum(**{**good, **change})
        with pytest.raises(ValueError, match=message):
            cpp.fm_grad_reduction_sum(W=np.eye(12), **{**good, **change})
    # the per-part lists: one entry per part, each None or the part's value
    n_parts = len(states)
    with pytest.raises(ValueError,
                       match=rf"weights must hold one entry per part \({n_parts}\), None or an array, got 1"):
        cpp.fm_gram_sum(**good, weights=[None])
    with pytest.raises(ValueError, match=r"weights\[1\] must have shape \(12,\)"):
        cpp.fm_gram_sum(**good, weights=[None, np.ones(11)] + [None] * (n_parts - 2))
    with pytest.raises(ValueError, match=rf"scalings must hold one entry per part \({n_parts}\), None or \(w, G, K\)"):
        cpp.fm_grad_reduction_sum(W=np.eye(12), **good, scalings=[None] * (n_parts + 1))
    with pytest.raises(ValueError, match=r"scalings\[0\] must be a tuple \(w, G, K\), got 2 entries"):
        cpp.fm_grad_reduction_sum(W=np.eye(12), **good,
                                  scalings=[(np.ones(12), np.ones((12, 1)))] + [None] * (n_parts - 1))
    read_only = np.zeros((12, 12))
    read_only.flags.writeable = False
    for out in (np.zeros((12, 12), dtype=np.float32), np.zeros((12, 11)), np.asfortranarray(np.ones((12, 12))),
                read_only):
        with pytest.raises(ValueError, match="out must be a writable C-contiguous float64 array"):
            cpp.fm_gram_sum(**good, out=out)
    with pytest.raises(ValueError, match="W must have shape"):
        cpp.fm_grad_reduction_sum(W=np.eye(11), **good)
    # the reused arrays: of the Gram's shape, and not an array the call reads or sums into
    weights = [np.ones(12)] + [None] * (n_parts - 1)
    grams_out = [np.zeros((12, 12))] + [None] * (n_parts - 1)
    with pytest.raises(ValueError, match=rf"grams_out must hold one entry per part \({n_parts}\)"):
        cpp.fm_gram_sum(**good, weights=weights, grams_out=grams_out[:1])
    with pytest.raises(ValueError, match=r"grams_out\[0\] must be a writable C-contiguous float64 array of shape "
                                         r"\(12, 12\)"):
        cpp.fm_gram_sum(**good, weights=weights, grams_out=[np.zeros((12, 11))] + grams_out[1:])
    with pytest.raises(ValueError, match=r"grams_out\[0\] must not be the array out"):
        cpp.fm_gram_sum(**good, weights=weights, grams_out=grams_out, out=grams_out[0])
    with pytest.raises(ValueError, match="workspace must not be out or one of grams_out"):
        cpp.fm_gram_sum(**good, weights=weights, grams_out=grams_out, workspace=grams_out[0])
    with pytest.raises(ValueError, match=r"workspace must be a writable C-contiguous float64 array of shape"):
        cpp.fm_gram_sum(**good, workspace=np.zeros(144))
    W = np.eye(12)
    with pytest.raises(ValueError, match="workspace must not be W"):
        cpp.fm_grad_reduction_sum(W=W, **good, workspace=W)
    cross = dict(C1=C[:3], states1=[D[:3] for D in states], C2=C, states2=states, lengthscales=lengthscales,
                 spectra_list=spectra, alphas=alphas, betas=betas, variances=variances, modulation=modulation)
    for change, message in [(dict(C1=C[:3, :1]), "C1 must have shape"),
                            (dict(states1=cross["states1"][:-1]), "states1 must hold one state matrix per part"),
                            (dict(states1=[D[:2] for D in states]), r"states1\[0\] must have shape"),
                            (dict(out_K=np.zeros((3, 12))), "out_K and out_dK must both be arrays"),
                            (dict(out_K=np.zeros((3, 12)), out_dK=np.zeros((3, 12, 1))), "out_dK must be a writable"),
                            (dict(weights1=[None]), "weights1 must hold one entry per part"),
                            (dict(weights1=[np.ones(3)] * len(states), weights2=[np.ones(11)] * len(states)),
                             r"weights2\[0\] must have shape \(12,\)"),
                            (dict(weights1=[np.ones(3)] + [None] * (len(states) - 1)),
                             "part 0 has weights on one side only")]:
        with pytest.raises(ValueError, match=message):
            cpp.fm_cross_gradient_sum(**{**cross, **change})
        if "out_K" not in change:     # the Gram's sum shares the rows' checks
            with pytest.raises(ValueError, match=message):
                cpp.fm_cross_gram_sum(**{**cross, **change})


def test_reduction_from_argument(cpp, any_space, modulation):
    C, D = _inputs(any_space, 26, seed=22)
    args = _hyper(any_space, 23, modulation)
    R = numpy_backend.continuous_argument(C, None, modulation.exponent)
    W = np.random.default_rng(24).standard_normal((len(C), len(C)))
    g_alpha, g_beta, g_var, omega = numpy_backend.fm_reduction_from_argument(R, D, W, *args)
    a_alpha, a_beta, a_var, a_omega = cpp.fm_reduction_from_argument(R, D, W, *args)
    K = numpy_backend.fm_gram_from_argument(R, D, None, *args)
    bound = np.sum(np.abs(W)) * np.max(np.abs(K)) * (1.0 + np.max(np.abs(args[1]) * np.max(R, initial=0.0)))
    assert_close(a_alpha, g_alpha, scale=bound)
    assert_close(a_beta, g_beta, scale=bound)
    assert_close(a_var, g_var, scale=bound)
    assert_close(a_omega, omega)


def test_reduction_of_a_space_without_discrete_factors_beyond_one_state(cpp):
    """P = 1 with a single state: every factor is f(0, s)."""
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", ["only"])])
    C, D = _inputs(space, 12, seed=25)
    args = _hyper(space, 26, Modulation())
    W = np.random.default_rng(27).standard_normal((12, 12))
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args)
    scales = _reduction_scales(C, D, W, args)
    assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                 np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]), scale=scales)


@pytest.mark.parametrize("n_continuous", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("states", [(4,), (17, 17, 17, 17, 17), (3, 5, 4, 2, 6, 3, 7, 2)], ids=["P1", "P5", "P8"])
@pytest.mark.parametrize("symmetric_weights", [False, True])
def test_grad_reduction_of_nominal_spaces(cpp, n_continuous, states, symmetric_weights):
    """All-nominal spaces under ModLap (t = 2): the fused register kernel for n_continuous ≤ 3 (its
    argument, weights and chain sums in the vector loop), the unfused one beyond; N with a partial
    last block of 8 columns and several column chunks."""
    space = ff.Space([ff.Real(f"x{d}", -1.0, 1.0) for d in range(n_continuous)]
                     + [ff.Categorical(f"h{p}", list(range(n))) for p, n in enumerate(states)])
    for n in (29, 203):
        C, D = _inputs(space, n, seed=60)
        args = _hyper(space, 61, Modulation())
        A = np.random.default_rng(62).standard_normal((n, n))
        W = A + A.T if symmetric_weights else A
        expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
        actual = (cpp.fm_grad_reduction(C, D, W, *args, True) if symmetric_weights
                  else cpp.fm_grad_reduction(C, D, W, *args))
        scales = _reduction_scales(C, D, W, args)
        assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                     np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]), scale=scales)


@pytest.mark.parametrize("n", [29, 203])
@pytest.mark.parametrize("symmetric_weights", [False, True])
def test_grad_reduction_of_many_mixed_variables(cpp, modulation, n, symmetric_weights):
    """P = 12 > 8 nominal, ordinal, path and cycle variables (the mixed vector kernel for f = a_1/u, the
    general path otherwise), N with a partial last block of 8 columns; and from the argument (omega).
    (The kernel-level comparisons run on this space too: it is in ALL_SPACES.)"""
    space = MANY_MIXED_SPACE
    C, D = _inputs(space, n, seed=50)
    args = _hyper(space, 51, modulation)
    A = np.random.default_rng(52).standard_normal((n, n))
    W = A + A.T if symmetric_weights else A
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args, True) if symmetric_weights else cpp.fm_grad_reduction(C, D, W, *args)
    scales = _reduction_scales(C, D, W, args)
    assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                 np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]), scale=scales)
    if symmetric_weights:
        return
    R = numpy_backend.continuous_argument(C, None, modulation.exponent)
    g_alpha, g_beta, g_var, omega = numpy_backend.fm_reduction_from_argument(R, D, W, *args)
    a_alpha, a_beta, a_var, a_omega = cpp.fm_reduction_from_argument(R, D, W, *args)
    scales = _reduction_scales(C, D, W, args)
    Dc, P = space.n_continuous, space.n_discrete
    assert_close(a_alpha, g_alpha, scale=scales[Dc:Dc + P])
    assert_close(a_beta, g_beta, scale=scales[Dc + P:Dc + 2 * P])
    assert_close(a_var, g_var, scale=scales[-1])
    assert_close(a_omega, omega)


# ------------------------------------------------ neighbours and gradients
def test_neighbour_gram(cpp, any_space, modulation):
    C, D = _inputs(any_space, 140, seed=28)
    c, v = C[3], D[3]
    var_index, new_state = [], []
    for p, n in enumerate(any_space.n_states):
        for state in range(n):
            if state != v[p]:
                var_index.append(p)
                new_state.append(state)
    var_index = np.array(var_index, dtype=np.int64)
    new_state = np.array(new_state, dtype=np.int64)
    args = _hyper(any_space, 29, modulation)
    expected = numpy_backend.fm_neighbour_gram(c, v, C, D, var_index, new_state, *args)
    actual = cpp.fm_neighbour_gram(c, v, C, D, var_index, new_state, *args)
    assert actual.shape == (len(var_index), len(C))
    assert_close(actual, expected)


def test_cross_gradient(cpp, any_space, modulation):
    C1, D1 = _inputs(any_space, 9, seed=30)
    C2, D2 = _inputs(any_space, 41, seed=31)
    C1[2] = C2[5]  # a zero distance
    args = _hyper(any_space, 32, modulation)
    K, dK = numpy_backend.fm_cross_gradient(C1, D1, C2, D2, *args)
    aK, adK = cpp.fm_cross_gradient(C1, D1, C2, D2, *args)
    assert adK.shape == dK.shape
    assert_close(aK, K)
    assert_close(adK, dK, scale=max(np.max(np.abs(dK), initial=0.0), np.max(np.abs(K)) * np.max(np.abs(args[1]))))


# ----------------------------------------------------- through the kernels
def _kernels(space, backend):
    P, Dc = space.n_discrete, space.n_continuous
    rng = np.random.default_rng(33)
    common = dict(alpha=rng.uniform(0.1, 3.0, P), beta=rng.uniform(0.1, 3.0, P), variance=1.3, backend=backend)
    lengthscale = rng.uniform(0.2, 1.5, Dc) if Dc else 0.5
    kernels = {
        "ModLap": ff.kernels.ModLap(space, lengthscale=lengthscale, **common),
        "ModDif": ff.kernels.ModDif(space, lengthscale=lengthscale, **common),
        "FMKernel": ff.kernels.FMKernel(space, coefficients=(0.3, 1.0), exponent=1.5, lengthscale=lengthscale,
                                        **common),
        "GraphKernel": ff.kernels.GraphKernel(space, beta=common["beta"], variance=1.3, backend=backend),
    }
    if Dc:
        kernels["ModNN"] = ff.kernels.ModNN(space, nn_variance=rng.uniform(0.5, 2.0, Dc + 1), beta=common["beta"],
                                            variance=1.3, backend=backend)
    return kernels


def test_kernels_agree_across_backends(cpp, any_space):
    X = any_space.sample_encoded(33, seed=34)
    Y = any_space.sample_encoded(12, seed=35)
    W = np.random.default_rng(36).standard_normal((33, 33))
    W = W + W.T
    fast, reference = _kernels(any_space, "cpp"), _kernels(any_space, "numpy")
    for name in fast:
        kf, kr = fast[name], reference[name]
        Kr = kr(X)
        assert_close(kf(X), Kr, err_msg=name)
        assert_close(kf(X, Y), kr(X, Y), err_msg=name)
        _, dK = kr(X, eval_gradient=True)
        scale = np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1))
        assert_close(kf.gradient_reduction(X, W), kr.gradient_reduction(X, W), scale=scale, err_msg=name)


def test_kernel_neighbours_and_input_gradient_agree_across_backends(cpp, any_space):
    X = any_space.sample_encoded(40, seed=37)
    x = X[0]
    var_index = np.arange(any_space.n_discrete, dtype=np.int64)
    new_state = (X[0, any_space.n_continuous:].astype(np.int64) + 1) % any_space.n_states
    fast, reference = _kernels(any_space, "cpp")["ModLap"], _kernels(any_space, "numpy")["ModLap"]
    assert_close(fast.neighbour_gram(x, X, var_index, new_state), reference.neighbour_gram(x, X, var_index, new_state))
    if any_space.n_continuous:
        Kf, dKf = fast.gram_and_input_gradient(X[:5], X)
        Kr, dKr = reference.gram_and_input_gradient(X[:5], X)
        assert_close(Kf, Kr)
        assert_close(dKf, dKr)


# -------------------------------------------------------------- threading
def test_results_do_not_depend_on_the_thread_count(cpp):
    space = SPACES["mixed"]
    C, D = _inputs(space, 150, seed=38)
    args = _hyper(space, 39, Modulation())
    W = np.random.default_rng(40).standard_normal((150, 150))
    with ff.config_context(num_threads=1):
        K1 = cpp.fm_gram(C, D, None, None, *args)
        g1 = cpp.fm_grad_reduction(C, D, W, *args)
    with ff.config_context(num_threads=2):
        K2 = cpp.fm_gram(C, D, None, None, *args)
        g2 = cpp.fm_grad_reduction(C, D, W, *args)
    np.testing.assert_array_equal(K1, K2)
    for a, b in zip(g1, g2):  # partial sums are added tile by tile in a fixed order
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ errors
@pytest.fixture
def small_problem(cpp):
    space = SPACES["mixed"]
    C, D = _inputs(space, 6, seed=41)
    return space, C, D, _hyper(space, 42, Modulation())


def test_bad_states_raise_value_error_naming_the_argument(cpp, small_problem):
    space, C, D, args = small_problem
    bad = D.copy()
    bad[2, 1] = space.n_states[1]
    with pytest.raises(ValueError, match=r"D1\[2, 1\] = 3"):
        cpp.fm_gram(C, bad, None, None, *args)
    bad[2, 1] = -1
    with pytest.raises(ValueError, match=r"D2\[2, 1\] = -1"):
        cpp.fm_gram(C, D, C, bad, *args)
    with pytest.raises(ValueError, match="D1 must hold integer state indices"):
        cpp.fm_gram(C, D.astype(float), None, None, *args)
    with pytest.raises(ValueError, match=r"D must have shape \(6, 4\)"):
        cpp.fm_grad_reduction(C, D[:, :3], np.zeros((6, 6)), *args)


def test_bad_shapes_raise_value_error_naming_the_argument(cpp, small_problem):
    space, C, D, args = small_problem
    with pytest.raises(ValueError, match=r"C2 must have shape \(M, 2\), got \(6, 3\)"):
        cpp.fm_gram(C, D, np.zeros((6, 3)), D, *args)
    with pytest.raises(ValueError, match="C2 and D2 must both"):
        cpp.fm_gram(C, D, C, None, *args)
    with pytest.raises(ValueError, match=r"D1 must have shape \(5, 4\)"):
        cpp.fm_gram(C[:5], D, None, None, *args)
    with pytest.raises(ValueError, match=r"W must have shape \(6, 6\), got \(6, 5\)"):
        cpp.fm_grad_reduction(C, D, np.zeros((6, 5)), *args)
    with pytest.raises(ValueError, match=r"R must have shape \(6, 6\)"):
        cpp.fm_gram_from_argument(np.zeros((6, 7)), D, None, *args)
    spectra, alphas, betas, variance, modulation = args
    with pytest.raises(ValueError, match=r"alphas must have shape \(4,\)"):
        cpp.fm_gram(C, D, None, None, spectra, alphas[:2], betas, variance, modulation)
    with pytest.raises(ValueError, match=r"betas\[1\] = -1"):
        cpp.fm_gram(C, D, None, None, spectra, alphas, np.array([1.0, -1.0, 1.0, 1.0]), variance, modulation)


def test_bad_neighbours_raise_value_error_naming_the_argument(cpp, small_problem):
    space, C, D, args = small_problem
    ok = np.array([0], dtype=np.int64)
    with pytest.raises(ValueError, match=r"var_index\[0\] = 4"):
        cpp.fm_neighbour_gram(C[0], D[0], C, D, np.array([4]), ok, *args)
    with pytest.raises(ValueError, match=r"new_state\[0\] = 9"):
        cpp.fm_neighbour_gram(C[0], D[0], C, D, ok, np.array([9]), *args)
    with pytest.raises(ValueError, match=r"new_state must have shape \(1,\)"):
        cpp.fm_neighbour_gram(C[0], D[0], C, D, ok, np.array([0, 1]), *args)
    with pytest.raises(ValueError, match=r"c must have shape \(2,\)"):
        cpp.fm_neighbour_gram(C[0, :1], D[0], C, D, ok, ok, *args)
    with pytest.raises(ValueError, match=r"v\[0\] = 7"):
        cpp.fm_neighbour_gram(C[0], np.array([7, 0, 0, 0]), C, D, ok, ok, *args)


def test_bad_modulation_raises_value_error(cpp, small_problem):
    from fastfm import _cpp
    space, C, D, args = small_problem
    spectra, alphas, betas, variance, _ = args
    tables = cpp._tables(spectra)
    with pytest.raises(ValueError, match=r"coefficients\[1\] = -1"):
        _cpp.fm_gram(C, D, None, None, tables, alphas, betas, variance, LAP_FAMILY, np.array([1.0, -1.0]), 2.0)
    with pytest.raises(ValueError, match="exponent must lie in"):
        _cpp.fm_gram(C, D, None, None, tables, alphas, betas, variance, LAP_FAMILY, np.array([1.0]), 3.0)
    with pytest.raises(ValueError, match="modulation kind"):
        _cpp.fm_gram(C, D, None, None, tables, alphas, betas, variance, 7, np.array([1.0]), 2.0)


# ------------------------------------------------------- hierarchical kernel (SPEC §3)
def _hier_inputs(space, n, seed, base="matern52"):
    """Backend inputs of a Hierarchical kernel with random hyperparameters, via the kernel itself."""
    kernel = ff.kernels.Hierarchical(space, base=base, backend="numpy")
    rng = np.random.default_rng(seed)
    b = kernel.bounds
    kernel.theta = rng.uniform(b[:, 0] + 0.1 * (b[:, 1] - b[:, 0]), b[:, 1])
    X = space.sample_encoded(n, seed=seed)
    if n > 4:
        X[4] = X[1]                     # a repeated point: zero distance
    V, M = kernel._inputs(X)
    return V, M, kernel._args()


@pytest.mark.parametrize("base", ["rbf", "matern52"])
def test_hier_gram(cpp, any_space, base):
    V, M, args = _hier_inputs(any_space, 41, seed=21, base=base)
    V2, M2, _ = _hier_inputs(any_space, 150, seed=22, base=base)
    expected = numpy_backend.hier_gram(V, M, None, None, *args)
    actual = cpp.hier_gram(V, M, None, None, *args)
    assert_close(actual, expected)
    np.testing.assert_array_equal(actual, actual.T)
    assert_close(cpp.hier_gram(V, M, V2, M2, *args), numpy_backend.hier_gram(V, M, V2, M2, *args))


@pytest.mark.parametrize("base", ["rbf", "matern52"])
def test_hier_grad_reduction(cpp, any_space, base):
    V, M, args = _hier_inputs(any_space, 37, seed=23, base=base)
    rng = np.random.default_rng(24)
    W = rng.normal(size=(len(V), len(V)))
    W = W + W.T
    t, u, g_var = numpy_backend.hier_grad_reduction(V, M, W, *args)
    t_cpp, u_cpp, g_var_cpp = cpp.hier_grad_reduction(V, M, W, *args)
    # rounding bound of each sum: the same sums over |W|
    t_scale, u_scale, var_scale = numpy_backend.hier_grad_reduction(V, M, np.abs(W), *args)
    assert_close(t_cpp, t, scale=np.abs(t_scale), err_msg="t")
    assert_close(u_cpp, u, scale=np.abs(u_scale), err_msg="u")
    assert_close(g_var_cpp, g_var, scale=abs(var_scale), err_msg="g_variance")


def test_hier_results_do_not_depend_on_the_thread_count(cpp):
    space = SPACES["conditional"]
    V, M, args = _hier_inputs(space, 300, seed=25)
    W = np.ones((300, 300))
    from fastfm import _cpp
    one = _cpp.hier_grad_reduction(V, M, W, *args, num_threads=1)
    two = _cpp.hier_grad_reduction(V, M, W, *args, num_threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_cpp.hier_gram(V, M, None, None, *args, num_threads=1),
                                  _cpp.hier_gram(V, M, None, None, *args, num_threads=2))


def test_hier_bad_inputs_name_the_argument(cpp):
    V, M, args = _hier_inputs(SPACES["conditional"], 5, seed=26)
    with pytest.raises(ValueError, match="M1 must have the shape of V1"):
        cpp.hier_gram(V, M[:, :-1], None, None, *args)
    with pytest.raises(ValueError, match="omega must have shape"):
        cpp.hier_gram(V, M, None, None, args[0], args[1][:-1], *args[2:])
    with pytest.raises(ValueError, match="W must have shape"):
        cpp.hier_grad_reduction(V, M, np.ones((4, 4)), *args)
    with pytest.raises(ValueError, match="profile"):
        cpp.hier_gram(V, M, None, None, *args[:-1], 7)


def test_hierarchical_kernel_uses_the_cpp_backend(cpp, monkeypatch):
    """With backend="cpp" the kernel's Gram and reduction run in C++ (not the reference)."""
    calls = []
    for name in ("hier_gram", "hier_grad_reduction"):
        original = getattr(cpp, name)
        monkeypatch.setattr(cpp, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    space = SPACES["conditional"]
    kernel = ff.kernels.Hierarchical(space, backend="cpp")
    X = space.sample_encoded(20, seed=27)
    W = np.eye(20)
    np.testing.assert_allclose(kernel(X), ff.kernels.Hierarchical(space, backend="numpy")(X), rtol=1e-12)
    kernel.gradient_reduction(X, W)
    assert calls == ["hier_gram", "hier_grad_reduction"]


# ------------------------------------------------------ both vector lane counts
@pytest.fixture(params=["narrow", "wide"])
def forced_lanes(request, cpp):
    """The vector kernels with four-lane (AVX2) or eight-lane (AVX-512) vectors whatever the CPU, so that one
    machine tests the code both kinds run (the values are the same; only the speed differs)."""
    from fastfm import _cpp
    _cpp._override_vector_lanes(request.param)
    yield request.param
    _cpp._override_vector_lanes("cpu")


@pytest.mark.parametrize("space_name", ["func3c_like", "nominal_only", "many_mixed", "regression"])
def test_vector_kernels_match_the_reference_with_either_lane_count(cpp, forced_lanes, space_name):
    from fastfm.benchmarks.regression import regression_space
    space = regression_space() if space_name == "regression" else ALL_SPACES[space_name]
    C, D = _inputs(space, 203, seed=30)
    args = _hyper(space, 31, MODULATIONS["modlap"])
    K = numpy_backend.fm_gram(C, D, None, None, *args)
    assert_close(cpp.fm_gram(C, D, None, None, *args), K, err_msg=f"Gram, {forced_lanes} lanes")
    V = np.random.default_rng(32).standard_normal((203, 2))
    assert_close(cpp.fm_gram_matvec(C, D, None, None, V, *args), K @ V, scale=np.abs(K) @ np.abs(V),
                 err_msg=f"K·V, {forced_lanes} lanes")
    W = np.random.default_rng(33).standard_normal((203, 203))
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    actual = cpp.fm_grad_reduction(C, D, W, *args)
    assert_close(np.concatenate([actual[0], actual[1], actual[2], [actual[3]]]),
                 np.concatenate([expected[0], expected[1], expected[2], [expected[3]]]),
                 scale=_reduction_scales(C, D, W, args), err_msg=f"reduction, {forced_lanes} lanes")
