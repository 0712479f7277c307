"""Optimizer ask/tell runs with a full fit at every suggestion, against the default's geometric schedule of full
refits (issue 24 §1; docs/benchmarks/bo-efficiency.md, "A full fit at every suggestion"), or with a noise restart in
every fit (variant noise_restart: ``gp_options={"noise_restarts": 1}``; bo-efficiency.md, "A restart of the noise").

The variant patches ``fastfm.bo.surrogate._is_full_refit`` so that every fit after the first runs all restarts and
every candidate kernel, transform and group of nominal values, as a fresh optimizer per suggestion does (what
``FMSampler`` did before it carried the fit between proposals).  Each run appends one row (the best value after 30
and 60 evaluations) to OUT; compare it with the default's rows of ``results/fresh_seeds.jsonl`` on the same seeds.

    PYTHONPATH=. python asv_benchmarks/peers/full_fit_probe.py full_every func2c 3000:3080 out.jsonl
"""
import json
import sys
import time

import numpy as np

import fastfm
import fastfm.bo.surrogate as surrogate
from fastfm.benchmarks import get_problem
from head_to_head import git_state     # this script's folder is on the path when it runs


def ask_tell_run(problem, seed, budget=60, **options):
    """(the values of a ``budget``-evaluation ask/tell run of ``fastfm.Optimizer(problem.space, seed=seed,
    **options)``, its seconds)."""
    optimizer = fastfm.Optimizer(problem.space, seed=seed, **options)
    values, start = [], time.perf_counter()
    for _ in range(budget):
        config = optimizer.ask()
        values.append(float(problem(config)))
        optimizer.tell(config, values[-1])
    return values, time.perf_counter() - start


def write_row(row, out):
    """Print ``row`` and append it to the JSON-lines file ``out``."""
    print(json.dumps(row), flush=True)
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")


def run_rows(variant, problems, seeds, out, budget=60, run=ask_tell_run, **options):
    """One row per problem and seed (the best value after 30, 60, 100 and 200 evaluations of ``run(problem, seed,
    budget=budget, **options)``, ``ask_tell_run`` by default, as far as ``budget`` goes, and the run's values),
    appended to ``out``, one thread."""
    commit = git_state()["commit"]
    fastfm.set_config(num_threads=1)
    for name in problems:
        for seed in seeds:
            problem = get_problem(name)
            values, seconds = run(problem, seed, budget=budget, **options)
            best = np.minimum.accumulate(values)
            row = {"variant": variant, "problem": problem.name, "seed": seed,
                   **{f"best{n}": float(best[n - 1]) for n in (30, 60, 100, 200) if n <= budget},
                   "seconds": seconds, "fastfm_commit": commit, "values": values}
            write_row(row, out)


def main(argv):
    variant, problems, seeds, out = argv[0], argv[1].split(","), range(*map(int, argv[2].split(":"))), argv[3]
    options = {}
    if variant == "full_every":
        surrogate._is_full_refit = lambda n_told: n_told > 1
    elif variant == "noise_restart":
        options = {"gp_options": {"noise_restarts": 1}}
    elif variant != "default":
        raise SystemExit(f"variant must be full_every, noise_restart or default, got {variant!r}")
    run_rows(variant, problems, seeds, out, **options)


if __name__ == "__main__":
    if len(sys.argv) != 5 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
