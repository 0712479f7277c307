"""Radial profiles g(d²) of the stationary kernels with their derivatives (GPML §4.2, Eqs. 4.9 and 4.17).

Plain NumPy maths that both the kernels (``kernels.continuous``) and the NumPy reference backend (the
hierarchical kernel's Euclidean part) evaluate; it lives here, the lower of the two layers.
"""
import numpy as np

__all__ = ["rbf_profile", "matern52_profile"]


def rbf_profile(sq):
    """(g, dg/d(d²)) of the squared exponential g = exp(−d²/2)."""
    g = np.exp(-0.5 * sq)
    return g, -0.5 * g


def matern52_profile(sq):
    """(g, dg/d(d²)) of Matérn 5/2, g = (1 + √5 d + 5d²/3) exp(−√5 d)."""
    d = np.sqrt(sq)
    e = np.exp(-np.sqrt(5.0) * d)
    g = (1.0 + np.sqrt(5.0) * d + 5.0 / 3.0 * sq) * e
    # dg/d(d²) = −(5/6)(1 + √5 d) e^(−√5 d)
    return g, -(5.0 / 6.0) * (1.0 + np.sqrt(5.0) * d) * e
