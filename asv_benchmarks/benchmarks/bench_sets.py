"""Set-kernel benchmarks per backend (SPEC §4): the full Gram of (N, m, d) = (500, 50, 2) sets
with a Matérn 5/2 inner kernel, exact and with the approximation K̂ on L = 10 points, and the MMD set kernel
(a Gaussian of the distance between the mean embeddings, part of a Set's default kernel since issue 24 §4), and
Gram + gradient reduction.

Inputs are those of ``fastfm time sets`` (``fastfm.benchmarks.workloads.set_inputs``): seeded, so
every backend and every commit sees the same data.  A backend that is not available here raises
``NotImplementedError`` in ``setup``, which asv reports as skipped.
"""
from fastfm._backends import available_backends
from fastfm.kernels import MMDSetKernel, SetKernel

from ._inputs import DEFAULT_SET_SHAPE, DEFAULT_SET_SUBSAMPLE, SET_LENGTHSCALE, set_inputs

BACKENDS = ["cpp", "numpy", "cuda"]
VARIANTS = ["exact", f"L={DEFAULT_SET_SUBSAMPLE}", "mmd"]


class SetGram:
    """Full set Gram and Gram + gradient reduction, through ``SetKernel`` (K̂'s projection sort included)."""

    params = (BACKENDS, VARIANTS)
    param_names = ["backend", "variant"]
    timeout = 300

    def setup(self, backend, variant):
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        if variant == "mmd":
            self.kernel = MMDSetKernel(lengthscale=SET_LENGTHSCALE, seed=0, backend=backend)
        else:
            subsample = None if variant == "exact" else DEFAULT_SET_SUBSAMPLE
            self.kernel = SetKernel(lengthscale=SET_LENGTHSCALE, n_subsample=subsample, seed=0, backend=backend)
        self.X, self.W = set_inputs(*DEFAULT_SET_SHAPE)

    def time_gram(self, backend, variant):
        self.kernel(self.X)

    def time_gram_and_reduction(self, backend, variant):
        self.kernel.gram_and_gradient_reduction(self.X, self.W)
