"""``fastfm bench PROBLEM``: Bayesian optimisation on the suite's problems, several kernels and seeds.

A kernel name ending in "-flat" runs on ``problem.space.flattened()`` (every parameter always active;
inactive values are dropped before evaluation).  Set problems take the baselines of
:func:`run_set_method` instead of kernel names.
"""
import argparse
import importlib.util
import json
import math
import re
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from .._config import set_config
from ..benchmarks import get_problem
from ..bo import minimize
from ..bo.optimizer import initial_design_size
from ..kernels import Matern52, set_space_kernel
from ..space import Real, Space

__all__ = ["bench", "run_set_method", "SET_METHODS", "add_parser"]

#: The clustering problems' own initialisations; each problem lists the ones it takes in ``init_baselines``.
CLUSTERING_BASELINES = ("kmeans++", "kmeans", "data")
#: Baseline names understood by :func:`run_set_method` ("set-L<L>" takes any L).
SET_METHODS = ("auto", "set", "set-L<L>", "set-norm", "set-learn", "set-mmd", "set-norm+mmd", "vector", "split",
               "random") + CLUSTERING_BASELINES


class _PrunedObjective:
    """The problem evaluated on the active parameters of a flattened config (picklable, for worker processes)."""

    def __init__(self, problem):
        self.problem = problem

    def __call__(self, config):
        return self.problem(self.problem.space.prune(config))


def _run_one(problem_name, kernel, seed, budget, n_init, progress, problem_kwargs, workers=1, storage=None):
    problem = get_problem(problem_name, **problem_kwargs)
    space, objective, kernel_name = problem.space, problem, kernel
    if kernel.endswith("-flat"):
        # the conditional space flattened: the model sees every parameter, the objective only the active ones
        space, kernel_name = problem.space.flattened(), kernel[: -len("-flat")]
        objective = _PrunedObjective(problem)
    start = time.perf_counter()
    if problem.space.set_params:   # set problems: baselines "set", "set-L<L>", "vector", "random", ...
        result = run_set_method(problem, kernel, budget, n_init, seed, progress, n_workers=workers, storage=storage)
    else:
        result = minimize(objective, space, n_iter=budget, n_init=n_init, kernel=kernel_name, seed=seed,
                          progress=progress, n_workers=workers, storage=storage)
        if result.status != "completed":
            print(f"  stopped: {result.message}", flush=True)
    suggest = result.suggest_times[n_init:]
    return {
        "problem": problem.name, "kernel": kernel, "seed": seed, "best": float(result.fun),
        "best_x": result.x, "curve": result.best_so_far.tolist(),
        "mean_suggest_time": float(np.nanmean(suggest)) if len(suggest) else float("nan"),
        "wall_time": time.perf_counter() - start, "n_failed": result.n_failed,
    }


def _single_threaded_worker():
    set_config(num_threads=1)


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return values.mean(), se


def _table(runs, optimum, best_known=None):
    kernels = list(dict.fromkeys(r["kernel"] for r in runs))
    lines = [f"{'kernel':10s} {'best at budget (mean ± s.e.)':>30s} {'s/suggestion':>13s} {'runs':>5s}"]
    for kernel in kernels:
        mine = [r for r in runs if r["kernel"] == kernel]
        mean, se = _mean_se([r["best"] for r in mine])
        t = np.nanmean([r["mean_suggest_time"] for r in mine])
        lines.append(f"{kernel:10s} {mean:>+18.4f} ± {se:<9.4f} {t:>13.3f} {len(mine):>5d}")
    if optimum is not None:
        lines.append(f"(known optimum: {optimum:+.6f})")
    elif best_known is not None:
        lines.append(f"(best known, not proven optimal: {best_known:+.6f})")
    return "\n".join(lines)


def _plot(runs, path, title):
    import matplotlib
    matplotlib.use("Agg")      # a file, never a window: works without a display
    import matplotlib.pyplot as plt

    from ..plot import convergence

    fig, ax = plt.subplots(figsize=(6, 4))
    for kernel in dict.fromkeys(r["kernel"] for r in runs):
        # each run's curve is already its best value so far (+inf until its first success), which
        # convergence takes as the run's values: the running minimum leaves it unchanged
        convergence([r["curve"] for r in runs if r["kernel"] == kernel], ax=ax, label=kernel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _json_value(value):
    """What json cannot write of a run: a Set's points (an array) as nested lists, numpy scalars as numbers."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return str(value)


def bench(args):
    kernels = [k.strip() for k in args.kernel.split(",") if k.strip()]
    problem = get_problem(args.problem)  # fail early on a bad name or a missing extra
    if args.plot and importlib.util.find_spec("matplotlib") is None:   # fail before the runs, not after them
        raise SystemExit("fastfm bench: --plot needs matplotlib: pip install fastfm[plot]")
    if args.storage and (len(kernels) != 1 or args.seeds != 1 or args.jobs != 1):
        raise SystemExit("fastfm bench: --storage records one run: give one kernel, --seeds 1 and --jobs 1")
    if args.workers > 1 and args.jobs > 1:
        raise SystemExit("fastfm bench: --workers (evaluations in flight in one run) and --jobs (runs in parallel) "
                         "are exclusive")
    if args.workers < 1:
        raise SystemExit(f"fastfm bench: --workers must be a positive integer, got --workers {args.workers}")
    not_one_run = [k for k in kernels if not _is_one_bo_run(k)]
    if problem.space.set_params and not_one_run and (args.storage or args.workers > 1):
        raise SystemExit(f"fastfm bench: --kernel {not_one_run[0]} is not one BO run: it takes neither --storage "
                         "nor --workers")
    n_init = initial_design_size(problem.space, args.n_init)     # once: every run's number, printed and recorded
    jobs = [(args.problem, kernel, seed, args.budget, n_init) for kernel in kernels
            for seed in range(args.seed0, args.seed0 + args.seeds)]
    print(f"fastfm bench: {problem.name}, kernels {kernels}, budget {args.budget} "
          f"({n_init} initial), seeds {args.seed0}..{args.seed0 + args.seeds - 1}", flush=True)
    runs = []
    if args.jobs > 1:
        # one OpenMP thread per process, so processes do not fight over the cores
        with ProcessPoolExecutor(args.jobs, initializer=_single_threaded_worker) as pool:
            futures = [pool.submit(_run_one, *job, False, {}) for job in jobs]
            for job, future in zip(jobs, futures):
                run = future.result()
                runs.append(run)
                print(f"  {run['kernel']:8s} seed {run['seed']}: best {run['best']:+.6f} "
                      f"({run['mean_suggest_time']:.3f} s/suggestion, {run['wall_time']:.0f} s)", flush=True)
    else:
        for job in jobs:
            run = _run_one(*job, not args.quiet, {}, args.workers, args.storage)
            runs.append(run)
            print(f"  {run['kernel']:8s} seed {run['seed']}: best {run['best']:+.6f} at {run['best_x']}", flush=True)
    print()
    print(_table(runs, problem.optimum, getattr(problem, "best_known", None)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"problem": problem.name, "budget": args.budget, "n_init": n_init, "runs": runs}, fh,
                      indent=1, default=_json_value)
        print(f"wrote {args.json}")
    if args.plot:
        _plot(runs, args.plot, f"{problem.name}, {args.seeds} seeds")
        print(f"wrote {args.plot}")
    return 0


class _Record:
    """The parts of an OptimizeResult the bench CLI reads."""

    def __init__(self, values, configs, suggest_times):
        values = np.asarray(values, dtype=float)
        self.fun = float(values.min())
        self.x = configs[int(np.argmin(values))]
        self.best_so_far = np.minimum.accumulate(values)
        self.suggest_times = np.asarray(suggest_times, dtype=float)
        self.n_failed = 0


def _vector_space(param):
    """m·d Reals in the Set's box: the "ordered vector" view of a set."""
    return Space([Real(f"p{i}_{k}", float(param.low[k]), float(param.high[k]))
                  for i in range(param.n_points) for k in range(param.dim)])


def _n_init_argument(text):
    """``--n-init``: "auto" or a positive integer."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--n-init must be 'auto' or a positive integer, got {text!r}")
    return value


def _run_split(problem, budget, n_init, seed):
    """The set-BO paper's "Split" baseline (Kim et al. §4): m independent BOs, one per point of the set.

    BO number i sees only the i-th point of every evaluated set, paired with f of the whole set; each step
    asks every BO for its point, and the m answers make the next set.
    """
    from ..bo import Optimizer

    param = problem.set_param
    point_space = Space([Real(f"x{k}", float(param.low[k]), float(param.high[k])) for k in range(param.dim)])
    optimizers = [Optimizer(point_space, kernel=Matern52(point_space), n_init=n_init, seed=seed * 1000 + i)
                  for i in range(param.n_points)]
    configs, values, times = [], [], []
    for _ in range(budget):
        start = time.perf_counter()
        asked = [opt.ask() for opt in optimizers]
        times.append(time.perf_counter() - start)
        points = np.array([[config[p.name] for p in point_space.parameters] for config in asked])
        configs.append({problem.set_name: points})
        values.append(problem.set_value(points))
        for opt, config in zip(optimizers, asked):
            opt.tell(config, values[-1])
    return _Record(values, configs, times)


def _is_one_bo_run(method):
    """Whether a set benchmark method is one ``minimize`` run (so takes its n_workers and storage): not Split's m
    runs, nor a clustering initialisation's draws."""
    return method != "split" and method not in CLUSTERING_BASELINES


def run_set_method(problem, method, budget, n_init="auto", seed=0, progress=False, acq_options=None, n_workers=1,
                   storage=None):
    """Run one baseline of the set benchmark on ``problem``.

    Parameters
    ----------
    problem : a set problem (SetCoverage, SetChamfer, KMeansInit, GMMInit, PMedian, SetPeriodic, SetDensity)
    method : str
        "auto" (the Optimizer's default kernel), "set", "set-L<L>" (e.g. "set-L2"), "set-norm", "set-learn"
        (the normalisation's power fitted: ``SetKernel(normalize="learn")``), "set-mmd" (``MMDSetKernel``: a
        Gaussian of the distance between the sets' mean embeddings), "set-norm+mmd" (their sum), "vector",
        "split" (m independent BOs, one per point: the set-BO paper's Split baseline), "random", or a clustering
        problem's own initialisation, the best of ``budget`` draws: "kmeans++" (KMeansInit), "kmeans" (GMMInit: the
        centres of one k-means run) or "data" (both: k training points).
    budget, seed : int
    n_init : int or "auto"
        As ``Optimizer``'s.
    acq_options : dict, optional
        The BO methods' acquisition search options (``MixedAcquisitionOptimizer``'s), e.g.
        ``{"n_set_point_moves": 0}`` for the search before issue 24 §4.
    n_workers, storage : int, str, optional
        ``minimize``'s, for the methods that are one ``minimize`` run (not "split" nor the clustering
        initialisations, which raise ValueError when given them).

    Returns
    -------
    An object with ``fun``, ``x``, ``best_so_far``, ``suggest_times`` and ``n_failed``
    (an ``OptimizeResult`` for the BO methods).
    """
    param = problem.set_param
    if not _is_one_bo_run(method) and (n_workers != 1 or storage is not None):
        raise ValueError(f"method {method!r} is not one minimize run: it takes neither n_workers (got {n_workers!r}) "
                         f"nor storage (got {storage!r})")
    options = {"progress": progress, "acq_options": acq_options, "n_workers": n_workers, "storage": storage}
    if method in CLUSTERING_BASELINES:
        # the clustering problems' own initialisations (Supp. s.c.3), the best of `budget` draws
        taken = getattr(problem, "init_baselines", ())
        if method not in taken:
            raise ValueError(f"method {method!r} applies to the clustering problems only, each to its own "
                             f"init_baselines: {problem.name} takes {', '.join(taken) or 'none'}")
        rng = np.random.default_rng(seed)
        configs, values = [], []
        for _ in range(budget):
            configs.append({problem.set_name: problem.baseline_centres(method, rng)})
            values.append(problem(configs[-1]))
        return _Record(values, configs, np.zeros(budget))
    if method == "vector":
        space = _vector_space(param)

        def objective(config):
            points = np.array([config[p.name] for p in space.parameters]).reshape(param.n_points, param.dim)
            return problem.set_value(points)

        return minimize(objective, space, n_iter=budget, n_init=n_init, kernel=Matern52(space), seed=seed, **options)
    if method == "split":
        return _run_split(problem, budget, n_init, seed)
    match = re.fullmatch(r"set-L(\d+)", method)
    if match:
        kernel = set_space_kernel("matern52", problem.space, n_subsample=int(match.group(1)), seed=seed,
                                  normalize=False)
    elif method in ("set", "set-norm", "set-learn", "set-mmd", "set-norm+mmd"):
        # "set-norm": K/√(K(X,X) K(X',X')); "set-learn": the power of that normalisation fitted;
        # "set-mmd": exp(−MMD²/2ρ²) of the mean embeddings; "set-norm+mmd": the sum of the two
        normalize = {"set": False, "set-norm": True, "set-learn": "learn"}.get(method, method[len("set-"):])
        kernel = set_space_kernel("matern52", problem.space, normalize=normalize)
    elif method in ("random", "auto"):    # "auto": the Optimizer's default, the default set kernel on a set space
        kernel = method
    else:
        raise ValueError(f"unknown set benchmark method {method!r}; choose from {SET_METHODS}")
    return minimize(problem, problem.space, n_iter=budget, n_init=n_init, kernel=kernel, seed=seed, **options)


def add_parser(commands):
    """``bench``: the flags of ``fastfm bench``, unchanged."""
    b = commands.add_parser("bench", help="run BO on a built-in benchmark problem")
    b.add_argument("problem", help="func2c, func3c, ackley5c, svm, xgboost, deepbranch, modelselection, setcoverage, "
                                   "setchamfer, kmeansinit, gmminit, pmedian, setperiodic, setdensity; with 24-60 "
                                   "variables: contamination, labs, isingsparsification, maxsatweighted, mixed10c20n, "
                                   "pestcontrol")
    b.add_argument("--kernel", default="auto",
                   help="comma-separated kernels (auto: Optimizer's default; modlap, modlap_additive, "
                        "prodlap, moddif, hierarchical, ..., random); "
                        "NAME-flat runs NAME on the flattened conditional space; "
                        "set problems: set, set-L<L>, set-norm, set-learn, set-mmd, set-norm+mmd, vector, split, "
                        "random, kmeans++ (kmeansinit), kmeans (gmminit), data (both)")
    b.add_argument("--budget", type=int, default=200, help="evaluations per run, initial ones included")
    b.add_argument("--n-init", type=_n_init_argument, default="auto",
                   help="initial points: auto (10, or one per value of the largest nominal parameter when it has "
                        "more, at most 20) or a number")
    b.add_argument("--seeds", type=int, default=5, help="number of seeds (runs per kernel)")
    b.add_argument("--seed0", type=int, default=0, help="first seed")
    b.add_argument("--jobs", type=int, default=1, help="parallel processes (each single-threaded)")
    b.add_argument("--workers", type=int, default=1,
                   help="evaluations in flight within a run (minimize's n_workers: a process pool)")
    b.add_argument("--storage", help="record the run in this journal (JSON lines); an existing one is continued "
                                     "(one kernel and one seed)")
    b.add_argument("--plot", help="save the convergence curves (best so far, mean ± s.e. over the seeds) to this PNG "
                                  "(needs matplotlib: pip install fastfm[plot])")
    b.add_argument("--json", help="save every run to this JSON file")
    b.add_argument("--quiet", action="store_true", help="no progress bars")
    b.set_defaults(run=lambda args, parser, command: bench(args))
    return b
