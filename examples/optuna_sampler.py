"""fastfm as an Optuna sampler
===========================

fastfm's Bayesian optimisation as an Optuna sampler: a define-by-run objective with a float, a log-scaled
float, a stepped int and a categorical, plus a parameter that exists for one branch only: the sampler sees that
``booster`` decides when ``rate_drop`` is suggested and models it as ``active_if={"booster": "dart"}``.

Needs Optuna (pip install fastfm[optuna]).  Run: python examples/optuna_sampler.py"""
import math

import optuna

from fastfm.integration.optuna import FMSampler


def validation_error(trial):
    """A stand-in for a cross-validated error of a model chosen by define-by-run."""
    booster = trial.suggest_categorical("booster", ["gbtree", "dart", "linear"])
    learning_rate = trial.suggest_float("learning_rate", 1e-3, 1.0, log=True)
    subsample = trial.suggest_float("subsample", 0.5, 1.0)
    n_estimators = trial.suggest_int("n_estimators", 50, 500, step=50)
    error = 0.2 + 0.03 * (math.log10(learning_rate) + 1.5) ** 2 + 0.1 * (subsample - 0.8) ** 2
    error += 0.02 * abs(n_estimators - 300) / 250 + {"gbtree": 0.0, "dart": 0.01, "linear": 0.08}[booster]
    if booster == "dart":            # conditional: only the dart branch suggests it
        error += 0.05 * trial.suggest_float("rate_drop", 0.0, 0.5)
    return error


if __name__ == "__main__":
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = FMSampler(seed=0, n_startup_trials=10)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(validation_error, n_trials=40)
    print(f"best value {study.best_value:.4f} with {study.best_params}")
