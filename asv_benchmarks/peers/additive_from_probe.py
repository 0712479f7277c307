"""Optimizer ask/tell runs on the large discrete spaces whose model switches from the default (ModLap) to AdditiveFM
once the run holds N told values (issue 24 §2 and §5: IsingSparsification at 200, where BoTorch leads;
docs/benchmarks/bo-efficiency.md, "AdditiveFM on the large problems at 200 evaluations", its paragraph "AdditiveFM
from 30 or 100 told values on").

Why: AdditiveFM from the first model suggestion took IsingSparsification at 200 from 0.2230 to 0.2140 (BoTorch
0.216), its terms carrying what removing a strong edge cost to points far from the data, but it cost LABS at 30
(+41), where 24 terms are fitted to 20 points ("AdditiveFM on the large problems at 200 evaluations").  Its gain is
where half of the default's runs stall, after 100 evaluations; its loss is at small budgets.  The variant runs
``fastfm.Optimizer(space, seed=s)`` for the first N evaluations (the default's run, value for value), then tells
them to ``fastfm.Optimizer(space, seed=s, kernel="modlap_additive")`` and asks it for the rest.  Each run appends one
row (the best value after 30, 60, 100 and 200 evaluations, as far as the budget goes, and the values) to OUT.

    PYTHONPATH=. python asv_benchmarks/peers/additive_from_probe.py 30 isingsparsification,labs 0:10 200 out.jsonl
"""
import sys
import time

import fastfm
from full_fit_probe import run_rows     # this script's folder is on the path when it runs


def switched_run(problem, seed, budget=200, switch_at=100):
    """(the values of a ``budget``-evaluation ask/tell run that uses the default optimizer for its first
    ``switch_at`` evaluations and an AdditiveFM optimizer, told those, for the rest; its seconds)."""
    optimizer = fastfm.Optimizer(problem.space, seed=seed)
    configs, values, start = [], [], time.perf_counter()
    for n in range(budget):
        if n == switch_at:
            optimizer = fastfm.Optimizer(problem.space, seed=seed, kernel="modlap_additive")
            for config, value in zip(configs, values):
                optimizer.tell(config, value)
        config = optimizer.ask()
        values.append(float(problem(config)))
        configs.append(config)
        optimizer.tell(config, values[-1])
    return values, time.perf_counter() - start


def main(argv):
    switch_at, problems, budget, out = int(argv[0]), argv[1].split(","), int(argv[3]), argv[4]
    seeds = range(*map(int, argv[2].split(":")))
    run_rows(f"additive_from={switch_at}", problems, seeds, out, budget=budget, run=switched_run, switch_at=switch_at)


if __name__ == "__main__":
    if len(sys.argv) != 6 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
