#!/usr/bin/env python
"""Where each method's evaluations go: the share of a run's evaluations in a window (default the 31st to the 60th)
whose value is worse than the median of random search's values on the same problem, mean over seeds, per problem
and method (issue 24 §1 and §5; docs/benchmarks/bo-efficiency.md, "SVM at 60 evaluations: where the evaluations
go").

A model-based method spends some evaluations where its model is unsure; this counts those that land among the worse
half of what random configurations give, a problem-level yardstick that is the same for every method.  The runs are
those of ``summarise_head_to_head.py`` (per seed the longest run, of equally long ones the last in the file).

Usage::

    python asv_benchmarks/peers/poor_evaluations.py asv_benchmarks/peers/results/head_to_head.jsonl --window 31:60
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarise_head_to_head import METHOD_ORDER, load  # noqa: E402


def poor_shares(runs, first, last):
    """{problem_key: {method: (mean share, seeds)}} over the runs with at least ``last`` evaluations; problems
    without random-search runs are left out (no yardstick)."""
    yardsticks = {problem: float(np.median(np.concatenate([r["values"] for r in by_seed.values()])))
                  for (problem, method), by_seed in runs.items() if method == "random" and by_seed}
    shares = {}
    for (problem, method), by_seed in runs.items():
        if problem not in yardsticks:
            continue
        window = [np.mean(np.asarray(r["values"][first - 1:last]) > yardsticks[problem])
                  for r in by_seed.values() if len(r["values"]) >= last]
        if window:
            shares.setdefault(problem, {})[method] = (float(np.mean(window)), len(window))
    return shares


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="head_to_head.py's JSON-lines file")
    parser.add_argument("--window", default="31:60", help="first:last evaluation, 1-based and inclusive")
    args = parser.parse_args(argv)
    try:
        first, last = (int(part) for part in args.window.split(":"))
    except ValueError:
        parser.error(f"--window must be first:last, two integers, got {args.window!r}")
    if not 1 <= first <= last:
        parser.error(f"--window must be first:last with 1 <= first <= last, got {args.window!r}")
    runs, _, problems, _ = load(args.path)
    shares = poor_shares(runs, first, last)
    methods = [m for m in METHOD_ORDER if any(m in by_method for by_method in shares.values())]
    print(f"Share of evaluations {first}-{last} worse than random search's median value (mean over seeds, seeds)\n")
    print("| problem | " + " | ".join(methods) + " |")
    print("| --- |" + " --- |" * len(methods))
    for problem, info in problems.items():
        if problem not in shares:
            continue
        cells = [f"{shares[problem][m][0]:.2f} ({shares[problem][m][1]})" if m in shares[problem] else "—"
                 for m in methods]
        print(f"| {info['name']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
