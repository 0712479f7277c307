"""Quickstart: one call to minimize
================================

Minimise a mixed-variable function with one call (ModLap kernel, 40 evaluations)."""
import fastfm as ff

space = ff.Space([
    ff.Real("lr", 1e-4, 1e-1, log=True),
    ff.Real("dropout", 0.0, 0.5),
    ff.Integer("layers", 1, 6),                        # ordinal: a path graph
    ff.Categorical("activation", ["relu", "tanh", "gelu"]),  # nominal: a complete graph
])


def validation_loss(config):
    """A stand-in for an expensive training run."""
    penalty = {"relu": 0.05, "tanh": 0.2, "gelu": 0.0}[config["activation"]]
    return ((config["layers"] - 3) ** 2 / 20 + (config["dropout"] - 0.2) ** 2
            + abs(__import__("math").log10(config["lr"]) + 2.5) / 5 + penalty)


if __name__ == "__main__":
    result = ff.minimize(validation_loss, space, n_iter=40, n_init=10, seed=0)
    print("best config:", result.x)
    print("best value: ", round(result.fun, 4), f"({result.n_evals} evaluations, {result.n_failed} failed)")
