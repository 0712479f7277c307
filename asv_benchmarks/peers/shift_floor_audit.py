"""Does the floor under the shift transform's scale change a BO run (docs/benchmarks/bo-efficiency.md, "The floor
on every other problem")?

    python shift_floor_audit.py PROBLEM default|nofloor BUDGET OUT.jsonl SEEDS

``default`` runs ``Optimizer(problem.space, seed=s)`` ask/tell with a wrapper of ``fastfm.gp._data.shift_scale``
that counts the fits where the floor changed the scale ("bound"; a run with none is the run without the floor, value
for value); ``nofloor`` runs the same loop with ``SHIFT_SCALE_FLOOR = 0``.  One JSON line per run: the best value
after 30, 60, 100 and 200 evaluations (those within the budget), the count of bound fits, the evaluation of the first
and an md5 of the values.  SEEDS: comma-separated.
"""
import hashlib
import json
import sys
import time

import numpy as np

import fastfm
from fastfm.benchmarks import get_problem
from fastfm.gp import _data


def recording_shift_scale(state):
    unpatched, floor = _data.shift_scale, _data.SHIFT_SCALE_FLOOR

    def shift_scale(y, low):
        scale = unpatched(y, low)
        _data.SHIFT_SCALE_FLOOR = 0.0
        try:
            without_floor = unpatched(y, low)
        finally:
            _data.SHIFT_SCALE_FLOOR = floor
        if scale != without_floor:
            state["bound"] += 1
            if state["first_bound_at"] is None:
                state["first_bound_at"] = state["evaluation"]
        return scale
    return shift_scale


def main(problem_name, variant, budget, out, seeds):
    problem = get_problem(problem_name)
    state = {}
    if variant == "nofloor":
        _data.SHIFT_SCALE_FLOOR = 0.0
    elif variant == "default":
        _data.shift_scale = recording_shift_scale(state)
    else:
        raise SystemExit(f"variant must be 'default' or 'nofloor', got {variant!r}")
    for seed in seeds:
        state.update(bound=0, first_bound_at=None, evaluation=0)
        start = time.time()
        optimizer = fastfm.Optimizer(problem.space, seed=seed)
        values = []
        for evaluation in range(budget):
            state["evaluation"] = evaluation
            config = optimizer.ask()
            value = float(problem(config))
            optimizer.tell(config, value)
            values.append(value)
        best = np.minimum.accumulate(values)
        row = {"problem": problem_name, "variant": variant, "seed": seed, "budget": budget,
               **{f"b{k}": float(best[k - 1]) for k in (30, 60, 100, 200) if k <= budget},
               "bound": state.get("bound", 0), "first_bound_at": state.get("first_bound_at"),
               "md5": hashlib.md5(np.asarray(values).tobytes()).hexdigest()[:10], "secs": round(time.time() - start, 1)}
        with open(out, "a") as file:
            file.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 6 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    name, variant, budget, out, seeds = sys.argv[1:6]
    main(name, variant, int(budget), out, [int(s) for s in seeds.split(",")])
