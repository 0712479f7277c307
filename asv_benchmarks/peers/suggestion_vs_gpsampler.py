"""Seconds per suggestion, fastfm against Optuna's GPSampler, in the same run on the same observations (issue 24 §3).

For each problem and each number of observations n: n − 1 configurations drawn by Optuna's RandomSampler (seed
``--seed``) are evaluated and given to both libraries (``Optimizer.tell``; ``study.tell`` of the same trials),
then each library makes one suggestion that is told (its warm-up: both keep their previous fit as a warm
start, as in a loop), and then ``--repeats`` timed suggestions, each told before the next, the two libraries
alternating so that a change of load hits both.  A suggestion is ``Optimizer.ask()`` for fastfm and
``study.ask()`` plus the define-by-run ``suggest_*`` calls for GPSampler (where its relative sampling runs),
both single-threaded (fastfm's own thread pool too: before 2026-12-02 its fit's restarts and scoring batches ran
on every core, so the tables of docs/benchmarks/suggestion.md before that date favour fastfm).  Optuna sees the
fastfm space as ``head_to_head.py`` maps it.

    PYTHONPATH=. python asv_benchmarks/peers/suggestion_vs_gpsampler.py --problems func3c contamination --n-obs 50 100

``--kernels auto modlap`` times one fastfm optimizer per kernel name on the same observations (each told its own
suggestions), in turn with GPSampler; default: the library's default, "auto", whose cells also say how many of
the timed suggestions used AdditiveFM (the kernel its last full refit chose).  ``--acq-options JSON`` times, next
to each kernel's default optimizer, one more with those ``acq_options`` (e.g. ``'{"lbfgs_iterations_per_round": 5}'``,
the lockstep local search of every space before 2026-12-03) on the same observations, in the same alternation.
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common                                           # noqa: E402
from head_to_head import _optuna_suggest, peer_dims     # noqa: E402


def measure(problem_name, n_obs, repeats, seed, kernels=("modlap",), acq_options=None):
    import optuna
    from threadpoolctl import threadpool_limits

    import fastfm
    from fastfm.benchmarks import get_problem

    problem = get_problem(problem_name)
    dims = peer_dims(problem.space)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    optimizers = {name: fastfm.Optimizer(problem.space, kernel=kernel, seed=seed, acq_options=options)
                  for name, kernel, options in _variants(kernels, acq_options)}
    for _ in range(n_obs - 1):
        trial = study.ask()
        config = _optuna_suggest(trial, problem.space, dims)
        value = float(problem(config))
        study.tell(trial, value)
        for optimizer in optimizers.values():
            optimizer.tell(config, value)
    study.sampler = optuna.samplers.GPSampler(seed=seed)
    times = {**{kernel: [] for kernel in optimizers}, "gpsampler": []}
    times["chosen"] = {kernel: [] for kernel in optimizers}

    def fastfm_step(optimizer):
        start = time.perf_counter()
        config = optimizer.ask()
        elapsed = time.perf_counter() - start
        optimizer.tell(config, float(problem(config)))
        return elapsed, optimizer.last_suggestion_info.get("kernel")

    def gpsampler_step():
        start = time.perf_counter()
        trial = study.ask()
        config = _optuna_suggest(trial, problem.space, dims)
        elapsed = time.perf_counter() - start
        study.tell(trial, float(problem(config)))
        return elapsed

    # One thread each: threadpool_limits covers BLAS and OpenMP (torch's intra-op threads too); fastfm's own
    # thread pool (the fit's restarts, the scoring batches) follows its num_threads setting.
    with threadpool_limits(1), fastfm.config_context(num_threads=1):
        for optimizer in optimizers.values():            # warm-up: each library's first fit on these data
            fastfm_step(optimizer)
        gpsampler_step()
        for _ in range(repeats):
            for kernel, optimizer in optimizers.items():
                elapsed, chosen = fastfm_step(optimizer)
                times[kernel].append(elapsed)
                times["chosen"][kernel].append(chosen)
            times["gpsampler"].append(gpsampler_step())
    return times


def _variants(kernels, acq_options):
    """(column name, kernel, acq_options) of each timed fastfm optimizer: every kernel with the default search, and
    with ``acq_options`` too when given."""
    variants = [(kernel, kernel, None) for kernel in kernels]
    if acq_options:
        variants += [(f"{kernel} {json.dumps(acq_options)}", kernel, acq_options) for kernel in kernels]
    return variants


def _choices(chosen):
    """A cell's note of kernel="auto"'s choices, ' (AdditiveFM k/n)'; '' for a single kernel."""
    if all(name is None for name in chosen):
        return ""
    return f" (AdditiveFM {sum(name == 'modlap_additive' for name in chosen)}/{len(chosen)})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=["func3c", "ackley5c", "contamination", "mixed10c20n"])
    parser.add_argument("--n-obs", nargs="+", type=int, default=[50, 100])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernels", nargs="+", default=["auto"], help="fastfm kernel names, each timed")
    parser.add_argument("--acq-options", type=json.loads, default=None,
                        help="JSON dict: also time each kernel's optimizer with these acq_options")
    args = parser.parse_args(argv)
    names = [name for name, _, _ in _variants(args.kernels, args.acq_options)]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    warnings.simplefilter("ignore")
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    meta = _common.header(args)
    columns = [f"fastfm ({kernel}) s/suggestion | GPSampler / fastfm ({kernel})" for kernel in names]
    print(f"| problem | observations | GPSampler s/suggestion | {' | '.join(columns)} |")
    print("| --- " * (3 + 2 * len(names)) + "|")
    for name in args.problems:
        for n in args.n_obs:
            times = measure(name, n, args.repeats, args.seed, args.kernels, args.acq_options)
            peer = np.mean(times["gpsampler"])
            cells = [f"{np.mean(times[kernel]):.3f}{_choices(times['chosen'][kernel])} | "
                     f"{peer / np.mean(times[kernel]):.2f}×" for kernel in names]
            print(f"| {name} | {n} | {peer:.3f} | {' | '.join(cells)} |", flush=True)
    _common.finish(meta, [], None)


if __name__ == "__main__":
    main()
