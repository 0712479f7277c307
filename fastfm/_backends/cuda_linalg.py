"""The exact GP likelihood's linear algebra on the GPU, so that a fit's Gram never leaves the device.

On the host path a likelihood evaluation at N points downloads the N × N Gram
for a LAPACK Cholesky and uploads the N × N weights W of the gradient
reduction.  :class:`DeviceCholesky` does that work where the Gram already is
(Numba CUDA kernels in ``_cuda_linalg_kernels.py``): the Cholesky factor, the
inverse of the factor, K⁻¹ and W, with O(N) numbers crossing the bus per
evaluation (diag K and diag L down, y up, z = L⁻¹y down for yᵀα = zᵀz, diag W
down for the noise gradient).

Flops match the host's dpotrf + dpotri (N³ in all).  Memory: two N × N device
buffers (the Gram, kept for the jitter retries and then reused for L⁻¹, and
the factor, reused for K⁻¹ and W).

Like the other CUDA modules, importing this one does not import numba.
"""
import numpy as np

from ..exceptions import InvalidValueError, NotPositiveDefiniteError
from . import cuda as _backend
from .cuda import _blocks, _cuda, _device_matrix, _on_device

__all__ = ["DeviceCholesky", "diagonal"]

# Row parts of α = Xᵀ z: enough blocks to occupy the GPU when N / VECTOR_BLOCK alone would not.
_TRANSPOSE_PRODUCT_PARTS = 32

_kernels_module = None


def _kernels():
    global _kernels_module
    if _kernels_module is None:
        _backend._kernels()   # raises BackendUnavailableError with the reason when numba / a GPU is missing
        from . import _cuda_linalg_kernels
        _kernels_module = _cuda_linalg_kernels
    return _kernels_module


def _launch(kernel, grid, block, *args):
    _backend._launch(kernel, grid, block, *args)   # looked up at each call: the tests record launches there


def _square_grid(N, side):
    return (_blocks(N, side), _blocks(N, side)), (side, side)


def _device_square(K, label):
    device = _on_device(K)
    if device is None:
        raise InvalidValueError(f"{label} must be a device array (e.g. cuda.fm_gram_device), got "
                                f"{type(K).__name__}", label, type(K).__name__)
    if len(device.shape) != 2 or device.shape[0] != device.shape[1] or device.dtype != np.float64:
        raise InvalidValueError(f"{label} must be a square float64 device array, got shape {device.shape} and "
                                f"dtype {device.dtype}", label, device.shape)
    return device


def diagonal(K):
    """diag(K) of a square device array, on the host (N numbers)."""
    kernels = _kernels()
    K = _device_square(K, "K")
    out = _cuda().device_array(K.shape[0])
    if K.shape[0]:
        _launch(kernels.copy_diagonal, _blocks(K.shape[0], kernels.VECTOR_BLOCK), kernels.VECTOR_BLOCK, K, out)
    return out.copy_to_host()


class DeviceCholesky:
    """L Lᵀ = K + (noise + jitter)·I for a device Gram K, and the likelihood terms that follow from it.

    Parameters
    ----------
    K : device array of shape (N, N)
        The Gram without noise (only its lower triangle is read).  It becomes this object's
        workspace: do not use it afterwards.
    noise : float
        Added to the diagonal (GPML Alg. 2.1, line 2).
    jitter_schedule : sequence of float
        Multiples of mean(diag K + noise) tried in turn when the factorisation fails, as on the host
        (``fastfm.gp._linalg._cholesky_in_place``).
    context : callable or None
        Returns text naming the hyperparameters, for error messages only.

    Raises
    ------
    NotPositiveDefiniteError
        K holds NaN/inf, or K + noise·I stays non positive definite after the largest jitter.
    BackendUnavailableError
        The GPU has no room for the second N × N buffer.
    """

    def __init__(self, K, noise, jitter_schedule=(), context=None):
        cuda = _cuda()
        self._K = _device_square(K, "K")
        self.n = N = self._K.shape[0]
        self._L = _device_matrix((N, N), "the Cholesky factor")
        self._info = cuda.device_array(1, dtype=np.int64)
        self._X = None   # L⁻¹, in K's buffer once K is no longer needed
        if not self._factor(noise):
            self._factor_with_jitter(noise, jitter_schedule, context)
        else:
            self.jitter = 0.0
        self.diagonal = diagonal(self._L)

    # ------------------------------------------------------------ factorise
    def _factor(self, shift):
        """Factor K + shift·I into self._L; whether it succeeded (blocked dpotrf, module docstring)."""
        kernels = _kernels()
        N = self.n
        self._info.copy_to_device(np.zeros(1, dtype=np.int64))
        grid, block = _square_grid(N, kernels.SQUARE)
        _launch(kernels.copy_lower_with_diagonal_shift, grid, block, self._K, self._L, float(shift))
        panel = (kernels.PANEL, kernels.PANEL)
        tile_block = (kernels.TILE_THREADS, kernels.TILE_THREADS)
        for k0 in range(0, N, kernels.PANEL):
            kb = min(kernels.PANEL, N - k0)
            _launch(kernels.factor_diagonal_block, 1, panel, self._L, k0, kb, self._info)
            rest = N - k0 - kb
            if rest == 0:
                break
            _launch(kernels.solve_rows_below, _blocks(rest, kernels.PANEL), panel, self._L, k0, kb, self._info)
            tiles = _blocks(rest, kernels.TILE)
            _launch(kernels.subtract_panel_product, (tiles, tiles), tile_block, self._L, self._L, k0, self._L, 0,
                    k0, False, kb, k0 + kb, k0 + kb, N, True, self._info)
        return int(self._info.copy_to_host()[0]) == 0

    def _factor_with_jitter(self, noise, jitter_schedule, context):
        where = "" if context is None else context()
        self._raise_if_not_finite(where)
        scale = float(np.mean(diagonal(self._K))) + noise
        if not scale > 0:
            raise NotPositiveDefiniteError(
                f"the kernel matrix has a non-positive mean diagonal {scale!r}{where}; it cannot be a covariance")
        for factor in jitter_schedule:
            if self._factor(noise + factor * scale):
                self.jitter = factor * scale
                return
        largest = f"{jitter_schedule[-1]:.0e}" if len(jitter_schedule) else "0"
        raise NotPositiveDefiniteError(
            f"the kernel matrix (N={self.n}) is not positive definite even with jitter {largest}·mean(diag)"
            f"{where}; raise the noise lower bound (noise_bounds), remove duplicate inputs, or check the kernel")

    def _raise_if_not_finite(self, where):
        kernels = _kernels()
        N = self.n
        found = _cuda().to_device(np.array([N * N], dtype=np.int64))
        grid, block = _square_grid(N, kernels.SQUARE)
        _launch(kernels.first_non_finite, grid, block, self._K, found)
        index = int(found.copy_to_host()[0])
        if index < N * N:
            i, j = divmod(index, N)
            value = float(self._K[i, j])   # one element
            raise NotPositiveDefiniteError(
                f"the kernel matrix holds a non-finite value K[{i}, {j}]={value!r}{where}; "
                "check the inputs and the kernel's hyperparameters")

    # ---------------------------------------------------------- likelihood
    @property
    def log_determinant(self):
        """log det(K + noise·I) = 2 Σ log L_ii."""
        return 2.0 * float(np.sum(np.log(self.diagonal)))

    def _inverse_factor(self):
        """X = L⁻¹ in K's buffer (solving L X = I by panels of rows, module docstring)."""
        if self._X is not None:
            return self._X
        kernels = _kernels()
        N = self.n
        X = self._K
        grid, block = _square_grid(N, kernels.SQUARE)
        _launch(kernels.set_identity, grid, block, X)
        panel = (kernels.PANEL, kernels.PANEL)
        tile_block = (kernels.TILE_THREADS, kernels.TILE_THREADS)
        for k0 in range(0, N, kernels.PANEL):
            kb = min(kernels.PANEL, N - k0)
            end = k0 + kb
            # rows k0:end of X only have columns < end (X is lower triangular)
            _launch(kernels.solve_diagonal_rows, _blocks(end, kernels.PANEL), panel, X, self._L, k0, kb, end,
                    self._info)
            rest = N - end
            if rest:
                grid = (_blocks(end, kernels.TILE), _blocks(rest, kernels.TILE))
                _launch(kernels.subtract_panel_product, grid, tile_block, X, self._L, k0, X, k0, 0, True, kb, end,
                        0, end, False, self._info)
        self._X = X
        return X

    def solve(self, y):
        """(yᵀ (K + noise·I)⁻¹ y, α = (K + noise·I)⁻¹ y as a device array) (GPML Alg. 2.1, line 3).

        Through X = L⁻¹: z = X y, yᵀα = zᵀz, α = Xᵀ z."""
        kernels = _kernels()
        cuda = _cuda()
        N = self.n
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.shape != (N,):
            raise InvalidValueError(f"y must have shape ({N},), got {y.shape}", "y", y.shape)
        X = self._inverse_factor()
        z = cuda.device_array(N)
        alpha = cuda.device_array(N)
        if N == 0:
            return 0.0, alpha
        _launch(kernels.lower_times_vector, N, kernels.VECTOR_BLOCK, X, cuda.to_device(y), z)
        parts = min(_TRANSPOSE_PRODUCT_PARTS, N)
        rows_per_part = -(-N // parts)
        partials = cuda.device_array((parts, N))
        _launch(kernels.lower_transpose_times_vector_partials, (_blocks(N, kernels.VECTOR_BLOCK), parts),
                kernels.VECTOR_BLOCK, X, z, partials, rows_per_part)
        _launch(kernels.sum_partials, _blocks(N, kernels.VECTOR_BLOCK), kernels.VECTOR_BLOCK, partials, alpha)
        z_host = z.copy_to_host()
        return float(z_host @ z_host), alpha

    def likelihood_weights(self, alpha, zero_diagonal=True):
        """W = ½(α αᵀ − (K + noise·I)⁻¹) on the device, and its diagonal (host).

        ``zero_diagonal``: W's diagonal is set to 0 on the device (the FM reduction sums the a = b pairs
        apart); otherwise W keeps it.

        GPML Eq. 5.9: ∂ log p/∂θ_j = Σ_ab W_ab ∂K_ab/∂θ_j.  K⁻¹ = Xᵀ X (X = L⁻¹) is formed in the
        factor's buffer, so the factor is gone afterwards."""
        kernels = _kernels()
        cuda = _cuda()
        N = self.n
        X = self._inverse_factor()
        W = self._L
        tiles = _blocks(N, kernels.TILE)
        _launch(kernels.lower_product_of_columns, (tiles, tiles), (kernels.TILE_THREADS, kernels.TILE_THREADS), X,
                W, self._info)
        w_diag = cuda.device_array(N)
        grid, block = _square_grid(N, kernels.SQUARE)
        _launch(kernels.likelihood_weights, grid, block, W, _on_device(alpha), w_diag, bool(zero_diagonal))
        self._L = None
        return W, w_diag.copy_to_host()
