"""The transform of y in the optimizer (issue 24 §1): log_transform_y="auto" choosing, at each full fit, between the
log of y above its minimum and y as it is (the default), against the log alone (the default before), paired on the
same seeds, on fastfm's benchmark problems and on standard problems outside its suite (Hartmann6 on six
continuous variables, Levy on eight integers of 21 values, Branin with three nominal offsets, and Levy, Ackley,
Rosenbrock and Styblinski–Tang on 6-10 continuous variables: ``OUTSIDE``), where Optuna's GPSampler and TPE run too.

    PYTHONPATH=. python asv_benchmarks/peers/y_transform_probe.py run --problems Hartmann6 Ackley5C \\
        --methods choose log_only gpsampler --seeds 0:20 --budget 60 --out probe.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/y_transform_probe.py summary probe.jsonl

Each row: the best value after 30, 60, 100 and 200 evaluations (the last one the budget allows) and the median seconds
per suggestion from the 41st on.  "log_only" is ``Optimizer(gp_options={"log_transform_y": "auto"})``: the
regressor's own "auto" (the shift log, or the copula on extreme tails) at every fit, which is the optimizer's
default before the choice, run for run.
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

import fastfm as ff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
from head_to_head import _optuna_suggest, git_state, peer_dims  # noqa: E402  (the map of a space to Optuna)


def hartmann6(x):
    """Hartmann's 6-D function on [0, 1]^6 (minimum -3.32237)."""
    A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
                  [17, 8, 0.05, 10, 0.1, 14]])
    P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
    alpha = np.array([1.0, 1.2, 3.0, 3.2])
    return float(-np.sum(alpha * np.exp(-np.sum(A * (np.asarray(x) - P) ** 2, axis=1))))


def levy(x):
    """Levy's function (minimum 0 at x = 1)."""
    w = 1 + (np.asarray(x, dtype=float) - 1) / 4
    body = np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
    return float(np.sin(np.pi * w[0]) ** 2 + body + (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2))


def ackley(x):
    """Ackley's function (minimum 0 at x = 0)."""
    x = np.asarray(x, dtype=float)
    return float(-20 * np.exp(-0.2 * np.sqrt(np.mean(x ** 2))) - np.exp(np.mean(np.cos(2 * np.pi * x))) + 20 + np.e)


def rosenbrock(x):
    """Rosenbrock's valley in D dimensions (minimum 0 at x = 1)."""
    x = np.asarray(x, dtype=float)
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def styblinski_tang(x):
    """The Styblinski–Tang function (minimum −39.16617 D at every x_i = −2.903534)."""
    x = np.asarray(x, dtype=float)
    return float(0.5 * np.sum(x ** 4 - 16 * x ** 2 + 5 * x))


def _reals(function, n, low, high):
    """(space, objective) of ``function`` on n Real parameters x0..x{n−1} in [low, high]."""
    return (lambda: ff.Space([ff.Real(f"x{i}", low, high) for i in range(n)]),
            lambda c: function([c[f"x{i}"] for i in range(n)]))


_BRANIN_OFFSET = {"a": 0.0, "b": 3.0, "c": 6.0, "d": 9.0}


def branin3c(config):
    """Branin on (x1, x2) plus offsets of three nominal variables (minimum 0.397887 with c0 = c1 = c2 = "a")."""
    x1, x2 = config["x1"], config["x2"]
    value = ((x2 - 5.1 / (4 * np.pi ** 2) * x1 ** 2 + 5 / np.pi * x1 - 6) ** 2
             + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10)
    return float(value + sum(_BRANIN_OFFSET[config[f"c{i}"]] * (i + 1) / 3 for i in range(3)))


OUTSIDE = {
    "Hartmann6": (lambda: ff.Space([ff.Real(f"x{i}", 0.0, 1.0) for i in range(6)]),
                  lambda c: hartmann6([c[f"x{i}"] for i in range(6)])),
    "Levy8I": (lambda: ff.Space([ff.Integer(f"n{i}", -10, 10) for i in range(8)]),
               lambda c: levy([c[f"n{i}"] for i in range(8)])),
    "Branin3C": (lambda: ff.Space([ff.Real("x1", -5.0, 10.0), ff.Real("x2", 0.0, 15.0)]
                                  + [ff.Categorical(f"c{i}", list(_BRANIN_OFFSET)) for i in range(3)]), branin3c),
    # continuous problems of 6-10 variables (the lengthscale tail's and the GPSampler comparison's; issue 24 §1-2)
    "Levy6R": _reals(levy, 6, -10.0, 10.0),
    "Ackley6R": _reals(ackley, 6, -5.0, 10.0),
    "Levy10R": _reals(levy, 10, -10.0, 10.0),
    "Ackley10R": _reals(ackley, 10, -5.0, 10.0),
    "Rosenbrock8R": _reals(rosenbrock, 8, -5.0, 10.0),
    "StyblinskiTang8R": _reals(styblinski_tang, 8, -5.0, 5.0),
}
FASTFM_VARIANTS = {"choose": {}, "log_only": {"gp_options": {"log_transform_y": "auto"}}}


def problem_of(name):
    """(space, objective of a config dict)."""
    if name in OUTSIDE:
        space, objective = OUTSIDE[name]
        return space(), objective
    from fastfm.benchmarks import get_problem
    problem = get_problem(name)
    return problem.space, lambda config: float(problem(config))


def fastfm_loop(opt, objective, n):
    """``n`` ask/evaluate/tell steps of a fastfm Optimizer: (values, seconds per ask)."""
    values, seconds = [], []
    for _ in range(n):
        start = time.perf_counter()
        config = opt.ask()
        seconds.append(time.perf_counter() - start)
        value = objective(config)
        opt.tell(config, value)
        values.append(value)
    return values, seconds


def optuna_loop(study, space, objective, n):
    """``n`` ask/evaluate/tell steps of an Optuna study on ``space`` (the head-to-head's map):
    (configs, values, seconds per ask with its suggest calls)."""
    dims = peer_dims(space)
    configs, values, seconds = [], [], []
    for _ in range(n):
        start = time.perf_counter()
        trial = study.ask()
        config = _optuna_suggest(trial, space, dims)
        seconds.append(time.perf_counter() - start)
        value = objective(config)
        study.tell(trial, value)
        configs.append(config)
        values.append(value)
    return configs, values, seconds


def run_one(method, name, seed, budget):
    space, objective = problem_of(name)
    if method in FASTFM_VARIANTS:
        values, seconds = fastfm_loop(ff.Optimizer(space, seed=seed, **FASTFM_VARIANTS[method]), objective, budget)
    else:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = (optuna.samplers.GPSampler(seed=seed) if method == "gpsampler"
                   else optuna.samplers.TPESampler(multivariate=True, seed=seed))
        _, values, seconds = optuna_loop(optuna.create_study(sampler=sampler), space, objective, budget)
    best = np.minimum.accumulate(values)
    row = {"method": method, "problem": name, "seed": seed, "budget": budget,
           "seconds_per_suggestion": float(np.median(seconds[40:])) if budget > 40 else None}
    for n in (30, 60, 100, 200):
        if n <= budget:
            row[f"best{n}"] = float(best[n - 1])
    return row


def summary(path):
    rows = [json.loads(line) for line in open(path)]
    by = {}
    for row in rows:
        by.setdefault((row["problem"], row["method"]), {})[row["seed"]] = row
    for problem in sorted({r["problem"] for r in rows}):
        methods = [m for (p, m) in by if p == problem]
        for n in (30, 60, 100, 200):
            cells = []
            for method in methods:
                vals = np.array([r[f"best{n}"] for r in by[problem, method].values() if f"best{n}" in r])
                if vals.size:
                    se = vals.std(ddof=1) / np.sqrt(vals.size) if vals.size > 1 else 0.0
                    cells.append(f"{method} {vals.mean():.4g} ± {se:.2g} ({vals.size})")
            if ("choose" in methods and "log_only" in methods):
                a, b = by[problem, "log_only"], by[problem, "choose"]
                seeds = [s for s in a if s in b and f"best{n}" in a[s]]
                if seeds:
                    d = np.array([b[s][f"best{n}"] - a[s][f"best{n}"] for s in seeds])
                    se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else 0.0
                    cells.append(f"paired choose − log_only {d.mean():+.4g} ± {se:.2g} "
                                 f"(better {int(np.sum(d < 0))}, worse {int(np.sum(d > 0))})")
            if cells:
                print(f"{problem} @{n}: " + "; ".join(cells))


def probe_parser(doc, default_seeds):
    """The command line the probes share: (parser, its subcommands, ``run``), ``run`` taking --problems, --seeds,
    --budget and --out, and ``summary PATH``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--problems", nargs="+", required=True)
    run.add_argument("--seeds", default=default_seeds, help="first:last (exclusive)")
    run.add_argument("--budget", type=int, default=60)
    run.add_argument("--out", required=True)
    sub.add_parser("summary").add_argument("path")
    return parser, sub, run


def run_variants(run_one, args):
    """``run_one(variant, name, seed, budget, commit)`` for every problem, seed and variant of ``run``'s options
    (--problems, --seeds, --budget, --variants), in --jobs processes; each row appended to --out and printed."""
    from concurrent.futures import ProcessPoolExecutor
    first, last = (int(v) for v in args.seeds.split(":"))
    commit = git_state()["commit"]
    jobs = [(variant, name, seed, args.budget, commit) for name in args.problems for seed in range(first, last)
            for variant in args.variants]
    with ProcessPoolExecutor(args.jobs) as pool:
        for row in pool.map(run_one, *zip(*jobs)):
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


def main():
    parser, _, run = probe_parser(__doc__, "0:10")
    run.add_argument("--methods", nargs="+", default=["choose", "log_only"])
    args = parser.parse_args()
    if args.command == "summary":
        summary(args.path)
        return
    first, last = (int(v) for v in args.seeds.split(":"))
    warnings.simplefilter("ignore")
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):
        for name in args.problems:
            for method in args.methods:
                for seed in range(first, last):
                    row = run_one(method, name, seed, args.budget)
                    with open(args.out, "a") as out:
                        out.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
