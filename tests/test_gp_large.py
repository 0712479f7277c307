"""Large-N GP regression (fastfm/gp/solvers, kernels/matvec.py, GaussianProcessRegressor(method=...)): small, fast.

* the matrix-free product K V: C++ against the blocked NumPy reference at 1e-12, both against dense K V;
* PCG solves and predictions against the exact Cholesky path;
* the stochastic-trace likelihood gradient against the exact one within its Monte-Carlo bound;
* the automatic choice of solver and the typed errors of bad options.
"""
import numpy as np
import pytest
from test_backend_parity import ALL_SPACES, MODULATIONS, _hyper, _inputs, assert_close, cpp, forced_lanes  # noqa: F401

import fastfm as ff
from fastfm import _parallel
from fastfm.gp import fitting
from fastfm.gp.solvers import _pcg, cg, preconditioner
from fastfm.gp.solvers.cholesky import ExactSolver
from fastfm.kernels import matvec
from fastfm._backends import numpy_backend
from fastfm.benchmarks.regression import make_mixed_regression, regression_space
from fastfm.exceptions import InvalidConfigError, InvalidValueError


# ----------------------------------------------------------------------------- matvec
@pytest.mark.parametrize("space_name", sorted(ALL_SPACES))
@pytest.mark.parametrize("modulation_name", ["modlap", "family_t1.3", "diffusion"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "cross"])
def test_matvec_cpp_matches_numpy_reference_and_dense(cpp, space_name, modulation_name, symmetric):  # noqa: F811
    space, modulation = ALL_SPACES[space_name], MODULATIONS[modulation_name]
    # 300 rows: several row tiles and column chunks, a ragged last chunk
    C1, D1 = _inputs(space, 300, seed=1)
    C2, D2 = (None, None) if symmetric else _inputs(space, 170, seed=2)
    hyper = _hyper(space, 3, modulation)
    V = np.random.default_rng(4).standard_normal((300 if symmetric else 170, 3))
    reference = numpy_backend.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    dense = numpy_backend.fm_gram(C1, D1, C2, D2, *hyper) @ V
    assert_close(reference, dense, scale=np.abs(numpy_backend.fm_gram(C1, D1, C2, D2, *hyper)) @ np.abs(V))
    fast = cpp.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    assert_close(fast, reference, scale=np.abs(numpy_backend.fm_gram(C1, D1, C2, D2, *hyper)) @ np.abs(V))


def test_matvec_cpp_checks_shapes(cpp):  # noqa: F811
    space = ALL_SPACES["mixed"]
    C, D = _inputs(space, 20, seed=0)
    with pytest.raises(ValueError, match="V must have shape"):
        cpp.fm_gram_matvec(C, D, None, None, np.ones((19, 2)), *_hyper(space, 0, MODULATIONS["modlap"]))


@pytest.mark.parametrize("space_name", ["mixed", "long_paths", "nominal_only"])
@pytest.mark.parametrize("modulation_name", ["modlap", "family_t1.3", "diffusion"])
def test_low_rank_reduction_cpp_matches_numpy_reference(cpp, space_name, modulation_name):  # noqa: F811
    space, modulation = ALL_SPACES[space_name], MODULATIONS[modulation_name]
    C, D = _inputs(space, 200, seed=1)
    hyper = _hyper(space, 3, modulation)
    rng = np.random.default_rng(4)
    U, Z = rng.standard_normal((200, 3)), rng.standard_normal((200, 3))
    reference = numpy_backend.fm_grad_reduction_low_rank(C, D, U, Z, *hyper)
    fast = cpp.fm_grad_reduction_low_rank(C, D, U, Z, *hyper)
    # the rounding bound: Σ |W| |∂K| ≤ Σ |W| · max|∂K| summed over parameters, max|∂K| ~ the dense reference's terms
    dense = numpy_backend.fm_grad_reduction(C, D, np.abs(U) @ np.abs(Z).T, *hyper)
    for got, want, bound in zip(fast, reference, dense):
        assert_close(got, want, scale=10 * np.abs(bound) + 1e-12)


def test_low_rank_gradient_reduction_matches_dense_weights():
    space = ALL_SPACES["mixed"]
    X = space.sample_encoded(90, seed=2)
    rng = np.random.default_rng(3)
    U, Z = rng.standard_normal((90, 2)), rng.standard_normal((90, 2))
    fm = ff.kernels.ModLap(space, lengthscale=0.4, lengthscale_bounds="fixed")  # a fixed block: the mask applies
    generic = fm + ff.kernels.ModLap(space)                                     # no fused path: dense fallback
    for kernel in (fm, generic):
        np.testing.assert_allclose(cg.low_rank_gradient_reduction(kernel, X, U, Z),
                                   kernel.gradient_reduction(X, U @ Z.T), rtol=1e-10, atol=1e-10)


def test_kernel_matvec_generic_fallback_matches_dense():
    # a kernel with no backend matvec (a Sum) goes through the blocked dense fallback
    space = ALL_SPACES["mixed"]
    kernel = ff.kernels.ModLap(space) + ff.kernels.ModLap(space, lengthscale=0.2)
    X = space.sample_encoded(60, seed=5)
    V = np.random.default_rng(6).standard_normal(60)
    np.testing.assert_allclose(matvec.kernel_matvec(kernel, X, V), kernel(X) @ V, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("space_name", sorted(name for name, space in ALL_SPACES.items() if space.n_discrete))
@pytest.mark.parametrize("base", ["modlap", "moddif"])
def test_additive_kernel_matvec_is_the_sum_of_its_components_products(space_name, base, monkeypatch):
    # AdditiveFM: each component's own on-the-fly product (its ordinal terms with their unit-diagonal weights),
    # summed; symmetric and cross, one and several right-hand sides, at hyperparameters away from the defaults
    monkeypatch.setattr(matvec, "_blocked_matvec", None)       # never the dense blocks
    space = ALL_SPACES[space_name]
    kernel = ff.kernels.AdditiveFM(space, base=base)
    kernel.theta = kernel.theta + np.random.default_rng(1).uniform(-0.7, 0.7, kernel.theta.shape)
    X, X_test = space.sample_encoded(70, seed=3), space.sample_encoded(25, seed=4)
    rng = np.random.default_rng(2)
    for V in (rng.standard_normal(70), rng.standard_normal((70, 3))):
        np.testing.assert_allclose(matvec.kernel_matvec(kernel, X, V), kernel(X) @ V, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(matvec.kernel_matvec(kernel, X_test, V, X), kernel(X_test, X) @ V,
                                   rtol=1e-11, atol=1e-11)


# ---------------------------------------------- single-precision K·V (csrc/include/fastfm/matvec_single.hpp)
# Spaces whose every factor has the rational form the single-precision product needs: complete graphs and
# paths of 2..8 states (2..4 of them with continuous inputs, one without).
RATIONAL_SPACES = {
    "rational_mixed": ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", -1.0, 1.0), ff.Real("z", 0.0, 2.0)]
                               + [ff.Categorical(f"c{n}", list(range(n))) for n in (2, 3, 4, 7)]
                               + [ff.Ordinal(f"o{n}", list(range(n))) for n in range(2, 9)]),
    "rational_discrete": ff.Space([ff.Categorical("c", list("abcde")), ff.Integer("i", 0, 4),
                                   ff.Ordinal("o", list(range(6)))]),
    "regression": regression_space(),
}


def _single_inputs(space, n, seed, spread=1.0):
    C, D = _inputs(space, n, seed=seed)
    return np.ascontiguousarray(C * spread), D


@pytest.mark.parametrize("space_name", sorted(RATIONAL_SPACES))
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "cross"])
def test_single_precision_matvec_matches_numpy_reference(cpp, forced_lanes, space_name, symmetric):  # noqa: F811
    space = RATIONAL_SPACES[space_name]
    # 301 rows: row tiles, column chunks, vector blocks and a ragged last block
    C1, D1 = _single_inputs(space, 301, seed=1)
    C2, D2 = (None, None) if symmetric else _single_inputs(space, 173, seed=2)
    hyper = _hyper(space, 3, MODULATIONS["modlap"], alpha_range=(0.05, 50.0), beta_range=(0.05, 100.0))
    V = np.random.default_rng(4).standard_normal((301 if symmetric else 173, 3))
    reference = numpy_backend.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    scale = np.abs(numpy_backend.fm_gram(C1, D1, C2, D2, *hyper)) @ np.abs(V)
    single = cpp.fm_gram_matvec_single(C1, D1, C2, D2, V, *hyper)
    assert single is not None and single.shape == reference.shape and single.dtype == np.float64
    error = np.abs(single - reference)
    assert np.all(error <= 1e-5 * scale), float(np.max(error / scale))
    assert np.max(error / scale) > 1e-12     # it did run in single precision (the double path agrees to 1e-15)


def test_single_precision_matvec_computes_distant_pairs_in_double(cpp, forced_lanes):  # noqa: F811
    # every row point is far from every column point at a large α: each column chunk holds some D̃_p beyond
    # the single-precision range, so every chunk is computed by the double path, as fm_gram_matvec does
    space = RATIONAL_SPACES["rational_mixed"]
    C1, D1 = _single_inputs(space, 150, seed=5, spread=1e5)
    C2, D2 = _single_inputs(space, 140, seed=6, spread=1e5)
    hyper = _hyper(space, 6, MODULATIONS["modlap"], alpha_range=(40.0, 50.0))
    V = np.random.default_rng(7).standard_normal((140, 2))
    single = cpp.fm_gram_matvec_single(C1, D1, C2, D2, V, *hyper)
    double = cpp.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    assert 0 < np.max(np.abs(double)) < np.finfo(np.float32).tiny    # no single-precision path could hold these
    if forced_lanes == "wide" and "running x86-64-v4" not in cpp.build_info()["simd"]:
        # forced eight-lane kernels on a CPU without AVX-512 run their baseline clone (SSE2, no FMA; dispatch.hpp)
        # and the double matvec the CPU's own (AVX2 + FMA): the same double-precision steps, rounded apart
        np.testing.assert_allclose(single, double, rtol=1e-12, atol=0)
    else:
        np.testing.assert_array_equal(single, double)


def _scaled_denominators(spectra, alphas, betas, C1, C2):
    """D̃_p(r_ab) = Den_p(r)/Den_p(0) = Π_g (1 + α_p r / (1 + β_p μ_g)) per pair and factor, shape (P, N, M)."""
    r = np.sum((C1[:, None, :] - C2[None, :, :]) ** 2, axis=-1)
    out = []
    for p in range(len(alphas)):
        mu = spectra.group_values[spectra.group_offsets[p]:spectra.group_offsets[p + 1]]
        out.append(np.prod(1.0 + alphas[p] * r[..., None] / (1.0 + betas[p] * mu), axis=-1))
    return np.array(out)


def test_single_precision_matvec_divides_factor_pairs_for_mid_range_pairs(cpp, forced_lanes):  # noqa: F811
    # Mid-range pairs: Π_p D̃_p beyond what one float division per block may hold (≈3e35), every D̃_p well
    # inside the pairwise bound (≈2e16): those chunks are divided pair by pair, still in single precision.
    space = RATIONAL_SPACES["rational_mixed"]
    C1, D1 = _single_inputs(space, 200, seed=8, spread=2.0)
    C2, D2 = _single_inputs(space, 150, seed=9, spread=2.0)
    hyper = _hyper(space, 10, MODULATIONS["modlap"], alpha_range=(1.0, 3.0), beta_range=(0.5, 2.0))
    den = _scaled_denominators(hyper[0], hyper[1], hyper[2], C1, C2)
    assert np.mean(np.prod(den, axis=0) > 1e36) > 0.5 and np.max(den) < 1e15     # the regime described above
    V = np.random.default_rng(11).standard_normal((150, 2))
    reference = numpy_backend.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    scale = np.abs(numpy_backend.fm_gram(C1, D1, C2, D2, *hyper)) @ np.abs(V)
    single = cpp.fm_gram_matvec_single(C1, D1, C2, D2, V, *hyper)
    error = np.abs(single - reference)
    assert np.all(error <= 1e-5 * scale), float(np.max(error / scale))
    assert np.max(error / scale) > 1e-12     # not the double path


@pytest.mark.parametrize("space_name, modulation_name", [
    ("rational_mixed", "diffusion"),        # not the single-term Laplace family
    ("rational_mixed", "single_term_t1"),   # r = d, not the squared distance
    ("rational_mixed", "family_t1.3"),
    ("normalized", "modlap"),               # a cycle graph: no rational form
    ("long_paths", "modlap"),               # paths of 12 and 21 states: tables wider than 8
])
def test_single_precision_matvec_is_none_without_a_rational_form(cpp, space_name, modulation_name):  # noqa: F811
    space = {**RATIONAL_SPACES, **ALL_SPACES}[space_name]
    C, D = _inputs(space, 20, seed=0)
    hyper = _hyper(space, 0, MODULATIONS[modulation_name])
    assert cpp.fm_gram_matvec_single(C, D, None, None, np.ones((20, 1)), *hyper) is None


def test_single_precision_matvec_restores_the_floating_point_mode(cpp):  # noqa: F811
    # the tile flushes float denormals to zero on its threads (FlushDenormals) and must restore the mode
    space = RATIONAL_SPACES["rational_mixed"]
    C, D = _inputs(space, 200, seed=0)
    hyper = _hyper(space, 0, MODULATIONS["modlap"])
    assert cpp.fm_gram_matvec_single(C, D, None, None, np.ones((200, 1)), *hyper) is not None
    tiny = np.float32(1e-38) / np.float32(16.0)    # a float32 denormal
    assert tiny > 0 and tiny * np.float32(2.0) > 0
    assert np.nextafter(0.0, 1.0) * 4 > 0          # double denormals too


def _solve(kernel, X, y, noise, **options):
    return cg.solve_system(kernel, X, noise, y[:, None], cg.check_cg_options(options))


def test_mixed_precision_pcg_agrees_with_double_and_is_certified_in_double():
    space, _, X, y, _, _ = _problem(600)
    kernel = ff.kernels.ModLap(space, lengthscale=3.0, alpha=0.1, beta=20.0)   # smooth: ill-conditioned
    noise = 1e-3
    exact = np.linalg.solve(kernel(X) + noise * np.eye(len(y)), y)
    # a weak preconditioner (rank 30, FITC diagonal): tens of iterations
    double, double_info, _ = _solve(kernel, X, y, noise, tol=1e-3, precision="double", rank=30, block_size=1)
    mixed, mixed_info, _ = _solve(kernel, X, y, noise, tol=1e-3, precision="mixed", rank=30, block_size=1)
    assert double_info.n_single_precision_iter == 0
    assert mixed_info.n_single_precision_iter == mixed_info.n_iter >= 10
    assert mixed_info.converged and mixed_info.residuals[0] <= 1e-3
    # the reported residual is the double-precision one
    residual = np.linalg.norm(y - (kernel(X) @ mixed[:, 0] + noise * mixed[:, 0])) / np.linalg.norm(y)
    np.testing.assert_allclose(mixed_info.residuals[0], residual, rtol=1e-6)
    # about the same number of iterations: the float32 mat-vec's OpenMP partial sums depend on how the threads
    # were scheduled, so on a loaded machine the count moves by a step or two (56 vs 54 seen once in ~55)
    assert abs(mixed_info.n_iter - double_info.n_iter) <= 3
    for solution in (double, mixed):
        assert np.linalg.norm(solution[:, 0] - exact) <= 0.05 * np.linalg.norm(exact)


def test_auto_precision_follows_the_tolerance_and_the_backend():
    _, kernel, X, y, _, _ = _problem(300)
    assert _solve(kernel, X, y, 1e-2, tol=1e-2)[1].n_single_precision_iter > 0
    assert _solve(kernel, X, y, 1e-2, tol=1e-6)[1].n_single_precision_iter == 0     # below 1e-4: double
    numpy_kernel = ff.kernels.ModLap(kernel.space, lengthscale=0.6, alpha=0.5, beta=0.5, backend="numpy")
    assert _solve(numpy_kernel, X, y, 1e-2, tol=1e-2, precision="mixed")[1].n_single_precision_iter == 0


@pytest.mark.parametrize("precision", ["auto", "double"])
def test_cg_predictive_mean_uses_the_precision_of_the_fit(precision):
    """A model whose PCG ran with single-precision kernel values predicts its mean with them too (to ~1e-5
    of Σ|K||α|, far inside PCG's tol); one fitted in double predicts in double."""
    _, kernel, X, y, X_test, _ = _problem(400)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=1e-2, method="cg",
                                     cg_options={"tol": 1e-2, "precision": precision}).fit(X, y)
    assert (gp.cg_info_.n_single_precision_iter > 0) == (precision == "auto")
    mean = gp.predict(X_test)
    mean_and_std = gp.predict(X_test, return_std=True)[0]
    double = gp.y_mean_ + gp.y_std_ * matvec.kernel_matvec(gp.kernel_, X_test, gp.alpha_, Y=X)
    np.testing.assert_array_equal(mean, mean_and_std)
    scale = gp.y_std_ * (np.abs(gp.kernel_(X_test, X)) @ np.abs(gp.alpha_))
    error = np.abs(mean - double)
    if precision == "double":
        np.testing.assert_array_equal(mean, double)
    else:
        assert np.all(error <= 1e-5 * scale), float(np.max(error / scale))
        assert np.max(error / scale) > 1e-12      # it did run in single precision


def test_mixed_precision_redoes_a_broken_down_single_solve_in_double(monkeypatch, caplog):
    # a single-precision operator that is not positive definite: PCG breaks down at once, the solve is
    # redone in double and reaches tol (no observation lost, no error)
    _, kernel, X, y, _, _ = _problem(300)
    monkeypatch.setattr(matvec, "_single_precision_product",
                        lambda kernel, X: (lambda V: -matvec.kernel_matvec(kernel, X, V)))
    with caplog.at_level("WARNING", logger="fastfm.gp.solvers.cg"):
        solution, info, _ = _solve(kernel, X, y, 1e-2, tol=1e-4, precision="mixed")
    assert "broke down" in caplog.text
    assert info.converged and info.n_single_precision_iter == 0
    exact = np.linalg.solve(kernel(X) + 1e-2 * np.eye(len(y)), y)
    assert np.linalg.norm(solution[:, 0] - exact) <= 1e-2 * np.linalg.norm(exact)


def test_mixed_precision_continues_in_double_where_the_single_solve_misses_tol(monkeypatch):
    # a single-precision product 3 % off: PCG converges to the wrong system, the double residual misses
    # tol, and double iterations must take the solve the rest of the way
    _, kernel, X, y, _, _ = _problem(300)
    noise = 1e-2
    monkeypatch.setattr(matvec, "_single_precision_product",
                        lambda kernel, X: (lambda V: 1.03 * matvec.kernel_matvec(kernel, X, V)))
    solution, info, _ = _solve(kernel, X, y, noise, tol=1e-4, precision="mixed")
    assert info.converged and info.residuals[0] <= 1e-4
    assert info.n_iter > info.n_single_precision_iter > 0
    exact = np.linalg.solve(kernel(X) + noise * np.eye(len(y)), y)
    assert np.linalg.norm(solution[:, 0] - exact) <= 1e-2 * np.linalg.norm(exact)


# ---------------------------------------------------------------- PCG and preconditioner
def _problem(n, seed=0):
    space, X, y, X_test, y_test = make_mixed_regression(n, 120, seed=seed)
    kernel = ff.kernels.ModLap(space, lengthscale=0.6, alpha=0.5, beta=0.5)
    return space, kernel, X, y, X_test, y_test


def test_full_rank_pivoted_cholesky_reconstructs_k_and_preconditioner_inverts():
    _, kernel, X, _, _, _ = _problem(80)
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X, max_rank=80, tol=0.0)
    K = kernel(X)
    np.testing.assert_allclose(L.T @ L, K, atol=1e-10 * np.max(K))
    np.testing.assert_allclose(residual, 0.0, atol=1e-10 * np.max(K))
    assert len(set(pivots.tolist())) == len(pivots)
    pre = preconditioner.PivotedCholeskyPreconditioner(L, pivots, 0.05)
    R = np.random.default_rng(0).standard_normal((80, 2))
    np.testing.assert_allclose(pre.solve(R), np.linalg.solve(L.T @ L + 0.05 * np.eye(80), R), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("batch", [(1, 1), (3, 8), None])
def test_blocked_pivoted_cholesky_takes_the_greedy_pivots(monkeypatch, batch):
    """Each pivot has the largest residual variance given the pivots before it (Harbrecht et al. 2012,
    Alg. 1), whatever the batch sizes: batches accept a candidate only when it is the greedy choice."""
    if batch is not None:
        monkeypatch.setattr(preconditioner, "_PIVOT_BATCH_MIN", batch[0])
        monkeypatch.setattr(preconditioner, "_PIVOT_BATCH_MAX", batch[1])
    _, kernel, X, _, _, _ = _problem(150, seed=3)
    K = kernel(X)
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X, max_rank=70)
    assert len(pivots) == 70 and len(set(pivots.tolist())) == 70
    d = np.diag(K).copy()
    for m, pivot in enumerate(pivots):
        assert d[pivot] >= np.max(d) - 1e-12 * np.max(K), f"pivot {m} is not the largest residual variance"
        d -= L[m] ** 2
    np.testing.assert_allclose(residual, np.diag(K - L.T @ L), atol=1e-10 * np.max(K))
    # L reproduces K on the pivots' rows: K(pivots, X) = L[:, pivots]ᵀ L
    np.testing.assert_allclose(L[:, pivots].T @ L, K[pivots], atol=1e-10 * np.max(K))


def test_pivoted_cholesky_takes_no_duplicate_of_a_pivot():
    """Repeated points have a residual variance at rounding level once their twin is a pivot:
    they must not become pivots (a division by ~1e-8), even with tol = 0."""
    _, kernel, X, _, _, _ = _problem(60, seed=5)
    X2 = np.vstack([X, X, X[:10]])
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X2, max_rank=130, tol=0.0)
    assert len(pivots) == 60
    assert len({X2[p].tobytes() for p in pivots}) == 60
    K = kernel(X2)
    np.testing.assert_allclose(L.T @ L, K, atol=1e-10 * np.max(K))
    assert np.max(np.abs(L)) <= np.sqrt(np.max(np.diag(K))) * (1 + 1e-12)


def test_pivoted_cholesky_stops_at_the_trace_tolerance():
    _, kernel, X, _, _, _ = _problem(120, seed=4)
    trace = float(np.trace(kernel(X)))
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X, max_rank=120, tol=0.05)
    assert np.sum(residual) <= 0.05 * trace
    before_last = residual + L[-1] ** 2
    assert np.sum(before_last) > 0.05 * trace    # one pivot fewer would not have met the tolerance
    # the factor holds its k rows only, not a view of the max_rank × N buffer
    assert len(pivots) < 120 and L.shape == (len(pivots), 120)
    assert L.base is None and L.nbytes == 8 * L.size


def test_low_rank_preconditioner_with_fitc_diagonal_inverts_and_keeps_the_diagonal():
    _, kernel, X, _, _, _ = _problem(80)
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X, max_rank=10)
    K = kernel(X)
    np.testing.assert_allclose(residual, np.diag(K - L.T @ L), rtol=1e-8, atol=1e-12)
    pre = preconditioner.PivotedCholeskyPreconditioner(L, pivots, 0.05, residual)
    P = L.T @ L + np.diag(residual + 0.05)
    np.testing.assert_allclose(np.diag(P), np.diag(K) + 0.05, rtol=1e-10)
    R = np.random.default_rng(0).standard_normal((80, 2))
    np.testing.assert_allclose(pre.solve(R), np.linalg.solve(P, R), rtol=1e-8, atol=1e-10)


def test_pcg_matches_direct_solve_per_column_and_warm_start_helps():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((120, 120))
    A = A @ A.T + 0.5 * np.eye(120)
    B = rng.standard_normal((120, 3))
    X, info = _pcg.pcg(lambda V: A @ V, B, lambda R: R / np.diag(A)[:, None], tol=1e-12, max_iter=500)
    assert info.converged
    np.testing.assert_allclose(X, np.linalg.solve(A, B), rtol=1e-8, atol=1e-9)
    warm = np.linalg.solve(A, B) + 1e-6 * rng.standard_normal(B.shape)
    _, warm_info = _pcg.pcg(lambda V: A @ V, B, lambda R: R / np.diag(A)[:, None], tol=1e-12, max_iter=500,
                                X0=warm)
    assert warm_info.converged and warm_info.n_iter < info.n_iter


@pytest.mark.parametrize("rank, block_size", [(0, 1), (40, 1), (0, 64), (40, 64)])
def test_cg_solution_matches_cholesky(rank, block_size):
    _, kernel, X, y, _, _ = _problem(400)
    noise = 0.01
    options = cg.check_cg_options({"tol": 1e-11, "rank": rank, "max_iter": 2000, "block_size": block_size})
    solution, info, _ = cg.solve_system(kernel, X, noise, y[:, None], options)
    exact = np.linalg.solve(kernel(X) + noise * np.eye(len(y)), y)
    assert info.converged
    np.testing.assert_allclose(solution[:, 0], exact, rtol=1e-7, atol=1e-8 * np.max(np.abs(exact)))


def test_preconditioner_reduces_iterations():
    # a smooth kernel (long lengthscales, strong graph smoothing: F_p ≈ constant across states) has a fast-decaying spectrum: K + noise·I is
    # ill-conditioned and a low-rank pivoted Cholesky captures the large eigenvalues
    space, _, X, y, _, _ = _problem(400)
    kernel = ff.kernels.ModLap(space, lengthscale=3.0, alpha=0.1, beta=20.0)
    counts = []
    for rank in (0, 100):
        options = cg.check_cg_options({"tol": 1e-8, "rank": rank, "max_iter": 2000, "block_size": 1})
        counts.append(cg.solve_system(kernel, X, 1e-3, y[:, None], options)[1].n_iter)
    assert counts[1] < 0.6 * counts[0], counts   # measured: 125 (Jacobi, rank 0) vs 64 (rank 100)


def test_cg_does_not_converge_raises_numerical_error():
    _, kernel, X, y, _, _ = _problem(200)
    options = cg.check_cg_options({"tol": 1e-12, "rank": 0, "max_iter": 2, "block_size": 1})
    with pytest.raises(ff.exceptions.NumericalError, match="max_iter=2"):
        cg.solve_system(kernel, X, 1e-4, y[:, None], options)


# ------------------------------------------------------------------- the regressor
def _regressors(kernel, noise, cg_options):
    exact = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=noise, method="cholesky")
    cg = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=noise, method="cg", cg_options=cg_options)
    return exact, cg


def test_cg_predictions_agree_with_cholesky():
    _, kernel, X, y, X_test, _ = _problem(350)
    exact, cg = _regressors(kernel, 0.02, {"tol": 1e-10, "rank": 50})
    exact.fit(X, y)
    cg.fit(X, y)
    assert exact.solver_ == "cholesky" and cg.solver_ == "cg" and cg.cg_info_.converged
    mean_exact, std_exact = exact.predict(X_test, return_std=True)
    mean_cg, std_cg = cg.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean_cg, mean_exact, rtol=1e-6, atol=1e-7 * np.std(y))
    np.testing.assert_allclose(cg.predict(X_test), mean_cg, rtol=1e-12, atol=1e-12)
    # the mean-only path of the exact solver is the same product
    np.testing.assert_allclose(exact.predict(X_test), mean_exact, rtol=1e-10, atol=1e-10 * np.std(y))
    # DTC variance: never below the exact variance (it drops only part of the data's information)
    assert np.all(std_cg >= std_exact - 1e-8)


def test_cg_std_is_exact_with_a_full_rank_preconditioner():
    # pivots = every training point: the DTC approximation is then the exact GP (Nyström of K is K)
    _, kernel, X, y, X_test, _ = _problem(150)
    exact, cg = _regressors(kernel, 0.02, {"tol": 1e-10, "rank": 150})
    _, std_exact = exact.fit(X, y).predict(X_test, return_std=True)
    _, std_cg = cg.fit(X, y).predict(X_test, return_std=True)
    np.testing.assert_allclose(std_cg, std_exact, rtol=1e-5, atol=1e-7)


def test_auto_selects_cholesky_up_to_max_exact_n_then_cg():
    _, kernel, X, y, X_test, _ = _problem(160)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02, max_exact_n=160).fit(X, y)
    assert gp.solver_ == "cholesky" and "solver_='cholesky'" in repr(gp)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02, max_exact_n=159).fit(X, y)
    assert gp.solver_ == "cg" and "solver_='cg'" in repr(gp) and gp.cg_info_.converged


@pytest.mark.parametrize("available, expected", [
    (8e9, 15811),          # sqrt(0.75 · 8e9 / (3 · 8)): three N × N float64 arrays in 75% of 8 GB
    (1e12, 20000),         # plenty: the time cap
    (None, 20000),         # the system does not say
    (3 * 8 * 159 ** 2 / 0.75 + 1.0, 159),
])
def test_auto_max_exact_n_follows_the_available_memory(monkeypatch, available, expected):
    monkeypatch.setattr(_parallel, "available_memory", lambda: available)
    _, kernel, X, y, _, _ = _problem(160)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02).fit(X, y)
    assert gp.max_exact_n_ == expected
    assert gp.solver_ == ("cg" if expected < 160 else "cholesky")
    # an explicit limit is taken as it is
    fixed = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02, max_exact_n=1000).fit(X, y)
    assert fixed.max_exact_n_ == 1000 and fixed.solver_ == "cholesky"


def test_exact_fit_out_of_memory_falls_back_to_cg_under_auto(monkeypatch):
    _, kernel, X, y, _, _ = _problem(120)

    def out_of_memory(*args, **kwargs):
        raise MemoryError("no room for N × N")

    monkeypatch.setattr(ExactSolver, "fit", out_of_memory)   # the final N × N factorisation
    with pytest.warns(RuntimeWarning, match="ran out of memory; fitting with the matrix-free solver") as record:
        gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02).fit(X, y)
    assert record[0].filename == __file__      # the line that called fit
    assert gp.solver_ == "cg" and gp.cg_info_.converged
    with pytest.raises(MemoryError):   # asked for the exact solver: no silent change of method
        ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02, method="cholesky").fit(X, y)


def test_parallel_starts_are_limited_by_memory(monkeypatch):
    """Each start running on all points holds an N × N array: no more run at once than memory holds."""
    _, kernel, X, y, _, _ = _problem(100)
    seen = []
    real_thread_map = fitting.thread_map

    def recording_thread_map(n_items, parallel=True, max_workers=None):
        seen.append(max_workers)
        return real_thread_map(n_items, parallel, max_workers)

    monkeypatch.setattr(fitting, "thread_map", recording_thread_map)
    array = 8.0 * 100 * 100
    monkeypatch.setattr(_parallel, "available_memory", lambda: 4 * array / 0.75)
    ff.GaussianProcessRegressor(kernel, n_restarts=3, random_state=0, noise=0.02).fit(X, y)
    assert seen == [2, 2]       # 4 arrays' room, 2 kept for the factors: 2 starts at a time (then the noise restart)
    monkeypatch.setattr(_parallel, "available_memory", lambda: array)
    ff.GaussianProcessRegressor(kernel, n_restarts=3, random_state=0, noise=0.02).fit(X, y)
    assert seen[-1] == 1


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_available_memory_reads_meminfo_and_the_cgroup_limit(monkeypatch, tmp_path):
    meminfo = _write(tmp_path / "meminfo", "MemTotal:  32000000 kB\nMemAvailable:  16000000 kB\n")
    monkeypatch.setattr(_parallel, "_MEMINFO", meminfo)
    missing = str(tmp_path / "missing")
    monkeypatch.setattr(_parallel, "_CGROUP_MEMORY_FILES", ((missing, missing, missing),))
    assert _parallel.available_memory() == 16000000 * 1024
    # cgroup v2: room under the limit, the inactive page cache counted as free
    limit = _write(tmp_path / "memory.max", "4000000000\n")
    usage = _write(tmp_path / "memory.current", "3000000000\n")
    stat = _write(tmp_path / "memory.stat", "anon 2000000000\ninactive_file 500000000\n")
    monkeypatch.setattr(_parallel, "_CGROUP_MEMORY_FILES", ((missing, missing, missing), (limit, usage, stat)))
    assert _parallel.available_memory() == 4000000000 - (3000000000 - 500000000)
    # no limit ("max" in v2, a huge number in v1): the machine's figure
    _write(tmp_path / "memory.max", "max\n")
    assert _parallel.available_memory() == 16000000 * 1024
    _write(tmp_path / "memory.max", str(1 << 62))
    assert _parallel.available_memory() == 16000000 * 1024
    # a limit below the machine's room wins even without a stat file
    _write(tmp_path / "memory.max", "3500000000")
    monkeypatch.setattr(_parallel, "_CGROUP_MEMORY_FILES", ((limit, usage, missing),))
    assert _parallel.available_memory() == 500000000


def test_cg_fits_hyperparameters_on_the_subset():
    _, kernel, X, y, _, _ = _problem(200)
    common = dict(n_restarts=0, random_state=3, noise=0.01)
    gp = ff.GaussianProcessRegressor(kernel, method="cg", hyperparameter_subset=60, **common).fit(X, y)
    # the same subset (same seed), fitted exactly on the standardised targets
    subset = np.sort(np.random.default_rng(3).choice(200, size=60, replace=False))
    sub = ff.GaussianProcessRegressor(kernel, method="cholesky", normalize_y=False, **common)
    sub.fit(X[subset], gp.y_train_[subset])
    np.testing.assert_allclose(gp.kernel_.theta, sub.kernel_.theta, rtol=1e-10, atol=1e-10)
    assert gp.noise_ == pytest.approx(sub.noise_, rel=1e-10)
    assert gp.log_marginal_likelihood_value_ == pytest.approx(sub.log_marginal_likelihood_value_, rel=1e-10)
    assert gp.hyperparameter_subset_ == 60


def test_exact_fit_on_a_subset_then_refines_on_all_points(monkeypatch):
    """Subset, then refine: the starts on a seeded subset, then one L-BFGS-B run on all N from their best."""
    monkeypatch.setattr(fitting, "_REFINE_OPTIONS", fitting._LBFGSB_OPTIONS)   # the hand-made half is uncapped
    _, kernel, X, y, _, _ = _problem(160)
    common = dict(n_restarts=1, random_state=5, noise=0.01)
    gp = ff.GaussianProcessRegressor(kernel, method="cholesky", hyperparameter_subset=50, **common).fit(X, y)
    assert gp.solver_ == "cholesky" and gp.hyperparameter_subset_ == 50
    # the first half by hand: the same subset, the same starts, on the standardised targets
    subset = np.sort(np.random.default_rng(5).choice(160, size=50, replace=False))
    tuned = ff.GaussianProcessRegressor(kernel, method="cholesky", normalize_y=False, hyperparameter_subset=None,
                                        **common).fit(X[subset], gp.y_train_[subset])
    # the second half: the same model on all points from the subset optimum, no further starts
    refined = ff.GaussianProcessRegressor(tuned.kernel_, method="cholesky", normalize_y=False, n_restarts=0,
                                          noise=tuned.noise_, hyperparameter_subset=None,
                                          noise_restarts=0).fit(X, gp.y_train_)
    np.testing.assert_allclose(gp.kernel_.theta, refined.kernel_.theta, rtol=1e-10, atol=1e-10)
    assert gp.noise_ == pytest.approx(refined.noise_, rel=1e-10)
    # log_marginal_likelihood_value_ is on all N, and the refinement did not lose to the subset optimum there
    assert gp.log_marginal_likelihood_value_ == pytest.approx(refined.log_marginal_likelihood_value_, rel=1e-10)
    at_subset_optimum = ff.GaussianProcessRegressor(tuned.kernel_, optimizer=None, normalize_y=False,
                                                    noise=tuned.noise_).fit(X, gp.y_train_)
    assert gp.log_marginal_likelihood_value_ > at_subset_optimum.log_marginal_likelihood_value_ + 1e-6


def test_the_refinement_on_all_points_is_capped(monkeypatch):
    calls = []
    minimize = fitting.minimize

    def recording(objective, x0, **kwargs):
        calls.append(kwargs["options"]["maxiter"])
        return minimize(objective, x0, **kwargs)
    monkeypatch.setattr(fitting, "minimize", recording)
    _, kernel, X, y, _, _ = _problem(120)
    ff.GaussianProcessRegressor(kernel, n_restarts=2, random_state=0, noise=0.01, hyperparameter_subset=40).fit(X, y)
    # three starts and the noise restart on the subset with the plain options, then the one refinement on all
    # points, capped
    assert calls == [fitting._LBFGSB_OPTIONS["maxiter"]] * 4 + [fitting._REFINE_OPTIONS["maxiter"]]
    assert fitting._REFINE_OPTIONS["maxiter"] < fitting._LBFGSB_OPTIONS["maxiter"]


def test_auto_hyperparameter_subset_applies_above_its_threshold(monkeypatch):
    monkeypatch.setattr(fitting, "_AUTO_SUBSET", 40)
    monkeypatch.setattr(fitting, "_AUTO_SUBSET_MIN_N", 80)
    _, kernel, X, y, _, _ = _problem(120)
    common = dict(n_restarts=0, random_state=0, noise=0.01)
    assert ff.GaussianProcessRegressor(kernel, **common).fit(X[:80], y[:80]).hyperparameter_subset_ == 80
    assert ff.GaussianProcessRegressor(kernel, **common).fit(X, y).hyperparameter_subset_ == 40
    assert ff.GaussianProcessRegressor(kernel, hyperparameter_subset=None, **common).fit(X, y).hyperparameter_subset_ == 120
    # the matrix-free solver always fits on the subset; without an optimizer nothing is fitted on one
    assert ff.GaussianProcessRegressor(kernel, method="cg", **common).fit(X[:60], y[:60]).hyperparameter_subset_ == 40
    assert ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.01).fit(X, y).hyperparameter_subset_ == 0
    # a subset at least N is all points
    assert ff.GaussianProcessRegressor(kernel, hyperparameter_subset=500, **common).fit(X, y).hyperparameter_subset_ == 120


def test_exact_only_methods_raise_after_a_cg_fit():
    _, kernel, X, y, X_test, _ = _problem(100)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.02, method="cg").fit(X, y)
    with pytest.raises(InvalidConfigError, match="method='cholesky'"):
        gp.predict(X_test, return_cov=True)
    with pytest.raises(InvalidConfigError, match="method='cholesky'"):
        gp.predict_standardized_with_input_gradient(X_test)


@pytest.mark.parametrize("params, name", [
    ({"method": "lu"}, "method"),
    ({"max_exact_n": 0}, "max_exact_n"),
    ({"max_exact_n": "all"}, "max_exact_n"),
    ({"max_exact_n": 1.5e4}, "max_exact_n"),
    ({"cg_options": {"tolerance": 1e-3}}, "cg_options['tolerance']"),
    ({"cg_options": {"tol": 2.0}}, "cg_options['tol']"),
    ({"cg_options": {"rank": -1}}, "cg_options['rank']"),
    ({"cg_options": {"subset": 100}}, "cg_options['subset']"),
    ({"cg_options": {"precision": "half"}}, "cg_options['precision']"),
    ({"cg_options": {"precision": 32}}, "cg_options['precision']"),
    ({"hyperparameter_subset": 0}, "hyperparameter_subset"),
    ({"hyperparameter_subset": 2.5}, "hyperparameter_subset"),
    ({"hyperparameter_subset": True}, "hyperparameter_subset"),
    ({"hyperparameter_subset": "all"}, "hyperparameter_subset"),
])
def test_bad_solver_options_name_the_parameter(params, name):
    _, kernel, X, y, _, _ = _problem(30)
    with pytest.raises(InvalidConfigError) as excinfo:
        ff.GaussianProcessRegressor(kernel, optimizer=None, **params).fit(X, y)
    assert excinfo.value.parameter == name


def test_default_rank_grows_with_n_within_its_bounds_and_memory():
    assert preconditioner.default_rank(100) == 100                  # never more pivots than points
    assert preconditioner.default_rank(2000) == 300                 # floor
    assert preconditioner.default_rank(20_000) == 2000              # N / 10
    assert preconditioner.default_rank(50_000) == 4000              # cap
    assert preconditioner.default_rank(500_000) == 500              # two k × N factors stay within memory
    assert cg.check_cg_options(None)["rank"] is None
    assert cg.check_cg_options({"rank": None})["rank"] is None


def test_default_block_size_is_4000_within_memory():
    assert preconditioner.default_block_size(100) == 4000            # more than N: one block, the exact residual
    assert preconditioner.default_block_size(50_000) == 4000
    assert preconditioner.default_block_size(100_000) == 2000        # N × block ≤ 2e8 entries
    assert preconditioner.default_block_size(1_000_000) == 1000      # floor
    assert cg.check_cg_options(None)["block_size"] is None
    with pytest.raises(InvalidConfigError, match="block_size.*integer >= 1 or None"):
        cg.check_cg_options({"block_size": 0})


def test_cg_fit_uses_the_default_block_size(monkeypatch):
    """block_size=None builds the PITC blocks of default_block_size(N) points."""
    monkeypatch.setattr(preconditioner, "_DEFAULT_BLOCK_BOUNDS", (16, 40))
    _, kernel, X, y, _, _ = _problem(120, seed=4)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=1e-2, method="cg").fit(X, y)
    assert preconditioner.default_block_size(120) == 40
    assert max(len(b) for b in gp._preconditioner.blocks) == 40
    assert sorted(np.concatenate(gp._preconditioner.blocks).tolist()) == list(range(120))


def test_cg_fit_uses_the_default_rank(monkeypatch):
    monkeypatch.setattr(preconditioner, "_DEFAULT_RANK_BOUNDS", (7, 9))
    _, kernel, X, y, _, _ = _problem(120)
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.05, method="cg").fit(X, y)
    assert gp._preconditioner.rank == preconditioner.default_rank(120) == 9   # N / 10 = 12, capped at 9
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=0.05, method="cg",
                                     cg_options={"rank": 5}).fit(X, y)
    assert gp._preconditioner.rank == 5


# --------------------------------------------------------- stochastic-trace gradient
def test_stochastic_lml_gradient_matches_exact_within_monte_carlo_bound():
    _, kernel, X, y, _, _ = _problem(250)
    noise, n_probes = 0.02, 32
    gp = ff.GaussianProcessRegressor(kernel, optimizer=None, noise=noise, normalize_y=False).fit(X, y)
    _, exact = gp.log_marginal_likelihood(gp._fitted_theta, eval_gradient=True)
    options = cg.check_cg_options({"tol": 1e-11, "rank": 60, "n_probes": n_probes})
    estimate, _, _ = cg.stochastic_lml_gradient(kernel, X, y, noise, options, np.random.default_rng(7))
    # Hutchinson with Rademacher probes: Var[zᵀAz] = 2 Σ_{a≠b} A_ab² for symmetric A = sym(K⁻¹ ∂K_j);
    # the gradient's error is ½ (trace error), so its std is ½ sqrt(2 Σ_{a≠b} A_ab² / S).
    K, dK = kernel(X, eval_gradient=True)
    K_inv = np.linalg.inv(K + noise * np.eye(len(y)))
    derivatives = [dK[:, :, j] for j in range(dK.shape[2])] + [noise * np.eye(len(y))]
    for j, dK_j in enumerate(derivatives):
        A = K_inv @ dK_j
        A = 0.5 * (A + A.T)
        off = np.sum(A * A) - np.sum(np.diag(A) ** 2)
        std = 0.5 * np.sqrt(2.0 * off / n_probes)
        assert abs(estimate[j] - exact[j]) <= 5.0 * std + 1e-6 * (1.0 + abs(exact[j])), (j, estimate[j], exact[j], std)


# ----------------------------------------------------------------------- the data set
def test_regression_set_is_seeded_and_valid():
    a = make_mixed_regression(50, 20, seed=4)
    b = make_mixed_regression(50, 20, seed=4)
    c = make_mixed_regression(50, 20, seed=5)
    for x, z in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x, z)
    assert not np.array_equal(a[2], c[2])
    space = regression_space()
    space.validate_encoded(a[1])
    assert (space.n_continuous, space.n_discrete) == (5, 10) and a[1].shape == (50, 15) and a[3].shape == (20, 15)
    with pytest.raises(InvalidValueError, match="n_train"):
        make_mixed_regression(0, 5)


def test_pivot_blocks_partition_the_points_and_group_them_with_a_pivot():
    _, kernel, X, _, _, _ = _problem(300)
    L, pivots, _ = preconditioner.pivoted_cholesky(kernel, X, max_rank=12)
    blocks = preconditioner.pivot_blocks(L, pivots, 40)
    together = np.concatenate(blocks)
    assert sorted(together.tolist()) == list(range(300))
    assert max(len(b) for b in blocks) == 40
    # the blocks follow the order of the most correlated pivot (owner): no block's owners precede the
    # previous block's; within a block the indices ascend (the preconditioner's gathers stream)
    owner = np.argmax(kernel(X[pivots], X), axis=0)
    owners = [owner[b] for b in blocks]
    assert all(first.max() <= second.min() for first, second in zip(owners, owners[1:]))
    assert all(np.all(np.diff(b) > 0) for b in blocks)
    # the covariances from the kernel (what with_blocks uses) give the same blocks as those from L
    from_kernel = preconditioner.pivot_blocks(L, pivots, 40, kernel, X)
    assert [b.tolist() for b in from_kernel] == [b.tolist() for b in blocks]


def test_pitc_preconditioner_inverts_and_matches_k_on_its_blocks():
    _, kernel, X, _, _, _ = _problem(120)
    L, pivots, _ = preconditioner.pivoted_cholesky(kernel, X, max_rank=8)
    pre = preconditioner.PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, 0.05, 30)
    K = kernel(X)
    P = L.T @ L + 0.05 * np.eye(120)
    for b in pre.blocks:
        P[np.ix_(b, b)] = K[np.ix_(b, b)] + 0.05 * np.eye(len(b))
    R = np.random.default_rng(1).standard_normal((120, 3))
    np.testing.assert_allclose(pre.solve(R), np.linalg.solve(P, R), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("rank", [0, 8])
def test_pitc_preconditioner_from_given_residuals_matches_the_fused_construction(rank):
    """with_blocks evaluates and factors each block's residual in place; residual matrices given by the
    caller give the same P⁻¹ and are left as they were."""
    _, kernel, X, _, _, _ = _problem(130)
    L, pivots, _ = preconditioner.pivoted_cholesky(kernel, X, max_rank=max(rank, 1))
    L, pivots = L[:rank], pivots[:rank]
    fused = preconditioner.PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, 0.05, 40)
    K = kernel(X)
    given = [K[np.ix_(b, b)] - L[:, b].T @ L[:, b] for b in fused.blocks]
    copies = [S.copy() for S in given]
    from_given = preconditioner.PivotedCholeskyPreconditioner(L, pivots, 0.05, blocks=fused.blocks, block_residuals=given)
    for S, copy in zip(given, copies):
        np.testing.assert_array_equal(S, copy)
    R = np.random.default_rng(2).standard_normal((130, 2))
    P = L.T @ L + 0.05 * np.eye(130)
    for b in fused.blocks:
        P[np.ix_(b, b)] = K[np.ix_(b, b)] + 0.05 * np.eye(len(b))
    expected = np.linalg.solve(P, R)
    np.testing.assert_allclose(fused.solve(R), expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(from_given.solve(R), expected, rtol=1e-8, atol=1e-10)


def test_pitc_preconditioner_needs_residuals_or_the_kernel():
    _, kernel, X, _, _, _ = _problem(60)
    L, pivots, _ = preconditioner.pivoted_cholesky(kernel, X, max_rank=5)
    blocks = [np.arange(0, 30), np.arange(30, 60)]
    with pytest.raises(ValueError, match="block_residuals"):
        preconditioner.PivotedCholeskyPreconditioner(L, pivots, 0.05, blocks=blocks)
    with pytest.raises(ValueError, match="block_residuals"):
        preconditioner.PivotedCholeskyPreconditioner(L, pivots, 0.05, blocks=blocks,
                                               block_residuals=[np.eye(30)])


def test_pitc_blocks_take_fewer_pcg_iterations_than_the_fitc_diagonal():
    # hyperparameters like those fitted on the regression set (short lengthscales in three continuous
    # dims, most discrete variables switched off by a large β, tiny noise): a slowly decaying spectrum
    space, _, X, y, _, _ = _problem(600)
    kernel = ff.kernels.ModLap(space, lengthscale=[11.4, 1.05, 0.47, 0.44, 0.44],
                               alpha=[1e-4] * 6 + [0.41, 0.39, 1e-4, 1e-3], beta=[100, 41, 6, 5, 5] + [100] * 5)
    noise = 1e-4
    L, pivots, residual = preconditioner.pivoted_cholesky(kernel, X, max_rank=30)
    fitc = preconditioner.PivotedCholeskyPreconditioner(L, pivots, noise, residual)
    pitc = preconditioner.PivotedCholeskyPreconditioner.with_blocks(kernel, X, L, pivots, noise, 150)
    K = kernel(X)

    def apply_A(V):
        return K @ V + noise * V

    b = (y - y.mean())[:, None]
    x_fitc, info_fitc = _pcg.pcg(apply_A, b, fitc.solve, 1e-8, 1000)
    x_pitc, info_pitc = _pcg.pcg(apply_A, b, pitc.solve, 1e-8, 1000)
    assert info_fitc.converged and info_pitc.converged
    np.testing.assert_allclose(x_pitc, x_fitc, rtol=1e-5, atol=1e-5 * np.max(np.abs(x_fitc)))
    assert info_pitc.n_iter < 0.95 * info_fitc.n_iter, (info_pitc.n_iter, info_fitc.n_iter)
