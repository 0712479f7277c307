"""Set kernels (SPEC §4): definition, invariances, PSD, gradients, the approximation K̂, and the
C++ backend against the NumPy reference."""
import numpy as np
import pytest
from kernels.test_kernel_contract import _finite_difference_of_weighted_sum
from test_backend_parity import assert_close

import fastfm as ff
from fastfm._backends import numpy_backend
from fastfm.kernels import MMDSetKernel, SetKernel, set_space_kernel
from fastfm.kernels.sets import draw_subsample, subsample_sets

BACKENDS = ["numpy", "cpp"]
NUS = [0.5, 1.5, 2.5]


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "cpp":
        pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")
    return request.param


@pytest.fixture
def cpp():
    pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")
    from fastfm._backends import cpp as cpp_backend
    return cpp_backend


def random_sets(rng, n_sets, n_points, dim, duplicate=True):
    X = rng.random((n_sets, n_points, dim))
    if duplicate and n_sets > 2:
        X[2] = X[0][rng.permutation(n_points)]        # the same set in another order
    return X


def definition(X, Y, lengthscale, nu, variance=1.0):
    """K_set straight from SPEC §4, one pair at a time."""
    K = np.empty((len(X), len(Y)))
    for a, A in enumerate(X):
        for b, B in enumerate(Y):
            r = np.sqrt(np.sum(((A[:, None, :] - B[None, :, :]) / lengthscale) ** 2, axis=2))
            if nu == 0.5:
                k = np.exp(-r)
            elif nu == 1.5:
                k = (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
            else:
                k = (1 + np.sqrt(5) * r + 5 * r * r / 3) * np.exp(-np.sqrt(5) * r)
            K[a, b] = variance * k.mean()
    return K


# ---------------------------------------------------------------------------- exact kernel
@pytest.mark.parametrize("nu", NUS)
def test_gram_matches_definition(backend, nu, rng):
    X, Y = random_sets(rng, 6, 5, 2), rng.random((4, 7, 2))
    kernel = SetKernel(lengthscale=[0.3, 0.7], nu=nu, variance=1.3, backend=backend)
    np.testing.assert_allclose(kernel(X), definition(X, X, [0.3, 0.7], nu, 1.3), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kernel(X, Y), definition(X, Y, [0.3, 0.7], nu, 1.3), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12)


@pytest.mark.parametrize("n_subsample", [None, 4])
def test_permutation_invariance(backend, n_subsample, rng):
    X, Y = random_sets(rng, 8, 9, 3), rng.random((5, 9, 3))
    kernel = SetKernel(lengthscale=0.4, n_subsample=n_subsample, seed=3, backend=backend)
    shuffled = np.stack([x[rng.permutation(9)] for x in X])
    np.testing.assert_allclose(kernel(shuffled), kernel(X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kernel(shuffled, Y), kernel(X, Y), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(kernel(X)[0], kernel(X)[2], rtol=1e-12)      # X[2] is X[0] reordered


@pytest.mark.parametrize("n_subsample", [None, 3])
@pytest.mark.parametrize("nu", NUS)
def test_gram_is_symmetric_and_psd(backend, nu, n_subsample, rng):
    X = random_sets(rng, 80, 8, 2)
    K = SetKernel(lengthscale=0.3, nu=nu, n_subsample=n_subsample, seed=5, backend=backend)(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)


def test_subsample_with_all_points_is_exact(backend, rng):
    X, Y = random_sets(rng, 10, 6, 2), rng.random((3, 6, 2))
    exact = SetKernel(lengthscale=0.5, backend=backend)
    for L in (6, 9):
        approx = SetKernel(lengthscale=0.5, n_subsample=L, seed=11, backend=backend)
        np.testing.assert_array_equal(approx(X), exact(X))
        np.testing.assert_array_equal(approx(X, Y), exact(X, Y))


def test_subsample_is_fixed_by_seed_and_redrawn_by_a_new_one(rng):
    X = rng.random((12, 10, 2))
    kernel = SetKernel(lengthscale=0.3, n_subsample=3, seed=1, backend="numpy")
    np.testing.assert_array_equal(kernel(X), kernel(X))
    np.testing.assert_array_equal(kernel(X), SetKernel(lengthscale=0.3, n_subsample=3, seed=1, backend="numpy")(X))
    assert not np.allclose(kernel.clone_with_seed(2)(X), kernel(X))
    # the same positions and projection for every set of the Gram, and for a cross-Gram
    subsets, indices = subsample_sets(X, 3, seed=1)
    w, positions = draw_subsample(1, 10, 2, 3)
    order = np.argsort(X @ w, axis=1, kind="stable")
    np.testing.assert_array_equal(indices, order[:, positions])
    np.testing.assert_allclose(kernel(X[:4], X[4:]), kernel(X)[:4, 4:], rtol=1e-13)


def _pi_expectation(X, Y, lengthscale, L, seed):
    """E_π[K̂(X, Y) | w] in closed form: K_set + (1/L − 1/m)(D − O) with D the mean of k over
    sorted-position-matched pairs and O over the others (module docstring of fastfm.kernels.sets)."""
    m, d = X.shape
    w, _ = draw_subsample(seed, m, d, L)
    Xs, Ys = X[np.argsort(X @ w, kind="stable")], Y[np.argsort(Y @ w, kind="stable")]
    k = numpy_backend.matern_profile(np.sum(((Xs[:, None] - Ys[None, :]) / lengthscale) ** 2, axis=2))[0]
    D = np.mean(np.diag(k))
    O = (k.sum() - np.trace(k)) / (m * (m - 1))
    return k.mean() + (1.0 / L - 1.0 / m) * (D - O)


def test_subsample_mean_over_seeds_matches_its_expectation(rng):
    """Monte Carlo over seeds: the mean of K̂ − E_π[K̂ | w] is 0 within 4 standard errors.  This is the
    exact statement; SPEC §4 / Theorem 1 claim E[K̂] = K_set, which the bias term contradicts."""
    m, L, n_seeds = 8, 3, 3000
    X = rng.random((2, m, 2))
    lengthscale = 0.4
    exact = definition(X, X, lengthscale, 2.5)
    residuals, biases, diag = [], [], []
    for seed in range(n_seeds):
        K_hat = SetKernel(lengthscale=lengthscale, n_subsample=L, seed=seed, backend="numpy")(X)
        expectation = _pi_expectation(X[0], X[1], lengthscale, L, seed)
        residuals.append(K_hat[0, 1] - expectation)
        biases.append(expectation - exact[0, 1])
        diag.append(K_hat[0, 0])
    residuals = np.array(residuals)
    assert abs(residuals.mean()) <= 4 * residuals.std(ddof=1) / np.sqrt(n_seeds)
    # the diagonal bias is certain: k(x, x) = 1 enters with weight 1/L instead of 1/m
    diag = np.array(diag)
    assert diag.mean() - exact[0, 0] > 8 * diag.std(ddof=1) / np.sqrt(n_seeds)


def test_subsample_variance_decreases_with_the_subset_size(rng):
    m, n_seeds = 12, 400
    X = rng.random((6, m, 2))
    variances = []
    for L in (2, 4, 8, 12):
        samples = np.array([SetKernel(lengthscale=0.4, n_subsample=L, seed=s, backend="numpy")(X)
                            for s in range(n_seeds)])
        variances.append(samples.var(axis=0)[np.triu_indices(6, 1)].mean())
        spread = np.ptp(samples, axis=0).max()
    assert all(a > b for a, b in zip(variances, variances[1:])), variances
    assert spread == 0.0                                 # L = m: every seed gives K_set


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("lengthscale", [0.4, [0.3, 0.8, 0.5]])
@pytest.mark.parametrize("nu", NUS)
@pytest.mark.parametrize("n_subsample", [None, 4])
def test_gradient_reduction_matches_finite_differences(backend, lengthscale, nu, n_subsample, rng):
    X = random_sets(rng, 9, 6, 3)
    kernel = SetKernel(lengthscale=lengthscale, nu=nu, variance=0.8, n_subsample=n_subsample, seed=2, backend=backend)
    W = rng.normal(size=(9, 9))
    reduction = kernel.gradient_reduction(X, W)
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(reduction, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(K, kernel(X), rtol=1e-12)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), reduction, rtol=1e-10, atol=1e-12 * np.abs(fd).max())


@pytest.mark.parametrize("n_subsample", [None, 3])
@pytest.mark.parametrize("nu", NUS)
def test_input_gradient_matches_finite_differences(backend, nu, n_subsample, rng):
    X1, X2 = rng.random((3, 5, 2)), rng.random((6, 5, 2))
    kernel = SetKernel(lengthscale=[0.4, 0.6], nu=nu, variance=1.5, n_subsample=n_subsample, seed=4,
                       backend=backend)
    K, dK = kernel.gram_and_input_gradient(X1, X2)
    assert dK.shape == (3, 6, 10)
    np.testing.assert_allclose(K, kernel(X1, X2), rtol=1e-13)
    eps = 1e-6
    flat = X1.reshape(3, -1)
    for c in range(10):
        up, down = flat.copy(), flat.copy()
        up[:, c] += eps
        down[:, c] -= eps
        fd = (kernel(up.reshape(X1.shape), X2) - kernel(down.reshape(X1.shape), X2)) / (2 * eps)
        np.testing.assert_allclose(dK[:, :, c], fd, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------- C++ against NumPy
@pytest.mark.parametrize("nu", NUS)
@pytest.mark.parametrize("shape", [(7, 5, 2), (6, 4, 3), (5, 9, 1), (3, 1, 2), (40, 13, 2)])
def test_cpp_matches_numpy_reference(cpp, nu, shape, rng):
    A = random_sets(rng, *shape)
    B = rng.random((shape[0] + 2, shape[1] + 1, shape[2]))
    ls = rng.uniform(0.2, 1.0, shape[2])
    W = rng.normal(size=(shape[0], shape[0]))
    assert_close(cpp.set_gram(A, None, ls, nu), numpy_backend.set_gram(A, None, ls, nu), err_msg="symmetric Gram")
    assert_close(cpp.set_gram(A, B, ls, nu), numpy_backend.set_gram(A, B, ls, nu), err_msg="cross Gram")
    # rounding bound of the reduction: Σ_ab |W_ab| |∂K_ab/∂log ℓ_k|
    _, dK = numpy_backend.set_gram_gradient(A, ls, nu)
    scale = np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1))
    reference = numpy_backend.set_grad_reduction(A, W, ls, nu)
    assert_close(cpp.set_grad_reduction(A, W, ls, nu), reference, scale=scale, err_msg="gradient reduction")
    g, weighted_gram = cpp.set_grad_reduction_and_weighted_gram(A, W, ls, nu)
    K = numpy_backend.set_gram(A, None, ls, nu)
    assert_close(g, reference, scale=scale, err_msg="fused gradient reduction")
    assert_close(weighted_gram, np.sum(W * K), scale=np.sum(np.abs(W * K)), err_msg="fused Σ W ∘ K")
    K_one_pass, dK_one_pass = cpp.set_gram_gradient(A, ls, nu)
    assert dK_one_pass.shape == shape[:1] * 2 + shape[2:]
    assert_close(K_one_pass, K, err_msg="Gram of the one-pass Gram and gradient")
    assert_close(dK_one_pass, dK, err_msg="∂K/∂log ℓ of the one-pass Gram and gradient")
    assert np.array_equal(dK_one_pass, dK_one_pass.transpose(1, 0, 2))        # mirrored, not recomputed
    assert_close(np.einsum("ab,abk->k", W, dK_one_pass), reference, scale=scale, err_msg="Σ W ∘ ∂K from one pass")


def _sets_with_coinciding_points(rng, n_sets, m, m_other, d):
    """A (n_sets, m, d) and B (n_sets + 3, m', d) whose points coincide in places (r = 0, where the slope of
    ν = 1/2 is singular): a point repeated within A[1], and B[0] holding points of A[0]."""
    A, B = rng.random((n_sets, m, d)), rng.random((n_sets + 3, m_other, d))
    if m > 1:
        A[1, 1] = A[1, 0]
    B[0, :min(m, m_other)] = A[0, :min(m, m_other)]
    return A, B


@pytest.mark.parametrize("nu", NUS)
@pytest.mark.parametrize("shape", [(4, 5, 3, 1), (5, 4, 7, 2), (3, 6, 2, 3), (2, 1, 4, 2), (6, 13, 13, 2),
                                   (3, 9, 600, 2), (3, 5, 530, 3)])
def test_cpp_cross_gradient_and_diagonal_match_numpy_reference(cpp, nu, shape, rng):
    n_sets, m, m_other, d = shape                  # m' ≥ the chunk of set.hpp (512 points): a set alone per chunk
    A, B = _sets_with_coinciding_points(rng, n_sets, m, m_other, d)
    ls = rng.uniform(0.2, 1.0, d)                  # ARD
    K, dK = cpp.set_cross_gradient(A, B, ls, nu)
    K_ref, dK_ref = numpy_backend.set_cross_gradient(A, B, ls, nu)
    assert dK.shape == (n_sets, n_sets + 3, m, d)
    assert np.all(np.isfinite(dK))
    assert_close(K, K_ref, err_msg="cross Gram")
    assert_close(K, cpp.set_gram(A, B, ls, nu), err_msg="cross Gram against set_gram")
    assert_close(dK, dK_ref, err_msg="cross gradient")
    assert_close(cpp.set_diag(A, ls, nu), numpy_backend.set_diag(A, ls, nu), err_msg="diagonal")
    for name, value, reference in zip(("diagonal", "∂/∂log ℓ", "∂/∂A"), cpp.set_diag_gradient(A, ls, nu),
                                      numpy_backend.set_diag_gradient(A, ls, nu)):
        assert_close(value, reference, err_msg=f"diagonal with gradient: {name}")


@pytest.mark.parametrize("nu", NUS)
def test_cpp_matches_numpy_reference_across_the_exp_clamp(cpp, nu, rng):
    """Point pairs on both sides of set.hpp's exp clamp (scaled distances up to ~4,000, where e^{−√5 r} is
    below e^{−708}) and at r = 0 (the guard of ν = 1/2's slope), mixed within one vectorised run of points:
    the clamp and the guard are bit selects that the AVX2 loop executes lane by lane."""
    near, far = rng.random((5, 9, 2)), 1e3 + rng.random((4, 9, 2))
    A = np.concatenate([near, far])                       # sets 0-4 near the origin, 5-8 ~1,400 away
    A[6, :4] = A[0, :4]                                   # a mixed set: four points shared with set 0
    B = np.concatenate([far[:2], near[:3]])
    ls = np.array([0.5, 0.7])
    assert_close(cpp.set_gram(A, None, ls, nu), numpy_backend.set_gram(A, None, ls, nu), err_msg="symmetric Gram")
    K = cpp.set_gram(A, B, ls, nu)
    assert_close(K, numpy_backend.set_gram(A, B, ls, nu), err_msg="cross Gram")
    assert np.all(K[:5, :2] < 1e-290) and np.all(K[:5, 2:] > 1e-3)   # far pairs vanish, near ones do not
    K_with_gradient, dK = cpp.set_cross_gradient(A, B, ls, nu)
    K_ref, dK_ref = numpy_backend.set_cross_gradient(A, B, ls, nu)
    assert np.all(np.isfinite(dK))
    assert_close(K_with_gradient, K_ref, err_msg="cross Gram of the cross gradient")
    assert_close(dK, dK_ref, err_msg="cross gradient")
    K_one_pass, dK_one_pass = cpp.set_gram_gradient(A, ls, nu)
    K_ref, dK_ref = numpy_backend.set_gram_gradient(A, ls, nu)
    assert_close(K_one_pass, K_ref, err_msg="Gram of the one-pass Gram and gradient")
    assert_close(dK_one_pass, dK_ref, err_msg="∂K/∂log ℓ of the one-pass Gram and gradient")


def test_cpp_cross_gradient_parallel_equals_serial(cpp, rng):
    A, B = rng.random((40, 20, 2)), rng.random((60, 20, 2))     # ≥ PARALLEL_MIN_TERMS: runs on every thread
    ls = np.array([0.3, 0.5])
    with ff.config_context(num_threads=1):
        serial = cpp.set_cross_gradient(A, B, ls, 2.5) + cpp.set_diag_gradient(np.concatenate([A, B]), ls, 2.5)
    for value, reference in zip(cpp.set_cross_gradient(A, B, ls, 2.5)
                                + cpp.set_diag_gradient(np.concatenate([A, B]), ls, 2.5), serial):
        assert_close(value, reference, err_msg="threads")


@pytest.mark.parametrize("normalize", [False, True, "learn", "mmd"])
@pytest.mark.parametrize("n_subsample", [None, 3])
def test_cpp_input_gradient_matches_numpy_kernel(cpp, normalize, n_subsample, rng):
    X1, X2 = random_sets(rng, 4, 6, 2), rng.random((9, 6, 2))
    X1[3, 2] = X1[3, 4]
    X2[0] = X1[1]
    kernels = {}
    for backend in ("numpy", "cpp"):
        options = {"lengthscale": [0.3, 0.7], "variance": 1.3, "n_subsample": n_subsample, "seed": 5,
                   "backend": backend}
        kernels[backend] = (MMDSetKernel(mmd_lengthscale=0.4, **options) if normalize == "mmd"
                            else SetKernel(normalize=normalize, **options))
    K, dK = kernels["cpp"].gram_and_input_gradient(X1, X2)
    K_ref, dK_ref = kernels["numpy"].gram_and_input_gradient(X1, X2)
    assert_close(K, K_ref, err_msg="K")
    assert_close(dK, dK_ref, err_msg="dK")


def test_cpp_parallel_equals_serial(cpp, rng):
    A = rng.random((120, 30, 2))                         # ≥ PARALLEL_MIN_TERMS: runs on every thread
    ls = np.array([0.3, 0.5])
    with ff.config_context(num_threads=1):
        serial = cpp.set_gram(A, None, ls, 2.5)
        serial_one_pass = cpp.set_gram_gradient(A, ls, 2.5)
    assert_close(cpp.set_gram(A, None, ls, 2.5), serial, err_msg="threads")
    for value, reference in zip(cpp.set_gram_gradient(A, ls, 2.5), serial_one_pass):
        assert_close(value, reference, err_msg="threads, one-pass Gram and gradient")


def test_cpp_boundary_checks_name_the_argument(cpp, rng):
    from fastfm import _cpp
    A = rng.random((4, 3, 2))
    with pytest.raises(ValueError, match="A must have shape"):
        _cpp.set_gram(A[0], None, np.ones(2))
    with pytest.raises(ValueError, match="same dimension"):
        _cpp.set_gram(A, rng.random((2, 3, 3)), np.ones(2))
    with pytest.raises(ValueError, match="length_scale"):
        _cpp.set_gram(A, None, np.ones(3))
    with pytest.raises(ValueError, match=r"length_scale\[1\]"):
        _cpp.set_gram(A, None, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="nu must be"):
        _cpp.set_gram(A, None, np.ones(2), 1.0)
    with pytest.raises(ValueError, match="W must have shape"):
        _cpp.set_grad_reduction(A, np.ones((3, 3)), np.ones(2))
    with pytest.raises(ValueError, match="A must have shape"):
        _cpp.set_gram_gradient(A[0], np.ones(2))
    with pytest.raises(ValueError, match=r"length_scale\[0\]"):
        _cpp.set_gram_gradient(A, np.array([0.0, 1.0]))
    B = rng.random((5, 2, 2))
    with pytest.raises(ValueError, match=r"A must have shape \(n_sets, n_points, dim\), got \(3, 2\)"):
        _cpp.set_cross_gradient(A[0], B, np.ones(2))
    with pytest.raises(ValueError, match=r"B must have shape \(n_sets, n_points, dim\), got \(5, 4\)"):
        _cpp.set_cross_gradient(A, B.reshape(5, 4), np.ones(2))
    with pytest.raises(ValueError, match="B must"):
        _cpp.set_cross_gradient(A, None, np.ones(2))
    with pytest.raises(ValueError, match=r"same dimension, got A \(4, 3, 2\) and B \(2, 3, 3\)"):
        _cpp.set_cross_gradient(A, rng.random((2, 3, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"B must have at least one point per set.*\(5, 0, 2\)"):
        _cpp.set_cross_gradient(A, B[:, :0], np.ones(2))
    with pytest.raises(ValueError, match=r"length_scale must have shape \(2,\), got \(3,\)"):
        _cpp.set_cross_gradient(A, B, np.ones(3))
    with pytest.raises(ValueError, match="nu must be"):
        _cpp.set_cross_gradient(A, B, np.ones(2), 2.0)
    for diagonal in (_cpp.set_diag, _cpp.set_diag_gradient):
        with pytest.raises(ValueError, match=r"A must have shape \(n_sets, n_points, dim\), got \(4, 6\)"):
            diagonal(A.reshape(4, 6), np.ones(2))
        with pytest.raises(ValueError, match=r"length_scale must have shape \(2,\), got \(1,\)"):
            diagonal(A, np.ones(1))
        with pytest.raises(ValueError, match=r"length_scale\[0\]"):
            diagonal(A, np.array([0.0, 1.0]))


# ---------------------------------------------------------------------------- bad input
def test_bad_arguments_raise_typed_errors(rng):
    with pytest.raises(ff.InvalidValueError, match="nu"):
        SetKernel(nu=2.0)
    with pytest.raises(ff.InvalidValueError, match="n_subsample"):
        SetKernel(n_subsample=0)
    with pytest.raises(ff.InvalidConfigError, match="X must be an array of sets"):
        SetKernel()(rng.random((3, 4)))
    with pytest.raises(ff.InvalidConfigError, match="lengthscale has 3 values"):
        SetKernel(lengthscale=[1.0, 1.0, 1.0])(rng.random((3, 4, 2)))
    with pytest.raises(ff.InvalidValueError, match="X holds non-finite"):
        SetKernel()(np.full((2, 3, 2), np.nan))


# ---------------------------------------------------------------------------- normalised kernel
@pytest.mark.parametrize("n_subsample", [None, 3])
def test_normalised_kernel_contract(backend, n_subsample, rng):
    X, Y = random_sets(rng, 30, 5, 2), rng.random((4, 5, 2))
    kernel = SetKernel(lengthscale=[0.3, 0.6], variance=1.4, n_subsample=n_subsample, seed=1, normalize=True,
                       backend=backend)
    K = kernel(X)
    raw = SetKernel(lengthscale=[0.3, 0.6], n_subsample=n_subsample, seed=1, backend="numpy")
    expected = raw(X) / np.sqrt(np.outer(raw.diag(X), raw.diag(X)))
    np.testing.assert_allclose(K, 1.4 * expected, rtol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.full(30, 1.4))
    np.testing.assert_allclose(np.diag(K), np.full(30, 1.4), rtol=1e-12)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    np.testing.assert_allclose(kernel(X, Y), kernel(np.concatenate([X, Y]))[:30, 30:], rtol=1e-12)
    # gradients: fused reduction, eval_gradient and the input gradient against finite differences
    _check_gradients_against_finite_differences(kernel, X, Y, rng)


def _check_gradients_against_finite_differences(kernel, X, Y, rng):
    """The fused reduction, eval_gradient and the input gradient of a set kernel against finite differences."""
    W = rng.normal(size=(len(X), len(X)))
    reduction = kernel.gradient_reduction(X, W)
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(reduction, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    _, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), reduction, rtol=1e-10, atol=1e-12 * np.abs(fd).max())
    X1 = X[:3]
    K1, dK1 = kernel.gram_and_input_gradient(X1, Y)
    flat = X1.reshape(3, -1)
    for c in range(flat.shape[1]):
        up, down = flat.copy(), flat.copy()
        up[:, c] += 1e-6
        down[:, c] -= 1e-6
        fd_input = (kernel(up.reshape(X1.shape), Y) - kernel(down.reshape(X1.shape), Y)) / 2e-6
        np.testing.assert_allclose(dK1[:, :, c], fd_input, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------- learned normalisation (issue 24 §4)
@pytest.mark.parametrize("n_subsample", [None, 3])
@pytest.mark.parametrize("power", [0.4, 1.0, 0.001])
def test_learned_normalisation_contract(backend, n_subsample, power, rng):
    X, Y = random_sets(rng, 30, 5, 2), rng.random((4, 5, 2))
    kernel = SetKernel(lengthscale=[0.3, 0.6], variance=1.4, n_subsample=n_subsample, seed=1, normalize="learn",
                       backend=backend)
    assert [h.name for h in kernel.hyperparameters] == ["lengthscale", "variance", "normalization"]
    kernel.normalization = power
    K = kernel(X)
    raw = SetKernel(lengthscale=[0.3, 0.6], n_subsample=n_subsample, seed=1, backend="numpy")
    # K_γ = D K D with D = diag(δ^(−γ/2)), δ the plain kernel's diagonal
    scale = raw.diag(X) ** (-power / 2)
    np.testing.assert_allclose(K, 1.4 * scale[:, None] * raw(X) * scale[None, :], rtol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.diag(K), rtol=1e-12)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    np.testing.assert_allclose(kernel(X, Y), kernel(np.concatenate([X, Y]))[:30, 30:], rtol=1e-12)
    # gradients over (log ℓ, log σ², log γ): fused reduction, eval_gradient, input gradient vs finite differences
    assert kernel.n_theta == 4
    _check_gradients_against_finite_differences(kernel, X, Y, rng)


def test_learned_normalisation_spans_the_plain_and_the_normalised_kernel(rng):
    X = random_sets(rng, 12, 6, 2)
    learned = SetKernel(lengthscale=0.3, normalize="learn")
    learned.normalization = 1.0
    np.testing.assert_allclose(learned(X), SetKernel(lengthscale=0.3, normalize=True)(X), rtol=1e-14)
    learned.normalization = 1e-3
    plain = SetKernel(lengthscale=0.3)(X)
    np.testing.assert_allclose(learned(X), plain, rtol=2e-2)
    # the power is a fitted hyperparameter: theta holds log γ last, bounded by [1e-3, 1]
    np.testing.assert_allclose(np.exp(learned.bounds[-1]), [1e-3, 1.0])
    learned.theta = np.array([np.log(0.3), 0.0, np.log(0.25)])
    assert learned.normalization == pytest.approx(0.25)


def test_learned_normalisation_prior_and_bad_modes():
    from fastfm.gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior
    kernel = SetKernel(lengthscale=0.3, normalize="learn")
    prior = default_hyperparameter_prior(kernel)
    assert prior.mean[2] == pytest.approx(DEFAULT_LOG_PRIORS["normalization"][0])
    for bad in ("yes", "Learn"):
        with pytest.raises(ff.InvalidValueError, match=f"normalize must be one of .*got normalize={bad!r}"):
            SetKernel(normalize=bad)
    assert [h.name for h in SetKernel(normalize=True).hyperparameters] == ["lengthscale", "variance"]


# ---------------------------------------------------------------------------- MMD set kernel (issue 24 §4)
@pytest.mark.parametrize("n_subsample", [None, 3])
@pytest.mark.parametrize("lengthscale", [0.3, [0.3, 0.6]])
def test_mmd_kernel_contract(backend, n_subsample, lengthscale, rng):
    X, Y = random_sets(rng, 30, 5, 2), rng.random((4, 5, 2))
    kernel = MMDSetKernel(lengthscale=lengthscale, variance=1.4, mmd_lengthscale=0.4, n_subsample=n_subsample,
                          seed=1, backend=backend)
    assert [h.name for h in kernel.hyperparameters] == ["lengthscale", "variance", "mmd_lengthscale"]
    K = kernel(X)
    # the definition: σ² exp(−MMD²/2ρ²), MMD² from the plain set kernel E (the mean embeddings' inner product)
    E = SetKernel(lengthscale=lengthscale, n_subsample=n_subsample, seed=1, backend="numpy")(X)
    mmd2 = np.diag(E)[:, None] + np.diag(E)[None, :] - 2 * E
    np.testing.assert_allclose(K, 1.4 * np.exp(-np.maximum(mmd2, 0) / (2 * 0.4 ** 2)), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.diag(X), np.full(30, 1.4))
    np.testing.assert_allclose(np.diag(K), np.full(30, 1.4), rtol=1e-12)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    np.testing.assert_allclose(kernel(X, Y), kernel(np.concatenate([X, Y]))[:30, 30:], rtol=1e-12)
    # the same set in another order (random_sets puts one at row 2) is the same point: K = σ²
    if n_subsample is None:
        assert K[0, 2] == pytest.approx(1.4, rel=1e-12)
    _check_gradients_against_finite_differences(kernel, X, Y, rng)


def test_mmd_kernel_is_permutation_invariant_and_not_linear_in_the_embeddings(rng):
    X = random_sets(rng, 8, 6, 2)
    kernel = MMDSetKernel(lengthscale=0.3, mmd_lengthscale=0.3)
    shuffled = np.stack([x[rng.permutation(6)] for x in X])
    np.testing.assert_allclose(kernel(shuffled), kernel(X), rtol=1e-12)
    # a Gaussian of the embedding distance: with ρ large it tends to a constant, with ρ small to δ(X, X')
    wide, narrow = MMDSetKernel(lengthscale=0.3, mmd_lengthscale=100.0), MMDSetKernel(lengthscale=0.3,
                                                                                       mmd_lengthscale=1e-3)
    np.testing.assert_allclose(wide(X), 1.0, atol=1e-4)
    np.testing.assert_allclose(narrow(X)[~np.eye(8, dtype=bool) & ~np.isclose(narrow(X), 1.0)], 0.0, atol=1e-12)


def test_mmd_kernel_on_a_space_and_through_set_space_kernel(rng):
    from fastfm.gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("points", n_points=4, dim=2, low=0.0, high=1.0)])
    kernel = set_space_kernel("matern52", space, normalize="mmd")
    assert any(isinstance(k, MMDSetKernel) for k in (kernel.k1, kernel.k2))
    X = space.sample_encoded(20, seed=3)
    K = kernel(X)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    prior = default_hyperparameter_prior(kernel)
    names = [h.name for h in kernel.hyperparameters if not h.fixed]
    assert prior.mean[names.index("k2__mmd_lengthscale")] == pytest.approx(DEFAULT_LOG_PRIORS["mmd_lengthscale"][0])
    # input gradient on the encoded space (unit-scaled set coordinates) against finite differences
    _, dK = kernel.gram_and_input_gradient(X[:2], X[5:9])
    for c in range(space.n_continuous):
        up, down = X[:2].copy(), X[:2].copy()
        up[:, c] += 1e-6
        down[:, c] -= 1e-6
        np.testing.assert_allclose(dK[:, :, c], (kernel(up, X[5:9]) - kernel(down, X[5:9])) / 2e-6, rtol=1e-5,
                                   atol=1e-8)
    bad_form = r"normalize must be one of \(False, True, 'learn', 'mmd', 'norm\+mmd'\), got normalize='MMD'"
    with pytest.raises(ff.InvalidValueError, match=bad_form):
        set_space_kernel("matern52", space, normalize="MMD")


def test_sum_of_the_normalised_and_the_mmd_set_kernel(rng):
    space = ff.Space([ff.Set("points", n_points=4, dim=2, low=0.0, high=1.0)])
    kernel = set_space_kernel("matern52", space, normalize="norm+mmd")
    # both amplitudes free when the set is the only factor; the names are the Sum's k1__/k2__
    names = [h.name for h in kernel.hyperparameters if not h.fixed]
    assert names == ["k1__lengthscale", "k1__variance", "k2__lengthscale", "k2__variance", "k2__mmd_lengthscale"]
    kernel.theta = rng.uniform(-1.0, 0.5, kernel.n_theta)
    X = space.sample_encoded(25, seed=4)
    np.testing.assert_allclose(kernel(X), kernel.k1(X) + kernel.k2(X), rtol=1e-14)
    K = kernel(X)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    W = rng.normal(size=(25, 25))
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(kernel.gradient_reduction(X, W), fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    # beside another factor the normalised term's amplitude is fixed (the product's first factor holds it)
    mixed = ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("points", n_points=4, dim=2, low=0.0, high=1.0)])
    names = [h.name for h in set_space_kernel("matern52", mixed, normalize="norm+mmd").hyperparameters if not h.fixed]
    assert "k2__k1__variance" not in names and "k2__k2__variance" in names


# ---------------------------------------------------------------------------- inner= (issue 5's API)
@pytest.mark.parametrize("length_scale", [0.35, [0.3, 0.6]])
def test_inner_matern52_is_the_set_kernel_of_its_hyperparameters(backend, length_scale, rng):
    from fastfm.kernels import Matern52

    X = random_sets(rng, 7, 6, 2)
    kernel = SetKernel(inner=Matern52(length_scale=length_scale, variance=1.4), n_subsample=4, seed=2,
                       backend=backend)
    np.testing.assert_allclose(kernel(X), definition(*(2 * [subsample_sets(X, 4, 2)[0]]), length_scale, 2.5, 1.4),
                               rtol=1e-12, atol=1e-15)
    # the inner kernel's hyperparameters are the fitted ones: gradients by finite differences
    assert kernel.theta.size == np.size(length_scale) + 1
    W = rng.normal(size=(7, 7))
    W = W + W.T
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(kernel.gradient_reduction(X, W), fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    # inner reports the current lengthscale (unit variance: σ² is the set kernel's)
    moved = kernel.clone_with_theta(kernel.theta + 0.2)
    np.testing.assert_allclose(moved.inner.lengthscale, np.exp(0.2) * np.asarray(length_scale), rtol=1e-12)
    assert moved.inner.variance == 1.0


def test_inner_must_be_a_spaceless_matern52():
    from fastfm.exceptions import InvalidValueError
    from fastfm.kernels import RBF, Matern52

    with pytest.raises(InvalidValueError, match="inner"):
        SetKernel(inner=RBF(length_scale=0.3))
    with pytest.raises(InvalidValueError, match="inner"):
        SetKernel(inner=Matern52(ff.Space([ff.Real("x", 0, 1)])))
    with pytest.raises(InvalidValueError, match="lengthscale"):
        SetKernel(inner=Matern52(length_scale=0.3), lengthscale=0.2)
    with pytest.raises(InvalidValueError, match="length_scale"):
        Matern52(lengthscale=0.3, length_scale=0.3)


@pytest.mark.parametrize("length_scale", [0.4, [0.3, 0.5, 0.8]])
def test_spaceless_matern52_on_points_is_the_space_kernel(length_scale, rng):
    """Matern52 without a space acts on (N, d) points: it equals the one on an all-continuous space."""
    from fastfm.kernels import Matern52

    space = ff.Space([ff.Real(f"x{i}", 0.0, 1.0) for i in range(3)])
    X = rng.random((30, 3))
    free = Matern52(length_scale=length_scale, variance=1.3)
    on_space = Matern52(space, lengthscale=np.broadcast_to(length_scale, (3,)).copy(), variance=1.3)
    K = free(X)
    np.testing.assert_allclose(K, on_space(X), rtol=1e-13)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    W = rng.normal(size=(30, 30))
    W = W + W.T
    fd = _finite_difference_of_weighted_sum(free, X, W)
    np.testing.assert_allclose(free.gradient_reduction(X, W), fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    K_full, dK = free(X, eval_gradient=True)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), free.gradient_reduction(X, W), rtol=1e-10)
    with pytest.raises(ff.exceptions.InvalidConfigError, match="X"):
        free(rng.random((5, 2)) if np.size(length_scale) > 1 else rng.random(5))


# ---------------------------------------------------------------------------- independent subsets
def test_independent_subsets_are_a_fixed_permutation_invariant_psd_kernel(backend, rng):
    X = random_sets(rng, 8, 10, 2)
    kernel = SetKernel(lengthscale=0.4, n_subsample=4, seed=3, subsample="independent", backend=backend)
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() >= -1e-12
    shuffled = X[:, rng.permutation(10)]
    np.testing.assert_allclose(kernel(shuffled), K, rtol=1e-13)          # depends on the sets, not the order
    np.testing.assert_allclose(K[0], K[2], rtol=1e-13)                    # X[2] is X[0] reordered
    np.testing.assert_allclose(kernel(X[:3], X[3:]), K[:3, 3:], rtol=1e-13)
    np.testing.assert_array_equal(kernel(X), K)                           # one fixed function
    whole = SetKernel(lengthscale=0.4, n_subsample=10, seed=3, subsample="independent", backend=backend)(X)
    np.testing.assert_allclose(whole, definition(X, X, 0.4, 2.5), rtol=1e-12)
    # two sets keep different positions (the shared mode keeps the same ones)
    _, indices = subsample_sets(X, 4, 3, "independent")
    order = np.argsort(X @ draw_subsample(3, 10, 2, 4)[0], axis=1, kind="stable")
    positions = [np.flatnonzero(np.isin(order[a], indices[a])) for a in range(8)]
    assert any(not np.array_equal(positions[0], p) for p in positions[1:])
    W = rng.normal(size=(8, 8))
    W = W + W.T
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(kernel.gradient_reduction(X, W), fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())


def test_independent_subsets_are_unbiased_off_the_diagonal(rng):
    """Over seeds, the mean of K̂(X, X') is K_set(X, X') within a Monte-Carlo bound (4 standard errors);
    the diagonal carries the exact bias (1/L − 1/m)(k(0) − O_X)."""
    m, L, n_seeds = 8, 3, 3000
    X = rng.random((3, m, 2))
    lengthscale = 0.4
    exact = definition(X, X, lengthscale, 2.5)
    samples = np.array([SetKernel(lengthscale=lengthscale, n_subsample=L, seed=seed, subsample="independent",
                                  backend="numpy")(X) for seed in range(n_seeds)])
    mean, standard_error = samples.mean(axis=0), samples.std(axis=0, ddof=1) / np.sqrt(n_seeds)
    off = ~np.eye(3, dtype=bool)
    assert np.all(np.abs(mean - exact)[off] <= 4 * standard_error[off]), (mean - exact, standard_error)
    for a in range(3):
        k = numpy_backend.matern_profile(np.sum(((X[a][:, None] - X[a][None, :]) / lengthscale) ** 2, axis=2))[0]
        others = (k.sum() - np.trace(k)) / (m * (m - 1))
        expected_diagonal = exact[a, a] + (1.0 / L - 1.0 / m) * (1.0 - others)
        assert abs(mean[a, a] - expected_diagonal) <= 4 * standard_error[a, a]
        assert mean[a, a] - exact[a, a] > 4 * standard_error[a, a]      # the diagonal bias is real


def test_bad_subsample_mode_is_rejected():
    from fastfm.exceptions import InvalidValueError

    with pytest.raises(InvalidValueError, match="subsample"):
        SetKernel(n_subsample=3, subsample="per-set")


def test_distinct_points_maps_every_point_to_an_equal_row(rng):
    from fastfm.kernels.sets import distinct_points

    pool = rng.random((300, 3))
    pool[:40, 0] = 0.0                                    # ties in one coordinate (points clipped to the box)
    pool[40] = -0.0                                       # -0.0 and 0.0: equal values, other bits
    pool[41] = 0.0
    points = pool[rng.integers(len(pool), size=2000)]
    distinct, inverse = distinct_points(points)
    np.testing.assert_array_equal(distinct[inverse], points)
    assert len(distinct) <= len(np.unique(points, axis=0)) + 1     # only -0.0 may stay apart from 0.0
    assert len(distinct) >= len(np.unique(points, axis=0))


def _shared_point_sets(rng, n_sets, n_points, dim, n_pool):
    pool = rng.random((n_pool, dim))
    return pool[np.stack([rng.choice(n_pool, n_points, replace=False) for _ in range(n_sets)])]


@pytest.mark.parametrize("kernel", ["plain", "normalised", "learn", "mmd", "subsampled"])
def test_cross_covariance_of_sets_sharing_points_goes_through_the_distinct_points(backend, kernel, rng,
                                                                                  monkeypatch):
    import fastfm.kernels.sets as sets_module

    options = {"plain": {}, "normalised": {"normalize": True}, "learn": {"normalize": "learn"},
               "subsampled": {"normalize": True, "n_subsample": 4, "seed": 3}}
    k = (MMDSetKernel(lengthscale=[0.3, 0.5], mmd_lengthscale=0.7, backend=backend) if kernel == "mmd"
         else SetKernel(lengthscale=[0.3, 0.5], backend=backend, **options[kernel]))
    A = _shared_point_sets(rng, 600, 6, 2, 300)           # 3,600 points (2,400 in the subsets), 300 distinct
    B = rng.random((40, 6, 2))
    calls = []
    original = SetKernel._backend_call

    def spy(self, name, *args):
        calls.append((name, args[0].shape))
        return original(self, name, *args)

    monkeypatch.setattr(SetKernel, "_backend_call", spy)
    K = k(A, B)
    assert any(name == "set_gram" and shape[1] == 1 for name, shape in calls)    # one row per distinct point
    monkeypatch.setattr(sets_module, "SHARED_POINTS_MIN", 10 ** 9)             # the direct pass
    calls.clear()
    np.testing.assert_allclose(K, k(A, B), rtol=1e-13, atol=1e-15)
    assert not any(name == "set_gram" and shape[1] == 1 for name, shape in calls)


def test_cross_covariance_of_sets_without_shared_points_keeps_the_direct_pass(rng, monkeypatch):
    k = SetKernel(lengthscale=0.4, normalize=True)
    A, B = rng.random((500, 6, 2)), rng.random((40, 6, 2))
    shapes = []
    original = SetKernel._backend_call
    monkeypatch.setattr(SetKernel, "_backend_call",
                        lambda self, name, *args: shapes.append(args[0].shape) or original(self, name, *args))
    k(A, B)
    assert (500, 6, 2) in shapes and not any(shape[1] == 1 for shape in shapes)
