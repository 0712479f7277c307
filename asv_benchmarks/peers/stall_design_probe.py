"""Stalled runs against what their initial design showed of the optimum's combination (issue 24 §1;
docs/benchmarks/bo-efficiency.md, "Where the 25 stalled runs end").

    PYTHONPATH=. python asv_benchmarks/peers/stall_design_probe.py \\
        [--rows asv_benchmarks/peers/results/fresh_seeds.jsonl] [--variants default_3f51ee5,scaled_parts_call] \\
        [--problem func2c] [--threshold -0.15] [--budget 60]

For each run of the given variants (one row per seed; the first variant listed wins where two have a seed), the
run's initial design is drawn again (``fastfm.Optimizer(space, seed=seed)``, its first ``n_init`` asks, each told
the problem's value; checked against the row's first values) and the run is counted by how many design points lie
in the optimum's combination of nominal values (``problem.optimal_config``) and by the best value among them.
A run stalled where its best value after ``--budget`` evaluations is above ``--threshold``.  Prints, per class,
stalled runs / runs.
"""
import argparse
import json
import os

import numpy as np

import fastfm
from fastfm.benchmarks import get_problem

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROWS = os.path.join(HERE, "results", "fresh_seeds.jsonl")


def runs_of(path, problem_name, variants):
    """{seed: row} of the problem's runs, the first listed variant first."""
    with open(path) as lines:
        rows = [json.loads(line) for line in lines]
    chosen = {}
    for variant in variants:
        for row in rows:
            if row.get("variant") == variant and row["problem_key"] == problem_name:
                chosen.setdefault(row["seed"], row)
    return chosen


def design_in_optimum_combination(problem, seed, first_values):
    """(design points in the optimum's nominal combination, the best value among them or inf)."""
    optimizer = fastfm.Optimizer(problem.space, seed=seed)
    nominal = {p.name: problem.optimal_config[p.name] for p in problem.space.discrete_params}
    values_in_combination = []
    for told, expected in enumerate(first_values[:optimizer.n_init]):
        config = optimizer.ask()
        value = float(problem(config))
        if not np.isclose(value, expected, rtol=1e-7, atol=1e-9):
            raise RuntimeError(f"seed {seed}: design point {told} has value {value}, the row has {expected}: "
                               "the initial design changed since the row's commit")
        optimizer.tell(config, value)
        if all(config[name] == state for name, state in nominal.items()):
            values_in_combination.append(value)
    return len(values_in_combination), min(values_in_combination, default=np.inf)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=DEFAULT_ROWS)
    parser.add_argument("--variants", default="default_3f51ee5,scaled_parts_call")
    parser.add_argument("--problem", default="func2c")
    parser.add_argument("--threshold", type=float, default=-0.15)
    parser.add_argument("--budget", type=int, default=60)
    args = parser.parse_args(argv)
    problem = get_problem(args.problem)
    runs = runs_of(args.rows, args.problem, args.variants.split(","))
    records = []
    for seed, row in sorted(runs.items()):
        count, best = design_in_optimum_combination(problem, seed, row["values"])
        records.append((min(row["values"][:args.budget]) > args.threshold, count, best))
    classes = [("no design point in the optimum's combination", lambda c, b: c == 0),
               ("one or more, the best of them below 1", lambda c, b: c > 0 and b < 1.0),
               ("one or more, the best of them 1 or above", lambda c, b: c > 0 and b >= 1.0),
               ("all runs", lambda c, b: True)]
    print(f"{problem.name}, {len(records)} runs ({args.variants}), stalled: best after {args.budget} above "
          f"{args.threshold}")
    for label, member in classes:
        members = [stalled for stalled, count, best in records if member(count, best)]
        print(f"  {label}: {sum(members)} / {len(members)} stalled")


if __name__ == "__main__":
    main()
