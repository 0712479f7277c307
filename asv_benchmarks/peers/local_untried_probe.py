"""Optimizer ask/tell runs with nominal values untried *near the incumbent* tried at a stall, against the default on
the same seeds (issue 24 §1; docs/benchmarks/bo-efficiency.md, "Values untried near the incumbent").  Measured, not
adopted: the rule lives here, as a patch of the optimizer's untried-value step, not in the library.

The rule (``local_untried_point``): where the library's untried-value rule (``fastfm.bo.untried``) has nothing to
suggest, at every ``untried_patience``-th told value of a stall (5, 10, 15, ... since the last clear best or newly
tried value), the suggestion is the incumbent with one nominal parameter changed to a value that no told or pending
point has tried within RADIUS of the incumbent's continuous coordinates (max norm, unit-scaled; the same discrete part),
the change of highest acquisition; at most one such point pending; only on spaces with a continuous variable.

Each run appends one row (the best value after 30 and 60 evaluations and at the budget, and how many suggestions the
rule made) to OUT.  The variant is ``default`` (the library as it is) or ``radius=R`` (the rule with RADIUS = R).

    PYTHONPATH=. python asv_benchmarks/peers/local_untried_probe.py radius=0.1 func2c 1000:1080 out.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/local_untried_probe.py default func2c 1000:1080 out.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/local_untried_probe.py radius=0.1 mixed10c20n 0:10 out.jsonl 100

(a fifth argument: the budget, 60 by default; seeds as "a:b" or a comma-separated list)
"""
import sys

import numpy as np

import fastfm
import fastfm.bo.optimizer as optimizer_module
from fastfm.benchmarks import get_problem
from fastfm.bo.untried import _nominal_columns, told_since_progress
from full_fit_probe import ask_tell_run, write_row    # this script's folder is on the path when it runs
from head_to_head import git_state

FIRED = [0]


def _tried_near(Z, T, n_continuous, radius):
    """For each row of Z, whether a row of T has the same discrete part and continuous coordinates within
    ``radius`` (max norm)."""
    if len(T) == 0:
        return np.zeros(len(Z), dtype=bool)
    same_discrete = np.all(Z[:, None, n_continuous:] == T[None, :, n_continuous:], axis=2)
    close = np.max(np.abs(Z[:, None, :n_continuous] - T[None, :, :n_continuous]), axis=2, initial=0.0) <= radius
    return np.any(same_discrete & close, axis=1)


def local_untried_point(space, X_told, X_ok, values_ok, pending, incumbent, score, patience, n_init, radius):
    """(the encoded point to suggest, its acquisition) or None: the rule of the module docstring."""
    columns = _nominal_columns(space)
    n_continuous = space.n_continuous
    if patience is None or not columns or n_continuous == 0 or len(values_ok) == 0:
        return None
    since = told_since_progress(X_ok, values_ok, columns, n_init)
    if since < patience or since % patience:
        return None
    nominal = [column for column, _ in columns]
    if len(pending):
        near = np.max(np.abs(pending[:, :n_continuous] - incumbent[:n_continuous]), axis=1) <= radius
        if np.any(near & (np.sum(pending[:, nominal] != incumbent[nominal], axis=1) == 1)):
            return None            # one such point pending already
    active = space.active_columns(incumbent[None, :])[0]
    changes = [(column, state) for column, n_values in columns if active[column]
               for state in range(n_values) if state != int(incumbent[column])]
    if not changes:
        return None
    Z = np.repeat(incumbent[None, :], len(changes), axis=0)
    for row, (column, state) in enumerate(changes):
        Z[row, column] = state
    space.enforce_conditions(Z, rng=None, previously_active=np.repeat(active[None, :], len(Z), axis=0))
    Z = Z[~_tried_near(Z, np.vstack([X_told, pending]) if len(pending) else X_told, n_continuous, radius)]
    if len(Z) == 0:
        return None
    scores = score(Z)
    best = int(np.argmax(scores))
    return Z[best], float(scores[best])


def patch(radius):
    """The optimizer's untried-value step, followed by the rule where that step has nothing to suggest."""
    library_rule = optimizer_module.untried_value_point

    def untried_value_point(space, X_told, X_ok, values_ok, pending, incumbent, score, patience, n_init=1):
        found = library_rule(space, X_told, X_ok, values_ok, pending, incumbent, score, patience, n_init)
        if found is None:
            found = local_untried_point(space, X_told, X_ok, values_ok, pending, incumbent, score, patience, n_init,
                                        radius)
            FIRED[0] += found is not None
        return found

    optimizer_module.untried_value_point = untried_value_point


def _seeds(text):
    """"a:b" (range(a, b)) or a comma-separated list."""
    return range(*map(int, text.split(":"))) if ":" in text else [int(s) for s in text.split(",")]


def main(argv):
    variant, problems, seeds, out = argv[0], argv[1].split(","), _seeds(argv[2]), argv[3]
    budget = int(argv[4]) if len(argv) > 4 else 60
    radius = None
    if variant.startswith("radius="):
        radius = float(variant.split("=", 1)[1])
        patch(radius)
    elif variant != "default":
        raise SystemExit(f"variant must be default or radius=R, got {variant!r}")
    commit = git_state()["commit"]
    fastfm.set_config(num_threads=1)
    for name in problems:
        for seed in seeds:
            problem = get_problem(name)
            FIRED[0] = 0
            values, seconds = ask_tell_run(problem, seed, budget)
            best = np.minimum.accumulate(values)
            row = {"variant": variant, "radius": radius, "problem": problem.name, "seed": seed,
                   "best30": float(best[29]), "best60": float(best[59]), "budget": budget, "best": float(best[-1]),
                   "n_local_untried": FIRED[0], "seconds": seconds, "fastfm_commit": commit}
            write_row(row, out)


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6) or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
