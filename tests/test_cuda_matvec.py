"""The CUDA matrix-free product K(X1, X2) V (``cuda.fm_gram_matvec``) against the NumPy reference.

Without a GPU the kernel runs under Numba's CUDA simulator (each GPU thread a
Python thread), switched on by the ``cuda_backend`` fixture of
``test_cuda_backend.py`` (see its module docstring), so sizes stay small:
N = 24 rows, M = 17 columns, i.e. several row tiles and column tiles of the
simulator's launch shape with ragged last tiles.  Tolerance: 1e-12 relative to
Σ_b |K_ab| |V_bc|, the rounding bound of each output entry.
"""
import numpy as np
import pytest
from _spaces import SPACES
from test_backend_parity import MODULATIONS, _hyper, _inputs, assert_close
from test_cuda_backend import cuda_backend  # noqa: F401  (the fixture: GPU, else the simulator)

import fastfm as ff
from fastfm import _backends
from fastfm.kernels.matvec import kernel_matvec
from fastfm._backends import numpy_backend
from fastfm.exceptions import InvalidValueError

pytest.importorskip("numba", reason="numba is not installed (it is in the 'test' extra)")

N_ROWS = 24
N_COLUMNS = 17


def _check_matvec(cuda_backend, space, modulation, symmetric, n_vectors, seed=1):
    C1, D1 = _inputs(space, N_ROWS, seed=seed)      # row 4 repeats row 1: a zero distance
    C2, D2 = (None, None) if symmetric else _inputs(space, N_COLUMNS, seed=seed + 1)
    hyper = _hyper(space, seed + 2, modulation)
    V = np.random.default_rng(seed + 3).standard_normal((N_ROWS if symmetric else N_COLUMNS, n_vectors))
    actual = cuda_backend.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    expected = numpy_backend.fm_gram_matvec(C1, D1, C2, D2, V, *hyper)
    bound = np.abs(numpy_backend.fm_gram(C1, D1, C2, D2, *hyper)) @ np.abs(V)
    assert_close(actual, expected, scale=bound, err_msg=f"K V, symmetric={symmetric}, r={n_vectors}")


# ModLap (Laplace family, one coefficient), a three-coefficient Laplace family with t = 1.3, diffusion
@pytest.mark.parametrize("modulation_name", ["modlap", "family_t1.3", "diffusion"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "cross"])
@pytest.mark.parametrize("n_vectors", [1, 3])
def test_matvec_matches_numpy_reference(cuda_backend, modulation_name, symmetric, n_vectors):  # noqa: F811
    # "mixed": continuous (one log-scaled), ordinal (integer, ordinal), nominal and graph variables
    _check_matvec(cuda_backend, SPACES["mixed"], MODULATIONS[modulation_name], symmetric, n_vectors)


def test_matvec_splits_more_vectors_than_one_launch_holds(cuda_backend):  # noqa: F811
    """r > MAX_VECTORS: the host launches once per chunk of vectors (strided device views of V and out)."""
    space = SPACES["func3c_like"]
    n_vectors = cuda_backend._matvec_kernels().MAX_VECTORS + 2
    C, D = _inputs(space, 9, seed=5)
    hyper = _hyper(space, 6, MODULATIONS["modlap"])
    V = np.random.default_rng(7).standard_normal((9, n_vectors))
    assert_close(cuda_backend.fm_gram_matvec(C, D, None, None, V, *hyper),
                 numpy_backend.fm_gram_matvec(C, D, None, None, V, *hyper),
                 scale=np.abs(numpy_backend.fm_gram(C, D, None, None, *hyper)) @ np.abs(V))


def test_matvec_without_continuous_variables_and_empty_sizes(cuda_backend):  # noqa: F811
    space = ff.Space([ff.Categorical("c", list("abc")), ff.Integer("i", 0, 4)])   # Dc = 0: a dummy column
    C, D = _inputs(space, 10, seed=8)
    hyper = _hyper(space, 9, MODULATIONS["diffusion"])
    V = np.random.default_rng(10).standard_normal((10, 2))
    assert_close(cuda_backend.fm_gram_matvec(C, D, None, None, V, *hyper),
                 numpy_backend.fm_gram_matvec(C, D, None, None, V, *hyper),
                 scale=np.abs(numpy_backend.fm_gram(C, D, None, None, *hyper)) @ np.abs(V))
    assert cuda_backend.fm_gram_matvec(C, D, None, None, np.zeros((10, 0)), *hyper).shape == (10, 0)
    assert cuda_backend.fm_gram_matvec(C[:0], D[:0], C, D, V, *hyper).shape == (0, 2)
    np.testing.assert_array_equal(cuda_backend.fm_gram_matvec(C, D, C[:0], D[:0], V[:0], *hyper), np.zeros((10, 2)))


def test_matvec_uploads_only_the_vectors_on_repeated_calls(cuda_backend):  # noqa: F811
    """PCG calls K V with a new V each iteration: X, the tables and the hyperparameters stay on the device."""
    space = SPACES["mixed"]
    C, D = _inputs(space, 9, seed=11)
    hyper = _hyper(space, 12, MODULATIONS["modlap"])
    rng = np.random.default_rng(13)
    cuda_backend.fm_gram_matvec(C, D, None, None, rng.standard_normal((9, 2)), *hyper)
    before = cuda_backend.device_stats()
    V = rng.standard_normal((9, 2))
    actual = cuda_backend.fm_gram_matvec(C, D, None, None, V, *hyper)
    after = cuda_backend.device_stats()
    assert after["uploads"] - before["uploads"] == 1      # V only
    assert after["launches"] - before["launches"] == 1
    assert_close(actual, numpy_backend.fm_gram_matvec(C, D, None, None, V, *hyper),
                 scale=np.abs(numpy_backend.fm_gram(C, D, None, None, *hyper)) @ np.abs(V))


def test_kernel_matvec_uses_the_cuda_product(cuda_backend):  # noqa: F811
    """kernel_matvec on a backend="cuda" FM kernel: against the dense product, 1-d and 2-d V."""
    space = SPACES["func3c_like"]
    X = space.sample_encoded(11, seed=14)
    Y = space.sample_encoded(6, seed=15)
    kernel = ff.kernels.ModDif(space, lengthscale=[0.3, 0.7], alpha=[0.5, 1.0, 2.0], beta=0.8, variance=1.3,
                               backend="cuda")
    reference = ff.kernels.ModDif(space, lengthscale=[0.3, 0.7], alpha=[0.5, 1.0, 2.0], beta=0.8, variance=1.3,
                                  backend="numpy")
    v = np.random.default_rng(16).standard_normal(6)
    assert_close(kernel_matvec(kernel, X, v, Y), reference(X, Y) @ v,
                 scale=np.abs(reference(X, Y)) @ np.abs(v))
    V = np.random.default_rng(17).standard_normal((11, 2))
    assert_close(kernel_matvec(kernel, X, V), reference(X) @ V, scale=np.abs(reference(X)) @ np.abs(V))


def test_matvec_bad_inputs_raise_errors_naming_the_argument(cuda_backend):  # noqa: F811
    space = SPACES["mixed"]
    C, D = _inputs(space, 6, seed=18)
    hyper = _hyper(space, 19, MODULATIONS["modlap"])
    with pytest.raises(InvalidValueError, match=r"V must have shape \(6, n_vectors\), got \(5, 2\)"):
        cuda_backend.fm_gram_matvec(C, D, None, None, np.ones((5, 2)), *hyper)
    with pytest.raises(InvalidValueError, match=r"V must have shape \(4, n_vectors\), got \(6,\)"):
        cuda_backend.fm_gram_matvec(C, D, C[:4], D[:4], np.ones(6), *hyper)
    with pytest.raises(ValueError, match="V must have shape"):         # the error is also a ValueError, like cpp's
        cuda_backend.fm_gram_matvec(C, D, None, None, np.ones((6, 2, 1)), *hyper)
    with pytest.raises(InvalidValueError, match="C2 and D2 must both be given"):
        cuda_backend.fm_gram_matvec(C, D, C, None, np.ones((6, 1)), *hyper)
    with pytest.raises(InvalidValueError, match=r"C2 must have shape \(6, 2\), got \(6, 3\)"):
        cuda_backend.fm_gram_matvec(C, D, np.zeros((6, 3)), D, np.ones((6, 1)), *hyper)


class _FakeBackend:
    def __init__(self, name, functions):
        self.name = name
        for function in functions:
            setattr(self, function, lambda *args, _label=name: _label)


def test_size_dispatch_sends_large_matvecs_to_the_gpu(monkeypatch):
    """work = rows × columns × terms per pair, as fm_gram (the number of vectors does not count)."""
    gpu = _FakeBackend("cuda", ["fm_gram_matvec"])
    cpu = _FakeBackend("cpp", ["fm_gram_matvec"])
    monkeypatch.setattr(_backends, "_load", lambda name: gpu if name == "cuda" else cpu)
    monkeypatch.setattr(_backends, "CUDA_MIN_TERMS", 500)
    spectra = SPACES["nominal_only"].packed_spectra          # 5 terms a pair
    auto = _backends.SizeDispatch(cpu)
    small, large = np.zeros((9, 1)), np.zeros((10, 1))
    assert auto.fm_gram_matvec(None, small, None, None, np.zeros((9, 20)), spectra) == "cpp"   # 81 × 5
    assert auto.fm_gram_matvec(None, large, None, None, np.zeros((10, 1)), spectra) == "cuda"  # 100 × 5
    assert auto.fm_gram_matvec(None, small, None, np.zeros((12, 1)), np.zeros((12, 1)), spectra) == "cuda"
