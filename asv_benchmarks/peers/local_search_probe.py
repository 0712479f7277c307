"""The acquisition search's quasi-Newton runs with and without the doubled trial step (issue 24 §3): a run that is
not convex along its free coordinates crept at a fixed step scale until its iteration cap
(fastfm/optim/batched_lbfgs.py; docs/benchmarks/suggestion.md, "A local-search run that crept").

    PYTHONPATH=. python asv_benchmarks/peers/local_search_probe.py states --problem svm --n-obs 50 --seed 0
    PYTHONPATH=. python asv_benchmarks/peers/local_search_probe.py run --problems svm func3c --seeds 0:20 \\
        --budget 60 --jobs 2 --out growth.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/local_search_probe.py summary growth.jsonl

``states`` searches the same BO states with both rules (deep copies of one optimizer after its fit; n − 1 random
points, then ``--repeats`` suggestions, the state advanced by either rule in turn) and prints the model calls with
the input gradient per search, its seconds and the acquisition maximum reached.  ``run`` makes paired BO runs:
"default" is ``Optimizer(space, seed=seed)``, "no_growth" the same with ``batched_lbfgs.WOLFE_CURVATURE = inf``
(no step ever counts as too short: the rule before 2026-12-04, bit for bit).  Each row: the best value after 30,
60, 100 and 200 evaluations (those the budget allows) and the mean seconds per suggestion from the 11th on.
"""
import copy
import os
import sys
import time
import warnings

import numpy as np

import fastfm as ff
from fastfm.optim import batched_lbfgs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_start_probe import paired_summary                 # noqa: E402
from y_transform_probe import fastfm_loop, probe_parser, problem_of, run_variants  # noqa: E402

BUDGETS = (30, 60, 100, 200)
RULES = {"default": batched_lbfgs.WOLFE_CURVATURE, "no_growth": np.inf}


def run_one(variant, name, seed, budget, commit):
    warnings.simplefilter("ignore")
    from threadpoolctl import threadpool_limits
    batched_lbfgs.WOLFE_CURVATURE = RULES[variant]
    space, objective = problem_of(name)
    with threadpool_limits(1), ff.config_context(num_threads=1):
        values, seconds = fastfm_loop(ff.Optimizer(space, seed=seed), objective, budget)
    best = np.minimum.accumulate(values)
    row = {"variant": variant, "problem": name, "seed": seed, "budget": budget, "commit": commit,
           "seconds_per_suggestion": float(np.mean(seconds[10:]))}
    row.update({f"best{n}": float(best[n - 1]) for n in BUDGETS if n <= budget})
    return row


def states(name, n_obs, repeats, seed):
    """Both rules on the same BO states: per rule, (model calls, seconds, acquisition maximum) per search."""
    from threadpoolctl import threadpool_limits

    from fastfm.gp.solvers import cholesky
    warnings.simplefilter("ignore")
    space, objective = problem_of(name)
    calls = [0]
    predict = cholesky.ExactPosterior.predict_standardized_with_input_gradient

    def counted(self, X):
        calls[0] += 1
        return predict(self, X)
    cholesky.ExactPosterior.predict_standardized_with_input_gradient = counted
    optimizer = ff.Optimizer(space, seed=seed)
    rows = {rule: [] for rule in RULES}
    with threadpool_limits(1), ff.config_context(num_threads=1):
        for config in space.sample(n_obs - 1, seed=seed):
            optimizer.tell(config, objective(config))
        config = optimizer.ask()
        optimizer.tell(config, objective(config))
        for step in range(repeats):
            optimizer._fit_model()           # the fit both copies share
            for rule, curvature in RULES.items():
                copied = copy.deepcopy(optimizer)
                batched_lbfgs.WOLFE_CURVATURE, calls[0] = curvature, 0
                start = time.perf_counter()
                copied.ask()
                rows[rule].append((calls[0], time.perf_counter() - start,
                                   copied.last_suggestion_info["acquisition"]))
            batched_lbfgs.WOLFE_CURVATURE = list(RULES.values())[step % 2]
            config = optimizer.ask()
            optimizer.tell(config, objective(config))
    batched_lbfgs.WOLFE_CURVATURE = RULES["default"]
    old, new = np.array(rows["no_growth"]), np.array(rows["default"])
    gain = new[:, 2] - old[:, 2]
    print(f"{name}, {n_obs} observations, seed {seed}, {repeats} states: model calls {old[:, 0].mean():.0f} -> "
          f"{new[:, 0].mean():.0f}, seconds {old[:, 1].mean():.3f} -> {new[:, 1].mean():.3f}; acquisition maximum "
          f"higher on {int(np.sum(gain > 1e-9))}, lower on {int(np.sum(gain < -1e-9))}, largest change "
          f"{np.max(np.abs(gain)):.2e}")


def main():
    parser, sub, run = probe_parser(__doc__, "0:20")
    run.add_argument("--variants", nargs="+", default=list(RULES), choices=list(RULES))
    run.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (one thread each)")
    state = sub.add_parser("states")
    state.add_argument("--problem", required=True)
    state.add_argument("--n-obs", type=int, default=50)
    state.add_argument("--repeats", type=int, default=12)
    state.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "summary":
        paired_summary(args.path, "variant", "default", "no_growth", BUDGETS)
        return
    if args.command == "states":
        states(args.problem, args.n_obs, args.repeats, args.seed)
        return
    run_variants(run_one, args)


if __name__ == "__main__":
    main()
