"""Hierarchical (conditional-space) kernel benchmarks per backend: the full Gram and
Gram + fused gradient reduction on the ModelSelection space (SPEC §3), NumPy reference included.

Inputs are seeded (``hierarchical_inputs``), so every backend and every commit sees
the same data.  A backend that is not available, or the NumPy reference on the
largest sizes, raises ``NotImplementedError`` in ``setup`` (asv: skipped).
"""
from fastfm._backends import available_backends, get_backend

from ._inputs import hierarchical_inputs

BACKENDS = ["cpp", "numpy", "cuda"]
# Largest problem the NumPy reference is timed on (pairs): it holds N² × n_dims temporaries.
NUMPY_MAX_PAIRS = 500 * 500


class HierarchicalGram:
    """Symmetric N×N hierarchical Gram, and Gram + gradient reduction."""

    params = (BACKENDS, [200, 500, 1000, 2000])
    param_names = ["backend", "N"]
    timeout = 300

    def setup(self, backend, n):
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        if backend == "numpy" and n * n > NUMPY_MAX_PAIRS:
            raise NotImplementedError("the NumPy reference is only timed on small problems")
        self.module = get_backend(backend)
        if not hasattr(self.module, "hier_gram"):
            raise NotImplementedError(f"backend {backend!r} has no hierarchical kernel")
        self.V, self.M, self.W, self.args = hierarchical_inputs(n)

    def time_gram(self, backend, n):
        self.module.hier_gram(self.V, self.M, None, None, *self.args)

    def time_gram_and_reduction(self, backend, n):
        self.module.hier_gram(self.V, self.M, None, None, *self.args)
        self.module.hier_grad_reduction(self.V, self.M, self.W, *self.args)
