"""Integer and ordinal variables: which kernel treatment finds the optimum (issue 23 §1).

Compares, on integer-heavy problems (smooth and rugged, optima inside and on the bounds):

* ``path``        ModLap(unit_diagonal=False): the paper's kernel on the path graph P_n (before issue 23; the
                  prior variance is larger at the ends),
* ``unit``        ModLap with its factors normalised to a unit diagonal (the default since issue 23),
* ``continuous``  Integer/Ordinal(encoding="continuous"): a rounded continuous variable,
* ``random`` and ``tpe`` (Optuna's TPESampler, multivariate) as references,

and reports the mean best value ± s.e. over seeds, the share of suggested integer coordinates that sit on a
bound (after the initial design) and the mean time per model suggestion.  Run from the repository root:

    python asv_benchmarks/robustness/integer_kernels.py --seeds 5 --budget 60 --json out.json

Results and their reading: docs/benchmarks/robustness.md, "Integers and ordinals".
"""
import argparse
import math
import os
import sys
import time

import numpy as np

# the shared measurement helpers (machine, commit, load average, JSON output) of the parallel measurements
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402

VARIANTS = ("path", "unit", "continuous", "random", "tpe")


# ---------------------------------------------------------------------------- problems
# Each problem: (space builder(encoding), objective(config) -> float, known optimum).  Module-level so that
# they pickle into the worker processes.

_QUAD_CENTRES = [3, 5, 7, 9, 11, 4, 6, 8, 10, 5, 7, 9]


def quad12(config):
    """Smooth: a bowl over 12 integers 0..14 with its minimum (0) inside."""
    return float(np.mean([(config[f"x{i}"] - c) ** 2 for i, c in enumerate(_QUAD_CENTRES)]) / 49.0)


def rastrigin8(config):
    """Rugged: Rastrigin on z = x/2 for 8 integers −5..5 (local minima at every odd x); minimum 0 at x = 0."""
    z = np.array([config[f"x{i}"] for i in range(8)]) / 2.0
    return float(np.sum(z ** 2 - 10.0 * np.cos(2.0 * np.pi * z) + 10.0))


def rosenbrock10(config):
    """Curved valley: log(1 + Rosenbrock) on z = x/5 − 2 for 10 integers 0..20; minimum 0 at x = 15."""
    z = np.array([config[f"x{i}"] for i in range(10)]) / 5.0 - 2.0
    return float(np.log1p(np.sum(100.0 * (z[1:] - z[:-1] ** 2) ** 2 + (1.0 - z[:-1]) ** 2)))


def corner10(config):
    """Optimum on the bounds: a tilted plane over 10 integers 0..9 (minimum at 0 or 9 in each), plus a small
    bowl; minimum −1 + 0.25·0.1 = −0.975."""
    x = np.array([config[f"x{i}"] for i in range(10)]) / 9.0
    sign = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    return float(np.mean(sign * (x - 0.5)) * 2.0 + 0.1 * np.mean((x - 0.5) ** 2))


def mixed11(config):
    """Mixed: Ackley over 3 reals in [−1, 1] and 8 integers 0..14 scaled by (x − 9)/5; minimum 0."""
    z = np.r_[[config[f"r{i}"] for i in range(3)], (np.array([config[f"x{i}"] for i in range(8)]) - 9.0) / 5.0]
    d = len(z)
    return float(-20.0 * math.exp(-0.2 * math.sqrt(np.sum(z ** 2) / d)) - math.exp(np.sum(np.cos(2 * np.pi * z)) / d)
                 + 20.0 + math.e)


_LEVELS = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
_ORDINAL_TARGETS = [-3.0, -2.5, -2.0, -3.5, -1.5, -2.0, -3.0, -2.5, -2.0, -3.0]


def ordinal10(config):
    """Ordinals: 10 learning-rate-like choices of 7 levels; squared log10 distance to interior targets."""
    return float(np.mean([(math.log10(config[f"o{i}"]) - t) ** 2 for i, t in enumerate(_ORDINAL_TARGETS)]))


def _integer_space(n, low, high, encoding, reals=0):
    import fastfm as ff
    params = [ff.Real(f"r{i}", -1.0, 1.0) for i in range(reals)]
    params += [ff.Integer(f"x{i}", low, high, encoding=encoding) for i in range(n)]
    return ff.Space(params)


def _ordinal_space(encoding):
    import fastfm as ff
    return ff.Space([ff.Ordinal(f"o{i}", _LEVELS, encoding=encoding) for i in range(10)])


PROBLEMS = {
    "quad12": (lambda enc: _integer_space(12, 0, 14, enc), quad12, 0.0),
    "rastrigin8": (lambda enc: _integer_space(8, -5, 5, enc), rastrigin8, 0.0),
    "rosenbrock10": (lambda enc: _integer_space(10, 0, 20, enc), rosenbrock10, 0.0),
    "corner10": (lambda enc: _integer_space(10, 0, 9, enc), corner10, -0.975),
    "mixed11": (lambda enc: _integer_space(8, 0, 14, enc, reals=3), mixed11, 0.0),
    "ordinal10": (_ordinal_space, ordinal10, None),
}


# ---------------------------------------------------------------------------- runs
def _bound_share(space, configs):
    """Share of the integer/ordinal coordinates of ``configs`` that sit on a bound of their variable."""
    on, total = 0, 0
    for p in space.parameters:
        if hasattr(p, "low") and not hasattr(p, "choices") and type(p).__name__ == "Integer":
            lo, hi = p.low, p.high
        elif hasattr(p, "choices"):
            lo, hi = p.choices[0], p.choices[-1]
        else:
            continue
        for c in configs:
            on += c[p.name] in (lo, hi)
            total += 1
    return on / total if total else float("nan")


def run_one(task):
    problem, variant, seed, budget, n_init = task
    import fastfm as ff
    ff.set_config(num_threads=1)
    build, objective, _ = PROBLEMS[problem]
    encoding = "continuous" if variant == "continuous" else "graph"
    space = build(encoding)
    start = time.perf_counter()
    if variant in ("path", "unit", "continuous"):
        kernel = ff.kernels.ModLap(space, unit_diagonal=False) if variant == "path" else "modlap"
        result = ff.minimize(objective, space, kernel=kernel, n_iter=budget, n_init=n_init, seed=seed, progress=False)
        configs = [c for c, _, _ in result.history]
        values = [v for _, v, _ in result.history]
        times = [t.suggest_time for t in result.trials[n_init:] if getattr(t, "suggest_time", None) is not None]
    elif variant == "random":
        configs = space.sample(budget, seed=seed)
        values = [objective(c) for c in configs]
        times = []
    else:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True,
                                                                       n_startup_trials=n_init))
        distributions = {}
        for p in space.parameters:
            if hasattr(p, "choices"):
                distributions[p.name] = optuna.distributions.CategoricalDistribution(p.choices)
            elif type(p).__name__ == "Integer":
                distributions[p.name] = optuna.distributions.IntDistribution(p.low, p.high)
            else:
                distributions[p.name] = optuna.distributions.FloatDistribution(p.low, p.high)
        configs, values, times = [], [], []
        for _ in range(budget):
            t0 = time.perf_counter()
            trial = study.ask(distributions)
            times.append(time.perf_counter() - t0)
            config = dict(trial.params)
            value = objective(config)
            study.tell(trial, value)
            configs.append(config)
            values.append(value)
        times = times[n_init:]
    return {"problem": problem, "variant": variant, "seed": seed, "best": float(np.min(values)),
            "curve": np.minimum.accumulate(values).tolist(), "bound_share": _bound_share(space, configs[n_init:]),
            "suggest_time": float(np.mean(times)) if times else None, "wall": time.perf_counter() - start}


def _describe(r):
    return (f"{r['problem']:>13} {r['variant']:>10} seed {r['seed']}: best {r['best']:.4g} "
            f"bounds {r['bound_share']:.2f} t/sugg {r['suggest_time'] or 0:.3f}s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    _common.add_protocol_arguments(parser, seeds=5)
    parser.set_defaults(budget=60)
    args = parser.parse_args(argv)
    meta = _common.header(args)
    tasks = [(p, v, s, args.budget, args.n_init) for p in args.problems for v in args.variants
             for s in range(args.seeds)]
    # a new process per run: nothing cached carries over between runs
    results, _ = _common.run_pool(run_one, tasks, args.processes, None, _describe, fresh_process=True)
    results = [r for r in results if r is not None]
    print(f"\n{'problem':>13} " + " ".join(f"{v:>22}" for v in args.variants))
    for p in args.problems:
        row = []
        for v in args.variants:
            best = [r["best"] for r in results if r["problem"] == p and r["variant"] == v]
            share = [r["bound_share"] for r in results if r["problem"] == p and r["variant"] == v]
            row.append(f"{np.mean(best):8.4f}±{np.std(best, ddof=1) / np.sqrt(len(best)):.4f} [{np.mean(share):.2f}]"
                       if len(best) > 1 else f"{'-':>22}")
        print(f"{p:>13} " + " ".join(f"{c:>22}" for c in row))
    _common.finish(meta, results, args.json)


if __name__ == "__main__":
    main()
