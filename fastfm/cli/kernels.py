"""``fastfm time kernels|sets|hierarchical``: kernel timings, a compiled backend against the NumPy reference.

``fastfm time kernels`` (options: ``--sizes``, ``--repeat``, ``--spaces``, ``--threads``,
``--clock {wall,cpu}``, ``--statistic {median,min}``, ``--cross``, ``--efficiency``): for each space
and N, the time of the full N×N ModLap Gram with the ``cpp`` backend and with the NumPy reference (and
their ratio), and the time of the Gram plus the fused gradient reduction Σ W ∘ ∂K/∂θ (what one GP
marginal-likelihood gradient costs: W symmetric, ``symmetric_weights=True`` as in the GP fit) with its
ratio to the Gram alone; then the candidates × observations cross Gram of the acquisition optimiser
(``--cross``).  ``fastfm time sets`` times the set kernel (SPEC §4): the full (500, 50, 2) Gram, exact
and K̂ with L = 10, and Gram + gradient reduction (options ``--shape N M D``, ``--subsample L`` and the
above).  ``fastfm time hierarchical`` times the conditional-space kernel (SPEC §3) on DeepBranch.
Everything is measured in the same run, on the suite's seeded inputs (``fastfm.benchmarks.workloads``).
"""
from .._backends import available_backends, get_backend
from .._config import config_context
from ..benchmarks.workloads import (DEFAULT_SET_SHAPE, DEFAULT_SET_SUBSAMPLE, SET_LENGTHSCALE, benchmark_spaces,
                                    candidate_inputs, set_inputs)
from ..kernels import SetKernel
from .timing import (CLOCKS, MAX_NUMPY_REPEAT, STATISTICS, describe_machine, hierarchical_arguments,
                     kernel_arguments, time_call)

__all__ = ["run_kernel_benchmarks", "run_cross_benchmark", "run_parallel_efficiency", "run_set_benchmarks",
           "run_hierarchical_benchmarks", "add_parsers"]

DEFAULT_SIZES = (200, 500, 1000, 2000)
DEFAULT_SPACES = ("Func3C", "Ackley5C", "NAS-like")
DEFAULT_HIERARCHICAL_SIZES = (200, 500, 1000, 2000)


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
            C, D, W, args = kernel_arguments(space, n)

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
    C2, D2, _, args = kernel_arguments(space, n_observations)
    timing = {"clock": clock, "statistic": statistic}
    rows = []
    for n in n_candidates:
        C1, D1 = candidate_inputs(space, n)
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
    fast = get_backend(backend)
    all_spaces = benchmark_spaces()
    print(f"{'space':<10} {'N':>5} {'kernel':<10} {'CPU 1 thread':>13} {f'CPU {threads} threads':>14} "
          f"{'efficiency':>10}", file=file)
    rows = []
    for space_name in spaces:
        C, D, W, args = kernel_arguments(all_spaces[space_name], n_points)
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



def run_set_benchmarks(shape=DEFAULT_SET_SHAPE, subsample=DEFAULT_SET_SUBSAMPLE, repeat=7, numpy_reference=True,
                       backend="cpp", clock="wall", statistic="median", file=None):
    """Time the full set Gram (exact and K̂ on ``subsample`` points) and Gram + gradient reduction
    through ``SetKernel`` (so K̂'s projection sort is included), with ``backend`` and the NumPy
    reference in the same run; print a table and return its rows (times in ms)."""
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
    return rows



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
        V, M, W, args = hierarchical_arguments(n)

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


# ----------------------------------------------------------------------------------- command line
def _add_common(parser, repeat, statistic_help):
    parser.add_argument("--repeat", type=int, default=repeat, help="timed runs per figure")
    parser.add_argument("--threads", type=int, default=None, help="threads of the compiled backend (default: all)")
    parser.add_argument("--statistic", choices=sorted(STATISTICS), default="median", help=statistic_help)


_STATISTIC_HELP = "median of the repeats (default) or min (best of N: ~idle-machine time)"


def add_parsers(commands):
    """``kernels``, ``sets`` and ``hierarchical``: the flags of the old ``python -m fastfm.bench``, unchanged."""
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
    kernels.add_argument("--statistic", choices=sorted(STATISTICS), default="median", help=_STATISTIC_HELP)
    kernels.add_argument("--efficiency", action="store_true",
                         help="only measure the parallel efficiency (CPU time with 1 vs 2 threads) at the largest size")
    kernels.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                         help="wall: elapsed time (default); cpu: process CPU time, the robust single-core "
                              "figure on a busy machine when combined with --threads 1")
    kernels.set_defaults(run=_run_kernels)

    sets = commands.add_parser("sets", help="set-kernel Gram timings (exact and K̂), cpp vs numpy")
    sets.add_argument("--shape", type=int, nargs=3, default=list(DEFAULT_SET_SHAPE), metavar=("N", "M", "D"),
                      help="number of sets, points per set, dimension (default: %(default)s)")
    sets.add_argument("--subsample", type=int, default=DEFAULT_SET_SUBSAMPLE, metavar="L",
                      help="points per set of the approximation K̂ (default: %(default)s)")
    _add_common(sets, 7, _STATISTIC_HELP)
    sets.add_argument("--backend", default="cpp", choices=["cpp", "cuda", "numpy"],
                      help="the fast backend to compare with the NumPy reference")
    sets.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy reference timings")
    sets.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall (default) or cpu time")
    sets.set_defaults(run=_run_sets)

    hier = commands.add_parser("hierarchical", help="Hierarchical-kernel Gram and reduction timings, cpp vs numpy")
    hier.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_HIERARCHICAL_SIZES), metavar="N")
    _add_common(hier, 5, None)
    hier.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                      help="cpu (process CPU time) with --threads 1 is the robust figure on a busy machine")
    hier.set_defaults(run=_run_hierarchical)
    return kernels, sets, hier


def _threads(args):
    return config_context(**({} if args.threads is None else {"num_threads": args.threads}))


def _check_backend(args, parser):
    if args.backend not in available_backends():
        parser.error(f"backend {args.backend!r} is not available here (available: {available_backends()})")


def _run_kernels(args, parser, command):
    _check_backend(args, parser)
    print(describe_machine())
    if args.efficiency:
        run_parallel_efficiency(max(args.sizes), args.spaces, args.threads or 2, args.repeat, args.backend)
        return 0
    with _threads(args):
        run_kernel_benchmarks(args.sizes, args.repeat, args.spaces, not args.no_numpy, args.backend, args.clock,
                              args.statistic)
        if args.cross:
            run_cross_benchmark(args.cross, repeat=args.repeat, numpy_reference=not args.no_numpy,
                                backend=args.backend, clock=args.clock, statistic=args.statistic)
    return 0


def _run_sets(args, parser, command):
    _check_backend(args, parser)
    print(describe_machine())
    with _threads(args):
        run_set_benchmarks(tuple(args.shape), args.subsample, args.repeat, not args.no_numpy, args.backend,
                           args.clock, args.statistic)
    return 0


def _run_hierarchical(args, parser, command):
    if "cpp" not in available_backends():   # the command times cpp against the reference: say so, no traceback
        parser.error(f"backend 'cpp' is not available here (available: {available_backends()})")
    print(describe_machine())
    with _threads(args):
        run_hierarchical_benchmarks(args.sizes, args.repeat, clock=args.clock, statistic=args.statistic)
    return 0
