"""``fastfm time gpu``: the cuda backend checked and timed against the NumPy reference and the C++ backend.

Run on a machine with a CUDA GPU and numba::

    fastfm time gpu                                  # parity, then timings at N = 2000, 10000, 20000
    fastfm time gpu --json cuda_bench.json --repeat 5

1. Parity: on seeded random inputs (ModLap, a three-term family with t = 1.3
   and diffusion with t = 0.7, on the Func3C and NAS-like spaces), the cuda FM
   Gram (symmetric and cross), fused gradient reduction, Gram and reduction
   from a given argument, neighbour rows, set sums and one GP log-likelihood
   and gradient evaluated on the device (``cuda_linalg``) are compared with the
   NumPy reference to ``PARITY_RTOL`` (relative to the largest entry, or to
   Σ|terms| for sums; the set reduction against finite differences).  Any
   mismatch prints the worst entry, and the command exits with status 1
   before timing anything.
2. Timings (wall clock, ``--statistic`` of ``--repeat`` runs after one warm-up
   run that also compiles the kernels): the N×N ModLap Gram and Gram + reduction
   on NAS-like and Func3C (the inputs of ``fastfm time kernels``), the
   100,000 × 200 candidate cross Gram, one GP log-likelihood + gradient
   evaluation up to ``--likelihood-max-n`` points (cuda: everything on the
   device; its "host LAPACK" row: Gram and reduction on the GPU, Cholesky and
   K⁻¹ on the host, with the Gram and W crossing the bus), the set Gram and reduction at
   (N, m, d) = (500, 50, 2).  Every cuda time includes what a caller waits for:
   launches, uploads not served by the device cache, and the download of the
   result.  The NumPy reference is timed up to ``--numpy-max-n`` points (its
   temporaries are several N² arrays); ratios are against it and against cpp,
   measured in the same run.  The table is printed and, with ``--json``,
   written with the machine description.
"""
import json
import sys

import numpy as np

from .._backends import available_backends, backend_status, get_backend, numpy_backend
from .._backends.modulation import DIFFUSION, LAP_FAMILY, Modulation
from ..benchmarks import workloads
from ..gp import GaussianProcessRegressor
from ..kernels import ModLap
from .timing import describe_machine, hierarchical_arguments, kernel_arguments, time_call

__all__ = ["check_parity", "likelihood_call", "run_timings", "add_parser", "run"]

PARITY_RTOL = 1e-10
PARITY_SIZE = 300
PARITY_SPACES = ("Func3C", "NAS-like")
DEFAULT_SIZES = (2000, 10_000, 20_000)
DEFAULT_SET_SHAPE = (500, 50, 2)
MODULATIONS = {
    "modlap": Modulation(),
    "family_t1.3": Modulation(LAP_FAMILY, (0.5, 1.0, 0.25), 1.3),
    "diffusion_t0.7": Modulation(DIFFUSION, exponent=0.7),
}


# ------------------------------------------------------------------ parity
def reference_set_gram(A, B, length_scale, nu):
    """SPEC §4 set sum with a Matérn ν inner kernel, unit amplitude (the NumPy reference's when it has one)."""
    function = getattr(numpy_backend, "set_gram", None)
    if function is not None:
        return function(A, B, length_scale, nu)
    K = np.zeros((len(A), len(B)))
    for a in range(len(A)):   # one set at a time: (m, NB, m', d) temporaries only
        diff = (A[a][:, None, None, :] - B[None, :, :, :]) / length_scale
        r = np.sqrt(np.sum(diff ** 2, axis=-1))
        if nu == 0.5:
            k = np.exp(-r)
        else:
            z = np.sqrt(2.0 * nu) * r
            k = (1.0 + z) * np.exp(-z) if nu == 1.5 else (1.0 + z + z * z / 3.0) * np.exp(-z)
        K[a] = k.mean(axis=(0, 2))
    return K


def _mismatch(actual, expected, scale):
    """Largest |actual − expected| / (rtol·scale) and where, or None when within tolerance."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    if actual.shape != expected.shape:
        return f"shape {actual.shape} != {expected.shape}"
    error = np.abs(actual - expected)
    tolerance = PARITY_RTOL * (np.abs(expected) + scale)
    if np.all(error <= tolerance):
        return None
    worst = np.unravel_index(np.argmax(np.where(np.isfinite(error), error / tolerance, np.inf)), error.shape)
    return f"worst at {worst}: {actual[worst]!r} vs {expected[worst]!r} (tolerance {tolerance[worst]:.3g})"


def check_parity(cuda, n_points=PARITY_SIZE, file=None, spaces=PARITY_SPACES, modulations=None):
    """Compare every cuda function with the NumPy reference on ``n_points`` points (sets: n_points // 8 + 2);
    return the list of failures (empty: all agree).  The FM kernels run on each of ``spaces`` (names of
    ``workloads.benchmark_spaces()``) with each of ``modulations`` (names of MODULATIONS; None: all); every
    kernel is launched whichever are given, so a check of the launches alone (tests/test_cuda_ptx.py, under
    Numba's simulator, where each launch costs seconds) can take one of each."""
    failures = []

    def compare(label, actual, expected, scale=None):
        expected_array = np.asarray(expected, dtype=float)
        scale = np.max(np.abs(expected_array), initial=0.0) if scale is None else scale
        problem = _mismatch(actual, expected_array, scale)
        print(f"  {'FAIL' if problem else 'ok  '} {label}" + (f": {problem}" if problem else ""), file=file,
              flush=True)
        if problem:
            failures.append(f"{label}: {problem}")

    space_of = workloads.benchmark_spaces()
    chosen = MODULATIONS if modulations is None else {name: MODULATIONS[name] for name in modulations}
    rng = np.random.default_rng(0)
    for space_name in spaces:
        space = space_of[space_name]
        C, D, _, _ = kernel_arguments(space, n_points, seed=1)
        C2, D2, _, _ = kernel_arguments(space, max(3, n_points // 4), seed=2)
        W = rng.standard_normal((n_points, n_points))
        P = space.n_discrete
        for mod_name, modulation in chosen.items():
            args = (space.packed_spectra, rng.uniform(0.05, 5.0, P), rng.uniform(0.05, 5.0, P), 1.7, modulation)
            label = f"{space_name}/{mod_name}"
            compare(f"{label} fm_gram symmetric", cuda.fm_gram(C, D, None, None, *args),
                    numpy_backend.fm_gram(C, D, None, None, *args))
            compare(f"{label} fm_gram cross", cuda.fm_gram(C2, D2, C, D, *args),
                    numpy_backend.fm_gram(C2, D2, C, D, *args))
            R = numpy_backend.continuous_argument(C2, C, modulation.exponent)
            compare(f"{label} fm_gram_from_argument", cuda.fm_gram_from_argument(R, D2, D, *args),
                    numpy_backend.fm_gram_from_argument(R, D2, D, *args))
            _, dK = numpy_backend.fm_gram_gradient(C, D, *args)
            scale = np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1))
            compare(f"{label} fm_grad_reduction", np.concatenate([np.ravel(g) for g in
                                                                  cuda.fm_grad_reduction(C, D, W, *args)]),
                    np.concatenate([np.ravel(g) for g in numpy_backend.fm_grad_reduction(C, D, W, *args)]), scale)
            R = numpy_backend.continuous_argument(C, None, modulation.exponent)
            actual = cuda.fm_reduction_from_argument(R, D, W, *args)
            expected = numpy_backend.fm_reduction_from_argument(R, D, W, *args)
            P = space.n_discrete
            compare(f"{label} fm_reduction_from_argument", np.concatenate([np.ravel(g) for g in actual[:3]]),
                    np.concatenate([np.ravel(g) for g in expected[:3]]), scale[-(2 * P + 1):])
            compare(f"{label} fm_reduction_from_argument omega", actual[3], expected[3])
            owner = rng.integers(0, 3, 40)
            var_index = rng.integers(0, P, 40)
            new_state = np.array([rng.integers(0, space.n_states[p]) for p in var_index], dtype=np.int64)
            compare(f"{label} fm_neighbour_gram_batch",
                    cuda.fm_neighbour_gram_batch(C2[:3], D2[:3], C, D, owner, var_index, new_state, *args),
                    numpy_backend.fm_neighbour_gram_batch(C2[:3], D2[:3], C, D, owner, var_index, new_state, *args))
            V = rng.standard_normal((n_points, 3))
            compare(f"{label} fm_gram_matvec symmetric", cuda.fm_gram_matvec(C, D, None, None, V, *args),
                    numpy_backend.fm_gram_matvec(C, D, None, None, V, *args))
            compare(f"{label} fm_gram_matvec cross", cuda.fm_gram_matvec(C2, D2, C, D, V, *args),
                    numpy_backend.fm_gram_matvec(C2, D2, C, D, V, *args))
    for space_name in spaces if getattr(cuda, "name", None) == "cuda" else ():   # not test doubles
        on_device = likelihood_call(space_of[space_name], n_points, "cuda")
        assert on_device.terms.device is not None
        lml, grad = on_device()
        expected_lml, expected_grad = likelihood_call(space_of[space_name], n_points, "numpy")()
        compare(f"{space_name} GP log-likelihood on the device", lml, expected_lml)
        compare(f"{space_name} GP log-likelihood gradient on the device", grad, expected_grad)
    _check_hierarchical_parity(cuda, n_points, rng, compare)
    n_sets = n_points // 8 + 2
    A = rng.uniform(size=(n_sets, 12, 3))
    B = rng.uniform(size=(9, 7, 3))
    W = rng.standard_normal((n_sets, n_sets))
    length_scale = np.array([0.2, 0.5, 1.0])
    for nu in (0.5, 1.5, 2.5):
        compare(f"set_gram nu={nu} symmetric", cuda.set_gram(A, A, length_scale, nu),
                reference_set_gram(A, A, length_scale, nu))
        compare(f"set_gram nu={nu} cross", cuda.set_gram(A, B, length_scale, nu),
                reference_set_gram(A, B, length_scale, nu))
        step = 1e-5   # central differences in log ℓ: agreement to ~1e-8 relative is what they can show
        numeric = np.array([(np.sum(W * reference_set_gram(A, A, length_scale * np.exp(step * e), nu))
                             - np.sum(W * reference_set_gram(A, A, length_scale * np.exp(-step * e), nu)))
                            / (2 * step) for e in np.eye(3)])
        scale = 1e2 * np.sum(np.abs(W)) * np.ones(3)
        compare(f"set_grad_reduction nu={nu} (vs finite differences)", cuda.set_grad_reduction(A, W, length_scale, nu),
                numeric, scale)
    return failures


def likelihood_call(space, n_points, backend, on_device=True, noise=0.05):
    """A call of one GP log-likelihood + gradient evaluation (ModLap, seeded inputs) on ``backend``.

    ``on_device=False`` with the cuda backend: the Gram and the reduction on the GPU, the Cholesky and
    K⁻¹ on the host (LAPACK), the path before ``cuda_linalg``.  The call's ``terms`` attribute is the
    kernel's likelihood terms."""
    X = space.sample_encoded(n_points, seed=11)
    y = np.random.default_rng(12).standard_normal(n_points)
    kernel = ModLap(space, lengthscale=workloads.LENGTHSCALE, alpha=workloads.ALPHA, beta=workloads.BETA,
                    variance=workloads.VARIANCE, backend=backend)
    terms = kernel._likelihood_terms(X)
    if not on_device:
        terms.device = None
    gp = GaussianProcessRegressor(kernel)
    theta = kernel.theta

    def call():
        return gp._lml(terms, theta, y, np.log(noise), True)

    call.terms = terms
    return call


def _check_hierarchical_parity(cuda, n_points, rng, compare):
    """hier_gram (symmetric, cross) and hier_grad_reduction against the NumPy reference (SPEC §3)."""
    W = rng.standard_normal((n_points, n_points))   # not symmetric: pairs use W_ab + W_ba
    for base in ("matern52", "rbf"):
        V, M, _, args = hierarchical_arguments(n_points, seed=3, base=base)
        V2, M2, _, _ = hierarchical_arguments(max(3, n_points // 4), seed=4, base=base)
        compare(f"hierarchical/{base} hier_gram symmetric", cuda.hier_gram(V, M, None, None, *args),
                numpy_backend.hier_gram(V, M, None, None, *args))
        compare(f"hierarchical/{base} hier_gram cross", cuda.hier_gram(V2, M2, V, M, *args),
                numpy_backend.hier_gram(V2, M2, V, M, *args))
        expected = np.concatenate([np.ravel(g) for g in numpy_backend.hier_grad_reduction(V, M, W, *args)])
        actual = np.concatenate([np.ravel(g) for g in cuda.hier_grad_reduction(V, M, W, *args)])
        compare(f"hierarchical/{base} hier_grad_reduction", actual, expected,
                np.max(np.abs(expected), initial=0.0) + np.sum(np.abs(W)) * 1e-3)


# ----------------------------------------------------------------- timings
def _time(function, repeat, statistic):
    return time_call(function, repeat, warmup=1, statistic=statistic)


def run_timings(sizes=DEFAULT_SIZES, set_shape=DEFAULT_SET_SHAPE, repeat=5, numpy_max_n=2000, statistic="median",
                spaces=("NAS-like", "Func3C"), n_candidates=100_000, likelihood_max_n=10_000, file=None):
    """Time cuda, cpp and numpy; print a table and return its rows (times in ms, NaN when not timed)."""
    backends = {name: get_backend(name) for name in ("cuda", "cpp", "numpy") if name in available_backends()}
    all_spaces = workloads.benchmark_spaces()
    rows = []
    header = (f"{'case':<34} {'cuda ms':>10} {'cpp ms':>10} {'numpy ms':>10} {'numpy/cuda':>11} {'cpp/cuda':>9}")
    print(header, file=file)
    print("-" * len(header), file=file)

    def record(case, calls, n):
        times = {}
        for name, call in calls.items():
            skip = name not in backends or call is None or (name == "numpy" and n > numpy_max_n)
            times[name] = float("nan") if skip else 1e3 * _time(lambda: call(backends[name]), repeat, statistic)
        row = {"case": case, "cuda_ms": times["cuda"], "cpp_ms": times["cpp"], "numpy_ms": times["numpy"],
               "numpy_over_cuda": times["numpy"] / times["cuda"], "cpp_over_cuda": times["cpp"] / times["cuda"]}
        rows.append(row)
        print(f"{case:<34} {row['cuda_ms']:>10.2f} {row['cpp_ms']:>10.2f} {row['numpy_ms']:>10.1f} "
              f"{row['numpy_over_cuda']:>10.1f}x {row['cpp_over_cuda']:>8.1f}x", file=file, flush=True)

    for space_name in spaces:
        space = all_spaces[space_name]
        for n in sizes:
            C, D, W, args = kernel_arguments(space, n)

            def gram(module):
                return module.fm_gram(C, D, None, None, *args)

            def gram_and_reduction(module):
                module.fm_gram(C, D, None, None, *args)
                return module.fm_grad_reduction(C, D, W, *args)

            V = np.random.default_rng(5).standard_normal((n, 1))

            def matvec(module):
                return module.fm_gram_matvec(C, D, None, None, V, *args)

            record(f"{space_name} N={n} Gram", {"cuda": gram, "cpp": gram, "numpy": gram}, n)
            record(f"{space_name} N={n} Gram+reduction",
                   {"cuda": gram_and_reduction, "cpp": gram_and_reduction, "numpy": gram_and_reduction}, n)
            record(f"{space_name} N={n} K·v (matrix-free)", {"cuda": matvec, "cpp": matvec, "numpy": matvec}, n)
            del C, D, W
            if n <= likelihood_max_n:
                calls = {name: likelihood_call(space, n, name) for name in backends}
                record(f"{space_name} N={n} GP lml+gradient", {name: (lambda module, call=calls.get(name): call())
                                                               for name in ("cuda", "cpp", "numpy")}, n)
                del calls
                host = likelihood_call(space, n, "cuda", on_device=False)
                record(f"{space_name} N={n}  same, host LAPACK",
                       {"cuda": lambda module: host(), "cpp": None, "numpy": None}, n)
                del host
    if n_candidates:
        space = all_spaces["NAS-like"]
        C2, D2, _, args = kernel_arguments(space, 200)
        C1, D1 = workloads.candidate_inputs(space, n_candidates)

        def cross(module):
            return module.fm_gram(C1, D1, C2, D2, *args)

        record(f"NAS-like cross {n_candidates}x200", {"cuda": cross, "cpp": cross, "numpy": cross}, n_candidates)
    n_sets, set_size, n_dims = set_shape
    rng = np.random.default_rng(3)
    A = rng.uniform(size=(n_sets, set_size, n_dims))
    W = rng.standard_normal((n_sets, n_sets))
    length_scale = np.full(n_dims, 0.3)

    def set_sum(module):
        return module.set_gram(A, A, length_scale, 2.5)

    def set_reduction(module):
        return module.set_grad_reduction(A, W, length_scale, 2.5)

    def has(name, function):
        return name in backends and hasattr(backends[name], function)

    for n in sizes:
        HV, HM, HW, hier_args = hierarchical_arguments(n)

        def hier_gram(module):
            return module.hier_gram(HV, HM, None, None, *hier_args)

        def hier_gram_and_reduction(module):
            module.hier_gram(HV, HM, None, None, *hier_args)
            return module.hier_grad_reduction(HV, HM, HW, *hier_args)

        record(f"hierarchical N={n} Gram", {"cuda": hier_gram, "cpp": hier_gram, "numpy": hier_gram}, n)
        record(f"hierarchical N={n} Gram+reduction", {"cuda": hier_gram_and_reduction, "cpp": hier_gram_and_reduction,
                                                      "numpy": hier_gram_and_reduction}, n)
        del HW
    record(f"set Gram {set_shape}", {"cuda": set_sum, "cpp": set_sum if has("cpp", "set_gram") else None,
                                     "numpy": set_sum if has("numpy", "set_gram") else None}, n_sets)
    record(f"set reduction {set_shape}",
           {"cuda": set_reduction, "cpp": set_reduction if has("cpp", "set_grad_reduction") else None,
            "numpy": set_reduction if has("numpy", "set_grad_reduction") else None}, n_sets)
    return rows


def _describe_gpu():
    from .._backends import cuda
    return "GPU: " + cuda.describe()


def add_parser(commands):
    """``gpu``: the flags of the old ``python -m fastfm._backends.cuda_bench``, unchanged."""
    parser = commands.add_parser("gpu", help="cuda backend: parity with the NumPy reference, then timings "
                                             "against cpp and numpy", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="N")
    parser.add_argument("--set-shape", type=int, nargs=3, default=list(DEFAULT_SET_SHAPE),
                        metavar=("N_SETS", "SET_SIZE", "DIMS"))
    parser.add_argument("--candidates", type=int, default=100_000, help="rows of the cross Gram (0: skip)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--statistic", choices=["median", "min"], default="median")
    parser.add_argument("--numpy-max-n", type=int, default=2000, help="largest N the NumPy reference is timed on")
    parser.add_argument("--likelihood-max-n", type=int, default=10_000,
                        help="largest N of the GP log-likelihood timings")
    parser.add_argument("--parity-only", action="store_true")
    parser.add_argument("--parity-size", type=int, default=PARITY_SIZE, help="points of the parity check")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    parser.set_defaults(run=run)
    return parser


def run(args, parser, command):
    """Parity, then (when every check passed) the timings; exit status 2 without a GPU, 1 on a mismatch."""
    if "cuda" not in available_backends():
        print(f"the cuda backend is not available here: {backend_status()['cuda']}", file=sys.stderr)
        return 2
    cuda = get_backend("cuda")
    machine = describe_machine() + "\n" + _describe_gpu()
    print(machine)
    print(f"parity against the NumPy reference (rtol {PARITY_RTOL:g}):")
    failures = check_parity(cuda, args.parity_size)
    result = {"command": command, "machine": machine, "parity_failures": failures, "timings": []}
    if not failures and not args.parity_only:
        result["timings"] = run_timings(args.sizes, tuple(args.set_shape), args.repeat, args.numpy_max_n,
                                        args.statistic, n_candidates=args.candidates,
                                        likelihood_max_n=args.likelihood_max_n)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=2, default=float)
    if failures:
        print(f"PARITY FAILED: {len(failures)} mismatch(es) against the NumPy reference", file=sys.stderr)
        return 1
    return 0
