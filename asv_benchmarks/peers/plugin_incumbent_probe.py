"""Optimizer ask/tell runs whose expected improvement is measured from the lowest posterior mean at the told points
(the "plug-in" incumbent of noisy EI) instead of the lowest told value (issue 24 §1 and the Ackley5C cell at 200;
docs/benchmarks/bo-efficiency.md, "EI from the model's best mean").

Why: late in an Ackley5C run the fitted GP smooths the objective's cone at its minimum (seed 0 after 150 told values:
the posterior mean at the incumbent is 0.0043 where the told value is 0.0013), so that EI from the told value
finds no gain beside the incumbent and the search spends its evaluations on the neighbouring values of the nominal
parameters.  From the model's own best mean, the gain beside the incumbent is what EI weighs.

The variant patches ``fantasy.condition_on`` (the model the acquisition sees): the same fit, the same pending points,
only ``best_y_standardized_`` changed.  Each run appends one row (the best value after 30, 60, 100 and 200
evaluations, as far as the budget goes) to OUT.

    PYTHONPATH=. python asv_benchmarks/peers/plugin_incumbent_probe.py plugin func2c 4000:4080 60 out.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/plugin_incumbent_probe.py default ackley5c 0:20 200 out.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/plugin_incumbent_probe.py plugin_from=100 ackley5c 0:30 200 out.jsonl
"""
import copy
import sys

import numpy as np

import fastfm.bo.optimizer as optimizer_module
from full_fit_probe import run_rows     # this script's folder is on the path when it runs


def plugin_incumbent(condition_on, from_told=0):
    """``condition_on`` whose model measures improvement from its lowest posterior mean at its training points, once
    it holds ``from_told`` points or more."""
    def conditioned(model, X_pending, strategy):
        if model.X_train_.shape[0] < from_told:
            return condition_on(model, X_pending, strategy)
        conditioned_model = copy.copy(condition_on(model, X_pending, strategy))
        mean, _ = conditioned_model.predict_standardized(conditioned_model.X_train_)
        conditioned_model.best_y_standardized_ = float(np.min(mean))
        return conditioned_model
    return conditioned


def main(argv):
    variant, problems, budget, out = argv[0], argv[1].split(","), int(argv[3]), argv[4]
    seeds = range(*map(int, argv[2].split(":")))
    if variant == "plugin" or variant.startswith("plugin_from="):
        from_told = int(variant.partition("=")[2] or 0)
        optimizer_module.fantasy.condition_on = plugin_incumbent(optimizer_module.fantasy.condition_on, from_told)
    elif variant != "default":
        raise SystemExit(f"variant must be plugin, plugin_from=N or default, got {variant!r}")
    run_rows(variant, problems, seeds, out, budget=budget)


if __name__ == "__main__":
    if len(sys.argv) != 6 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
