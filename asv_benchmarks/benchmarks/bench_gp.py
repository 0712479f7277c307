"""GP regression benchmarks per backend and N: fit with fixed hyperparameters, predict, matrix-free matvec.

Data: the seeded mixed regression set of ``fastfm time regression``
(``fastfm.benchmarks.regression.make_mixed_regression``: 5 continuous, 5
nominal, 5 ordinal inputs), so every backend and commit sees the same points.
Hyperparameters are fixed (ModLap at lengthscale 0.5, α = β = 1, noise 1e-2):
the timings measure the linear algebra, not an optimiser's path.  A backend
that is not available here raises ``NotImplementedError`` in ``setup`` (asv:
skipped), as does the NumPy reference beyond its size limit.
"""
from fastfm import GaussianProcessRegressor
from fastfm._backends import available_backends
from fastfm.benchmarks.regression import make_mixed_regression
try:  # the GP split (issue 21) moved these out of fastfm.gp_large; asv also runs older commits
    from fastfm.gp.solvers.preconditioner import (PivotedCholeskyPreconditioner, default_block_size, default_rank,
                                                  pivoted_cholesky)
    from fastfm.kernels.matvec import _single_precision_product, kernel_matvec
except ImportError:
    from fastfm.gp_large import (PivotedCholeskyPreconditioner, _single_precision_product, default_block_size,
                                 default_rank, kernel_matvec, pivoted_cholesky)
from fastfm.kernels import ModLap

BACKENDS = ["cpp", "numpy", "cuda"]
# Largest N the NumPy reference is timed on, to keep a run short.
NUMPY_MAX_N = 2000
N_TEST = 1000


def _setup(backend, n):
    if backend not in available_backends():
        raise NotImplementedError(f"backend {backend!r} is not available here")
    if backend == "numpy" and n > NUMPY_MAX_N:
        raise NotImplementedError("the NumPy reference is only timed on small problems")
    space, X, y, X_test, _ = make_mixed_regression(n, N_TEST, seed=0)
    return ModLap(space, backend=backend), X, y, X_test


class GPFitPredict:
    """Exact (method="cholesky") and matrix-free (method="cg") fit and predict at fixed hyperparameters."""

    params = (BACKENDS, ["cholesky", "cg"], [1000, 2000, 5000])
    param_names = ["backend", "method", "N"]
    timeout = 600

    def setup(self, backend, method, n):
        self.kernel, self.X, self.y, self.X_test = _setup(backend, n)
        self.gp = GaussianProcessRegressor(self.kernel, optimizer=None, noise=1e-2, method=method).fit(self.X, self.y)

    def time_fit(self, backend, method, n):
        GaussianProcessRegressor(self.kernel, optimizer=None, noise=1e-2, method=method).fit(self.X, self.y)

    def time_predict_mean(self, backend, method, n):
        self.gp.predict(self.X_test)

    def time_predict_mean_and_std(self, backend, method, n):
        self.gp.predict(self.X_test, return_std=True)


class GPLikelihood:
    """One exact log marginal likelihood with its gradient at fixed θ, the step of a hyperparameter fit:
    time, and the process's peak memory (the evaluation holds one N × N array: the Gram, factorised and
    turned into W = ½(ααᵀ − K⁻¹) in place)."""

    params = (BACKENDS, [1000, 2000, 5000])
    param_names = ["backend", "N"]
    timeout = 600

    def setup(self, backend, n):
        import math
        self.kernel, X, y, _ = _setup(backend, n)
        self.gp = GaussianProcessRegressor(self.kernel, optimizer=None, noise=1e-2)
        self.terms = self.kernel._likelihood_terms(X)
        self.y = (y - y.mean()) / y.std()
        self.log_noise = math.log(1e-2)

    def time_lml_and_gradient(self, backend, n):
        self.gp._lml(self.terms, self.kernel.theta, self.y, self.log_noise, True)

    def peakmem_lml_and_gradient(self, backend, n):
        self.gp._lml(self.terms, self.kernel.theta, self.y, self.log_noise, True)


class KernelMatvec:
    """K V for the symmetric N×N ModLap Gram, V of 1 or 17 columns (y plus 16 probes), with double or
    single-precision kernel values (PCG's ``cg_options["precision"]``; the sums are double either way).
    The single-precision product exists on the cpp backend only: elsewhere it is skipped."""

    params = (BACKENDS, [2000, 10000], [1, 17], ["double", "single"])
    param_names = ["backend", "N", "n_vectors", "kernel values"]
    timeout = 300

    def setup(self, backend, n, r, precision):
        import numpy as np
        self.kernel, self.X, _, _ = _setup(backend, n)
        self.V = np.random.default_rng(0).standard_normal((n, r))
        if precision == "single":
            product = _single_precision_product(self.kernel, self.X)
            if product is None:
                raise NotImplementedError(f"backend {backend!r} has no single-precision product")
            self.product = product
        else:
            self.product = lambda V: kernel_matvec(self.kernel, self.X, V)

    def time_matvec(self, backend, n, r, precision):
        self.product(self.V)


class PreconditionerSetup:
    """The large-N solver's preconditioner: blocked pivoted Cholesky to rank k, then the PITC blocks
    and the Woodbury factor (``fastfm.gp.solvers.preconditioner``), at the default rank N/10 and at a
    fixed rank: time, and the process's peak memory (the blocks' residual matrices are factored in place, one block at a time)."""

    params = (BACKENDS, [2000, 5000, 20000], ["default", 300])
    param_names = ["backend", "N", "rank"]
    timeout = 600

    def setup(self, backend, n, rank):
        self.kernel, self.X, _, _ = _setup(backend, n)
        self.rank = default_rank(n) if rank == "default" else rank

    def time_pivoted_cholesky(self, backend, n, rank):
        pivoted_cholesky(self.kernel, self.X, self.rank)

    def time_pivoted_cholesky_and_pitc(self, backend, n, rank):
        self._pivoted_cholesky_and_pitc(n)

    def peakmem_pivoted_cholesky_and_pitc(self, backend, n, rank):
        self._pivoted_cholesky_and_pitc(n)

    def _pivoted_cholesky_and_pitc(self, n):
        L, pivots, _ = pivoted_cholesky(self.kernel, self.X, self.rank)
        PivotedCholeskyPreconditioner.with_blocks(self.kernel, self.X, L, pivots, 1e-2, default_block_size(n))


class LikelihoodWeights:
    """W = ½(ααᵀ − K⁻¹) from the Cholesky factor, the dense step of every likelihood gradient in a BO fit: the
    compiled tiles (``fastfm._cpp.likelihood_weights``) against LAPACK's dpotri + dsyr + the mirror, at the sizes
    of a BO run (a copy of the factor per call, the same in both: each call overwrites it)."""

    params = (["compiled", "lapack"], [50, 100, 200, 300])
    param_names = ["path", "N"]

    def setup(self, path, n):
        import numpy as np
        from fastfm.gp import _linalg
        if not hasattr(_linalg, "_likelihood_weights"):
            raise NotImplementedError("this commit forms W inside fastfm.gp.mll")
        if path == "compiled" and getattr(_linalg, "_compiled_likelihood_weights", None) is None:
            raise NotImplementedError("the compiled extension is not built here")
        self.linalg, self.saved = _linalg, _linalg._COMPILED_WEIGHTS_MAX_N
        _linalg._COMPILED_WEIGHTS_MAX_N = n if path == "compiled" else 0
        A = np.random.default_rng(n).standard_normal((n, n))
        self.factor, _ = _linalg._cholesky_in_place(A @ A.T + n * 1e-3 * np.eye(n))
        self.alpha = np.random.default_rng(n + 1).standard_normal(n)

    def teardown(self, path, n):
        self.linalg._COMPILED_WEIGHTS_MAX_N = self.saved

    def time_likelihood_weights(self, path, n):
        self.linalg._likelihood_weights(self.factor.copy(order="F"), self.alpha)


class AdditiveLikelihoodLargeN:
    """One log marginal likelihood with its gradient of AdditiveFM on the regression set at N = 1,000 and 2,000, the
    step of its hyperparameter fit for regression.  Its six unit-diagonal parts (the product and the ordinals'
    terms) keep no N × N Gram above 724 points: the reduction recomputes their weights' share from the Gram's chunks
    (since 2026-12-06; before, each part took its own path, which recomputed its Gram in NumPy blocks of rows)."""

    params = (BACKENDS, [1000, 2000])
    param_names = ["backend", "N"]
    timeout = 600

    def setup(self, backend, n):
        import math

        import numpy as np
        from fastfm.kernels import make_kernel
        if backend not in available_backends():
            raise NotImplementedError(f"backend {backend!r} is not available here")
        if backend == "numpy":   # 20 s an evaluation at N = 1,000 (eleven FM terms): GPLikelihood times it on ModLap
            raise NotImplementedError("the NumPy reference is not timed on AdditiveFM at these sizes")
        space, X, y, _, _ = make_mixed_regression(n, 10, seed=0)
        self.kernel = make_kernel("modlap_additive", space, backend=backend)
        self.gp = GaussianProcessRegressor(self.kernel, optimizer=None, noise=1e-2)
        self.terms = self.kernel._likelihood_terms(X)
        self.y = (y - y.mean()) / y.std()
        self.theta = self.kernel.theta + np.random.default_rng(0).uniform(-0.5, 0.5, self.kernel.n_theta)
        self.log_noise = math.log(1e-2)

    def time_lml_and_gradient(self, backend, n):
        self.gp._lml(self.terms, self.theta, self.y, self.log_noise, True)


class AdditiveLikelihood:
    """One log marginal likelihood with its gradient of AdditiveFM (the kernel kernel="auto" keeps on the HPO and
    the paper's problems) at a BO fit's sizes, on SVM's space (three nominal and three continuous variables:
    every part plain, one call of the backend for all of them since fm_gram_sum), XGBoost's (an integer too: its
    scaled parts part by part, in the same call since 2026-12-05) and Func3C's with groups of nominal values
    (fastfm.bo.value_groups: two weighted complete graphs, so the product and two terms scaled)."""

    params = (["svm", "xgboost", "func3c_grouped"], [30, 100])
    param_names = ["problem", "N"]

    def setup(self, problem, n):
        import math

        import numpy as np
        from fastfm.benchmarks import get_problem
        from fastfm.bo.value_groups import grouped_space
        from fastfm.kernels import make_kernel
        if problem == "func3c_grouped":
            space = grouped_space(get_problem("func3c").space, {"h2": [[0], [1], [2, 3, 4]], "h3": [[0], [1], [2, 3]]})
        else:
            space = get_problem(problem).space
        rng = np.random.default_rng(0)
        X = space.sample_encoded(n, rng)
        self.kernel = make_kernel("modlap_additive", space)
        self.gp = GaussianProcessRegressor(self.kernel, optimizer=None, noise=1e-2)
        self.terms = self.kernel._likelihood_terms(X)
        self.y = rng.standard_normal(n)
        self.log_noise = math.log(1e-2)

    def time_lml_and_gradient(self, problem, n):
        self.gp._lml(self.terms, self.kernel.theta, self.y, self.log_noise, True)


class AdditiveInputGradient:
    """One prediction's kernel rows and their input gradient, AdditiveFM's K(X1, X) and ∂K/∂X1 as the acquisition's
    local search asks for them (a batch of candidates against the training points), on SVM's space (every part
    plain: one fm_cross_gradient_sum since 2026-12-04) and XGBoost's (its integer's scaled parts in the same call,
    with their unit-diagonal weights, since later on 2026-12-04)."""

    params = (["svm", "xgboost"], [1, 10, 50])
    param_names = ["problem", "batch"]

    def setup(self, problem, batch):
        import numpy as np
        from fastfm.benchmarks import get_problem
        from fastfm.kernels import make_kernel
        space = get_problem(problem).space
        rng = np.random.default_rng(0)
        self.X, self.X1 = space.sample_encoded(50, rng), space.sample_encoded(batch, rng)
        self.kernel = make_kernel("modlap_additive", space)

    def time_gram_and_input_gradient(self, problem, batch):
        self.kernel.gram_and_input_gradient(self.X1, self.X)
