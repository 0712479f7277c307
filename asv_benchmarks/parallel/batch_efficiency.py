"""Best value against the number of evaluations for batch size q (ask q points, evaluate all, tell all),
fastfm's joint batches next to Optuna's TPE with the same batch structure, in the same run.

fastfm: ``Optimizer(space, seed=s, n_init=10)``, ``ask(n=q)`` (the pending points of a batch are conditioned on,
``--pending`` strategy).  Optuna: ``TPESampler(seed=s)`` (its defaults: 10 startup trials, no constant liar),
``study.ask()`` q times then ``study.tell`` the q values (``optuna-tpe-cl``: the same with
``constant_liar=True``, Optuna's option for pending trials); the space is mapped Real -> FloatDistribution,
Categorical -> CategoricalDistribution, Integer -> IntDistribution.  Seeds run in ``--processes`` worker
processes, each with fastfm on one thread (``set_config(num_threads=1)``) so that the cores are not
oversubscribed.

    PYTHONPATH=. python asv_benchmarks/parallel/batch_efficiency.py --seeds 10 --json /tmp/batch_eff.json
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_protocol_arguments, finish, header, mean_se, run_pool  # noqa: E402

PROBLEMS = ("Func3C", "Ackley5C")


def _problem(name):
    from fastfm import benchmarks
    return getattr(benchmarks, name)()


def optuna_distributions(space):
    import optuna.distributions as od
    from fastfm.space import Categorical, Integer, Ordinal, Real
    out = {}
    for p in space.parameters:
        if isinstance(p, Real):
            out[p.name] = od.FloatDistribution(p.low, p.high, log=p.log)
        elif isinstance(p, Integer):
            out[p.name] = od.IntDistribution(p.low, p.high)
        elif isinstance(p, (Categorical, Ordinal)):
            out[p.name] = od.CategoricalDistribution(list(p.choices))
        else:
            raise TypeError(f"no Optuna distribution for {p!r}")
    return out


def _init_worker():
    import fastfm
    fastfm.set_config(num_threads=1)
    warnings.simplefilter("ignore")
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def run_fastfm(problem_name, q, seed, budget, n_init, pending="believer", failures="impute", crash=None):
    import fastfm as ff
    problem = _problem(problem_name)
    opt = ff.Optimizer(problem.space, seed=seed, n_init=n_init, pending=pending, failures=failures)
    values, failed = [], 0
    t0 = time.perf_counter()
    while len(values) < budget:
        batch = opt.ask(n=min(q, budget - len(values)))
        for x in batch:
            y = float(problem(x))
            if crash is not None and crash(x):
                y, failed = float("nan"), failed + 1
            opt.tell(x, None if not np.isfinite(y) else y)
            values.append(y)
    return {"values": values, "n_failed": failed, "time_s": time.perf_counter() - t0}


def run_optuna(problem_name, q, seed, budget, n_init, constant_liar=False):
    import optuna
    problem = _problem(problem_name)
    dists = optuna_distributions(problem.space)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_init,
                                                                   constant_liar=constant_liar))
    values = []
    t0 = time.perf_counter()
    while len(values) < budget:
        trials = [study.ask(dists) for _ in range(min(q, budget - len(values)))]
        for t in trials:
            y = float(problem(t.params))
            study.tell(t, y)
            values.append(y)
    return {"values": values, "n_failed": 0, "time_s": time.perf_counter() - t0}


def _job(job):
    problem, method, q, seed, budget, n_init = job
    if method == "fastfm":
        out = run_fastfm(problem, q, seed, budget, n_init)
    else:
        out = run_optuna(problem, q, seed, budget, n_init, constant_liar=method == "optuna-tpe-cl")
    out.update(problem=problem, method=method, q=q, seed=seed)
    return out


def best_at(values, k):
    v = np.asarray(values[:k], dtype=float)
    v = v[np.isfinite(v)]
    return float(v.min()) if len(v) else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    p.add_argument("--q", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--methods", nargs="+", default=["fastfm", "optuna-tpe"],
                   choices=["fastfm", "optuna-tpe", "optuna-tpe-cl"],
                   help="optuna-tpe-cl: TPESampler(constant_liar=True), Optuna's own batch mode")
    add_protocol_arguments(p, seeds=10)
    p.add_argument("--checkpoints", type=int, nargs="+", default=[20, 40])
    args = p.parse_args()
    meta = header(args)
    jobs = [(pr, m, q, s, args.budget, args.n_init) for s in range(args.seeds) for pr in args.problems
            for m in args.methods for q in args.q]
    jobs.sort(key=lambda j: j[1] != "fastfm")   # the long ones first
    results, meta["wall_s"] = run_pool(_job, jobs, args.processes, _init_worker,
                                        lambda r: f"{r['problem']} {r['method']} q={r['q']} seed={r['seed']}: "
                                       f"best {best_at(r['values'], args.budget):.4f} ({r['time_s']:.1f} s)")
    for pr in args.problems:
        opt = _problem(pr).optimum
        print(f"\n{pr} (optimum {opt:.4f}), {args.budget} evaluations ({args.n_init} random first), "
              f"{args.seeds} seeds: best value, mean ± standard error\n")
        print("| method | q | " + " | ".join(f"best @ {k}" for k in args.checkpoints) + " | time/run (s) |")
        print("| --- | --- | " + " | ".join("---" for _ in args.checkpoints) + " | --- |")
        for m in args.methods:
            for q in args.q:
                rs = [r for r in results if r["problem"] == pr and r["method"] == m and r["q"] == q]
                cells = []
                for k in args.checkpoints:
                    mu, se = mean_se([best_at(r["values"], k) for r in rs])
                    cells.append(f"{mu:.4f} ± {se:.4f}")
                print(f"| {m} | {q} | " + " | ".join(cells) + f" | {np.mean([r['time_s'] for r in rs]):.1f} |")
    finish(meta, results, args.json)


if __name__ == "__main__":
    main()
