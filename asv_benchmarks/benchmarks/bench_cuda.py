"""GPU-sized benchmarks: the FM Gram and gradient reduction at N up to 20,000 and the set sums,
cuda against cpp (``bench_kernels.py`` covers every backend at N ≤ 2000).

Inputs are those of ``fastfm time gpu`` (seeded, from
``fastfm.benchmarks.workloads``).  A backend that is not available here raises
``NotImplementedError`` in ``setup`` (asv: skipped), as does a backend without
set kernels.  Every cuda call returns host arrays, so the device is
synchronised before the clock stops.
"""
import numpy as np

from fastfm._backends import available_backends, get_backend

from ._inputs import benchmark_spaces, kernel_inputs, likelihood_call

BACKENDS = ["cuda", "cpp"]
_spaces = benchmark_spaces()


def _backend(name, function):
    if name not in available_backends():
        raise NotImplementedError(f"backend {name!r} is not available here")
    module = get_backend(name)
    if not hasattr(module, function):
        raise NotImplementedError(f"backend {name!r} has no {function}")
    return module


class LargeGram:
    """Symmetric N×N ModLap Gram, and one fused gradient reduction, at GPU sizes."""

    params = (BACKENDS, ["NAS-like", "Func3C"], [2000, 10_000, 20_000])
    param_names = ["backend", "space", "N"]
    timeout = 600

    def setup(self, backend, space, n):
        self.module = _backend(backend, "fm_grad_reduction")
        self.C, self.D, self.W, self.args = kernel_inputs(_spaces[space], n)
        self.module.fm_gram(self.C[:8], self.D[:8], None, None, *self.args)   # compile (cuda) outside the clock

    def time_gram(self, backend, space, n):
        self.module.fm_gram(self.C, self.D, None, None, *self.args)

    def time_reduction(self, backend, space, n):
        self.module.fm_grad_reduction(self.C, self.D, self.W, *self.args, True)


class SetSums:
    """Set Gram and reduction at (N sets, m elements, d dims)."""

    params = (BACKENDS, [(500, 50, 2), (200, 100, 5)])
    param_names = ["backend", "shape"]
    timeout = 600

    def setup(self, backend, shape):
        self.module = _backend(backend, "set_grad_reduction")
        rng = np.random.default_rng(3)
        self.A = rng.uniform(size=shape)
        self.W = rng.standard_normal((shape[0], shape[0]))
        self.length_scale = np.full(shape[2], 0.3)
        self.module.set_gram(self.A[:2], self.A[:2], self.length_scale, 2.5)

    def time_set_gram(self, backend, shape):
        self.module.set_gram(self.A, self.A, self.length_scale, 2.5)

    def time_set_reduction(self, backend, shape):
        self.module.set_grad_reduction(self.A, self.W, self.length_scale, 2.5)


class GPLikelihood:
    """One exact GP log-likelihood + gradient at fixed θ (ModLap, noise 0.05): the work of one step of a
    hyperparameter fit.  "cuda" keeps the Gram, its Cholesky factor, K⁻¹ and W on the GPU
    (``fastfm._backends.cuda_linalg``); "cuda-host-lapack" computes the Gram and the reduction on the
    GPU but factors on the host (the Gram and W cross the bus); "cpp" is all on the CPU."""

    params = (["cuda", "cuda-host-lapack", "cpp"], ["Func3C"], [2000, 5000, 10_000])
    param_names = ["mode", "space", "N"]
    number = 1
    repeat = 3
    timeout = 900

    def setup(self, mode, space, n):
        backend = "cuda" if mode.startswith("cuda") else mode
        _backend(backend, "fm_gram")
        self.call = likelihood_call(_spaces[space], n, backend, on_device=mode != "cuda-host-lapack")
        self.call()   # compiles the kernels (cuda) outside the clock

    def time_lml_and_gradient(self, mode, space, n):
        self.call()
