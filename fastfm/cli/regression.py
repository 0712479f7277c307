"""``fastfm time regression``: GP regression on the mixed regression set, fastfm and its peers.

The data set is ``fastfm.benchmarks.regression`` (seeded); this module holds the runners: fit/predict
time, test RMSE and NLL per model and N (:func:`run_regression_benchmark`), the accuracy cost of
fitting hyperparameters on a subset (:func:`run_subset_study`), and the time of each piece of the exact
solver (:func:`run_exact_components`).  sklearn and BoTorch are optional peers, imported when asked for.
"""
import time
import warnings

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from ..benchmarks.regression import (N_CONTINUOUS, N_NOMINAL, _N_LEVELS, _one_hot, gaussian_nll,
                                     make_mixed_regression, score_predictions)
from ..gp import GaussianProcessRegressor
from ..kernels import ModLap, make_kernel
from ..kernels.matvec import kernel_matvec

__all__ = ["run_regression_benchmark", "run_subset_study", "run_exact_components", "add_parser", "run"]


# row labels of the kernels the reports name (others: the make_kernel name)
_KERNEL_LABELS = {"modlap": "ModLap", "modlap_additive": "AdditiveFM"}


def _timed(function):
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def _fastfm_rows(space, X, y, X_test, y_test, sizes, subset, n_restarts, seed, cg_sizes, cg_options, emit,
                 fixed_noise=None, fit_each=False, kernel_name="modlap", noise_restarts=1):
    label = f"fastfm {_KERNEL_LABELS.get(kernel_name, kernel_name)}"
    if fit_each:
        emit(f"fastfm hyperparameters: fitted at every N by the regressor's default strategy, {n_restarts + 1} "
             f"L-BFGS-B starts and {noise_restarts} noise restart(s) (fit time includes them)")
    elif fixed_noise is None:
        # hyperparameters: exact type-II ML on the first `subset` points, shared by every size (fixed-θ protocol)
        tuned, hyper_time = _timed(lambda: GaussianProcessRegressor(
            make_kernel(kernel_name, space), n_restarts=n_restarts, random_state=seed, hyperparameter_subset=None,
            noise_restarts=noise_restarts).fit(X[:subset], y[:subset]))
        kernel, noise = tuned.kernel_, tuned.noise_
        emit(f"{label} hyperparameters: exact ML on {subset} points, {n_restarts + 1} L-BFGS-B starts and "
             f"{noise_restarts} noise restart(s): {hyper_time:.1f} s (noise {noise:.3g} standardised, log ML "
             f"{tuned.log_marginal_likelihood_value_:.2f})")
    else:
        kernel, noise = make_kernel(kernel_name, space), float(fixed_noise)
        emit(f"{label} hyperparameters: the kernel's defaults, noise {noise:.3g} standardised (not fitted)")
    for n in sizes:
        methods = ["auto"] + (["cg"] if n in cg_sizes and n <= 20_000 else [])
        for method in methods:
            if fit_each:
                gp = GaussianProcessRegressor(make_kernel(kernel_name, space), n_restarts=n_restarts,
                                              random_state=seed, method=method, cg_options=cg_options,
                                              noise_restarts=noise_restarts)
            else:
                gp = GaussianProcessRegressor(kernel, optimizer=None, noise=noise, method=method,
                                              cg_options=cg_options)
            _, fit_time = _timed(lambda: gp.fit(X[:n], y[:n]))
            _, mean_time = _timed(lambda: gp.predict(X_test))
            (mean, std), std_time = _timed(lambda: gp.predict(X_test, return_std=True))
            var = std ** 2 + gp.noise_ * gp.y_std_ ** 2
            extra = [f"{gp.cg_info_.n_iter} it ({gp.cg_info_.n_single_precision_iter} mixed), rank "
                     f"{gp._preconditioner.rank}"] if gp.solver_ == "cg" else []
            if fit_each:
                refined = gp.solver_ == "cholesky" and gp.hyperparameter_subset_ < n
                extra.append(f"θ: ML on {gp.hyperparameter_subset_} points{', refined on all' if refined else ''}")
            emit(_row(label, n, " ".join([gp.solver_, ", ".join(extra)]).strip(), fit_time, mean_time,
                      std_time, np.sqrt(np.mean((mean - y_test) ** 2)), gaussian_nll(y_test, mean, var)))
            del gp


def _sklearn_rows(X, y, X_test, y_test, sizes, subset, seed, max_n, emit):
    try:
        from sklearn.gaussian_process import GaussianProcessRegressor as SkGPR
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    except ImportError:
        emit("scikit-learn: not installed (pip install fastfm[bench])")
        return
    from sklearn.exceptions import ConvergenceWarning

    Z, Z_test = _one_hot(X), _one_hot(X_test)
    kernel = ConstantKernel(1.0) * RBF(np.ones(Z.shape[1]), (1e-2, 1e3)) + WhiteKernel(1e-2, (1e-6, 1.0))
    with warnings.catch_warnings():  # lengthscales of irrelevant one-hot columns run to their bound: expected
        warnings.simplefilter("ignore", ConvergenceWarning)
        tuned, hyper_time = _timed(lambda: SkGPR(kernel, normalize_y=True, random_state=seed).fit(Z[:subset],
                                                                                                  y[:subset]))
    emit(f"sklearn hyperparameters: ML on {subset} one-hot points (RBF-ARD + white noise, 1 start): {hyper_time:.1f} s")
    for n in sizes:
        if n > max_n:
            emit(_row("sklearn RBF one-hot", n, "skipped (N > --sklearn-max-n)", None, None, None, None, None))
            continue
        gp = SkGPR(tuned.kernel_, optimizer=None, normalize_y=True)
        _, fit_time = _timed(lambda: gp.fit(Z[:n], y[:n]))
        _, mean_time = _timed(lambda: gp.predict(Z_test))
        (mean, std), std_time = _timed(lambda: gp.predict(Z_test, return_std=True))  # std includes the white noise
        emit(_row("sklearn RBF one-hot", n, "cholesky", fit_time, mean_time, std_time,
                  np.sqrt(np.mean((mean - y_test) ** 2)), gaussian_nll(y_test, mean, std ** 2)))
        del gp


def _botorch_rows(X, y, X_test, y_test, sizes, max_n, emit):
    try:
        import torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import MixedSingleTaskGP
        from gpytorch.mlls import ExactMarginalLogLikelihood
    except ImportError:
        emit("BoTorch: not installed (optional peer: torch==2.13.0 CPU, then botorch/gpytorch)")
        return
    # nominal variables as categorical dims (BoTorch's CategoricalKernel); ordinal levels as numbers in [0, 1]
    def encode(A):
        out = A.copy()
        out[:, N_CONTINUOUS + N_NOMINAL:] /= (_N_LEVELS - 1)
        return torch.tensor(out, dtype=torch.float64)
    cat_dims = list(range(N_CONTINUOUS, N_CONTINUOUS + N_NOMINAL))
    T_test = encode(X_test)
    for n in sizes:
        if n > max_n:
            emit(_row("BoTorch MixedSingleTaskGP", n, "skipped (N > --botorch-max-n)", None, None, None, None, None))
            continue
        T, Y = encode(X[:n]), torch.tensor(y[:n, None], dtype=torch.float64)

        def fit():
            from botorch.models.transforms import Standardize
            model = MixedSingleTaskGP(T, Y, cat_dims=cat_dims, outcome_transform=Standardize(m=1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            return model
        model, fit_time = _timed(fit)

        def predict(with_noise):
            with torch.no_grad():
                posterior = model.posterior(T_test, observation_noise=with_noise)
                return posterior.mean.numpy()[:, 0], posterior.variance.numpy()[:, 0]
        (mean, var), std_time = _timed(lambda: predict(True))
        # Cholesky up to linear_operator's max_cholesky_size (BoTorch raises it to 4096 on import), above it
        # GPyTorch's CG solves and stochastic Lanczos log-determinant
        from linear_operator import settings
        solver = "cholesky" if n <= settings.max_cholesky_size.value() else "CG + Lanczos (GPyTorch)"
        emit(_row("BoTorch MixedSingleTaskGP", n, f"{solver}, ML fit on all N", fit_time, None, std_time,
                  np.sqrt(np.mean((mean - y_test) ** 2)), gaussian_nll(y_test, mean, var)))


def _row(model, n, method, fit_time, mean_time, std_time, rmse, nll):
    def f(x, fmt):
        return "—" if x is None else format(x, fmt)
    return (f"| {model} | {n} | {method} | {f(fit_time, '.2f')} | {f(mean_time, '.2f')} | {f(std_time, '.2f')} | "
            f"{f(rmse, '.4f')} | {f(nll, '.3f')} |")


def run_regression_benchmark(sizes=(2000, 10_000, 50_000), n_test=10_000, subset=2000, n_restarts=2, seed=0,
                             peers=("sklearn", "botorch"), sklearn_max_n=10_000, botorch_max_n=2000, cg_sizes=(),
                             emit=print, cg_options=None, fixed_noise=None, fit_each=False, kernel="modlap",
                             noise_restarts=1):
    """Fit/predict time, test RMSE and NLL on the mixed regression set for fastfm and its peers.

    Every size uses the first N points of one seeded training set and the same
    ``n_test`` test points.  fastfm and sklearn fit hyperparameters once on the
    first ``subset`` points (timed separately) and then fit every N with them
    fixed (``method="auto"``: exact up to 20,000 points, PCG beyond; plus a
    forced-PCG row for the sizes in ``cg_sizes``).  With ``fit_each`` fastfm
    instead fits its hyperparameters at every N by the regressor's default
    strategy (``hyperparameter_subset="auto"``), timed as part of the fit.
    BoTorch fits its hyperparameters on all N (its usual use).  ``kernel`` names fastfm's
    kernel (``make_kernel``): "modlap", or "modlap_additive" (``AdditiveFM``) for data that
    are sums over the variables; ``noise_restarts`` is the regressor's.  Times are wall-clock
    seconds: fit, predict mean only, predict mean and std.  NLL is the mean negative log
    predictive density of the noisy test targets.
    """
    sizes = sorted(int(n) for n in sizes)
    space, X, y, X_test, y_test = make_mixed_regression(max(sizes), n_test, seed=seed)
    subset = min(subset, max(sizes))
    emit(f"mixed regression set: 5 continuous, 5 nominal (4), 5 ordinal (5) inputs; noise std 0.1; "
         f"y std {np.std(y):.3f}; {n_test} test points; seed {seed}")
    emit("| model | N | method | fit (s) | predict mean (s) | predict mean+std (s) | test RMSE | test NLL |")
    emit("|---|---|---|---|---|---|---|---|")
    if cg_options:
        emit(f"PCG options: {cg_options}")
    _fastfm_rows(space, X, y, X_test, y_test, sizes, subset, n_restarts, seed, set(cg_sizes), cg_options, emit,
                 fixed_noise, fit_each, kernel, noise_restarts)
    if "sklearn" in peers:
        _sklearn_rows(X, y, X_test, y_test, sizes, subset, seed, sklearn_max_n, emit)
    if "botorch" in peers:
        _botorch_rows(X, y, X_test, y_test, sizes, botorch_max_n, emit)


def run_subset_study(n=4000, subsets=(500, 1000, 2000), n_test=10_000, n_restarts=0, seed=0, emit=print):
    """Accuracy cost of fitting hyperparameters on a subset, at a size where the exact fit on all N points is
    still possible: test RMSE/NLL of the exact N-point model with hyperparameters from the first m points
    (``method="cg"``'s strategy), from m random points refined on all N (the exact solver's
    ``hyperparameter_subset=m``), and from all N."""
    space, X, y, X_test, y_test = make_mixed_regression(n, n_test, seed=seed)
    emit(f"hyperparameter subset study: N = {n}, {n_restarts + 1} L-BFGS-B start(s), {n_test} test points, seed {seed}")
    emit("| hyperparameters fitted on | hyperparameter fit (s) | noise (standardised) | test RMSE | test NLL |")
    emit("|---|---|---|---|---|")

    def emit_row(label, seconds, gp):
        rmse, nll = score_predictions(gp, X_test, y_test)
        emit(f"| {label} | {seconds:.1f} | {gp.noise_:.3g} | {rmse:.4f} | {nll:.3f} |")

    common = dict(n_restarts=n_restarts, random_state=seed, method="cholesky")
    for m in sorted({*(m for m in subsets if m < n), n}):   # subsets below n, then all n points once
        tuned, hyper_time = _timed(lambda: GaussianProcessRegressor(
            ModLap(space), hyperparameter_subset=None, **common).fit(X[:m], y[:m]))
        emit_row(f"{m} points{' (all)' if m == n else ''}", hyper_time,
                 GaussianProcessRegressor(tuned.kernel_, optimizer=None, noise=tuned.noise_).fit(X, y))
        if m < n:   # the time includes the final N-point factorisation
            refined, refine_time = _timed(lambda: GaussianProcessRegressor(
                ModLap(space), hyperparameter_subset=m, **common).fit(X, y))
            emit_row(f"{m} random points, refined on all {n} (hyperparameter_subset={m})", refine_time, refined)


def run_exact_components(n=10_000, n_test=10_000, seed=0, noise=1e-2, emit=print):
    """Wall and CPU seconds of each piece of the exact solver at N = n (ModLap at its default θ):
    Gram, LAPACK Cholesky, predictive mean by the matrix-free product, cross Gram, and the triangular
    solve with n_test right-hand sides that the predictive std needs."""
    space, X, y, X_test, _ = make_mixed_regression(n, n_test, seed=seed)
    kernel = ModLap(space)
    emit(f"exact-solver pieces: N = {n}, {n_test} test points")

    def timed(label, function):
        wall, cpu = time.perf_counter(), time.process_time()
        value = function()
        emit(f"| {label} | {time.perf_counter() - wall:.2f} | {time.process_time() - cpu:.2f} |")
        return value

    emit("| piece | wall (s) | CPU (s) |")
    emit("|---|---|---|")
    K = timed("Gram K(X, X) (C++)", lambda: kernel(X))
    K.flat[::n + 1] += noise
    L = timed("Cholesky (LAPACK)", lambda: cholesky(K, lower=True, check_finite=False, overwrite_a=True))
    del K
    alpha = solve_triangular(L, solve_triangular(L, y, lower=True), lower=True, trans="T")
    timed("predictive mean K(X*, X) α (matrix-free)", lambda: kernel_matvec(kernel, X_test, alpha, X))
    K_cross = timed("cross Gram K(X*, X)", lambda: kernel(X_test, X))
    timed("triangular solve, n_test right-hand sides (std)",
          lambda: solve_triangular(L, K_cross.T, lower=True, check_finite=False))


def _sizes(text):
    return [int(n) for n in text.split(",")]


def add_parser(commands):
    """``regression``: the flags of the old ``python -m fastfm.bench regression``, unchanged."""
    regression = commands.add_parser("regression",
                                     help="GP regression on the mixed set: fit/predict time, RMSE, NLL")
    regression.add_argument("--sizes", type=_sizes, default=[2000, 10_000, 50_000],
                            metavar="N,N,...", help="training sizes (default: 2000,10000,50000)")
    regression.add_argument("--n-test", type=int, default=10_000, help="test points (default: %(default)s)")
    regression.add_argument("--subset", type=int, default=2000, help="points of the hyperparameter fit")
    regression.add_argument("--restarts", type=int, default=2, help="extra L-BFGS-B starts of that fit")
    regression.add_argument("--cg-sizes", type=_sizes, default=[],
                            metavar="N,...", help="sizes that also get a forced method='cg' row")
    regression.add_argument("--peers", default="sklearn,botorch", help="comma list of sklearn, botorch, or none")
    regression.add_argument("--sklearn-max-n", type=int, default=10_000)
    regression.add_argument("--botorch-max-n", type=int, default=2000)
    regression.add_argument("--seed", type=int, default=0)
    regression.add_argument("--cg-tol", type=float, default=None,
                            help="relative residual of the PCG solves (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-rank", type=int, default=None,
                            help="rank of the pivoted-Cholesky preconditioner (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-max-iter", type=int, default=None,
                            help="PCG iterations before giving up (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-block-size", type=int, default=None,
                            help="PITC block size of the preconditioner, 1 = FITC diagonal (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-precision", choices=("auto", "double", "mixed"), default=None,
                            help="kernel values inside PCG's products (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--threads", type=int, default=None, help="threads of the compiled backend")
    regression.add_argument("--kernel", default="modlap",
                            help="fastfm's kernel (a make_kernel name: modlap, modlap_additive, ...; default modlap)")
    regression.add_argument("--noise-restarts", type=int, default=1,
                            help="noise restarts of the hyperparameter fit (GaussianProcessRegressor's "
                                 "noise_restarts; default %(default)s)")
    regression.add_argument("--subset-study", type=int, default=None, metavar="N",
                            help="instead: accuracy of hyperparameters fitted on subsets vs on all N points")
    regression.add_argument("--fixed-noise", type=float, default=None, metavar="NOISE",
                            help="fastfm at its kernel's default hyperparameters and this standardised noise (no fit)")
    regression.add_argument("--fit-each", action="store_true",
                            help="fastfm fits its hyperparameters at every N (default strategy, timed in the fit) "
                                 "instead of once on --subset points")
    regression.add_argument("--components", type=int, default=None, metavar="N",
                            help="instead: wall/CPU time of each piece of the exact solver at N points")
    regression.set_defaults(run=run)
    return regression


def run(args, parser, command):
    """Run ``fastfm time regression`` with parsed ``args``; ``command`` is the command line to print."""
    from .._config import config_context
    from .timing import describe_machine

    def emit(line):
        print(line, flush=True)

    print(describe_machine())
    print("command: " + command)
    with config_context(**({} if args.threads is None else {"num_threads": args.threads})):
        if args.components:
            run_exact_components(args.components, n_test=args.n_test, seed=args.seed, emit=emit)
            return 0
        if args.subset_study:
            run_subset_study(args.subset_study, n_test=args.n_test, n_restarts=args.restarts, seed=args.seed,
                             emit=emit)
            return 0
        cg_options = {key: value for key, value in (("tol", args.cg_tol), ("rank", args.cg_rank),
                                                    ("max_iter", args.cg_max_iter),
                                                    ("block_size", args.cg_block_size),
                                                    ("precision", args.cg_precision)) if value is not None}
        run_regression_benchmark(args.sizes, args.n_test, args.subset, args.restarts, args.seed,
                                 tuple(p for p in args.peers.split(",") if p and p != "none"),
                                 args.sklearn_max_n, args.botorch_max_n, args.cg_sizes, emit=emit,
                                 cg_options=cg_options or None, fixed_noise=args.fixed_noise,
                                 fit_each=args.fit_each, kernel=args.kernel, noise_restarts=args.noise_restarts)
    return 0
