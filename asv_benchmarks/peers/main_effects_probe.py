"""How much of a run's told values the variables' main effects explain: the leave-one-out R² of a ridge regression of
the values' ranks on the encoded variables, after 30, 60 and 100 evaluations of the default ask/tell loop (issue 24
§2; docs/benchmarks/bo-efficiency.md, "AdditiveFM from 30 or 100 told values on").

Why: AdditiveFM (one term per variable) gains where an objective is mostly main effects (IsingSparsification) and
loses where it has none (LABS, whose energy is the same for a sequence and its negation), and the held-out density
of the two kernels near the incumbent does not tell the two apart.  A linear model of the ranks over all told points
is a cheap test of main effects; this prints its mean and spread over seeds per problem.

    PYTHONPATH=. python asv_benchmarks/peers/main_effects_probe.py isingsparsification,labs 5
"""
import sys

import numpy as np
from scipy.stats import rankdata

import fastfm
from fastfm.benchmarks import get_problem

CHECKPOINTS = (30, 60, 100)


def loo_r2(X, y, ridge=1.0):
    """Leave-one-out R² of a ridge regression of y on X's centred columns (intercept unpenalised), from the hat
    matrix: residual_i / (1 − H_ii) is the prediction error of the fit without point i."""
    design = np.hstack([np.ones((len(y), 1)), X - X.mean(axis=0)])
    penalty = ridge * np.eye(design.shape[1])
    penalty[0, 0] = 0.0
    hat = design @ np.linalg.solve(design.T @ design + penalty, design.T)
    residuals = (y - hat @ y) / (1.0 - np.diag(hat))
    return 1.0 - np.sum(residuals ** 2) / np.sum((y - y.mean()) ** 2)


def regressors(space, config):
    """The ridge's columns of ``config``: a nominal parameter of more than two values one-hot (its values have no
    order: PestControl's pesticides), any other as its value (the binary problems' 0/1 or ±1, as first measured)."""
    columns = []
    for param in space:
        choices = getattr(param, "choices", None)
        if choices is not None and len(choices) > 2:
            columns.extend(float(config[param.name] == choice) for choice in choices)
        else:
            columns.append(float(config[param.name]))
    return columns


def main_effect_r2(problem, seed):
    """{evaluations: LOO R² of the ranks} along ``fastfm.Optimizer(problem.space, seed=seed)``'s ask/tell run."""
    optimizer = fastfm.Optimizer(problem.space, seed=seed)
    X, y, out = [], [], {}
    for n in range(1, max(CHECKPOINTS) + 1):
        config = optimizer.ask()
        y.append(float(problem(config)))
        optimizer.tell(config, y[-1])
        X.append(regressors(problem.space, config))
        if n in CHECKPOINTS:
            out[n] = loo_r2(np.array(X), rankdata(y) / len(y))
    return out


def main(argv):
    fastfm.set_config(num_threads=1)
    for name in argv[0].split(","):
        runs = [main_effect_r2(get_problem(name), seed) for seed in range(int(argv[1]))]
        print(name, "  ".join(f"at {n}: {np.mean([r[n] for r in runs]):.2f} ± {np.std([r[n] for r in runs]):.2f}"
                              for n in CHECKPOINTS), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
