"""CUDA backend (Numba): the FM Gram, its fused gradient reductions, neighbour rows, set sums and the
hierarchical (conditional-space) kernel's Gram and reduction on a GPU.

Same private signatures as ``numpy_backend`` (the reference; see its module
docstring for the argument conventions).  The device code is in
``_cuda_kernels.py``; this module checks arguments, keeps data on the device
and launches.

Availability
------------
Importing this module never imports numba (``import fastfm`` must not).
:func:`probe` says whether the backend can run here: numba must be installed
and either the NVIDIA driver exposes a GPU (read from /proc/driver/nvidia,
without initialising CUDA or importing numba) or Numba's simulator is on (``NUMBA_ENABLE_CUDASIM=1``, for tests
without a GPU: correct but thousands of times slower).  The kernels are
compiled on first use.  ``backend="auto"`` never picks this backend under the
simulator (see ``fastfm._backends``).

Data on the device
------------------
A GP fit evaluates the likelihood many times on the same training inputs.
Arrays that recur across calls (the spectral tables, the training inputs C
and D, the observations of a cross Gram, the hyperparameter vectors) go
through a device cache, so that only what changes per evaluation crosses the
bus.  For an FM kernel the GP keeps the whole evaluation on the GPU:
:func:`fm_gram_device` leaves the Gram there, ``cuda_linalg.DeviceCholesky``
factors it and forms W = ½(ααᵀ − K⁻¹) in place, and :func:`fm_grad_reduction`
reads that W where it is, so only O(N) numbers cross per evaluation.  Called
on host arrays, :func:`fm_gram` downloads its result and
:func:`fm_grad_reduction` uploads W (N² each).

* Spectral tables are cached per ``PackedSpectra`` object (weakly: they go
  when the space goes).
* Other arrays are cached by *content*: an entry holds a private host copy
  and its device copy; a lookup compares the new array with the copies of
  the same shape and dtype (one pass over host memory, cheaper than a
  transfer), so mutating an array in place can never return stale data.  The
  cache keeps the ``DEVICE_CACHE_ENTRIES`` most recently used arrays of at
  most ``DEVICE_CACHE_MAX_BYTES`` each; :func:`clear_device_cache` empties it.

Arrays that already live on the device (anything with
``__cuda_array_interface__``, e.g. a Numba device array or a CuPy array) are
used in place, without a copy.  Results and weights of 64 MB or more cross
the bus in row chunks through per-thread pinned buffers (see
``STAGED_TRANSFER_MIN_BYTES``): at N = 20,000 this made the Gram 5× faster
than a plain ``copy_to_host``.

Functions without a GPU kernel (``CPU_FUNCTIONS``: the acquisition
optimiser's small input-gradient calls) are served by the C++ backend.
``hier_cross_gradient`` has no GPU kernel either: ``kernels.Hierarchical``
calls the NumPy reference for it directly.
"""
import ctypes
import importlib.util
import os
import sys
import threading
import weakref
from collections import OrderedDict

import numpy as np

from ..exceptions import BackendUnavailableError, InvalidValueError
from . import _parts

name = "cuda"

__all__ = ["probe", "describe", "clear_device_cache", "device_stats", "fm_gram", "fm_gram_device",
           "fm_gram_from_argument",
           "fm_grad_reduction", "fm_reduction_from_argument", "fm_gram_sum", "fm_grad_reduction_sum",
           "fm_neighbour_gram", "fm_neighbour_gram_batch", "set_gram", "set_grad_reduction", "hier_gram",
           "hier_gram_device", "hier_grad_reduction"]

# Cache policy (module docstring).  16 entries hold a fit's inputs (C, D, spectra-derived
# vectors, α, β, coefficients) and a few observation sets of the acquisition step.
DEVICE_CACHE_ENTRIES = 16
DEVICE_CACHE_MAX_BYTES = 256 * 2**20
# A variable's projector table holds Σ_g n_p² floats; above this many the factor
# sums U[v, i] U[v', i] over the group's eigenvectors instead (O(n_p) per pair).
PROJECTOR_TABLE_MAX_ENTRIES = 2**20
# Blocks of the reductions: enough to fill an H100 (132 SMs × 8 blocks of 256),
# few enough that the host adds the per-block rows in microseconds.
REDUCTION_MAX_BLOCKS = 1024
SIMULATOR_REDUCTION_MAX_BLOCKS = 1

MATERN_CODES = {0.5: 0, 1.5: 1, 2.5: 2}


# --------------------------------------------------------------- availability
def simulator_requested():
    """Whether Numba's CUDA simulator is (or will be) on in this process."""
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None and "numba.cuda" in sys.modules:
        return bool(numba_config.ENABLE_CUDASIM)
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


_driver_gpu_count = None
_numba_installed = None


def driver_gpu_count():
    """Number of GPUs the NVIDIA driver exposes to this process, cached; neither numba nor CUDA is initialised.

    On Linux the driver lists its GPUs in /proc/driver/nvidia/gpus, which is read
    instead of calling cuInit: initialising CUDA at ``import fastfm`` would cost
    time and break CUDA in processes forked later (``--jobs``).  Elsewhere the
    driver library is asked.  ``CUDA_VISIBLE_DEVICES`` set to "" or "-1" hides all.
    """
    global _driver_gpu_count
    if _driver_gpu_count is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and visible.strip() in ("", "-1"):
            _driver_gpu_count = 0
        elif sys.platform.startswith("linux"):
            try:
                _driver_gpu_count = len(os.listdir("/proc/driver/nvidia/gpus"))
            except OSError:
                _driver_gpu_count = 0
        else:
            _driver_gpu_count = _driver_library_gpu_count()
    return _driver_gpu_count


def _driver_library_gpu_count():
    try:
        libcuda = ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
        number = ctypes.c_int(0)
        if libcuda.cuInit(0) == 0 and libcuda.cuDeviceGetCount(ctypes.byref(number)) == 0:
            return number.value
    except (OSError, AttributeError):
        pass
    return 0


def probe():
    """(True, "") if this backend can run here, else (False, the reason)."""
    global _numba_installed
    if _numba_installed is None:
        _numba_installed = importlib.util.find_spec("numba") is not None
    if not _numba_installed:
        return False, "numba is not installed (pip install 'fastfm[cuda]')"
    if simulator_requested():
        return True, ""
    if driver_gpu_count() == 0:
        return False, "no CUDA GPU found (the NVIDIA driver reports none); NUMBA_ENABLE_CUDASIM=1 runs the simulator"
    return True, ""


def describe():
    """One line on the device the backend runs on (imports numba; for show_config and benchmarks)."""
    ok, reason = probe()
    if not ok:
        return f"unavailable ({reason})"
    import numba
    from numba import cuda
    if simulator_requested():
        return f"Numba's CUDA simulator (no GPU; correct but very slow), numba {numba.__version__}"
    device = cuda.get_current_device()
    _, total = cuda.current_context().get_memory_info()
    device_name = device.name.decode() if isinstance(device.name, bytes) else device.name
    return (f"{device_name}, compute capability {device.compute_capability[0]}.{device.compute_capability[1]}, "
            f"{total / 2**30:.0f} GiB, numba {numba.__version__}")


_kernels_module = None
_kernels_lock = threading.Lock()


def _kernels():
    """``_cuda_kernels`` (imports numba and numba.cuda on first use)."""
    global _kernels_module
    if _kernels_module is None:
        with _kernels_lock:
            if _kernels_module is None:
                ok, reason = probe()
                if not ok:
                    raise BackendUnavailableError(f"backend 'cuda' is not available: {reason}")
                from numba import cuda

                if not cuda.is_available():
                    raise BackendUnavailableError("backend 'cuda' is not available: numba finds no usable CUDA "
                                                  "device (driver, toolkit or CUDA_VISIBLE_DEVICES)")
                from . import _cuda_kernels
                _kernels_module = _cuda_kernels
    return _kernels_module


def _cuda():
    from numba import cuda
    return cuda


# ------------------------------------------------------------ device caches
_stats = {"uploads": 0, "cache_hits": 0, "launches": 0}


def device_stats():
    """Counters since start (or :func:`clear_device_cache`): uploads, cache hits, kernel launches."""
    return dict(_stats)


class _ContentCache:
    """Least-recently-used device copies of host arrays, looked up by content."""

    def __init__(self, max_entries, max_bytes):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.entries = OrderedDict()   # id -> (host copy, device array)
        self.lock = threading.Lock()

    def get(self, array):
        with self.lock:
            for key, (host, device) in self.entries.items():
                if host.shape == array.shape and host.dtype == array.dtype and np.array_equal(host, array):
                    self.entries.move_to_end(key)
                    _stats["cache_hits"] += 1
                    return device
            device = _upload(array)
            if array.nbytes <= self.max_bytes:
                self.entries[id(device)] = (array.copy(), device)
                while len(self.entries) > self.max_entries:
                    self.entries.popitem(last=False)
            return device

    def clear(self):
        with self.lock:
            self.entries.clear()


_content_cache = _ContentCache(DEVICE_CACHE_ENTRIES, DEVICE_CACHE_MAX_BYTES)
_tables_cache = weakref.WeakKeyDictionary()


def clear_device_cache():
    """Drop every cached device array and reset :func:`device_stats`."""
    _content_cache.clear()
    _tables_cache.clear()
    for key in _stats:
        _stats[key] = 0


def _upload(array):
    cuda = _cuda()
    _stats["uploads"] += 1
    array = np.ascontiguousarray(array)
    if _staged(array):
        return _staged_upload(array)
    return cuda.to_device(array)


# ------------------------------------------------------- large transfers
# An N×N float64 result (or W) is 0.8 GB at N = 10,000.  Measured on an H100 (PCIe 5)
# at N = 20,000 (3.2 GB): the kernels take 11-100 ms, but copy_to_host into a new
# array took 1150 ms: the driver copies through its own small pinned buffer and then
# touches every page of the fresh result on one thread (np.empty + fill alone: 800 ms).
# Into pinned memory the copy takes 58 ms.  So large transfers go in row chunks,
# each worker thread copying between the device and its own pinned buffer on its own
# stream, then between that buffer and the host array (numpy releases the GIL for
# the copy), so the first touch of the fresh result's pages happens on all threads.
STAGED_TRANSFER_MIN_BYTES = 64 * 2**20
STAGING_CHUNK_BYTES = 32 * 2**20        # pinned memory per worker thread
STAGING_THREADS = max(1, min(8, os.cpu_count() or 1))

_staging_local = threading.local()
_staging_pool = None


def _staged(array):
    """Whether a transfer of ``array`` (host or device) goes through the chunked, threaded path."""
    shape = array.shape
    return (len(shape) == 2 and array.dtype == np.float64 and 8 * shape[0] * shape[1] >= STAGED_TRANSFER_MIN_BYTES
            and 8 * shape[1] <= STAGING_CHUNK_BYTES)


def _staging_slot():
    """This thread's (stream, pinned float64 buffer), created on first use."""
    slot = getattr(_staging_local, "slot", None)
    if slot is None or 8 * slot[1].size < STAGING_CHUNK_BYTES:
        cuda = _cuda()
        slot = (cuda.stream(), cuda.pinned_array(STAGING_CHUNK_BYTES // 8, dtype=np.float64))
        _staging_local.slot = slot
    return slot


def _in_row_chunks(shape, work):
    """Run ``work(first_row, end_row, stream, pinned (rows, columns) view)`` over row chunks on the pool."""
    global _staging_pool
    if _staging_pool is None:
        from concurrent.futures import ThreadPoolExecutor
        _staging_pool = ThreadPoolExecutor(STAGING_THREADS, thread_name_prefix="fastfm-cuda-transfer")
    rows, columns = shape
    step = max(1, STAGING_CHUNK_BYTES // (8 * columns))

    def run(first):
        end = min(first + step, rows)
        stream, buffer = _staging_slot()
        work(first, end, stream, buffer[:(end - first) * columns].reshape(end - first, columns))

    for future in [_staging_pool.submit(run, first) for first in range(0, rows, step)]:
        future.result()


def _staged_upload(array):
    device = _cuda().device_array(array.shape)

    def work(first, end, stream, staging):
        np.copyto(staging, array[first:end])
        device[first:end].copy_to_device(staging, stream=stream)
        stream.synchronize()

    _in_row_chunks(array.shape, work)
    return device


def _download(device_array):
    """The host copy of a device result."""
    if not _staged(device_array):
        return device_array.copy_to_host()
    result = np.empty(device_array.shape)

    def work(first, end, stream, staging):
        device_array[first:end].copy_to_host(staging, stream=stream)
        stream.synchronize()
        np.copyto(result[first:end], staging)

    _in_row_chunks(device_array.shape, work)
    return result


_OUT_OF_MEMORY = 2   # CUDA_ERROR_OUT_OF_MEMORY (cuda.h)


def _device_matrix(shape, what):
    """A new float64 device array of ``shape``; BackendUnavailableError naming ``what`` and its size when the
    GPU has no room (callers fall back to the CPU, see ``fastfm.gp``)."""
    try:
        return _cuda().device_array(shape)
    except Exception as error:   # numba's CudaAPIError (its module differs between numba and numba-cuda)
        code = getattr(error, "code", None)
        if code is None or int(code) != _OUT_OF_MEMORY:
            raise
        size = 8.0 * np.prod(shape) / 2**30
        raise BackendUnavailableError(f"the GPU has no room for {what} (shape {tuple(shape)}, float64, "
                                      f"{size:.2f} GiB): {error}") from error


def _on_device(array):
    """The device array for ``array`` if it already lives on the GPU, else None."""
    if getattr(array, "__cuda_ndarray__", False):   # a Numba device array (the simulator's too)
        return array
    if hasattr(array, "__cuda_array_interface__"):
        return _cuda().as_cuda_array(array)
    return None


def _cached(array):
    """Device copy of an input that recurs across calls (training inputs, tables, hyperparameters)."""
    device = _on_device(array)
    return device if device is not None else _content_cache.get(np.ascontiguousarray(array))


def _per_call(array):
    """Device copy of an input that changes every call (W, R, candidate batches)."""
    device = _on_device(array)
    return device if device is not None else _upload(array)


def _spectral_tables(spectra):
    """Device arrays (n_states, group_offsets, group_values, modes, projectors, projector_offsets,
    eigenvectors, eigvec_offsets, group_starts, group_sizes), prepared once per spectra object."""
    try:
        return _tables_cache[spectra]
    except (KeyError, TypeError):
        pass
    kernels = _kernels()
    P = int(spectra.n_variables)
    n_groups = len(spectra.group_values)
    modes = np.zeros(max(P, 1), dtype=np.int64)
    group_starts = np.zeros(max(n_groups, 1), dtype=np.int64)
    projector_offsets = np.zeros(max(n_groups, 1), dtype=np.int64)
    blocks = []
    offset = 0
    for p in range(P):
        n = int(spectra.n_states[p])
        g0, g1 = int(spectra.group_offsets[p]), int(spectra.group_offsets[p + 1])
        U = spectra.eigenvectors[spectra.eigvec_offsets[p]:spectra.eigvec_offsets[p + 1]].reshape(n, n)
        starts = np.concatenate([[0], np.cumsum(spectra.group_sizes[g0:g1])])
        group_starts[g0:g1] = starts[:-1]
        if (g1 - g0) * n * n <= PROJECTOR_TABLE_MAX_ENTRIES:
            modes[p] = kernels.PROJECTOR
            for g in range(g0, g1):
                # P_g = U_g U_gᵀ, the eigenprojector of eigenvalue μ_g (SPEC §2, "group equal eigenvalues")
                columns = U[:, starts[g - g0]:starts[g - g0 + 1]]
                blocks.append(np.ravel(columns @ columns.T))
                projector_offsets[g] = offset
                offset += n * n
        else:
            modes[p] = kernels.EIGENVECTORS
    projectors = np.concatenate(blocks) if blocks else np.zeros(1)

    def nonempty(array, dtype):
        array = np.ascontiguousarray(array, dtype=dtype)
        return array if array.size else np.zeros(1, dtype=dtype)

    host = (nonempty(spectra.n_states, np.int64), nonempty(spectra.group_offsets, np.int64),
            nonempty(spectra.group_values, np.float64), modes, projectors, projector_offsets,
            nonempty(spectra.eigenvectors, np.float64), nonempty(spectra.eigvec_offsets, np.int64), group_starts,
            nonempty(spectra.group_sizes, np.int64))
    tables = tuple(_upload(array) for array in host)
    try:
        _tables_cache[spectra] = tables
    except TypeError:  # not weak-referenceable: prepared again next call
        pass
    return tables


# ------------------------------------------------------------ argument checks
def _continuous(C, rows, n_continuous, label):
    """(validated (rows, Dc) float64 array, Dc); Dc = 0 becomes one dummy column the kernels never read."""
    if _on_device(C) is None:
        C = np.ascontiguousarray(C, dtype=np.float64)
    if C.ndim != 2 or (rows is not None and C.shape[0] != rows) or (n_continuous is not None
                                                                     and C.shape[1] != n_continuous):
        raise InvalidValueError(f"{label} must have shape ({'N' if rows is None else rows}, "
                                f"{'Dc' if n_continuous is None else n_continuous}), got {C.shape}", label, C.shape)
    if C.shape[1] == 0:
        return np.zeros((C.shape[0], 1)), 0
    return C, C.shape[1]


def _states(D, rows, spectra, label):
    """Validated (rows, P) int64 state indices within each variable's range."""
    P = int(spectra.n_variables)
    if _on_device(D) is not None:
        if D.shape != (rows, P):
            raise InvalidValueError(f"{label} must have shape ({rows}, {P}), got {D.shape}", label, D.shape)
        return D
    D = np.asarray(D)
    if D.dtype.kind not in "iu":
        raise InvalidValueError(f"{label} must hold integer state indices, got dtype {D.dtype}", label, D.dtype)
    if D.shape != (rows, P):
        raise InvalidValueError(f"{label} must have shape ({rows}, {P}), got {D.shape}", label, D.shape)
    bad = (D < 0) | (D >= np.asarray(spectra.n_states)[None, :])
    if np.any(bad):
        a, p = np.argwhere(bad)[0]
        raise InvalidValueError(f"{label}[{a}, {p}] = {D[a, p]} is not a state of variable {p} "
                                f"(0..{spectra.n_states[p] - 1})", label, int(D[a, p]))
    D = np.ascontiguousarray(D, dtype=np.int64)
    return D if P else np.zeros((rows, 1), dtype=np.int64)


def _square(W, N, label):
    if _on_device(W) is None:
        W = np.ascontiguousarray(W, dtype=np.float64)
    if W.shape != (N, N):
        raise InvalidValueError(f"{label} must have shape ({N}, {N}), got {W.shape}", label, W.shape)
    return W


def _hyper(spectra, alphas, betas, variance, modulation):
    """Device arguments shared by the FM kernels, in kernel order after the inputs."""
    P = int(spectra.n_variables)
    for label, values in (("alphas", alphas), ("betas", betas)):
        if np.shape(values) != (P,):
            raise InvalidValueError(f"{label} must have shape ({P},), got {np.shape(values)}", label, values)
    padded = (lambda v: np.ascontiguousarray(v, dtype=np.float64) if P else np.zeros(1))
    return ((P, _cached(padded(alphas)), _cached(padded(betas)), float(variance)) + _spectral_tables(spectra)
            + (int(modulation.kind), _cached(np.asarray(modulation.coefficients, dtype=np.float64))))


def _check_reduction_size(n_continuous, n_discrete):
    kernels = _kernels()
    if n_continuous > kernels.MAX_CONTINUOUS or n_discrete > kernels.MAX_DISCRETE:
        raise BackendUnavailableError(
            f"the cuda reductions support up to {kernels.MAX_CONTINUOUS} continuous and {kernels.MAX_DISCRETE} "
            f"discrete variables, got n_continuous={n_continuous}, n_discrete={n_discrete}; use backend='cpp'")


# ---------------------------------------------------------------- launches
def _blocks(n_threads, block):
    return max(1, (n_threads + block - 1) // block)


def _launch(kernel, grid, block, *args):
    _stats["launches"] += 1
    kernel[grid, block](*args)


def _grid_2d(rows, columns, kernels):
    return (_blocks(columns, kernels.TILE_X), _blocks(rows, kernels.TILE_Y)), (kernels.TILE_X, kernels.TILE_Y)


def _reduction_blocks(n_pairs, kernels):
    limit = SIMULATOR_REDUCTION_MAX_BLOCKS if simulator_requested() else REDUCTION_MAX_BLOCKS
    return min(limit, _blocks(n_pairs, kernels.REDUCTION_BLOCK))


def _reduce_partials(kernels, kernel, n_pairs, n_outputs, *args, omega=None):
    """Launch a block-reduction kernel and add its per-block rows on the host, shape (n_outputs,).

    ``omega``: an extra output array passed after the partial sums (device array)."""
    cuda = _cuda()
    blocks = _reduction_blocks(n_pairs, kernels)
    partials = cuda.device_array((blocks, max(n_outputs, 1)))
    _launch(kernel, blocks, kernels.REDUCTION_BLOCK, *args, partials, *(() if omega is None else (omega,)))
    return partials.copy_to_host().sum(axis=0)[:n_outputs]


# ----------------------------------------------------------------- FM kernel
def _fm_rows(C1, D1, C2, D2, spectra):
    """(N, C1, n_continuous, D1) of an FM call on rows (C1, D1), checked; C2/D2 both given or both None."""
    if (C2 is None) != (D2 is None):
        raise InvalidValueError("C2 and D2 must both be given or both be None", "C2", None)
    N = len(D1)
    C1, n_continuous = _continuous(C1, N, None, "C1")
    return N, C1, n_continuous, _states(D1, N, spectra, "D1")


def fm_gram_device(C, D, spectra, alphas, betas, variance, modulation):
    """The symmetric FM Gram k(X, X), shape (N, N), left on the device (a Numba device array).

    For the GP likelihood on the device (``cuda_linalg``): no N × N transfer."""
    kernels = _kernels()
    N, C, n_continuous, D = _fm_rows(C, D, None, None, spectra)
    hyper = _hyper(spectra, alphas, betas, variance, modulation)
    K = _device_matrix((N, N), "the Gram")
    if N:
        n_pairs = N * (N + 1) // 2
        _launch(kernels.fm_gram_symmetric, _blocks(n_pairs, kernels.LINEAR_BLOCK), kernels.LINEAR_BLOCK,
                _cached(C), _cached(D), n_continuous, *hyper, float(modulation.exponent), K)
    return K


def fm_gram(C1, D1, C2, D2, spectra, alphas, betas, variance, modulation):
    """The FM Gram matrix, shape (N, M) (or (N, N) when C2 is None)."""
    if C2 is None:
        return _download(fm_gram_device(C1, D1, spectra, alphas, betas, variance, modulation))
    kernels = _kernels()
    cuda = _cuda()
    N, C1, n_continuous, D1 = _fm_rows(C1, D1, C2, D2, spectra)
    hyper = _hyper(spectra, alphas, betas, variance, modulation)
    exponent = float(modulation.exponent)
    M = len(D2)
    C2, _ = _continuous(C2, M, n_continuous, "C2")
    D2 = _states(D2, M, spectra, "D2")
    K = cuda.device_array((N, M))
    if N and M:
        grid, block = _grid_2d(N, M, kernels)
        # C1/D1 are typically a batch of candidates (new every call), C2/D2 the observations
        _launch(kernels.fm_gram_cross, grid, block, _per_call(C1), _per_call(D1), _cached(C2), _cached(D2),
                n_continuous, *hyper, exponent, K)
    return _download(K)


def fm_gram_from_argument(R, D1, D2, spectra, alphas, betas, variance, modulation):
    """K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab), shape of R."""
    kernels = _kernels()
    cuda = _cuda()
    if _on_device(R) is None:
        R = np.ascontiguousarray(R, dtype=np.float64)
    if len(R.shape) != 2:
        raise InvalidValueError(f"R must be a 2-D array, got shape {R.shape}", "R", R.shape)
    N, M = R.shape
    D1 = _states(D1, N, spectra, "D1")
    D2 = D1 if D2 is None else _states(D2, M, spectra, "D2")
    K = cuda.device_array((N, M))
    if N and M:
        grid, block = _grid_2d(N, M, kernels)
        _launch(kernels.fm_gram_from_argument, grid, block, _per_call(R), _cached(D1), _cached(D2),
                *_hyper(spectra, alphas, betas, variance, modulation), K)
    return _download(K)


def fm_gram_sum(C, lengthscales, states, spectra_list, alphas, betas, variances, modulation, out=None, weights=None,
                keep_grams=True, grams_out=None, workspace=None):
    """``numpy_backend.fm_gram_sum`` with this backend's :func:`fm_gram` per part (each downloaded)."""
    return _parts.sum_of_part_grams(fm_gram, C, lengthscales, states, spectra_list, alphas, betas, variances,
                                    modulation, out, weights, keep_grams, grams_out, workspace)


def fm_grad_reduction_sum(C, lengthscales, states, W, spectra_list, alphas, betas, variances, modulation,
                          symmetric_weights=False, scalings=None, workspace=None):
    """``numpy_backend.fm_grad_reduction_sum`` with this backend's :func:`fm_grad_reduction` per part."""
    return _parts.concatenated_part_reductions(fm_grad_reduction, C, lengthscales, states, W, spectra_list, alphas,
                                               betas, variances, modulation, symmetric_weights, scalings, fm_gram,
                                               workspace)


def fm_grad_reduction(C, D, W, spectra, alphas, betas, variance, modulation, symmetric_weights=False):
    """Σ_ab W_ab ∂K_ab/∂ψ for ψ = log θ (Dc), log α (P), log β (P), log σ².

    The N×N×n_params derivative tensor is never formed: each GPU thread adds
    its pairs' terms, each block its threads' (no N² temporary either).
    ``symmetric_weights`` is accepted for the common signature and ignored.

    Returns
    -------
    g_lengthscale : (Dc,), g_alpha : (P,), g_beta : (P,), g_variance : float
    """
    kernels = _kernels()
    N = len(D)
    C, n_continuous = _continuous(C, N, None, "C")
    D = _states(D, N, spectra, "D")
    W = _square(W, N, "W")
    P = int(spectra.n_variables)
    _check_reduction_size(n_continuous, P)
    n_outputs = n_continuous + 2 * P + 1
    if N == 0:
        totals = np.zeros(n_outputs)
    else:
        totals = _reduce_partials(kernels, kernels.fm_grad_reduction, N * (N + 1) // 2, n_outputs, _cached(C),
                                  _cached(D), _per_call(W), n_continuous,
                                  *_hyper(spectra, alphas, betas, variance, modulation), float(modulation.exponent))
    return (totals[:n_continuous], totals[n_continuous:n_continuous + P],
            totals[n_continuous + P:n_continuous + 2 * P], float(totals[-1]))


def fm_reduction_from_argument(R, D, W, spectra, alphas, betas, variance, modulation):
    """Weighted sums of the Gram derivatives given a symmetric continuous argument R (N, N).

    Returns
    -------
    g_alpha : (P,), g_beta : (P,), g_variance : float, omega : (N, N) W_ab ∂K_ab/∂R_ab
    """
    kernels = _kernels()
    cuda = _cuda()
    if _on_device(R) is None:
        R = np.ascontiguousarray(R, dtype=np.float64)
    N = R.shape[0]
    if len(R.shape) != 2 or R.shape[1] != N:
        raise InvalidValueError(f"R must have shape (N, N), got {R.shape}", "R", R.shape)
    D = _states(D, N, spectra, "D")
    W = _square(W, N, "W")
    P = int(spectra.n_variables)
    _check_reduction_size(0, P)
    omega = cuda.device_array((N, N))
    if N == 0:
        return np.zeros(P), np.zeros(P), 0.0, np.zeros((0, 0))
    totals = _reduce_partials(kernels, kernels.fm_reduction_from_argument, N * (N + 1) // 2, 2 * P + 1,
                              _per_call(R), _cached(D), _per_call(W),
                              *_hyper(spectra, alphas, betas, variance, modulation), omega=omega)
    return totals[:P], totals[P:2 * P], float(totals[-1]), _download(omega)


def fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Rows k(x_m, X) of graph neighbours x_m of base points, shape (M, N).

    Row m is base point ``owner[m]`` (a row of C0/D0) with discrete variable
    ``var_index[m]`` moved to state ``new_state[m]`` (see ``numpy_backend``).
    """
    kernels = _kernels()
    cuda = _cuda()
    S, N = len(D0), len(D)
    C0, n_continuous = _continuous(C0, S, None, "C0")
    C, _ = _continuous(C, N, n_continuous, "C")
    D0 = _states(D0, S, spectra, "D0")
    D = _states(D, N, spectra, "D")
    owner = np.ascontiguousarray(owner, dtype=np.int64)
    var_index = np.ascontiguousarray(var_index, dtype=np.int64)
    new_state = np.ascontiguousarray(new_state, dtype=np.int64)
    M = len(owner)
    if var_index.shape != (M,) or new_state.shape != (M,):
        raise InvalidValueError(f"owner, var_index and new_state must have the same length, got {M}, "
                                f"{len(var_index)} and {len(new_state)}", "var_index", var_index.shape)
    P = int(spectra.n_variables)
    if np.any((owner < 0) | (owner >= S)):
        raise InvalidValueError(f"owner must index rows of C0 (0..{S - 1}), got {owner!r}", "owner", owner)
    if np.any((var_index < 0) | (var_index >= P)):
        raise InvalidValueError(f"var_index must lie in [0, {P - 1}], got {var_index!r}", "var_index", var_index)
    if np.any((new_state < 0) | (new_state >= np.asarray(spectra.n_states)[var_index])):
        raise InvalidValueError(f"new_state holds a state outside its variable's range: {new_state!r}",
                                "new_state", new_state)
    K = cuda.device_array((M, N))
    if M and N:
        grid, block = _grid_2d(M, N, kernels)
        _launch(kernels.fm_neighbour_gram_batch, grid, block, _per_call(C0), _per_call(D0), _cached(C), _cached(D),
                _per_call(owner), _per_call(var_index), _per_call(new_state), n_continuous,
                *_hyper(spectra, alphas, betas, variance, modulation), float(modulation.exponent), K)
    return _download(K)


def fm_neighbour_gram(c, v, C, D, var_index, new_state, spectra, alphas, betas, variance, modulation):
    """Rows k(x_m, X) of graph neighbours x_m of one point (c, v), shape (M, N)."""
    owner = np.zeros(len(np.atleast_1d(var_index)), dtype=np.int64)
    return fm_neighbour_gram_batch(np.asarray(c, dtype=np.float64)[None, :], np.asarray(v)[None, :], C, D, owner,
                                   var_index, new_state, spectra, alphas, betas, variance, modulation)


# Functions without a GPU kernel run on the C++ backend when it is built (without it,
# the registry falls back to the NumPy reference, with its warning).  fm_cross_gradient
# and set_cross_gradient serve the acquisition optimiser's gradient steps: a few dozen
# starts × N observations, too small to pay for a launch and the transfers; the set
# diagonals are O(N m² d).
CPU_FUNCTIONS = ("fm_cross_gradient", "set_cross_gradient", "set_diag", "set_diag_gradient")


def __getattr__(function_name):
    if function_name in CPU_FUNCTIONS:
        from . import cpp
        if cpp.available:
            return getattr(cpp, function_name)
    raise AttributeError(f"module {__name__!r} has no attribute {function_name!r}")


# ---------------------------------------------------------------- set sums
def _sets(A, label, n_dims=None):
    A = np.ascontiguousarray(A, dtype=np.float64)
    if A.ndim != 3 or (n_dims is not None and A.shape[2] != n_dims):
        raise InvalidValueError(f"{label} must have shape (n_sets, set_size, {n_dims or 'd'}), got {A.shape}",
                                label, A.shape)
    if A.shape[1] == 0:
        raise InvalidValueError(f"{label} must hold non-empty sets, got shape {A.shape}", label, A.shape)
    return A


def _set_hyper(length_scale, nu, n_dims):
    length_scale = np.ascontiguousarray(length_scale, dtype=np.float64)
    if length_scale.shape != (n_dims,) or not np.all(np.isfinite(length_scale)) or np.any(length_scale <= 0):
        raise InvalidValueError(f"length_scale must be {n_dims} positive finite values, got {length_scale!r}",
                                "length_scale", length_scale)
    if float(nu) not in MATERN_CODES:
        raise InvalidValueError(f"nu must be one of {sorted(MATERN_CODES)}, got nu={nu!r}", "nu", nu)
    return _cached(length_scale), MATERN_CODES[float(nu)]


def set_gram(A, B, length_scale, nu):
    """K[a, b] = (1/(m m')) Σ_i Σ_j k_ν(‖(A[a,i] − B[b,j])/ℓ‖), unit amplitude (SPEC §4).

    Parameters
    ----------
    A : (NA, m, d), B : (NB, m', d) float64 (``B is A`` or None: the symmetric Gram)
    length_scale : (d,);  nu : {0.5, 1.5, 2.5}

    Returns
    -------
    K : (NA, NB)
    """
    kernels = _kernels()
    cuda = _cuda()
    symmetric = B is None or B is A
    A = _sets(A, "A")
    ell, nu_code = _set_hyper(length_scale, nu, A.shape[2])
    if symmetric:
        N = len(A)
        K = cuda.device_array((N, N))
        if N:
            n_pairs = N * (N + 1) // 2
            _launch(kernels.set_gram_symmetric, _blocks(n_pairs, kernels.LINEAR_BLOCK), kernels.LINEAR_BLOCK,
                    _cached(A), ell, nu_code, K)
        return _download(K)
    B = _sets(B, "B", A.shape[2])
    K = cuda.device_array((len(A), len(B)))
    if len(A) and len(B):
        grid, block = _grid_2d(len(A), len(B), kernels)
        _launch(kernels.set_gram_cross, grid, block, _per_call(A), _cached(B), ell, nu_code, K)
    return _download(K)


def set_grad_reduction(A, W, length_scale, nu):
    """g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k with K = set_gram(A, A, ...), shape (d,)."""
    kernels = _kernels()
    A = _sets(A, "A")
    N, _, n_dims = A.shape
    W = _square(W, N, "W")
    ell, nu_code = _set_hyper(length_scale, nu, n_dims)
    _check_reduction_size(n_dims, 0)
    if N == 0:
        return np.zeros(n_dims)
    return _reduce_partials(kernels, kernels.set_grad_reduction, N * (N + 1) // 2, n_dims, _cached(A),
                            _per_call(W), ell, nu_code)


# ------------------------------------------------- hierarchical kernel (SPEC §3)
HIER_PROFILE_CODES = (0, 1)     # numpy_backend.HIER_PROFILES: 0 = RBF, 1 = Matérn 5/2


def _hier_points(V, M, n_dims, V_label, M_label):
    """Validated V (N, n_dims) float64 and M (N, n_dims) uint8; n_dims = 0 becomes one
    dummy column the kernels never read (they loop over the n_dims passed to them)."""
    if _on_device(V) is None:
        V = np.ascontiguousarray(V, dtype=np.float64)
    if V.ndim != 2 or (n_dims is not None and V.shape[1] != n_dims):
        raise InvalidValueError(f"{V_label} must have shape (N, {'n_dims' if n_dims is None else n_dims}), "
                                f"got {V.shape}", V_label, V.shape)
    if _on_device(M) is None:
        M = np.asarray(M)
        if M.dtype.kind not in "biu":
            raise InvalidValueError(f"{M_label} must hold 0/1 activity flags, got dtype {M.dtype}", M_label, M.dtype)
        M = np.ascontiguousarray(M, dtype=np.uint8)
    if M.shape != V.shape:
        raise InvalidValueError(f"{M_label} must have the shape of {V_label}, {V.shape}, got {M.shape}",
                                M_label, M.shape)
    if V.shape[1] == 0:
        return np.zeros((V.shape[0], 1)), np.zeros((V.shape[0], 1), dtype=np.uint8)
    return V, M


def _hier_hyper(is_real, omega, rho_pi, lengthscale, variance, profile, n_dims):
    """Device arguments shared by the hierarchical kernels, in kernel order after the inputs:
    (n_dims, is_real, ω, πρ, ℓ, σ², profile)."""
    is_real = np.asarray(is_real)
    if is_real.shape != (n_dims,) or is_real.dtype.kind not in "biu":
        raise InvalidValueError(f"is_real must be {n_dims} 0/1 flags, got {is_real!r}", "is_real", is_real)
    vectors = []
    for label, values in (("omega", omega), ("rho_pi", rho_pi)):
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.shape != (n_dims,) or not np.all(np.isfinite(values)):
            raise InvalidValueError(f"{label} must be {n_dims} finite values, got {values!r}", label, values)
        vectors.append(values if n_dims else np.zeros(1))
    if not (np.isfinite(lengthscale) and lengthscale > 0):
        raise InvalidValueError(f"lengthscale must be positive and finite, got {lengthscale!r}", "lengthscale",
                                lengthscale)
    if not np.isfinite(variance):
        raise InvalidValueError(f"variance must be finite, got {variance!r}", "variance", variance)
    if profile not in HIER_PROFILE_CODES:
        raise InvalidValueError(f"profile must be 0 (RBF) or 1 (Matérn 5/2), got {profile!r}", "profile", profile)
    is_real = np.ascontiguousarray(is_real, dtype=np.uint8) if n_dims else np.zeros(1, dtype=np.uint8)
    return (n_dims, _cached(is_real), _cached(vectors[0]), _cached(vectors[1]), float(lengthscale),
            float(variance), int(profile))


def hier_gram_device(V, M, is_real, omega, rho_pi, lengthscale, variance, profile):
    """The symmetric hierarchical Gram k(X, X), shape (N, N), left on the device (see :func:`fm_gram_device`)."""
    kernels = _kernels()
    n_dims = int(np.shape(V)[1]) if len(np.shape(V)) == 2 else None
    V, M = _hier_points(V, M, n_dims, "V1", "M1")
    N = len(V)
    hyper = _hier_hyper(is_real, omega, rho_pi, lengthscale, variance, profile, n_dims)
    K = _device_matrix((N, N), "the Gram")
    if N:
        n_pairs = N * (N + 1) // 2
        _launch(kernels.hier_gram_symmetric, _blocks(n_pairs, kernels.LINEAR_BLOCK), kernels.LINEAR_BLOCK,
                _cached(V), _cached(M), *hyper, K)
    return K


def hier_gram(V1, M1, V2, M2, is_real, omega, rho_pi, lengthscale, variance, profile):
    """The hierarchical-kernel Gram K = σ² g(Σ_i d_i² / ℓ²) (SPEC §3), shape (N, M) (or (N, N) when V2 is None).

    Arguments as ``numpy_backend.hier_gram``: V per-column coordinates, M (0/1) activity,
    is_real, ω, πρ per column, profile 0 = RBF, 1 = Matérn 5/2.
    """
    if (V2 is None) != (M2 is None):
        raise InvalidValueError("V2 and M2 must both be given or both be None", "V2", None)
    if V2 is None:
        return _download(hier_gram_device(V1, M1, is_real, omega, rho_pi, lengthscale, variance, profile))
    kernels = _kernels()
    cuda = _cuda()
    n_dims = int(np.shape(V1)[1]) if len(np.shape(V1)) == 2 else None
    V1, M1 = _hier_points(V1, M1, n_dims, "V1", "M1")
    N = len(V1)
    hyper = _hier_hyper(is_real, omega, rho_pi, lengthscale, variance, profile, n_dims)
    V2, M2 = _hier_points(V2, M2, n_dims, "V2", "M2")
    M = len(V2)
    K = cuda.device_array((N, M))
    if N and M:
        grid, block = _grid_2d(N, M, kernels)
        # V1/M1 are typically a batch of candidates (new every call), V2/M2 the observations
        _launch(kernels.hier_gram_cross, grid, block, _per_call(V1), _per_call(M1), _cached(V2), _cached(M2),
                *hyper, K)
    return _download(K)


def hier_grad_reduction(V, M, W, is_real, omega, rho_pi, lengthscale, variance, profile):
    """Weighted sums of the hierarchical Gram derivatives, without the N×N×n_dims tensor.

    Each GPU thread adds its pairs' terms, each block its threads' (as :func:`fm_grad_reduction`).

    Returns
    -------
    t : (n_dims,), u : (n_dims,), g_variance : float
        as ``numpy_backend.hier_grad_reduction``: with Ω_ab = W_ab σ² g'(r²_ab)/ℓ²,
        t_i = Σ_ab Ω_ab d_i², u_i = Σ_ab Ω_ab ∂d_i²/∂log ρ_i, g_variance = Σ W∘K.
    """
    kernels = _kernels()
    n_dims = int(np.shape(V)[1]) if len(np.shape(V)) == 2 else None
    V, M = _hier_points(V, M, n_dims, "V", "M")
    N = len(V)
    W = _square(W, N, "W")
    if n_dims > kernels.MAX_HIER_DIMS:
        raise BackendUnavailableError(f"the cuda hierarchical reduction supports up to {kernels.MAX_HIER_DIMS} "
                                      f"encoded columns, got n_dims={n_dims}; use backend='cpp'")
    hyper = _hier_hyper(is_real, omega, rho_pi, lengthscale, variance, profile, n_dims)
    n_outputs = 2 * n_dims + 1
    if N == 0:
        totals = np.zeros(n_outputs)
    else:
        totals = _reduce_partials(kernels, kernels.hier_grad_reduction, N * (N + 1) // 2, n_outputs, _cached(V),
                                  _cached(M), _per_call(W), *hyper)
    return totals[:n_dims], totals[n_dims:2 * n_dims], float(totals[-1])


# ------------------------------------------------------- matrix-free K V
# The large-N GP solver's product (fastfm/gp/solvers/cg.py): device code in
# _cuda_matvec_kernels.py, imported after _kernels() has checked availability.
__all__ += ["fm_gram_matvec"]

_matvec_kernels_module = None


def _matvec_kernels():
    """``_cuda_matvec_kernels`` (imports numba on first use, after the availability check of :func:`_kernels`)."""
    global _matvec_kernels_module
    if _matvec_kernels_module is None:
        _kernels()
        from . import _cuda_matvec_kernels
        _matvec_kernels_module = _cuda_matvec_kernels
    return _matvec_kernels_module


def _vectors(V, rows):
    """Validated (rows, r) float64 block of vectors (host or device)."""
    if _on_device(V) is None:
        V = np.ascontiguousarray(V, dtype=np.float64)
    if len(V.shape) != 2 or V.shape[0] != rows:
        raise InvalidValueError(f"V must have shape ({rows}, n_vectors), got {V.shape}", "V", V.shape)
    return V


def fm_gram_matvec(C1, D1, C2, D2, V, spectra, alphas, betas, variance, modulation):
    """K(X1, X2) V, shape (N, r), without storing K (C2/D2 None: the symmetric K(X1, X1)).

    Each kernel entry (paper Eq. 5) is computed on the device and folded into
    the product at once; only V (M, r) goes up and K V (N, r) comes back.  The
    inputs that recur across the PCG iterations (the training points, tables,
    hyperparameters) stay in the device cache; V changes every call.
    """
    kernels = _matvec_kernels()
    cuda = _cuda()
    N, C1, n_continuous, D1 = _fm_rows(C1, D1, C2, D2, spectra)
    if C2 is None:
        M = N
        rows_C, rows_D = _cached(C1), _cached(D1)
        columns_C, columns_D = rows_C, rows_D
    else:
        M = len(D2)
        C2, _ = _continuous(C2, M, n_continuous, "C2")
        D2 = _states(D2, M, spectra, "D2")
        # as fm_gram: the rows are typically new points (predictions), the columns the observations
        rows_C, rows_D = _per_call(C1), _per_call(D1)
        columns_C, columns_D = _cached(C2), _cached(D2)
    V = _vectors(V, M)
    n_vectors = V.shape[1]
    if N == 0 or M == 0 or n_vectors == 0:
        return np.zeros((N, n_vectors))
    out = cuda.device_array((N, n_vectors))
    V_device = _per_call(V)
    hyper = _hyper(spectra, alphas, betas, variance, modulation)
    grid = _blocks(N, kernels.MATVEC_TILE_ROWS)
    block = (kernels.MATVEC_TILE_COLUMNS, kernels.MATVEC_TILE_ROWS)
    # the per-thread accumulator holds MAX_VECTORS sums: wider V goes in column chunks
    for first in range(0, n_vectors, kernels.MAX_VECTORS):
        last = min(n_vectors, first + kernels.MAX_VECTORS)
        _launch(kernels.fm_gram_matvec, grid, block, rows_C, rows_D, columns_C, columns_D,
                V_device[:, first:last], n_continuous, *hyper, float(modulation.exponent), out[:, first:last])
    return _download(out)
