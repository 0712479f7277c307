"""BoTorch + fastfm's ModLap against BoTorch's MixedSingleTaskGP, in the same BoTorch loop (issue 25 §2).

For each problem and seed, two BoTorch loops that differ only in the GP's covariance:

* ``modlap``: ``SingleTaskGP(covar_module=fastfm.integration.gpytorch.ModLap(space, unit_diagonal=True,
  compiled=True))`` (unit diagonal as fastfm's own BO uses; ``compiled``: the training Gram and its gradient
  from fastfm's C++ backend);
* ``mixed``: BoTorch's ``MixedSingleTaskGP(cat_dims=<the nominal columns>)`` (its default kernel: a sum and a
  product of a continuous Matérn-5/2 and a categorical kernel).

Both take fastfm's encoding of the space (continuous columns in [0, 1], then one state index per discrete
variable), ``Standardize(m=1)`` on the outcome and BoTorch's default likelihood, start from the same initial
points (``space.sample_encoded(n_init, seed=seed)``), are fitted with ``fit_gpytorch_mll`` on the negated
values (BoTorch maximises) and suggest the maximiser of ``LogExpectedImprovement`` found by
``optimize_acqf_mixed_alternating`` over ``botorch_search_domain(space)`` with the same ``num_restarts`` and
``raw_samples``, until ``budget`` evaluations.  A third method, ``fastfm``, is fastfm's own ``Optimizer(space,
seed=seed)`` with its default settings (its own initial design of 10 points, so not the same initial points),
for reference.

Per run: the best-so-far curve (so the best at any budget), the mean wall seconds per suggestion (for BoTorch:
model fit plus acquisition optimisation; for fastfm: ``ask``), the fit and acquisition parts separately, and any
failure of the fit or of the acquisition optimisation (a failed acquisition optimisation falls back to a random
point, counted in ``acq_failures``).  Each run is a fresh process, one at a time, with one thread (torch and
fastfm).  Run from the repository root:

    PYTHONPATH=. python asv_benchmarks/integrations/botorch_kernels.py --seeds 5 --budget 60 \
        --out asv_benchmarks/integrations/results/botorch_kernels.json

Results: docs/benchmarks/integrations.md.
"""
import argparse
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402

METHODS = ("modlap", "mixed", "fastfm")
LABELS = {"modlap": "BoTorch + fastfm ModLap", "mixed": "BoTorch MixedSingleTaskGP",
          "fastfm": "fastfm Optimizer (reference)"}


def _botorch_run(problem, method, seed, budget, n_init, num_restarts, raw_samples):
    import warnings

    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.exceptions import InputDataWarning
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MixedSingleTaskGP, SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from fastfm.integration.gpytorch import ModLap, botorch_search_domain
    # optimize_acqf_mixed (the older alternative) enumerates every nominal combination: 17^5 on Ackley5C
    from botorch.optim import optimize_acqf_mixed_alternating as optimize
    # the discrete columns hold state indices, not unit-cube values: expected for both models
    warnings.filterwarnings("ignore", category=InputDataWarning)

    space = problem.space
    domain = botorch_search_domain(space)
    cat_dims = sorted(domain["cat_dims"])
    torch.manual_seed(seed)
    rng = np.random.default_rng(10_000 + seed)
    X = torch.tensor(space.sample_encoded(n_init, seed=seed), dtype=torch.float64)
    y = [float(v) for v in problem.evaluate_encoded(X.numpy())]
    fit_seconds, acq_seconds, fit_failures, acq_failures, messages = [], [], 0, 0, []
    while len(y) < budget:
        Y = -torch.tensor(y, dtype=torch.float64).unsqueeze(-1)           # BoTorch maximises
        t0 = time.perf_counter()
        if method == "modlap":
            model = SingleTaskGP(X, Y, covar_module=ModLap(space, unit_diagonal=True, compiled=True),
                                 outcome_transform=Standardize(m=1))
        else:
            model = MixedSingleTaskGP(X, Y, cat_dims=cat_dims, outcome_transform=Standardize(m=1))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.filterwarnings("ignore", category=InputDataWarning)
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            for w in caught:
                messages.append(f"fit {len(y)}: {w.category.__name__}: {str(w.message)[:200]}")
        except Exception as exc:   # noqa: BLE001  (recorded; the model keeps its last hyperparameters)
            fit_failures += 1
            messages.append(f"fit {len(y)}: {type(exc).__name__}: {str(exc)[:200]}")
        t1 = time.perf_counter()
        try:
            acquisition = LogExpectedImprovement(model, best_f=Y.max())
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.filterwarnings("ignore", category=InputDataWarning)
                candidate, _ = optimize(acquisition, q=1, num_restarts=num_restarts, raw_samples=raw_samples,
                                        **domain)
            for w in caught:
                messages.append(f"acq {len(y)}: {w.category.__name__}: {str(w.message)[:200]}")
            x = candidate.detach().reshape(1, -1)
            space.validate_encoded(x.numpy())
        except Exception as exc:   # noqa: BLE001  (recorded; a random point instead)
            acq_failures += 1
            messages.append(f"acq {len(y)}: {type(exc).__name__}: {str(exc)[:200]}\n"
                            + traceback.format_exc(limit=3)[-600:])
            x = torch.tensor(space.sample_encoded(1, seed=int(rng.integers(2 ** 31))), dtype=torch.float64)
        t2 = time.perf_counter()
        fit_seconds.append(t1 - t0)
        acq_seconds.append(t2 - t1)
        config = space.decode(x.numpy())[0]
        y.append(float(problem(config)))                               # the decoded config, through the problem
        X = torch.cat([X, x])
    seconds = np.add(fit_seconds, acq_seconds)
    return {"y": y, "seconds_per_suggestion": float(np.mean(seconds)), "fit_seconds": float(np.mean(fit_seconds)),
            "acq_seconds": float(np.mean(acq_seconds)), "suggestion_seconds": seconds.tolist(),
            "fit_failures": fit_failures, "acq_failures": acq_failures, "messages": messages[:50],
            "n_messages": len(messages)}


def _fastfm_run(problem, seed, budget):
    import fastfm as ff
    optimizer = ff.Optimizer(problem.space, seed=seed)
    y, seconds = [], []
    for _ in range(budget):
        t0 = time.perf_counter()
        suggestion = optimizer.ask()
        seconds.append(time.perf_counter() - t0)
        value = float(problem(dict(suggestion)))
        optimizer.tell(suggestion, value)
        y.append(value)
    # the mean over the model-based suggestions (after fastfm's 10 initial points, which are near-free)
    model_based = seconds[10:] or seconds
    return {"y": y, "seconds_per_suggestion": float(np.mean(model_based)), "suggestion_seconds": seconds,
            "fit_failures": 0, "acq_failures": 0, "messages": [], "n_messages": 0}


def run_one(task):
    problem_name, method, seed, budget, n_init, num_restarts, raw_samples = task
    import torch
    import fastfm as ff
    from fastfm.benchmarks import get_problem
    torch.set_num_threads(1)
    ff.set_config(num_threads=1)
    problem = get_problem(problem_name)
    start = time.perf_counter()
    if method == "fastfm":
        r = _fastfm_run(problem, seed, budget)
    else:
        r = _botorch_run(problem, method, seed, budget, n_init, num_restarts, raw_samples)
    curve = np.minimum.accumulate(r["y"])
    r.update({"problem": problem_name, "method": method, "seed": seed, "curve": curve.tolist(),
              "best": float(curve[-1]), "wall": time.perf_counter() - start})
    return r


def _best_at(r, n):
    return r["curve"][min(n, len(r["curve"])) - 1]


def _describe(r):
    return (f"{r['problem']:>9} {r['method']:>6} seed {r['seed']}: best {r['best']:.4g} "
            f"({r['seconds_per_suggestion']:.2f} s/suggestion, {r['wall']:.0f} s; failures fit "
            f"{r['fit_failures']}, acq {r['acq_failures']}; {r['n_messages']} warnings)")


def _cell(values, digits=3):
    m, se = _common.mean_se(values)
    return f"{m:.{digits}f} ± {se:.{digits}f}"


def table(results, problems, methods, checkpoints):
    lines = ["| method | problem (optimum) | " + " | ".join(f"best at {n}" for n in checkpoints)
             + " | s/suggestion | failures (fit/acq) |",
             "| --- | --- | " + " | ".join("---" for _ in checkpoints) + " | --- | --- |"]
    from fastfm.benchmarks import get_problem
    for method in methods:
        for p in problems:
            rs = [r for r in results if (r["problem"], r["method"]) == (p, method)]
            if not rs:
                continue
            optimum = get_problem(p).optimum
            bests = [_cell([_best_at(r, n) for r in rs]) for n in checkpoints]
            seconds = np.mean([r["seconds_per_suggestion"] for r in rs])
            failures = f"{sum(r['fit_failures'] for r in rs)}/{sum(r['acq_failures'] for r in rs)}"
            lines.append(f"| {LABELS[method]} | {p} ({optimum:.3g}) | " + " | ".join(bests)
                         + f" | {seconds:.2f} | {failures} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=["Func3C", "Ackley5C"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..S-1")
    parser.add_argument("--budget", type=int, default=60)
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--checkpoints", type=int, nargs="+", default=[30, 60])
    parser.add_argument("--num-restarts", type=int, default=10, help="optimize_acqf_mixed_alternating's")
    parser.add_argument("--raw-samples", type=int, default=512, help="optimize_acqf_mixed_alternating's")
    parser.add_argument("--out", default=None, help="write the raw results (JSON) here")
    args = parser.parse_args(argv)
    checkpoints = [n for n in args.checkpoints if n <= args.budget] or [args.budget]
    meta = _common.header(args)
    tasks = [(p, m, seed, args.budget, args.n_init, args.num_restarts, args.raw_samples)
             for p in args.problems for seed in range(args.seeds) for m in args.methods]
    # one run at a time, each in a fresh process (the machine is shared; one thread per run)
    results, wall = _common.run_pool(run_one, tasks, 1, None, _describe, fresh_process=True)
    meta["wall_seconds"] = wall
    print()
    print(table(results, args.problems, args.methods, checkpoints))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    _common.finish(meta, sorted(results, key=lambda r: (r["problem"], r["method"], r["seed"])), args.out)


if __name__ == "__main__":
    main()
