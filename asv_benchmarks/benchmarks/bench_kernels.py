"""FM kernel benchmarks per backend: the full Gram, Gram + fused gradient
reduction (one GP marginal-likelihood gradient), and the cross Gram of the
acquisition hot path (many candidates × the observations).

The spaces and inputs are those of ``fastfm time kernels``
(``fastfm.benchmarks.workloads.benchmark_spaces`` / ``kernel_inputs``): seeded, so every
backend and every commit sees the same data.  A backend that is not available
here raises ``NotImplementedError`` in ``setup``, which asv reports as skipped;
so do the NumPy reference's largest sizes, which take seconds per call.
"""
import statistics
import time

from fastfm._backends import available_backends, get_backend

from ._inputs import LENGTHSCALE, benchmark_spaces, kernel_inputs

BACKENDS = ["cpp", "numpy", "cuda"]
SPACES = ["Func3C", "Ackley5C", "NAS-like"]
# Largest problem the NumPy reference is timed on (pairs), to keep a run short.
NUMPY_MAX_PAIRS = 1000 * 1000

_spaces = benchmark_spaces()


def _backend(name, n_pairs):
    if name not in available_backends():
        raise NotImplementedError(f"backend {name!r} is not available here")
    if name == "numpy" and n_pairs > NUMPY_MAX_PAIRS:
        raise NotImplementedError("the NumPy reference is only timed on small problems")
    return get_backend(name)


class KernelGram:
    """Symmetric N×N ModLap Gram, and Gram + gradient reduction."""

    params = (BACKENDS, SPACES, [200, 500, 1000, 2000])
    param_names = ["backend", "space", "N"]
    timeout = 300

    def setup(self, backend, space, n):
        self.module = _backend(backend, n * n)
        self.C, self.D, self.W, self.args = kernel_inputs(_spaces[space], n)

    def _gram(self):
        return self.module.fm_gram(self.C, self.D, None, None, *self.args)

    def _gram_and_reduction(self):
        self._gram()
        return self.module.fm_grad_reduction(self.C, self.D, self.W, *self.args, True)   # W symmetric, as in a GP fit

    def time_gram(self, backend, space, n):
        self._gram()

    def time_gram_and_reduction(self, backend, space, n):
        self._gram_and_reduction()

    def track_reduction_ratio(self, backend, space, n):
        """(Gram + fused reduction) / Gram, medians of 5 (target: ≤ 3)."""
        def median_time(function):
            times = []
            for _ in range(5):
                start = time.perf_counter()
                function()
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        self._gram()
        return median_time(self._gram_and_reduction) / median_time(self._gram)

    track_reduction_ratio.unit = "ratio"


class CrossGram:
    """Candidates × observations cross Gram: scoring random candidates in the acquisition optimiser."""

    params = (BACKENDS, ["NAS-like", "Ackley5C"], [10_000, 100_000])
    param_names = ["backend", "space", "n_candidates"]
    timeout = 300
    n_observations = 200

    def setup(self, backend, space, n_candidates):
        self.module = _backend(backend, n_candidates * self.n_observations)
        self.C2, self.D2, _, self.args = kernel_inputs(_spaces[space], self.n_observations)
        candidates = _spaces[space].sample_encoded(n_candidates, seed=7)
        C1, self.D1 = _spaces[space].split(candidates)
        self.C1 = C1 / LENGTHSCALE

    def time_cross_gram(self, backend, space, n_candidates):
        self.module.fm_gram(self.C1, self.D1, self.C2, self.D2, *self.args)
