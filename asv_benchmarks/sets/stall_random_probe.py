"""The default ask/tell loop with random points interleaved once the search stalls (a patch of
``Optimizer._suggest``, not in the library; issue 24 §4, docs/benchmarks/sets.md, GMMInit's "Today's default at
200, and random points at a stall").

Once ``PATIENCE`` told values have passed since the best value last fell, each suggestion is a random point
(``Optimizer._random_point``) with probability ``P``, drawn from the optimizer's own generator, else the model's.
Each run appends one row (every value, and how many suggestions after the initial design were random) to OUT.
The variant ``default`` runs the loop unpatched, so that both arms come from one commit and machine.

    PYTHONPATH=. OMP_NUM_THREADS=1 python asv_benchmarks/sets/stall_random_probe.py \
        stall_random gmminit 0:10 200 out.jsonl
"""
import json
import sys

import numpy as np

import fastfm
from fastfm.benchmarks import get_problem
from fastfm.bo import optimizer as optimizer_module

PATIENCE = 15
P = 0.5


def _patch():
    unpatched = optimizer_module.Optimizer._suggest

    def suggest(self):
        values = [t.value for t in self._trials if not t.failed]
        if len(values) > self.n_init and len(values) - 1 - int(np.argmin(values)) >= PATIENCE \
                and self._rng.random() < P:
            self.last_suggestion_info = {"source": "random"}
            return self._random_point()
        return unpatched(self)

    optimizer_module.Optimizer._suggest = suggest


def main(argv):
    variant, problem_key, budget, out = argv[0], argv[1], int(argv[3]), argv[4]
    seeds = range(*map(int, argv[2].split(":")))
    if variant == "stall_random":
        _patch()
    elif variant != "default":
        raise SystemExit(f"variant must be stall_random or default, got {variant!r}")
    fastfm.set_config(num_threads=1)
    for seed in seeds:
        problem = get_problem(problem_key)
        optimizer = fastfm.Optimizer(problem.space, seed=seed)
        values, sources = [], []
        for _ in range(budget):
            suggestion = optimizer.ask()
            sources.append(optimizer.last_suggestion_info.get("source"))
            value = float(problem(suggestion))
            values.append(value)
            optimizer.tell(suggestion, value)
        row = {"variant": variant, "problem": problem_key, "seed": seed, "budget": budget, "patience": PATIENCE,
               "p": P, "values": values, "random_after_design": sources[optimizer.n_init:].count("random")}
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(variant, problem_key, seed, [round(min(values[:b]), 5) for b in (30, 60, 100, 200) if b <= budget],
              "random after the design:", row["random_after_design"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
