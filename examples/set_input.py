"""BO over a set of points
=======================

BO over a set of points: place 4 facilities to minimise the mean distance of customers to the
nearest one.  The objective does not depend on the order of the points, nor does the set kernel
(SPEC §4).  Run: python examples/set_input.py"""
import numpy as np

import fastfm as ff

customers = np.random.default_rng(0).random((300, 2))


def mean_distance(config):
    centres = config["facilities"]                       # array of shape (4, 2)
    return float(np.linalg.norm(customers[:, None] - centres[None], axis=2).min(axis=1).mean())


space = ff.Space([ff.Set("facilities", n_points=4, dim=2, low=0.0, high=1.0)])
result = ff.minimize(mean_distance, space, n_iter=30, n_init=8, seed=0)
print("best facilities:\n", np.round(result.x["facilities"], 3))
print(f"mean distance:   {result.fun:.4f}")
