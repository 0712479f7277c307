"""The left tail −c/ℓ² on the continuous lengthscales' prior (issue 24 §1): the optimizer's default against the same
prior without the tail, paired on the same seeds, on fastfm's problems and on standard ones outside its suite
(y_transform_probe's OUTSIDE: Hartmann6, Levy8I, Branin3C, Levy and Ackley on six continuous variables, ...).

    PYTHONPATH=. python asv_benchmarks/peers/lengthscale_tail_probe.py run --problems Levy8I Levy6R Ackley6R \\
        Hartmann6 Func3C --seeds 0:30 --budget 60 --jobs 2 --out tail.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/lengthscale_tail_probe.py summary tail.jsonl

"default" is ``Optimizer(space, seed=seed)``; "no_tail" the same with the prior that ``hyperparameter_prior="auto"``
gives but ``tail_scale`` 0 (the default before 2026-12-02, run for run).  On a kernel with fewer than
``LENGTHSCALE_TAIL_MIN_DIMS`` continuous lengthscales the two are the same run.  Each row: the best value after 30,
60, 100 and 200 evaluations (those the budget allows) and the mean seconds per suggestion from the 11th on.
"""
import os
import sys
import warnings

import numpy as np

import fastfm as ff
from fastfm.bo.surrogate import _hyperparameter_prior

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_start_probe import paired_summary                 # noqa: E402
from y_transform_probe import fastfm_loop, probe_parser, problem_of, run_variants  # noqa: E402

BUDGETS = (30, 60, 100, 200)


def without_tail(space):
    """The callable prior of ``hyperparameter_prior="auto"`` on ``space`` with the lengthscale tail off."""
    auto = _hyperparameter_prior("auto", space)

    def prior(kernel):
        value = auto(kernel)
        value.tail_scale = 0.0
        return value
    return prior


def run_one(variant, name, seed, budget, commit):
    warnings.simplefilter("ignore")
    from threadpoolctl import threadpool_limits
    space, objective = problem_of(name)
    options = {"hyperparameter_prior": without_tail(space)} if variant == "no_tail" else {}
    with threadpool_limits(1):
        values, seconds = fastfm_loop(ff.Optimizer(space, seed=seed, **options), objective, budget)
    best = np.minimum.accumulate(values)
    row = {"variant": variant, "problem": name, "seed": seed, "budget": budget, "commit": commit,
           "seconds_per_suggestion": float(np.mean(seconds[10:]))}
    row.update({f"best{n}": float(best[n - 1]) for n in BUDGETS if n <= budget})
    return row


def summary(path):
    paired_summary(path, "variant", "default", "no_tail", BUDGETS)


def main():
    parser, _, run = probe_parser(__doc__, "0:30")
    run.add_argument("--variants", nargs="+", default=["default", "no_tail"], choices=["default", "no_tail"])
    run.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (one thread each)")
    args = parser.parse_args()
    if args.command == "summary":
        summary(args.path)
        return
    run_variants(run_one, args)


if __name__ == "__main__":
    main()
