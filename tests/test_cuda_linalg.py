"""The GP likelihood's linear algebra on the GPU (``cuda_linalg``) against LAPACK and the NumPy reference.

Without a GPU the kernels run under Numba's CUDA simulator, switched on by the
``cuda_backend`` fixture of ``test_cuda_backend.py`` (see its module docstring).
The simulator's panels are 8 columns wide and its update tiles 8 × 8 (on a GPU
32 and 64), so N = 9 and 17 (33 and 65) exercise two and three panels, ragged
last panels and tiles, and every kernel of the blocked Cholesky, inverse and K⁻¹.
"""
import numpy as np
import pytest
from _spaces import SPACES
from test_backend_parity import assert_close
from test_cuda_backend import _hier_kernel
from test_cuda_backend import cuda_backend  # noqa: F401  (the fixture: GPU, else the simulator)

import fastfm as ff
from fastfm import _backends
from fastfm.exceptions import InvalidValueError, NotPositiveDefiniteError
from fastfm.gp._linalg import _JITTER_SCHEDULE, _cholesky_in_place

pytest.importorskip("numba", reason="numba is not installed (it is in the 'test' extra)")


def _spd(n, seed, ridge=0.1):
    A = np.random.default_rng(seed).standard_normal((n, n))
    return A @ A.T / n + ridge * np.eye(n)


def _panel():
    from fastfm._backends import _cuda_linalg_kernels   # after the fixture chose the simulator or the GPU
    return _cuda_linalg_kernels.PANEL


@pytest.mark.parametrize("panels", [0, 1, 2])
def test_factor_solve_and_weights_match_lapack(cuda_backend, panels):
    from numba import cuda

    from fastfm._backends.cuda_linalg import DeviceCholesky
    n = panels * _panel() + 1               # 1, 9, 17 under the simulator; 1, 33, 65 on a GPU
    K = _spd(n, seed=n)
    noise = 0.05
    y = np.random.default_rng(n + 1).standard_normal(n)
    factor = DeviceCholesky(cuda.to_device(K), noise)
    Kn = K + noise * np.eye(n)
    L = np.linalg.cholesky(Kn)
    assert factor.jitter == 0.0
    assert_close(factor.diagonal, np.diag(L))
    assert factor.log_determinant == pytest.approx(np.linalg.slogdet(Kn)[1], rel=1e-12, abs=1e-12)
    quad, alpha = factor.solve(y)
    expected_alpha = np.linalg.solve(Kn, y)
    assert quad == pytest.approx(y @ expected_alpha, rel=1e-12)
    assert_close(alpha.copy_to_host(), expected_alpha)
    W, w_diag = factor.likelihood_weights(alpha)
    expected_W = 0.5 * (np.outer(expected_alpha, expected_alpha) - np.linalg.inv(Kn))
    assert_close(w_diag, np.diag(expected_W))
    W = W.copy_to_host()
    assert np.all(np.diag(W) == 0.0)
    assert np.array_equal(W, W.T)            # both triangles written, bit for bit
    assert_close(W, expected_W - np.diag(np.diag(expected_W)), scale=np.max(np.abs(expected_W)))


def test_singular_gram_gets_the_hosts_jitter(cuda_backend):
    """Duplicate points and no noise: the first factorisation fails and the retry adds the jitter the
    host's ``_cholesky_in_place`` adds, from the same schedule."""
    from numba import cuda

    from fastfm._backends.cuda_linalg import DeviceCholesky
    X = np.random.default_rng(3).uniform(size=(10, 2))
    X[7] = X[2]
    X[9] = X[2]
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1) / 0.3 ** 2)
    L, jitter = _cholesky_in_place(K.copy())
    assert jitter > 0
    factor = DeviceCholesky(cuda.to_device(K), 0.0, _JITTER_SCHEDULE)
    assert factor.jitter == jitter
    # the later pivots L_ii² = K_ii + jitter − Σ_l L_il² are of the size of the jitter: they carry
    # rounding of the size of ε·K_ii, so they agree absolutely (to RTOL·K_ii), not relatively
    assert_close(factor.diagonal ** 2, np.diag(L) ** 2, scale=1.0)


def test_failures_raise_typed_errors_naming_the_problem(cuda_backend):
    from numba import cuda

    from fastfm._backends.cuda_linalg import DeviceCholesky
    K = _spd(6, seed=4)
    K[5, 3] = K[3, 5] = np.nan
    with pytest.raises(NotPositiveDefiniteError, match=r"non-finite value K\[5, 3\]=nan at theta=x"):
        DeviceCholesky(cuda.to_device(K), 0.01, _JITTER_SCHEDULE, context=lambda: " at theta=x")
    with pytest.raises(NotPositiveDefiniteError, match="non-positive mean diagonal"):
        DeviceCholesky(cuda.to_device(-np.eye(3)), 0.01, _JITTER_SCHEDULE)
    indefinite = np.eye(3)
    indefinite[0, 2] = indefinite[2, 0] = 2.0
    with pytest.raises(NotPositiveDefiniteError, match=r"not positive definite even with jitter 1e-04"):
        DeviceCholesky(cuda.to_device(indefinite), 0.0, _JITTER_SCHEDULE)
    with pytest.raises(InvalidValueError, match="K must be a device array") as error:
        DeviceCholesky(np.eye(3), 0.1)
    assert error.value.parameter == "K"
    with pytest.raises(InvalidValueError, match="K must be a square float64 device array"):
        DeviceCholesky(cuda.to_device(np.eye(3)[:2]), 0.1)
    factor = DeviceCholesky(cuda.to_device(np.eye(3)), 0.1)
    with pytest.raises(InvalidValueError, match=r"y must have shape \(3,\)"):
        factor.solve(np.ones(4))


def _recorded_transfers(monkeypatch):
    """Shapes of every device ↔ host copy from here on (uploads through the backend and array methods)."""
    from numba import cuda

    from fastfm._backends import cuda as cuda_module
    shapes = []
    device_type = type(cuda.device_array(1))
    copy_to_host, copy_to_device, to_device = device_type.copy_to_host, device_type.copy_to_device, cuda.to_device

    def recording_copy_to_host(self, *args, **kwargs):
        shapes.append(("download", self.shape))
        return copy_to_host(self, *args, **kwargs)

    def recording_copy_to_device(self, source, *args, **kwargs):
        shapes.append(("upload", np.shape(source)))
        return copy_to_device(self, source, *args, **kwargs)

    def recording_to_device(array, *args, **kwargs):
        shapes.append(("upload", np.shape(array)))
        return to_device(array, *args, **kwargs)

    monkeypatch.setattr(device_type, "copy_to_host", recording_copy_to_host)
    monkeypatch.setattr(device_type, "copy_to_device", recording_copy_to_device)
    monkeypatch.setattr(cuda, "to_device", recording_to_device)
    monkeypatch.setattr(cuda_module, "_download", lambda array: shapes.append(("download", array.shape)))
    return shapes


def _fm_kernel(space, backend):
    return ff.kernels.ModLap(space, lengthscale=0.4, alpha=0.7, beta=1.3, variance=1.2, backend=backend)


@pytest.mark.parametrize("space_name, make_kernel", [("mixed", _fm_kernel),
                                                     ("conditional", lambda space, backend: _hier_kernel(
                                                         space, "matern52", seed=5, backend=backend))],
                         ids=["fm", "hierarchical"])
def test_gp_likelihood_on_the_device_matches_the_reference_without_n_by_n_transfers(cuda_backend, monkeypatch,
                                                                                     space_name, make_kernel):
    """FM terms split W's diagonal off (the a = b pairs), the generic terms of the hierarchical kernel
    keep it: both against the NumPy reference's likelihood and gradient."""
    space = SPACES[space_name]
    n = 2 * _panel() - 4                    # 12 under the simulator
    X = space.sample_encoded(n, seed=3)
    X[5] = X[2]                              # a zero distance: the a = b share of the β gradients
    y = np.sin(1.3 * np.arange(n)) + 0.1 * np.arange(n)
    results = {}
    for backend in ("numpy", "cuda"):
        gp = ff.GaussianProcessRegressor(make_kernel(space, backend), optimizer=None, noise=1e-3).fit(X, y)
        assert (gp.kernel_._likelihood_terms(gp.X_train_).device is not None) == (backend == "cuda")
        theta = np.append(gp.kernel_.theta, np.log(2e-3))
        with monkeypatch.context() as patch:
            shapes = _recorded_transfers(patch) if backend == "cuda" else []
            results[backend] = (gp.log_marginal_likelihood(theta, eval_gradient=True),
                                gp.log_marginal_likelihood(theta))
        assert not [shape for shape in shapes if np.prod(shape[1]) >= n * n], shapes   # O(N) numbers only
    (lml, grad), value = results["cuda"]
    (expected_lml, expected_grad), expected_value = results["numpy"]
    assert lml == pytest.approx(expected_lml, rel=1e-11)
    assert value == pytest.approx(expected_value, rel=1e-11)
    assert_close(grad, expected_grad, scale=np.max(np.abs(expected_grad)))


def test_gpu_module_for_follows_the_size_dispatch(monkeypatch):
    gpu = type("FakeCuda", (), {"name": "cuda"})()
    cpu = type("FakeCpp", (), {"name": "cpp", "fm_gram": staticmethod(lambda *args: None)})()
    monkeypatch.setattr(_backends, "_load", lambda name: gpu if name == "cuda" else cpu)
    monkeypatch.setattr(_backends, "CUDA_MIN_TERMS", 500)
    spectra = SPACES["nominal_only"].packed_spectra          # 5 terms a pair
    auto = _backends.SizeDispatch(cpu)
    assert _backends.gpu_module_for(auto, "fm_gram", (None, np.zeros((10, 1)), None, None, spectra)) is gpu
    assert _backends.gpu_module_for(auto, "fm_gram", (None, np.zeros((9, 1)), None, None, spectra)) is None
    assert _backends.gpu_module_for(cpu, "fm_gram", (None, np.zeros((99, 1)), None, None, spectra)) is None
    assert _backends.gpu_module_for(gpu, "fm_gram", (None, np.zeros((1, 1)), None, None, spectra)) is gpu


def test_out_of_device_memory_is_a_typed_error_and_the_gp_falls_back_to_the_host(cuda_backend, monkeypatch):
    from numba import cuda

    from fastfm._backends import cuda as cuda_module
    from fastfm.exceptions import BackendUnavailableError

    class FakeCudaAPIError(Exception):
        code = 2                                  # CUDA_ERROR_OUT_OF_MEMORY

    def full_device(shape, *args, **kwargs):
        raise FakeCudaAPIError("out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(cuda, "device_array", full_device)
        with pytest.raises(BackendUnavailableError, match=r"no room for the Gram \(shape \(5, 5\), float64"):
            cuda_module._device_matrix((5, 5), "the Gram")

    space = SPACES["func3c_like"]
    X = space.sample_encoded(10, seed=8)
    y = np.cos(np.arange(10.0))
    values = {}
    for backend in ("numpy", "cuda"):
        gp = ff.GaussianProcessRegressor(_fm_kernel(space, backend), optimizer=None, noise=1e-2).fit(X, y)
        theta = np.append(gp.kernel_.theta, np.log(1e-2))
        terms = gp.kernel_._likelihood_terms(gp.X_train_)
        if backend == "cuda":
            def no_room(*args, **kwargs):
                raise BackendUnavailableError("the GPU has no room for the Cholesky factor")
            monkeypatch.setattr("fastfm._backends.cuda_linalg.DeviceCholesky", no_room)
            with pytest.warns(RuntimeWarning, match="cannot stay on the GPU .the GPU has no room"):
                values[backend] = gp._lml(terms, theta[:-1], gp.y_train_, theta[-1], True)
            assert terms.device is None           # the later evaluations of this fit go to the host directly
        else:
            values[backend] = gp._lml(terms, theta[:-1], gp.y_train_, theta[-1], True)
    assert values["cuda"][0] == pytest.approx(values["numpy"][0], rel=1e-11)
    assert_close(values["cuda"][1], values["numpy"][1], scale=np.max(np.abs(values["numpy"][1])))


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_restarts_run_one_after_another_when_the_likelihood_is_on_the_gpu(cuda_backend, monkeypatch, backend):
    """In threads the starts would queue on the one GPU, each holding two N × N buffers."""
    from fastfm.gp import fitting

    recorded = []

    class Recorded(Exception):
        pass

    def recording_thread_map(n_items, parallel=True, max_workers=None):
        recorded.append(parallel)
        raise Recorded

    monkeypatch.setattr(fitting, "thread_map", recording_thread_map)
    space = SPACES["func3c_like"]
    n = int(np.ceil(np.sqrt(fitting._PARALLEL_RESTART_MIN_WORK / space.n_dims)))   # threads on the host
    X = space.sample_encoded(n, seed=2)
    with pytest.raises(Recorded):
        ff.GaussianProcessRegressor(_fm_kernel(space, backend), n_restarts=3).fit(X, np.arange(n, dtype=float))
    assert recorded == [backend != "cuda"]
