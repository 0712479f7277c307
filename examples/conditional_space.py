"""BO on a conditional space
=========================

BO on a conditional (hierarchical) space: `gamma` exists only for the rbf/poly kernels,
`degree` only for poly (SPEC §3).  Run: python examples/conditional_space.py"""
import math

import fastfm as ff

space = ff.Space([
    ff.Categorical("kernel", ["linear", "rbf", "poly"]),
    ff.Real("C", 1e-2, 1e2, log=True),
    ff.Real("gamma", 1e-4, 1.0, log=True, active_if={"kernel": ["rbf", "poly"]}),
    ff.Integer("degree", 2, 5, active_if={"kernel": "poly"}),
])


def validation_error(config):
    """A stand-in for a cross-validated error; each config holds exactly its active parameters."""
    error = 0.3 + 0.05 * (math.log10(config["C"]) - 1.0) ** 2
    if config["kernel"] != "linear":
        error -= 0.15 - 0.04 * (math.log10(config["gamma"]) + 2.0) ** 2
    if config["kernel"] == "poly":
        error += 0.02 * (config["degree"] - 3) ** 2
    return error


result = ff.minimize(validation_error, space, n_iter=30, n_init=8, kernel="hierarchical", seed=0)
print("best config:", result.x)
print(f"best value:  {result.fun:.4f}   active: {space.is_active(result.x)}")
