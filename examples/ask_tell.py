"""Ask/tell, with failed evaluations
=================================

Ask/tell: you run the evaluations (a cluster, a lab, a simulator) and report back.

A failed evaluation is told as NaN (or None): it is kept in the history and never
suggested again, and the run goes on.
"""
import math
import random

import fastfm as ff

space = ff.Space([
    ff.Real("temperature", 20.0, 90.0),
    ff.Ordinal("pressure", ["low", "medium", "high"]),
    ff.Categorical("catalyst", ["A", "B", "C", "D"]),
])


def run_experiment(config):
    if random.random() < 0.1:
        raise RuntimeError("the reactor tripped")
    shift = {"A": 0.0, "B": -0.3, "C": 0.2, "D": 0.1}[config["catalyst"]]
    return (config["temperature"] - 65) ** 2 / 400 + shift + 0.1 * ["low", "medium", "high"].index(config["pressure"])


if __name__ == "__main__":
    random.seed(0)
    optimizer = ff.Optimizer(space, n_init=8, seed=0)
    for step in range(25):
        config = optimizer.ask()
        try:
            value = run_experiment(config)
        except RuntimeError:
            value = math.nan                    # recorded as failed
        optimizer.tell(config, value)
    best_config, best_value = optimizer.best()
    failed = sum(t.failed for t in optimizer.trials)
    print(f"best {best_value:.4f} at {best_config} ({failed} failed runs kept in the history)")
