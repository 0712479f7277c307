"""The CUDA backend (Numba) against the NumPy reference.

Without a GPU (CI) the kernels run under Numba's CUDA simulator, which
executes every GPU thread as a Python thread: sizes stay tiny (N ≤ 9).  With a
GPU and without ``NUMBA_ENABLE_CUDASIM`` set, the same tests run on the device.

The simulator must be switched on before ``numba.cuda`` is first imported.
fastfm never imports numba unless the cuda backend is used, so the module
fixture below sets ``NUMBA_ENABLE_CUDASIM=1`` and imports ``numba.cuda``
first.  Once imported, numba.cuda stays the simulator for the rest of the
session; that cannot affect other tests, because only an explicit
``backend="cuda"`` runs it ("auto" never picks the simulator, see
``test_auto_never_picks_the_simulator``).

Helpers, spaces and tolerances are those of the C++ parity tests
(``test_backend_parity.py``).
"""
import io
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from _spaces import SPACES
from test_backend_parity import EXTRA_SPACES, MODULATIONS, _hyper, _inputs, _reduction_scales, assert_close
from test_backend_parity import modulation  # noqa: F401  (the fixture: every modulation)

import fastfm as ff
from fastfm import _backends
from fastfm._backends import numpy_backend
from fastfm._backends.modulation import Modulation
from fastfm.exceptions import BackendUnavailableError, InvalidValueError

pytest.importorskip("numba", reason="numba is not installed (it is in the 'test' extra)")

# the shared spaces plus one with only discrete variables (Dc = 0) and one with long paths / 1 state
CUDA_SPACES = {**SPACES, "discrete_only": EXTRA_SPACES["discrete_only"], "long_paths": EXTRA_SPACES["long_paths"]}
N_POINTS = 7


@pytest.fixture(scope="module")
def cuda_backend():
    """The cuda backend module, on the GPU if there is one, else on Numba's simulator."""
    from fastfm._backends import cuda

    previous = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if "numba.cuda" not in sys.modules and previous is None and cuda.driver_gpu_count() == 0:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        if "numba.core.config" in sys.modules:  # numba imported without numba.cuda: read the switch again
            sys.modules["numba.core.config"].reload_config()
    import numba.cuda

    if not numba.cuda.is_available():
        pytest.fail("numba.cuda was imported before this module without the simulator and there is no GPU: "
                    "run these tests with NUMBA_ENABLE_CUDASIM=1")
    cuda.clear_device_cache()
    yield cuda
    if previous is None:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)


@pytest.fixture(params=sorted(CUDA_SPACES), ids=sorted(CUDA_SPACES))
def cuda_space(request):
    return CUDA_SPACES[request.param]


def _flat(gradients):
    g_lengthscale, g_alpha, g_beta, g_variance = gradients
    return np.concatenate([g_lengthscale, g_alpha, g_beta, [g_variance]])


def _check_gram_and_reduction(cuda_backend, seed):
    """The cuda symmetric Gram and fused reduction against the reference on seeded "mixed" inputs."""
    space = SPACES["mixed"]
    C, D = _inputs(space, N_POINTS, seed=seed)
    args = _hyper(space, seed + 1, Modulation())
    W = np.random.default_rng(seed + 2).standard_normal((N_POINTS, N_POINTS))
    assert_close(cuda_backend.fm_gram(C, D, None, None, *args), numpy_backend.fm_gram(C, D, None, None, *args))
    assert_close(_flat(cuda_backend.fm_grad_reduction(C, D, W, *args)),
                 _flat(numpy_backend.fm_grad_reduction(C, D, W, *args)), scale=_reduction_scales(C, D, W, args))


# ------------------------------------------------------------ FM kernel parity
def test_fm_gram_and_reduction_match_numpy(cuda_backend, cuda_space, modulation):
    C, D = _inputs(cuda_space, N_POINTS, seed=1)            # row 4 repeats row 1: a zero distance
    C2, D2 = _inputs(cuda_space, 5, seed=2)
    args = _hyper(cuda_space, 3, modulation)
    K = cuda_backend.fm_gram(C, D, None, None, *args)
    assert_close(K, numpy_backend.fm_gram(C, D, None, None, *args), err_msg="symmetric Gram")
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()
    assert_close(cuda_backend.fm_gram(C, D, C2, D2, *args), numpy_backend.fm_gram(C, D, C2, D2, *args),
                 err_msg="cross Gram")
    W = np.random.default_rng(4).standard_normal((N_POINTS, N_POINTS))  # not symmetric: pairs use W_ab + W_ba
    actual = cuda_backend.fm_grad_reduction(C, D, W, *args)
    expected = numpy_backend.fm_grad_reduction(C, D, W, *args)
    assert [np.shape(a) for a in actual] == [np.shape(e) for e in expected] and isinstance(actual[3], float)
    assert_close(_flat(actual), _flat(expected), scale=_reduction_scales(C, D, W, args), err_msg="reduction")


def test_eigenvector_path_matches_projector_path(cuda_backend, monkeypatch):
    """Graphs too large for a projector table sum U[v, i] U[v', i] over each group instead."""
    monkeypatch.setattr(cuda_backend, "PROJECTOR_TABLE_MAX_ENTRIES", 0)
    monkeypatch.setattr(cuda_backend, "_tables_cache", type(cuda_backend._tables_cache)())
    _check_gram_and_reduction(cuda_backend, seed=5)
    assert all(mode == cuda_backend._kernels().EIGENVECTORS
               for mode in cuda_backend._spectral_tables(SPACES["mixed"].packed_spectra)[3].copy_to_host())


def test_gram_from_argument_matches_numpy(cuda_backend):
    space = SPACES["mixed"]
    C1, D1 = _inputs(space, 6, seed=8)
    C2, D2 = _inputs(space, 4, seed=9)
    args = _hyper(space, 10, MODULATIONS["family_t1.3"])
    R = numpy_backend.continuous_argument(C1, C2, 1.3)
    assert_close(cuda_backend.fm_gram_from_argument(R, D1, D2, *args),
                 numpy_backend.fm_gram_from_argument(R, D1, D2, *args))
    R11 = numpy_backend.continuous_argument(C1, None, 1.3)
    assert_close(cuda_backend.fm_gram_from_argument(R11, D1, None, *args),
                 numpy_backend.fm_gram_from_argument(R11, D1, None, *args))


def test_reduction_from_argument_matches_numpy(cuda_backend):
    space = SPACES["mixed"]
    C, D = _inputs(space, N_POINTS, seed=28)
    args = _hyper(space, 29, MODULATIONS["family_t1.3"])
    R = numpy_backend.continuous_argument(C, None, 1.3)
    W = np.random.default_rng(30).standard_normal((N_POINTS, N_POINTS))   # not symmetric
    g_alpha, g_beta, g_variance, omega = cuda_backend.fm_reduction_from_argument(R, D, W, *args)
    e_alpha, e_beta, e_variance, e_omega = numpy_backend.fm_reduction_from_argument(R, D, W, *args)
    K = numpy_backend.fm_gram_from_argument(R, D, None, *args)
    bound = np.sum(np.abs(W)) * np.max(np.abs(K)) * (1.0 + np.max(args[1]) * np.max(R))
    assert_close(np.concatenate([g_alpha, g_beta, [g_variance]]), np.concatenate([e_alpha, e_beta, [e_variance]]),
                 scale=bound)
    assert_close(omega, e_omega)


def test_neighbour_grams_match_numpy(cuda_backend):
    space = SPACES["mixed"]
    C, D = _inputs(space, 6, seed=11)
    C0, D0 = C[[0, 3]], D[[0, 3]]
    owner = np.array([0, 0, 1, 1, 1], dtype=np.int64)
    var_index = np.array([0, 3, 1, 2, 3], dtype=np.int64)
    new_state = np.array([(D0[o, p] + 1) % space.n_states[p] for o, p in zip(owner, var_index)], dtype=np.int64)
    args = _hyper(space, 12, MODULATIONS["diffusion_t0.7"])
    assert_close(cuda_backend.fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, *args),
                 numpy_backend.fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, *args))
    assert_close(cuda_backend.fm_neighbour_gram(C0[1], D0[1], C, D, var_index[2:], new_state[2:], *args),
                 numpy_backend.fm_neighbour_gram(C0[1], D0[1], C, D, var_index[2:], new_state[2:], *args))


def test_kernels_agree_with_numpy_through_the_public_api(cuda_backend):
    space = SPACES["func3c_like"]
    X = space.sample_encoded(N_POINTS, seed=13)
    Y = space.sample_encoded(4, seed=14)
    W = np.random.default_rng(15).standard_normal((N_POINTS, N_POINTS))
    W = W + W.T
    for factory in (ff.kernels.ModLap, ff.kernels.ModDif):
        fast = factory(space, lengthscale=[0.3, 0.7], alpha=[0.5, 1.0, 2.0], beta=0.8, variance=1.3, backend="cuda")
        reference = factory(space, lengthscale=[0.3, 0.7], alpha=[0.5, 1.0, 2.0], beta=0.8, variance=1.3,
                            backend="numpy")
        assert_close(fast(X), reference(X))
        assert_close(fast(X, Y), reference(X, Y))
        _, dK = reference(X, eval_gradient=True)
        assert_close(fast.gradient_reduction(X, W), reference.gradient_reduction(X, W),
                     scale=np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1)))
        var_index = np.array([0, 2], dtype=np.int64)
        new_state = np.array([(X[0, 2] + 1) % 3, (X[0, 4] + 1) % 4], dtype=np.int64)
        assert_close(fast.neighbour_gram(X[0], Y, var_index, new_state),
                     reference.neighbour_gram(X[0], Y, var_index, new_state))
        # no GPU kernel: the C++ backend serves it, without the NumPy-fallback warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            K, dK = fast.gram_and_input_gradient(Y, X)
        K_reference, dK_reference = reference.gram_and_input_gradient(Y, X)
        assert_close(K, K_reference)
        assert_close(dK, dK_reference)
    fast = ff.kernels.ModNN(space, nn_variance=[0.5, 1.0, 2.0], beta=0.7, variance=1.2, backend="cuda")
    reference = ff.kernels.ModNN(space, nn_variance=[0.5, 1.0, 2.0], beta=0.7, variance=1.2, backend="numpy")
    assert_close(fast(X), reference(X))
    _, dK = reference(X, eval_gradient=True)
    assert_close(fast.gradient_reduction(X, W), reference.gradient_reduction(X, W),
                 scale=np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1)))


def test_gradient_reduction_matches_finite_differences(cuda_backend):
    """The analytic reduction of the cuda path against central differences of its own Gram."""
    space = SPACES["weighted_graph"]
    kernel = ff.kernels.FMKernel(space, coefficients=(0.5, 1.0), exponent=1.5, lengthscale=0.6, alpha=[0.7, 1.4],
                                 beta=[0.5, 2.0], variance=1.1, backend="cuda")
    X = space.sample_encoded(6, seed=16)
    W = np.random.default_rng(17).standard_normal((6, 6))
    theta = kernel.theta
    step = 1e-6
    numeric = np.array([(np.sum(W * kernel.clone_with_theta(theta + step * e)(X))
                         - np.sum(W * kernel.clone_with_theta(theta - step * e)(X))) / (2 * step)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(kernel.gradient_reduction(X, W), numeric, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------- data residency
def test_training_inputs_stay_on_the_device(cuda_backend):
    """Repeated likelihood evaluations upload only the new weights W, never X or the spectra."""
    space = SPACES["mixed"]
    kernel = ff.kernels.ModLap(space, backend="cuda")
    X = space.sample_encoded(N_POINTS, seed=18)
    W = np.random.default_rng(19).standard_normal((N_POINTS, N_POINTS))
    kernel(X)
    kernel.gradient_reduction(X, W)                  # first evaluation: inputs, tables, hyperparameters
    before = cuda_backend.device_stats()
    K = kernel(X)
    kernel.gradient_reduction(X, 2.0 * W)
    after = cuda_backend.device_stats()
    assert after["uploads"] - before["uploads"] == 1   # W only
    assert after["launches"] - before["launches"] == 2
    assert after["cache_hits"] > before["cache_hits"]
    # content keyed: changing X in place is seen, never a stale device copy
    X[0, 0] = -X[0, 0] if X[0, 0] else 0.5
    assert_close(kernel(X), ff.kernels.ModLap(space, backend="numpy")(X))
    assert not np.array_equal(kernel(X), K)


def test_large_transfers_go_in_pinned_row_chunks(cuda_backend, monkeypatch):
    """The chunked, threaded transfer path (used from 64 MB) on a tiny problem: 2-row chunks."""
    monkeypatch.setattr(cuda_backend, "STAGED_TRANSFER_MIN_BYTES", 0)
    monkeypatch.setattr(cuda_backend, "STAGING_CHUNK_BYTES", 8 * N_POINTS * 2)
    calls = []
    original = cuda_backend._in_row_chunks
    monkeypatch.setattr(cuda_backend, "_in_row_chunks", lambda *a: calls.append(a[0]) or original(*a))
    _check_gram_and_reduction(cuda_backend, seed=25)
    assert calls.count((N_POINTS, N_POINTS)) == 2     # the Gram's download and W's upload (C's too: threshold 0)


def test_device_arrays_are_used_in_place(cuda_backend):
    from numba import cuda

    space = SPACES["mixed"]
    C, D = _inputs(space, N_POINTS, seed=20)
    args = _hyper(space, 21, Modulation())
    C_device, D_device = cuda.to_device(C), cuda.to_device(D)
    cuda_backend.fm_gram(C, D, None, None, *args)   # tables and hyperparameters cached
    before = cuda_backend.device_stats()["uploads"]
    K = cuda_backend.fm_gram(C_device, D_device, None, None, *args)
    assert cuda_backend.device_stats()["uploads"] == before
    assert_close(K, numpy_backend.fm_gram(C, D, None, None, *args))


# ------------------------------------------------------------------ set sums
def _matern(r, nu):
    if nu == 0.5:
        return np.exp(-r)
    z = np.sqrt(2 * nu) * r
    return (1 + z) * np.exp(-z) if nu == 1.5 else (1 + z + z * z / 3) * np.exp(-z)


def reference_set_gram(A, B, length_scale, nu):
    """SPEC §4: K[a, b] = (1/(m m')) Σ_i Σ_j k_ν(‖(A[a,i] − B[b,j])/ℓ‖)."""
    diff = (A[:, None, :, None, :] - B[None, :, None, :, :]) / length_scale
    return _matern(np.sqrt(np.sum(diff ** 2, axis=-1)), nu).mean(axis=(2, 3))


def reference_set_grad_reduction(A, W, length_scale, nu):
    """g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k analytically: ∂k_ν/∂log ℓ_k = c_ν(r) u_k², u = (x − x')/ℓ."""
    u = (A[:, None, :, None, :] - A[None, :, None, :, :]) / length_scale
    r = np.sqrt(np.sum(u ** 2, axis=-1))
    if nu == 0.5:
        c = np.divide(np.exp(-r), r, out=np.zeros_like(r), where=r > 0)
    else:
        z = np.sqrt(2 * nu) * r
        c = 3 * np.exp(-z) if nu == 1.5 else (5 / 3) * (1 + z) * np.exp(-z)
    dK = (c[..., None] * u ** 2).mean(axis=(2, 3))               # (N, N, d)
    return np.einsum("ab,abk->k", W, dK)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_set_gram_and_reduction(cuda_backend, nu):
    rng = np.random.default_rng(22)
    A = rng.uniform(size=(5, 3, 2))
    A[3] = A[1][::-1]                         # the same set in another order: K must not see the order
    B = rng.uniform(size=(4, 2, 2))
    length_scale = np.array([0.3, 0.8])
    K = cuda_backend.set_gram(A, A, length_scale, nu)
    assert_close(K, reference_set_gram(A, A, length_scale, nu))
    np.testing.assert_array_equal(K, K.T)
    assert_close(K[3], K[1])
    assert np.linalg.eigvalsh(K).min() > -1e-10
    assert_close(cuda_backend.set_gram(A, B, length_scale, nu), reference_set_gram(A, B, length_scale, nu))
    W = rng.standard_normal((5, 5))
    step = 1e-6
    numeric = np.array([(np.sum(W * reference_set_gram(A, A, length_scale * np.exp(step * e), nu))
                         - np.sum(W * reference_set_gram(A, A, length_scale * np.exp(-step * e), nu))) / (2 * step)
                        for e in np.eye(2)])
    actual = cuda_backend.set_grad_reduction(A, W, length_scale, nu)
    np.testing.assert_allclose(actual, numeric, rtol=1e-6, atol=1e-9)
    assert_close(actual, reference_set_grad_reduction(A, W, length_scale, nu), scale=np.sum(np.abs(W)))


# ------------------------------------------------------- hierarchical kernel (SPEC §3)
def _hier_kernel(space, base, seed, backend="numpy"):
    """A Hierarchical kernel with random γ, ρ and ℓ = 2 (r² of order 1: g' is not negligible)."""
    kernel = ff.kernels.Hierarchical(space, base=base, lengthscale=2.0, variance=1.3, backend=backend)
    rng = np.random.default_rng(seed)
    b = kernel.bounds
    theta = rng.uniform(b[:, 0] + 0.5 * (b[:, 1] - b[:, 0]), b[:, 1])
    theta[-2:] = kernel.theta[-2:]
    kernel.theta = theta
    return kernel


def _hier_backend_inputs(kernel, n, seed):
    X = kernel.space.sample_encoded(n, seed=seed)
    X[4] = X[1]                                  # a repeated point: zero distance
    V, M = kernel._inputs(X)
    return X, V, M


@pytest.mark.parametrize("space_name", ["conditional", "mixed"])
@pytest.mark.parametrize("base", ["rbf", "matern52"])
def test_hier_gram_and_reduction_match_numpy(cuda_backend, space_name, base):
    space = SPACES[space_name]
    kernel = _hier_kernel(space, base, seed=30)
    args = kernel._args()
    _, V, M = _hier_backend_inputs(kernel, 9, seed=31)
    _, V2, M2 = _hier_backend_inputs(kernel, 6, seed=32)
    is_real = args[0].astype(bool)
    assert is_real.any() and (~is_real).any()    # real and categorical columns
    if space_name == "conditional":
        # columns active in some points and inactive in others, real and categorical
        partly = M.any(axis=0) & ~M.all(axis=0)
        assert (partly & is_real).any() and (partly & ~is_real).any(), M
    K = cuda_backend.hier_gram(V, M, None, None, *args)
    assert_close(K, numpy_backend.hier_gram(V, M, None, None, *args))
    np.testing.assert_array_equal(K, K.T)
    assert_close(cuda_backend.hier_gram(V, M, V2, M2, *args), numpy_backend.hier_gram(V, M, V2, M2, *args))
    assert_close(cuda_backend.hier_gram(V2, M2, V, M, *args), numpy_backend.hier_gram(V2, M2, V, M, *args))
    W = np.random.default_rng(33).standard_normal((9, 9))       # not symmetric: both W_ab and W_ba count
    expected = numpy_backend.hier_grad_reduction(V, M, W, *args)
    actual = cuda_backend.hier_grad_reduction(V, M, W, *args)
    # rounding bound of each sum: the same sums over |W| (t and u: Ω ≤ 0 has one sign)
    scales = numpy_backend.hier_grad_reduction(V, M, np.abs(W), *args)
    for label, got, want, scale in zip(("t", "u", "g_variance"), actual, expected, scales):
        assert np.shape(got) == np.shape(want), label
        assert_close(got, want, scale=np.abs(scale), err_msg=label)
    assert np.abs(expected[0]).max() > 1e-3 and np.abs(expected[1]).max() > 1e-3   # g' is not negligible
    assert isinstance(actual[2], float)


def test_hier_reduction_matches_finite_differences(cuda_backend):
    """Σ W ∂K/∂log ℓ = −2 Σ_i t_i and Σ W ∂K/∂log σ² = Σ W∘K, from the cuda Gram itself."""
    kernel = _hier_kernel(SPACES["conditional"], "matern52", seed=34)
    is_real, omega, rho_pi, lengthscale, variance, profile = kernel._args()
    _, V, M = _hier_backend_inputs(kernel, 7, seed=35)
    W = np.random.default_rng(36).standard_normal((7, 7))
    t, _, g_variance = cuda_backend.hier_grad_reduction(V, M, W, *kernel._args())
    step = 1e-6

    def weighted(log_lengthscale):
        return np.sum(W * cuda_backend.hier_gram(V, M, None, None, is_real, omega, rho_pi, np.exp(log_lengthscale),
                                                 variance, profile))

    numeric = (weighted(np.log(lengthscale) + step) - weighted(np.log(lengthscale) - step)) / (2 * step)
    np.testing.assert_allclose(-2.0 * t.sum(), numeric, rtol=1e-6, atol=1e-9)
    assert g_variance == pytest.approx(weighted(np.log(lengthscale)), rel=1e-12)


@pytest.mark.parametrize("base", ["rbf", "matern52"])
def test_hierarchical_kernel_agrees_with_numpy_through_the_public_api(cuda_backend, base):
    space = SPACES["conditional"]
    fast = _hier_kernel(space, base, seed=37, backend="cuda")
    reference = _hier_kernel(space, base, seed=37, backend="numpy")
    X = space.sample_encoded(N_POINTS, seed=38)
    Y = space.sample_encoded(4, seed=39)
    W = np.random.default_rng(40).standard_normal((N_POINTS, N_POINTS))
    W = W + W.T
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # served by the GPU kernels: no fallback warning
        K = fast(X)
        K_cross = fast(X, Y)
        gradient = fast.gradient_reduction(X, W)
    assert_close(K, reference(X))
    assert_close(K_cross, reference(X, Y))
    _, dK = reference(X, eval_gradient=True)
    assert_close(gradient, reference.gradient_reduction(X, W), scale=np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1)))


def test_hier_bad_inputs_raise_typed_errors_naming_the_argument(cuda_backend):
    kernel = _hier_kernel(SPACES["conditional"], "rbf", seed=41)
    args = kernel._args()
    _, V, M = _hier_backend_inputs(kernel, 5, seed=42)
    with pytest.raises(InvalidValueError, match=r"M1 must have the shape of V1, \(5, 9\), got \(5, 8\)"):
        cuda_backend.hier_gram(V, M[:, :-1], None, None, *args)
    with pytest.raises(InvalidValueError, match=r"V2 must have shape \(N, 9\), got \(5, 8\)"):
        cuda_backend.hier_gram(V, M, V[:, :-1], M[:, :-1], *args)
    with pytest.raises(InvalidValueError, match="V2 and M2 must both be given"):
        cuda_backend.hier_gram(V, M, V, None, *args)
    with pytest.raises(InvalidValueError, match="M must hold 0/1 activity flags"):
        cuda_backend.hier_grad_reduction(V, M.astype(float), np.zeros((5, 5)), *args)
    with pytest.raises(InvalidValueError, match="omega must be 9 finite values"):
        cuda_backend.hier_gram(V, M, None, None, args[0], args[1][:-1], *args[2:])
    with pytest.raises(InvalidValueError, match="profile must be 0"):
        cuda_backend.hier_gram(V, M, None, None, *args[:-1], 2)
    with pytest.raises(InvalidValueError, match="lengthscale must be positive"):
        cuda_backend.hier_gram(V, M, None, None, *args[:3], 0.0, *args[4:])
    with pytest.raises(InvalidValueError, match=r"W must have shape \(5, 5\)"):
        cuda_backend.hier_grad_reduction(V, M, np.zeros((5, 4)), *args)
    n_dims = cuda_backend._kernels().MAX_HIER_DIMS + 1
    with pytest.raises(BackendUnavailableError, match="up to 64 encoded columns"):
        cuda_backend.hier_grad_reduction(np.zeros((2, n_dims)), np.ones((2, n_dims), dtype=np.uint8),
                                         np.zeros((2, 2)), np.ones(n_dims, dtype=np.uint8), np.ones(n_dims),
                                         np.ones(n_dims), 1.0, 1.0, 0)


class _BrokenBackend:
    """The NumPy reference (and the set formulas above) with one function off by 1e-6 relative."""

    name = "broken"

    def __getattr__(self, function_name):
        return getattr(numpy_backend, function_name)

    def fm_grad_reduction(self, *args):
        g_lengthscale, g_alpha, g_beta, g_variance = numpy_backend.fm_grad_reduction(*args)
        return g_lengthscale, g_alpha * (1 + 1e-6), g_beta, g_variance

    set_gram = staticmethod(reference_set_gram)
    set_grad_reduction = staticmethod(reference_set_grad_reduction)


def test_time_gpu_fails_loudly_on_a_parity_mismatch(monkeypatch, capsys):
    """The GPU benchmark's parity check (``fastfm time gpu``) flags exactly the wrong function and exits non-zero."""
    from fastfm.cli import gpu, main

    failures = gpu.check_parity(_BrokenBackend(), n_points=6)
    assert failures and all("fm_grad_reduction" in failure for failure in failures), failures
    assert len(failures) == 6                      # 2 spaces × 3 modulations
    monkeypatch.setattr(gpu, "available_backends", lambda: ["cuda", "numpy"])
    monkeypatch.setattr(gpu, "get_backend", lambda name: _BrokenBackend())
    monkeypatch.setattr(gpu, "_describe_gpu", lambda: "GPU: test double")
    assert main(["time", "gpu", "--parity-size", "6"]) == 1
    assert "PARITY FAILED" in capsys.readouterr().err


# ------------------------------------------------------------------ errors
def test_bad_inputs_raise_typed_errors_naming_the_argument(cuda_backend):
    space = SPACES["mixed"]
    C, D = _inputs(space, 5, seed=23)
    args = _hyper(space, 24, Modulation())
    bad = D.copy()
    bad[2, 1] = space.n_states[1]
    with pytest.raises(InvalidValueError, match=r"D1\[2, 1\] = 3"):
        cuda_backend.fm_gram(C, bad, None, None, *args)
    with pytest.raises(InvalidValueError, match="D2 must hold integer state indices"):
        cuda_backend.fm_gram(C, D, C, D.astype(float), *args)
    with pytest.raises(InvalidValueError, match=r"C2 must have shape \(5, 2\), got \(5, 3\)"):
        cuda_backend.fm_gram(C, D, np.zeros((5, 3)), D, *args)
    with pytest.raises(InvalidValueError, match=r"W must have shape \(5, 5\)"):
        cuda_backend.fm_grad_reduction(C, D, np.zeros((5, 4)), *args)
    with pytest.raises(InvalidValueError, match="var_index must lie in"):
        cuda_backend.fm_neighbour_gram(C[0], D[0], C, D, np.array([9]), np.array([0]), *args)
    A = np.zeros((3, 2, 2))
    with pytest.raises(InvalidValueError, match="nu must be one of"):
        cuda_backend.set_gram(A, A, np.ones(2), 2.0)
    with pytest.raises(InvalidValueError, match="length_scale must be 2 positive"):
        cuda_backend.set_gram(A, A, np.array([1.0, -1.0]), 2.5)
    with pytest.raises(InvalidValueError, match=r"B must have shape \(n_sets, set_size, 2\)"):
        cuda_backend.set_gram(A, np.zeros((3, 2, 3)), np.ones(2), 2.5)


def test_reduction_refuses_more_variables_than_its_scratch_space(cuda_backend):
    kernels = cuda_backend._kernels()
    A = np.zeros((2, 1, kernels.MAX_CONTINUOUS + 1))
    with pytest.raises(BackendUnavailableError, match="up to 64 continuous"):
        cuda_backend.set_grad_reduction(A, np.zeros((2, 2)), np.ones(A.shape[2]), 2.5)


# -------------------------------------------------------- selection ("auto")
def test_auto_never_picks_the_simulator(cuda_backend):
    if not cuda_backend.simulator_requested():
        pytest.skip("running on a real GPU")  # the simulator case is what CI checks
    assert "cuda" in ff.available_backends()           # loads: it can be asked for explicitly
    assert _backends.resolve_backend_name("auto") in ("cpp", "numpy")
    assert not isinstance(_backends.get_backend("auto"), _backends.SizeDispatch)
    out = io.StringIO()
    ff.show_config(file=out)
    assert "CUDA: Numba's CUDA simulator" in out.getvalue()


class _FakeBackend:
    def __init__(self, name, functions):
        self.name = name
        for function in functions:
            setattr(self, function, lambda *args, _label=name: _label)


def test_size_dispatch_sends_large_calls_to_the_gpu(monkeypatch):
    gpu = _FakeBackend("cuda", ["fm_gram", "fm_grad_reduction", "set_gram", "hier_gram", "hier_grad_reduction"])
    cpu = _FakeBackend("cpp", ["fm_gram", "fm_grad_reduction", "set_gram", "fm_cross_gradient", "hier_gram",
                               "hier_grad_reduction"])
    monkeypatch.setattr(_backends, "_load", lambda name: gpu if name == "cuda" else cpu)
    monkeypatch.setattr(_backends, "CUDA_MIN_TERMS", 500)
    monkeypatch.setattr(_backends, "CUDA_SET_MIN_TERMS", 1000)
    monkeypatch.setattr(_backends, "CUDA_HIER_MIN_TERMS", 2000)
    spectra = SPACES["nominal_only"].packed_spectra          # two complete graphs: 2 + 2 + 1 = 5 terms a pair
    assert _backends._terms_per_pair(spectra) == 5
    assert _backends._terms_per_pair(SPACES["mixed"].packed_spectra) == 1 + 6 + 3 + 2 + 4  # paths 6, 3; K3; 6-cycle
    auto = _backends.SizeDispatch(cpu)
    small, large = np.zeros((9, 1)), np.zeros((10, 1))
    assert auto.fm_gram(None, small, None, None, spectra) == "cpp"          # 81 pairs × 5 terms
    assert auto.fm_gram(None, large, None, None, spectra) == "cuda"         # 100 × 5
    assert auto.fm_gram(None, small, None, np.zeros((12, 1)), spectra) == "cuda"
    assert auto.fm_grad_reduction(None, None, np.zeros((10, 10)), spectra) == "cuda"
    assert auto.fm_grad_reduction(None, None, np.zeros((9, 9)), spectra) == "cpp"
    assert auto.set_gram(np.zeros((5, 6, 2)), None) == "cpp"                # 900 element pairs
    assert auto.set_gram(np.zeros((5, 6, 2)), np.zeros((6, 6, 2))) == "cuda"
    assert auto.fm_cross_gradient(None, np.zeros((100, 1)), None, np.zeros((100, 1)), spectra) == "cpp"  # GPU lacks it
    V = np.zeros((10, 19))                                                  # 100 pairs × 20 terms
    assert auto.hier_gram(V, None, None, None) == "cuda"
    assert auto.hier_gram(V[:9], None, None, None) == "cpp"                 # 81 × 20
    assert auto.hier_gram(V[:9], None, np.zeros((12, 19)), None) == "cuda"  # 108 × 20
    assert auto.hier_grad_reduction(V, None, np.zeros((10, 10))) == "cuda"
    assert auto.hier_grad_reduction(V[:9], None, np.zeros((9, 9))) == "cpp"
    with pytest.raises(AttributeError):
        auto.fm_neighbour_gram_batch                                        # the CPU backend lacks it: kernels fall back
    # keyword arguments pass through to the function chosen (a part sum's weights1=, weights2=)
    cpu.fm_cross_gradient_sum = lambda *args, weights1=None, weights2=None: ("cpp", weights1, weights2)
    assert auto.fm_cross_gradient_sum(None, None, weights1="w1", weights2="w2") == ("cpp", "w1", "w2")

    def refuse(*args):
        raise BackendUnavailableError("numba finds no usable CUDA device")

    gpu.fm_gram = refuse
    with pytest.warns(RuntimeWarning, match="could not use the GPU .numba finds no usable CUDA device"):
        assert auto.fm_gram(None, large, None, None, spectra) == "cpp"


def test_import_does_not_import_numba_and_cuda_needs_a_gpu_or_the_simulator():
    """In a fresh process without the simulator: no numba on import, and a clear error without a GPU."""
    code = textwrap.dedent("""
        import sys
        import fastfm as ff
        assert "numba" not in sys.modules, "import fastfm imported numba"
        status = ff.backend_status()["cuda"]
        assert "numba" not in sys.modules, "backend_status imported numba"
        from fastfm._backends import cuda
        if cuda.driver_gpu_count() == 0:
            assert "no CUDA GPU" in status, status
            try:
                ff.kernels.ModLap(ff.Space([ff.Categorical("c", [0, 1])]), backend="cuda")([[0.0]])
            except ff.exceptions.BackendUnavailableError as error:
                assert "no CUDA GPU" in str(error)
            else:
                raise AssertionError("backend='cuda' ran without a GPU")
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(ff.__file__))  # the fastfm this session tests
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr
