"""FMSampler against Optuna's own samplers, all through Optuna (issue 25 §1).

Each run is an ``optuna.create_study`` minimising a fastfm benchmark problem written define-by-run
(``trial.suggest_float`` / ``suggest_int`` / ``suggest_categorical`` per parameter of the problem's space), with
``fastfm.integration.optuna.FMSampler``, ``TPESampler(multivariate=True)`` or ``GPSampler`` (needs torch), the
same number of startup trials for all.  Reports the mean best value ± s.e. over seeds and the mean time per
trial (sampler and objective; the objectives are cheap, so it is the sampler's).  Run from the repository root:

    python asv_benchmarks/integrations/optuna_samplers.py --seeds 10 --budget 60 --json out.json

Results: docs/benchmarks/integrations.md.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402

SAMPLERS = ("fastfm", "tpe", "gp")


def _suggest(trial, space):
    config = {}
    for p in space.parameters:
        kind = type(p).__name__
        if kind == "Real":
            config[p.name] = trial.suggest_float(p.name, p.low, p.high, log=p.log)
        elif kind == "Integer":
            config[p.name] = trial.suggest_int(p.name, p.low, p.high, log=p.log)
        else:
            config[p.name] = trial.suggest_categorical(p.name, list(p.choices))
    return config


def _sampler(name, seed, n_startup, fastfm_kernel=None):
    import optuna
    if name == "fastfm":
        from fastfm.integration.optuna import FMSampler
        kernel = {} if fastfm_kernel is None else {"kernel": fastfm_kernel}
        return FMSampler(seed=seed, n_startup_trials=n_startup, **kernel)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=n_startup)
    return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup)


def run_one(task):
    problem_name, sampler_name, seed, budget, n_init, fastfm_kernel = task
    import optuna
    import fastfm as ff
    from fastfm.benchmarks import get_problem
    ff.set_config(num_threads=1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    problem = get_problem(problem_name)
    study = optuna.create_study(sampler=_sampler(sampler_name, seed, n_init, fastfm_kernel))
    start = time.perf_counter()
    study.optimize(lambda trial: float(problem(_suggest(trial, problem.space))), n_trials=budget)
    wall = time.perf_counter() - start
    values = [t.value for t in study.trials]
    return {"problem": problem_name, "sampler": sampler_name, "seed": seed, "best": float(np.min(values)),
            "curve": np.minimum.accumulate(values).tolist(), "seconds_per_trial": wall / budget}


def _describe(r):
    return (f"{r['problem']:>9} {r['sampler']:>7} seed {r['seed']}: best {r['best']:.4g} "
            f"({r['seconds_per_trial']:.3f} s/trial)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=["Func3C", "Ackley5C"])
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    parser.add_argument("--fastfm-kernel", default=None, help="FMSampler's kernel (default: the sampler's own)")
    parser.add_argument("--seed0", type=int, default=0, help="the first seed (seeds seed0 .. seed0 + S - 1)")
    _common.add_protocol_arguments(parser, seeds=10)
    parser.set_defaults(budget=60)
    args = parser.parse_args(argv)
    meta = _common.header(args)
    tasks = [(p, s, seed, args.budget, args.n_init, args.fastfm_kernel) for p in args.problems for s in args.samplers
             for seed in range(args.seed0, args.seed0 + args.seeds)]
    results, _ = _common.run_pool(run_one, tasks, args.processes, None, _describe)
    print(f"\n{'problem':>9} " + " ".join(f"{s:>24}" for s in args.samplers))
    for p in args.problems:
        cells = []
        for s in args.samplers:
            rs = [r for r in results if (r["problem"], r["sampler"]) == (p, s)]
            best = np.array([r["best"] for r in rs])
            per_trial = np.mean([r["seconds_per_trial"] for r in rs])
            cells.append(f"{best.mean():.3f}±{best.std(ddof=1) / np.sqrt(len(best)):.3f} ({per_trial:.2f}s)"
                         if len(best) > 1 else "-")
        print(f"{p:>9} " + " ".join(f"{c:>24}" for c in cells))
    _common.finish(meta, results, args.json)


if __name__ == "__main__":
    main()
