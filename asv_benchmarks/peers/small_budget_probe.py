"""Variants of the BO loop at 30-60 evaluations on the paper's problems (issue 24 §1; docs/benchmarks/bo-efficiency.md,
"Acquisition portfolios, UCB and a smaller initial design" and "Keeping AdditiveFM unless ModLap is clearly ahead").

    PYTHONPATH=. python asv_benchmarks/peers/small_budget_probe.py run --variant hedge \\
        [--problems func2c,func3c,ackley5c] [--seeds 0:40] [--budget 60] --out probe.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/small_budget_probe.py summary probe.jsonl [--budgets 30,60]

``run`` appends one JSON line per (problem, seed): the values of a ``fastfm.Optimizer(space, seed=seed, ...)``
ask/tell loop in evaluation order.  Variants:

* ``default``   ``Optimizer(space, seed=seed)`` (the head-to-head runner's fastfm runs, value for value).
* ``init-1+d``  ``n_init = min(10, 1 + n_dims)``, HEBO's rule (1 + d Sobol points), so that 5 more of the first 30
                evaluations on Func2C are the model's.
* ``ucb``       ``acquisition="ucb"`` (β = ``fastfm.acquisition.UCB_BETA``).
* ``hedge``     GP-Hedge (Hoffman, Brochu & de Freitas 2011, "Portfolio allocation for Bayesian optimization"):
                log-EI, log-PI and UCB each nominate their maximiser (three searches per suggestion); the one
                evaluated is drawn with probability ∝ exp(η·g_j), and each gain g_j grows by minus the refitted
                model's standardised mean at its last nominee (η = 1).  A portfolio like HEBO's MACE (EI, PI
                and UCB) without its multi-objective search; installed for its own runs only.
* ``plain-loo`` kernel="auto" choosing by the plain leave-one-out density, the default before 2026-12-03
                (``fastfm.bo.surrogate.KERNEL_CHOICE_STANDARD_ERRORS = 0``: ModLap kept whenever it is ahead).
* ``additive``  ``kernel="modlap_additive"``: AdditiveFM alone, no choice.
* ``race-full`` the full refits race their starts too (``GaussianProcessRegressor(n_finalists=3)``: every start
                runs the screening iterations, the 3 best continue), as the warm refits do with 1 finalist
                (``fastfm.bo.surrogate.WARM_FINALISTS``); installed for its own runs only.

``summary`` prints, per problem and variant, the mean ± s.e. of the best value after each budget and the paired
difference against ``default`` on the seeds both ran (negative: the variant is better).
"""
import argparse
import collections
import contextlib
import json
import math
import sys
import time
from unittest import mock

import numpy as np
from scipy.special import log_ndtr

import fastfm
import fastfm.bo.optimizer as optimizer_module
from fastfm.acquisition import _standardise, acquisition_function
from fastfm.benchmarks import get_problem
from fastfm.bo import surrogate as surrogate_module
from fastfm.bo.surrogate import _Surrogate

HEDGE_ETA = 1.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def log_probability_of_improvement(best, xi):
    """log Φ(z), z = (best − xi − μ)/σ, with its derivatives in μ and σ (the acquisition interface of
    ``fastfm.acquisition``: maximised)."""
    def acquisition(mu, sigma):
        _, s, z, _ = _standardise(mu, sigma, best, xi)            # σ floored as every acquisition here
        log_pi = log_ndtr(z)
        ratio = np.exp(-0.5 * z * z - _HALF_LOG_2PI - log_pi)      # φ(z)/Φ(z), without underflow
        return log_pi, -ratio / s, -z * ratio / s
    return acquisition


def _hedge_optimize_acquisition(original):
    """``fastfm.bo.optimizer._optimize_acquisition`` replaced by GP-Hedge for single asks without a trust region
    (the state lives on the optimizer)."""
    def optimize(optimizer, gp, model, acquisition, incumbent, excluded, values, ok):
        if optimizer._trust_region is not None or optimizer._batch_candidates is not None:
            return original(optimizer, gp, model, acquisition, incumbent, excluded, values, ok)
        state = optimizer.__dict__.setdefault("_hedge", {"gains": np.zeros(3), "nominees": None})
        if state["nominees"] is not None:
            state["gains"] -= model.predict_standardized(state["nominees"])[0]
        best = model.best_y_standardized_
        portfolio = [acquisition, log_probability_of_improvement(best, optimizer.xi), acquisition_function("ucb", best)]
        search, rng = optimizer._acq_optimizer, optimizer._rng
        results = [search.optimize(model, a, incumbent, excluded, rng, None) for a in portfolio]
        weights = np.exp(HEDGE_ETA * (state["gains"] - state["gains"].max()))
        chosen = int(rng.choice(len(portfolio), p=weights / weights.sum()))
        state["nominees"] = np.array([r.x for r in results])
        return results[chosen], {"hedge": chosen}
    return optimize


FULL_REFIT_FINALISTS = 3


def _race_full_refits(original):
    """``fastfm.bo.surrogate._Surrogate._fit_kernel`` with the full refits raced (their records carry no
    ``n_finalists``; the warm refits' do)."""
    def fit_kernel(self, name, record, warm_kernel, X, y):
        if record.get("n_finalists") is None:
            record = {**record, "n_finalists": FULL_REFIT_FINALISTS}
        return original(self, name, record, warm_kernel, X, y)
    return fit_kernel


def _optimizer(variant, space, seed):
    if variant == "init-1+d":
        return fastfm.Optimizer(space, seed=seed, n_init=min(10, 1 + space.n_dims))
    if variant == "ucb":
        return fastfm.Optimizer(space, seed=seed, acquisition="ucb")
    if variant == "additive":
        return fastfm.Optimizer(space, seed=seed, kernel="modlap_additive")
    return fastfm.Optimizer(space, seed=seed)


def run(args):
    if args.variant == "hedge":
        patch = mock.patch.object(optimizer_module, "_optimize_acquisition",
                                  _hedge_optimize_acquisition(optimizer_module._optimize_acquisition))
    elif args.variant == "race-full":
        patch = mock.patch.object(_Surrogate, "_fit_kernel", _race_full_refits(_Surrogate._fit_kernel))
    elif args.variant == "plain-loo":
        patch = mock.patch.object(surrogate_module, "KERNEL_CHOICE_STANDARD_ERRORS", 0.0)
    else:
        patch = contextlib.nullcontext()
    first, stop = map(int, args.seeds.split(":"))
    with patch, open(args.out, "a") as out:
        for key in args.problems.split(","):
            problem = get_problem(key)
            for seed in range(first, stop):
                start, opt, values = time.perf_counter(), _optimizer(args.variant, problem.space, seed), []
                for _ in range(args.budget):
                    x = opt.ask()
                    values.append(float(problem(x)))
                    opt.tell(x, values[-1])
                out.write(json.dumps({"problem": key, "variant": args.variant, "seed": seed, "values": values,
                                      "fastfm": fastfm.__version__, "wall_seconds": time.perf_counter() - start})
                          + "\n")
                out.flush()
                print(f"{key} {args.variant} seed {seed}: best {min(values):.4f}", flush=True)


def summary(args):
    runs = collections.defaultdict(dict)
    with open(args.file) as fh:
        for line in fh:
            r = json.loads(line)
            runs[(r["problem"], r["variant"])][r["seed"]] = r["values"]
    budgets = [int(b) for b in args.budgets.split(",")]
    for (problem, variant), by_seed in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "default", kv[0][1])):
        base = runs.get((problem, "default"), {})
        common = [s for s in by_seed if s in base]
        cells = []
        for b in budgets:
            best = np.array([min(v[:b]) for v in by_seed.values()])
            cell = f"@{b} {best.mean():+.4f} ± {best.std(ddof=1) / math.sqrt(best.size):.4f}"
            if variant != "default" and len(common) > 1:
                diff = np.array([min(by_seed[s][:b]) - min(base[s][:b]) for s in common])
                cell += (f" (paired {diff.mean():+.4f} ± {diff.std(ddof=1) / math.sqrt(diff.size):.4f}, "
                         f"better on {int((diff < 0).sum())} of {diff.size})")
            cells.append(cell)
        print(f"{problem:10s} {variant:9s} n={len(by_seed):2d} | " + " | ".join(cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--variant", required=True,
                   choices=["default", "init-1+d", "ucb", "hedge", "plain-loo", "additive", "race-full"])
    r.add_argument("--problems", default="func2c,func3c,ackley5c")
    r.add_argument("--seeds", default="0:40", help="first:stop")
    r.add_argument("--budget", type=int, default=60)
    r.add_argument("--out", required=True)
    s = sub.add_parser("summary")
    s.add_argument("file")
    s.add_argument("--budgets", default="30,60")
    args = parser.parse_args(argv)
    (run if args.command == "run" else summary)(args)


if __name__ == "__main__":
    sys.exit(main())
