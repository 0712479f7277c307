"""Kernel benchmarks: FM Gram and fused gradient reduction, compiled backend vs NumPy reference.

Run ``python -m fastfm.bench kernels`` (options: ``--sizes``, ``--repeat``,
``--spaces``, ``--threads``, ``--clock {wall,cpu}``, ``--statistic {median,min}``,
``--cross``, ``--efficiency``).  ``python -m fastfm.bench sets`` times the set kernel
(SPEC §4): the full (500, 50, 2) Gram, exact and K̂ with L = 10, and Gram + gradient
reduction, cpp vs NumPy (options ``--shape N M D``, ``--subsample L`` and the above).  For each space and N it prints the median time of
the full N×N ModLap Gram with the ``cpp`` backend and with the NumPy
reference (and their ratio), and the median time of the Gram plus the fused
gradient reduction Σ W ∘ ∂K/∂θ (what one GP marginal-likelihood gradient
costs: W symmetric, ``symmetric_weights=True`` as in the GP fit) with its ratio to the Gram alone; then the candidates × observations
cross Gram of the acquisition optimiser (``--cross``).  Everything is measured
in the same run, on the same seeded inputs.

The spaces are importable (:func:`benchmark_spaces`) so that the asv suite
and other benchmarks use the same ones.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from ._backends import available_backends, get_backend
from ._backends.modulation import Modulation
from .space import Categorical, Ordinal, Real, Space

__all__ = ["benchmark_spaces", "kernel_inputs", "time_call", "run_kernel_benchmarks", "run_cross_benchmark",
           "run_parallel_efficiency", "set_inputs", "run_set_benchmarks", "run_hierarchical_benchmarks", "main"]

# Hyperparameters of the benchmarked ModLap kernel: typical fitted values on
# unit-cube inputs (the timing does not depend on them, except through overflow
# guards that these stay far from).
LENGTHSCALE = 0.5
ALPHA = 1.0
BETA = 1.0
VARIANCE = 1.0

DEFAULT_SIZES = (200, 500, 1000, 2000)
DEFAULT_SPACES = ("Func3C", "Ackley5C", "NAS-like")
# The NumPy reference is slow at large N; it gets fewer repeats than the compiled backend.
MAX_NUMPY_REPEAT = 3


def benchmark_spaces(seed=0):
    """The benchmark search spaces by name.

    * ``Func3C``: 2 continuous, nominal with 3, 5 and 4 states (SPEC §6);
    * ``Ackley5C``: 1 continuous, five nominal with 17 states (SPEC §6);
    * ``NAS-like``: 6 continuous, 10 nominal and 10 ordinal variables with 3–8
      states each (drawn with ``seed``), the size of a NAS cell plus optimiser.

    Returns
    -------
    dict of str -> Space
    """
    rng = np.random.default_rng(seed)
    func3c = Space([Real("x1", -1.0, 1.0), Real("x2", -1.0, 1.0),
                    Categorical("h1", list(range(3))), Categorical("h2", list(range(5))),
                    Categorical("h3", list(range(4)))])
    ackley = Space([Real("u", -1.0, 1.0)] + [Categorical(f"h{i}", list(range(17))) for i in range(1, 6)])
    nominal_states = rng.integers(3, 9, size=10)
    ordinal_states = rng.integers(3, 9, size=10)
    nas = Space([Real(f"c{i}", 0.0, 1.0) for i in range(6)]
                + [Categorical(f"op{i}", list(range(n))) for i, n in enumerate(nominal_states)]
                + [Ordinal(f"size{i}", list(range(n))) for i, n in enumerate(ordinal_states)])
    return {"Func3C": func3c, "Ackley5C": ackley, "NAS-like": nas}


def kernel_inputs(space, n_points, seed=0):
    """Seeded backend inputs for a ModLap Gram on ``space``.

    Returns
    -------
    C : (n_points, Dc) scaled continuous part;  D : (n_points, P) states;
    W : (n_points, n_points) symmetric reduction weights;
    args : tuple (spectra, alphas, betas, variance, modulation), the trailing
        arguments of every backend function.
    """
    X = space.sample_encoded(n_points, seed=seed)
    C, D = space.split(X)
    C = np.ascontiguousarray(C / LENGTHSCALE)
    rng = np.random.default_rng(seed + 1)
    A = rng.standard_normal((n_points, n_points))
    W = 0.5 * (A + A.T) / n_points
    P = space.n_discrete
    args = (space.packed_spectra, np.full(P, ALPHA), np.full(P, BETA), VARIANCE, Modulation())
    return C, D, W, args


CLOCKS = {
    # elapsed time: what a user waits for
    "wall": time.perf_counter,
    # CPU time of the whole process (all threads): with --threads 1 it is the
    # single-core cost, unaffected by other programs competing for the cores
    "cpu": time.process_time,
}


STATISTICS = {
    "median": statistics.median,
    # best of the repeats (as timeit recommends): the run least disturbed by
    # other programs, an estimate of the time on an idle machine
    "min": min,
}


def time_call(function, repeat, warmup=1, clock="wall", statistic="median"):
    """``statistic`` (median or min) of the times in seconds of ``repeat`` runs of ``function()``
    (after ``warmup`` runs) on ``clock``."""
    now = CLOCKS[clock]
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        start = now()
        function()
        times.append(now() - start)
    return STATISTICS[statistic](times)


def run_kernel_benchmarks(sizes=DEFAULT_SIZES, repeat=7, spaces=DEFAULT_SPACES, numpy_reference=True,
                          backend="cpp", clock="wall", statistic="median", file=None):
    """Time Gram and Gram + reduction; print a table and return its rows as dicts (times in ms)."""
    fast = get_backend(backend)
    reference = get_backend("numpy")
    all_spaces = benchmark_spaces()
    rows = []
    header = (f"{'space':<10} {'N':>5} {backend + ' Gram':>11} {'numpy Gram':>11} {'speed-up':>9} "
              f"{'Gram+red':>10} {'(Gram+red)/Gram':>16}")
    print(header, file=file)
    print("-" * len(header), file=file)
    for space_name in spaces:
        space = all_spaces[space_name]
        for n in sizes:
            C, D, W, args = kernel_inputs(space, n)

            def gram(module=fast):
                return module.fm_gram(C, D, None, None, *args)

            def gram_and_reduction():
                fast.fm_gram(C, D, None, None, *args)
                return fast.fm_grad_reduction(C, D, W, *args, True)   # W symmetric, as in a GP fit

            timing = {"clock": clock, "statistic": statistic}
            t_gram = time_call(gram, repeat, **timing)
            t_both = time_call(gram_and_reduction, repeat, **timing)
            t_numpy = (time_call(lambda: gram(reference), min(repeat, MAX_NUMPY_REPEAT), warmup=0, **timing)
                       if numpy_reference else float("nan"))
            row = {"space": space_name, "N": n, "gram_ms": 1e3 * t_gram, "numpy_gram_ms": 1e3 * t_numpy,
                   "speedup": t_numpy / t_gram, "gram_and_reduction_ms": 1e3 * t_both,
                   "reduction_ratio": t_both / t_gram}
            rows.append(row)
            print(f"{space_name:<10} {n:>5} {row['gram_ms']:>9.2f}ms {row['numpy_gram_ms']:>9.1f}ms "
                  f"{row['speedup']:>8.0f}x {row['gram_and_reduction_ms']:>8.2f}ms {row['reduction_ratio']:>15.2f}x",
                  file=file, flush=True)
    return rows


# Rows per cross-Gram call when candidates are scored in batches, as the
# acquisition optimiser does (fastfm.optim.mixed.SCORING_BATCH): small results
# reuse freed memory, a single 100,000 × 200 result (160 MB) is fresh memory
# whose page faults cost ~20% of the call.
CROSS_BATCH = 4_096


def run_cross_benchmark(n_candidates=(10_000, 100_000), n_observations=200, space_name="NAS-like", repeat=7,
                        numpy_reference=True, backend="cpp", clock="wall", statistic="median", file=None):
    """Time the candidates × observations cross Gram (acquisition scoring); print and return rows.

    Each size is timed as one call and in batches of ``CROSS_BATCH`` rows.  The
    NumPy reference is timed only up to 10,000 candidates (it needs several
    dense candidates × observations temporaries per eigenvalue group).
    """
    fast = get_backend(backend)
    reference = get_backend("numpy")
    space = benchmark_spaces()[space_name]
    C2, D2, _, args = kernel_inputs(space, n_observations)
    timing = {"clock": clock, "statistic": statistic}
    rows = []
    for n in n_candidates:
        C1, D1 = space.split(space.sample_encoded(n, seed=7))
        C1 = np.ascontiguousarray(C1 / LENGTHSCALE)
        t_fast = time_call(lambda: fast.fm_gram(C1, D1, C2, D2, *args), repeat, **timing)

        def batched():
            for start in range(0, n, CROSS_BATCH):
                fast.fm_gram(C1[start:start + CROSS_BATCH], D1[start:start + CROSS_BATCH], C2, D2, *args)

        t_batched = time_call(batched, repeat, **timing)
        t_numpy = float("nan")
        if numpy_reference and n <= 10_000:
            t_numpy = time_call(lambda: reference.fm_gram(C1, D1, C2, D2, *args), min(repeat, MAX_NUMPY_REPEAT),
                                warmup=0, **timing)
        row = {"space": space_name, "n_candidates": n, "n_observations": n_observations,
               "cross_ms": 1e3 * t_fast, "cross_batched_ms": 1e3 * t_batched, "numpy_cross_ms": 1e3 * t_numpy}
        rows.append(row)
        numpy_text = f", numpy {row['numpy_cross_ms']:.0f} ms ({t_numpy / t_fast:.0f}x)" if t_numpy == t_numpy else ""
        print(f"cross Gram {space_name} {n:,} × {n_observations}: {backend} {row['cross_ms']:.1f} ms in one call, "
              f"{row['cross_batched_ms']:.1f} ms in batches of {CROSS_BATCH}{numpy_text}", file=file, flush=True)
    return rows


def run_parallel_efficiency(n_points=2000, spaces=DEFAULT_SPACES, threads=2, repeat=7, backend="cpp",
                            file=None):
    """Process CPU time of the Gram and the reduction with 1 and with ``threads`` threads.

    efficiency = CPU(1 thread) / CPU(all threads together): 1 means the parallel
    code does no extra work, so that on an idle machine the wall time is the
    1-thread time divided by ``threads × efficiency``.  Unlike wall time this
    does not depend on other programs competing for the cores.
    """
    from ._config import config_context

    fast = get_backend(backend)
    all_spaces = benchmark_spaces()
    print(f"{'space':<10} {'N':>5} {'kernel':<10} {'CPU 1 thread':>13} {f'CPU {threads} threads':>14} "
          f"{'efficiency':>10}", file=file)
    rows = []
    for space_name in spaces:
        C, D, W, args = kernel_inputs(all_spaces[space_name], n_points)
        for label, call in (("Gram", lambda: fast.fm_gram(C, D, None, None, *args)),
                            ("reduction", lambda: fast.fm_grad_reduction(C, D, W, *args, True))):
            # The CPU time of a multi-threaded process may be counted in scheduler
            # ticks (4 ms on some kernels): time enough calls to span ≥ 0.25 s.
            with config_context(num_threads=1):
                calls = max(1, int(0.25 / max(time_call(call, 1, clock="cpu"), 1e-6)))

            def function(call=call, calls=calls):
                for _ in range(calls):
                    call()

            with config_context(num_threads=1):
                one = time_call(function, repeat, clock="cpu") / calls
            with config_context(num_threads=threads):
                many = time_call(function, repeat, clock="cpu") / calls
            rows.append({"space": space_name, "N": n_points, "kernel": label, "cpu_1_ms": 1e3 * one,
                         "cpu_parallel_ms": 1e3 * many, "efficiency": one / many})
            print(f"{space_name:<10} {n_points:>5} {label:<10} {1e3 * one:>11.1f}ms {1e3 * many:>12.1f}ms "
                  f"{one / many:>10.2f}", file=file, flush=True)
    return rows


# ---------------------------------------------------------------------------- set kernels (SPEC §4)
# The performance target of the set-kernel issue: a full (N, m, d) = (500, 50, 2) Gram, Matérn 5/2.
DEFAULT_SET_SHAPE = (500, 50, 2)
DEFAULT_SET_SUBSAMPLE = 10
SET_LENGTHSCALE = 0.3


def set_inputs(n_sets, n_points, dim, seed=0):
    """Seeded sets (n_sets, n_points, dim) uniform in the unit cube and symmetric weights W (n_sets, n_sets)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_sets, n_sets))
    return rng.random((n_sets, n_points, dim)), W + W.T


def run_set_benchmarks(shape=DEFAULT_SET_SHAPE, subsample=DEFAULT_SET_SUBSAMPLE, repeat=7, numpy_reference=True,
                       backend="cpp", clock="wall", statistic="median", file=None):
    """Time the full set Gram (exact and K̂ on ``subsample`` points) and Gram + gradient reduction
    through ``SetKernel`` (so K̂'s projection sort is included), with ``backend`` and the NumPy
    reference in the same run; print a table and return its rows (times in ms)."""
    from .kernels import SetKernel

    X, W = set_inputs(*shape)
    rows = []
    header = (f"{'set Gram (N, m, d)':<20} {'L':>4} {backend + ' Gram':>11} {'numpy Gram':>11} {'speed-up':>9} "
              f"{backend + ' Gram+red':>13} {'numpy Gram+red':>15}")
    print(header, file=file)
    print("-" * len(header), file=file)
    timing = {"clock": clock, "statistic": statistic}
    for L in (None, subsample):
        kernels = {name: SetKernel(lengthscale=SET_LENGTHSCALE, n_subsample=L, seed=0, backend=name)
                   for name in (backend, "numpy")}
        times = {}
        for name, kernel in kernels.items():
            if name == "numpy" and not numpy_reference:
                times[name] = (float("nan"), float("nan"))
                continue
            n_repeat = repeat if name != "numpy" else min(repeat, MAX_NUMPY_REPEAT)
            times[name] = (time_call(lambda k=kernel: k(X), n_repeat, warmup=int(name != "numpy"), **timing),
                           time_call(lambda k=kernel: k.gram_and_gradient_reduction(X, W), n_repeat,
                                     warmup=int(name != "numpy"), **timing))
        row = {"shape": tuple(shape), "L": L or shape[1], "gram_ms": 1e3 * times[backend][0],
               "numpy_gram_ms": 1e3 * times["numpy"][0], "speedup": times["numpy"][0] / times[backend][0],
               "gram_and_reduction_ms": 1e3 * times[backend][1],
               "numpy_gram_and_reduction_ms": 1e3 * times["numpy"][1]}
        rows.append(row)
        print(f"{str(tuple(shape)):<20} {row['L']:>4} {row['gram_ms']:>9.2f}ms {row['numpy_gram_ms']:>9.1f}ms "
              f"{row['speedup']:>8.1f}x {row['gram_and_reduction_ms']:>11.2f}ms "
              f"{row['numpy_gram_and_reduction_ms']:>13.1f}ms", file=file, flush=True)


def hierarchical_inputs(n, seed=0, base="matern52"):
    """Seeded inputs of the Hierarchical (SPEC §3) benchmarks on the DeepBranch space.

    Returns
    -------
    V, M : (n, n_columns) embedding values and activity mask;  W : (n, n) symmetric reduction weights;
    args : the backend arguments after (V, M[, V2, M2 | W]) of a Hierarchical kernel with γ = 0.7,
        ρ = 0.5, lengthscale 0.5 and the ``base`` profile ("matern52" or "rbf").
    """
    from .benchmarks.conditional import DeepBranch
    from .kernels import Hierarchical

    space = DeepBranch().space
    kernel = Hierarchical(space, base=base, gamma=0.7, rho=0.5, lengthscale=0.5)
    V, M = kernel._inputs(space.sample_encoded(n, seed=seed))
    A = np.random.default_rng(seed + 1).standard_normal((n, n))
    return V, M, 0.5 * (A + A.T) / n, kernel._args()


def run_hierarchical_benchmarks(sizes=(200, 500, 1000, 2000), repeat=5, backend="cpp", numpy_max_n=500,
                                clock="wall", statistic="median", file=None):
    """Time the Hierarchical (SPEC §3) Gram and Gram + fused reduction on the DeepBranch
    space, ``backend`` vs the NumPy reference (up to ``numpy_max_n`` points), same inputs."""
    fast, reference = get_backend(backend), get_backend("numpy")
    timing = {"clock": clock, "statistic": statistic}
    print(f"{'N':>5} {backend + ' Gram':>11} {'numpy Gram':>11} {'speed-up':>9} {'Gram+red':>10} "
          f"{'numpy G+r':>10} {'speed-up':>9}", file=file)
    rows = []
    for n in sizes:
        V, M, W, args = hierarchical_inputs(n)

        def gram(module):
            return module.hier_gram(V, M, None, None, *args)

        def both(module):
            gram(module)
            return module.hier_grad_reduction(V, M, W, *args)

        t_gram, t_both = time_call(lambda: gram(fast), repeat, **timing), time_call(lambda: both(fast), repeat, **timing)
        t_np_gram = t_np_both = float("nan")
        if n <= numpy_max_n:
            t_np_gram = time_call(lambda: gram(reference), min(repeat, MAX_NUMPY_REPEAT), warmup=0, **timing)
            t_np_both = time_call(lambda: both(reference), min(repeat, MAX_NUMPY_REPEAT), warmup=0, **timing)
        row = {"N": n, "gram_ms": 1e3 * t_gram, "numpy_gram_ms": 1e3 * t_np_gram, "gram_and_reduction_ms": 1e3 * t_both,
               "numpy_gram_and_reduction_ms": 1e3 * t_np_both}
        rows.append(row)
        print(f"{n:>5} {1e3 * t_gram:>9.2f}ms {1e3 * t_np_gram:>9.1f}ms {t_np_gram / t_gram:>8.0f}x "
              f"{1e3 * t_both:>8.2f}ms {1e3 * t_np_both:>8.1f}ms {t_np_both / t_both:>8.0f}x", file=file, flush=True)
    return rows


def _describe_machine():
    import os
    import platform

    lines = [f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
             f"{platform.machine()} {platform.processor() or ''}".rstrip()]
    if hasattr(os, "getloadavg"):
        lines.append("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if "cpp" in available_backends():
        from . import _cpp
        info = _cpp.build_info()
        lines.append(f"fastfm._cpp: OpenMP {'on' if info['openmp'] else 'off'} ({info['max_threads']} threads), "
                     f"{info['compiler']}, SIMD {info['simd']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fastfm.bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    kernels = commands.add_parser("kernels", help="FM Gram and gradient-reduction timings, cpp vs numpy")
    kernels.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="N",
                         help="numbers of points (default: %(default)s)")
    kernels.add_argument("--repeat", type=int, default=7, help="timed runs per figure; the median is shown")
    kernels.add_argument("--spaces", nargs="+", default=list(DEFAULT_SPACES), choices=list(DEFAULT_SPACES),
                         help="benchmark spaces (default: all)")
    kernels.add_argument("--backend", default="cpp", choices=["cpp", "cuda", "numpy"],
                         help="the fast backend to compare with the NumPy reference")
    kernels.add_argument("--threads", type=int, default=None, help="threads of the compiled backend (default: all)")
    kernels.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy reference timings")
    kernels.add_argument("--cross", type=int, nargs="*", default=[10_000, 100_000], metavar="N_CANDIDATES",
                         help="also time the N_CANDIDATES × 200 cross Gram on NAS-like (default: %(default)s; "
                              "give no value to skip)")
    kernels.add_argument("--statistic", choices=sorted(STATISTICS), default="median",
                         help="median of the repeats (default) or min (best of N: ~idle-machine time)")
    kernels.add_argument("--efficiency", action="store_true",
                         help="only measure the parallel efficiency (CPU time with 1 vs 2 threads) at the largest size")
    kernels.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                         help="wall: elapsed time (default); cpu: process CPU time, the robust single-core "
                              "figure on a busy machine when combined with --threads 1")
    sets = commands.add_parser("sets", help="set-kernel Gram timings (exact and K̂), cpp vs numpy")
    sets.add_argument("--shape", type=int, nargs=3, default=list(DEFAULT_SET_SHAPE), metavar=("N", "M", "D"),
                      help="number of sets, points per set, dimension (default: %(default)s)")
    sets.add_argument("--subsample", type=int, default=DEFAULT_SET_SUBSAMPLE, metavar="L",
                      help="points per set of the approximation K̂ (default: %(default)s)")
    for sub in (sets,):
        sub.add_argument("--repeat", type=int, default=7, help="timed runs per figure")
        sub.add_argument("--backend", default="cpp", choices=["cpp", "cuda", "numpy"],
                         help="the fast backend to compare with the NumPy reference")
        sub.add_argument("--threads", type=int, default=None, help="threads of the compiled backend (default: all)")
        sub.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy reference timings")
        sub.add_argument("--statistic", choices=sorted(STATISTICS), default="median",
                         help="median of the repeats (default) or min (best of N: ~idle-machine time)")
        sub.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall (default) or cpu time")
    hier = commands.add_parser("hierarchical", help="Hierarchical-kernel Gram and reduction timings, cpp vs numpy")
    hier.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000, 2000], metavar="N")
    hier.add_argument("--repeat", type=int, default=5)
    hier.add_argument("--threads", type=int, default=None, help="threads of the compiled backend (default: all)")
    hier.add_argument("--statistic", choices=sorted(STATISTICS), default="median")
    hier.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                      help="cpu (process CPU time) with --threads 1 is the robust figure on a busy machine")
    # >>> Large-N GP regression benchmark (fastfm/benchmarks/regression.py)
    regression = commands.add_parser("regression", help="GP regression on the mixed set: fit/predict time, RMSE, NLL")
    regression.add_argument("--sizes", type=lambda s: [int(n) for n in s.split(",")], default=[2000, 10_000, 50_000],
                            metavar="N,N,...", help="training sizes (default: 2000,10000,50000)")
    regression.add_argument("--n-test", type=int, default=10_000, help="test points (default: %(default)s)")
    regression.add_argument("--subset", type=int, default=2000, help="points of the hyperparameter fit")
    regression.add_argument("--restarts", type=int, default=2, help="extra L-BFGS-B starts of that fit")
    regression.add_argument("--cg-sizes", type=lambda s: [int(n) for n in s.split(",")], default=[],
                            metavar="N,...", help="sizes that also get a forced method='cg' row")
    regression.add_argument("--peers", default="sklearn,botorch", help="comma list of sklearn, botorch, or none")
    regression.add_argument("--sklearn-max-n", type=int, default=10_000)
    regression.add_argument("--botorch-max-n", type=int, default=2000)
    regression.add_argument("--seed", type=int, default=0)
    regression.add_argument("--cg-tol", type=float, default=None,
                            help="relative residual of the PCG solves (default: gp_large.DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-rank", type=int, default=None,
                            help="rank of the pivoted-Cholesky preconditioner (default: gp_large.DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-max-iter", type=int, default=None,
                            help="PCG iterations before giving up (default: gp_large.DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-block-size", type=int, default=None,
                            help="PITC block size of the preconditioner, 1 = FITC diagonal (default: DEFAULT_CG_OPTIONS)")
    regression.add_argument("--cg-precision", choices=("auto", "double", "mixed"), default=None,
                            help="kernel values inside PCG's products (default: gp_large.DEFAULT_CG_OPTIONS)")
    regression.add_argument("--threads", type=int, default=None, help="threads of the compiled backend")
    regression.add_argument("--subset-study", type=int, default=None, metavar="N",
                            help="instead: accuracy of hyperparameters fitted on subsets vs on all N points")
    regression.add_argument("--fixed-noise", type=float, default=None, metavar="NOISE",
                            help="fastfm at ModLap's default hyperparameters and this standardised noise (no fit)")
    regression.add_argument("--fit-each", action="store_true",
                            help="fastfm fits its hyperparameters at every N (default strategy, timed in the fit) "
                                 "instead of once on --subset points")
    regression.add_argument("--components", type=int, default=None, metavar="N",
                            help="instead: wall/CPU time of each piece of the exact solver at N points")
    # <<< Large-N GP regression benchmark
    args = parser.parse_args(argv)

    from ._config import config_context

    if args.command == "sets":
        if args.backend not in available_backends():
            parser.error(f"backend {args.backend!r} is not available here (available: {available_backends()})")
        print(_describe_machine())
        with config_context(**({} if args.threads is None else {"num_threads": args.threads})):
            run_set_benchmarks(tuple(args.shape), args.subsample, args.repeat, not args.no_numpy, args.backend,
                               args.clock, args.statistic)
        return 0
    if args.command == "hierarchical":
        print(_describe_machine())
        with config_context(**({} if args.threads is None else {"num_threads": args.threads})):
            run_hierarchical_benchmarks(args.sizes, args.repeat, clock=args.clock, statistic=args.statistic)
        return 0
    if args.command == "regression":
        from .benchmarks.regression import run_regression_benchmark
        print(_describe_machine())
        print("command: python -m fastfm.bench " + " ".join(sys.argv[1:] if argv is None else argv))
        with config_context(**({} if args.threads is None else {"num_threads": args.threads})):
            if args.components:
                from .benchmarks.regression import run_exact_components
                run_exact_components(args.components, n_test=args.n_test, seed=args.seed,
                                     emit=lambda line: print(line, flush=True))
                return 0
            if args.subset_study:
                from .benchmarks.regression import run_subset_study
                run_subset_study(args.subset_study, n_test=args.n_test, n_restarts=args.restarts, seed=args.seed,
                                 emit=lambda line: print(line, flush=True))
                return 0
            run_regression_benchmark(args.sizes, args.n_test, args.subset, args.restarts, args.seed,
                                     tuple(p for p in args.peers.split(",") if p and p != "none"),
                                     args.sklearn_max_n, args.botorch_max_n, args.cg_sizes,
                                     emit=lambda line: print(line, flush=True),
                                     cg_options={key: value for key, value in (("tol", args.cg_tol),
                                                                               ("rank", args.cg_rank),
                                                                               ("max_iter", args.cg_max_iter),
                                                                               ("block_size", args.cg_block_size),
                                                                               ("precision", args.cg_precision))
                                                 if value is not None} or None,
                                     fixed_noise=args.fixed_noise, fit_each=args.fit_each)
        return 0

    if args.backend not in available_backends():
        parser.error(f"backend {args.backend!r} is not available here (available: {available_backends()})")
    print(_describe_machine())
    if args.efficiency:
        run_parallel_efficiency(max(args.sizes), args.spaces, args.threads or 2, args.repeat, args.backend)
        return 0
    settings = {} if args.threads is None else {"num_threads": args.threads}
    with config_context(**settings):
        run_kernel_benchmarks(args.sizes, args.repeat, args.spaces, not args.no_numpy, args.backend, args.clock,
                              args.statistic)
        if args.cross:
            run_cross_benchmark(args.cross, repeat=args.repeat, numpy_reference=not args.no_numpy,
                                backend=args.backend, clock=args.clock, statistic=args.statistic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
