"""Seeded timing inputs shared by ``fastfm time``, the asv suite and the peer scripts.

Data only: spaces, points, reduction weights and the hyperparameter values of the timed kernels.
The objects that need the compute layers (a ``Modulation``, a ``Hierarchical`` kernel's backend
arguments) are built from these by the caller (``fastfm.cli.timing``), so that the problem suite
imports nothing above ``fastfm.space``.  The same seed gives the same arrays on every machine, so
every backend and every commit is timed on the same data.
"""
import numpy as np

from ..space import Categorical, Ordinal, Real, Space

__all__ = ["LENGTHSCALE", "ALPHA", "BETA", "VARIANCE", "benchmark_spaces", "kernel_inputs", "candidate_inputs",
           "DEFAULT_SET_SHAPE", "DEFAULT_SET_SUBSAMPLE", "SET_LENGTHSCALE", "set_inputs", "HIERARCHICAL_PARAMS",
           "hierarchical_inputs"]

# Hyperparameters of the timed ModLap kernel: typical fitted values on unit-cube inputs (the timing
# does not depend on them, except through overflow guards that these stay far from).
LENGTHSCALE = 0.5
ALPHA = 1.0
BETA = 1.0
VARIANCE = 1.0


def benchmark_spaces(seed=0):
    """The benchmark search spaces by name.

    * ``Func3C``: 2 continuous, nominal with 3, 5 and 4 states (SPEC §6);
    * ``Ackley5C``: 1 continuous, five nominal with 17 states (SPEC §6);
    * ``NAS-like``: 6 continuous, 10 nominal and 10 ordinal variables with 3–8
      states each (drawn with ``seed``), the size of a NAS cell plus optimiser.

    Returns
    -------
    dict of str -> Space
    """
    rng = np.random.default_rng(seed)
    func3c = Space([Real("x1", -1.0, 1.0), Real("x2", -1.0, 1.0),
                    Categorical("h1", list(range(3))), Categorical("h2", list(range(5))),
                    Categorical("h3", list(range(4)))])
    ackley = Space([Real("u", -1.0, 1.0)] + [Categorical(f"h{i}", list(range(17))) for i in range(1, 6)])
    nominal_states = rng.integers(3, 9, size=10)
    ordinal_states = rng.integers(3, 9, size=10)
    nas = Space([Real(f"c{i}", 0.0, 1.0) for i in range(6)]
                + [Categorical(f"op{i}", list(range(n))) for i, n in enumerate(nominal_states)]
                + [Ordinal(f"size{i}", list(range(n))) for i, n in enumerate(ordinal_states)])
    return {"Func3C": func3c, "Ackley5C": ackley, "NAS-like": nas}


def kernel_inputs(space, n_points, seed=0):
    """Seeded inputs of a ModLap Gram on ``space``.

    Returns
    -------
    C : (n_points, Dc) continuous part divided by ``LENGTHSCALE``;  D : (n_points, P) states;
    W : (n_points, n_points) symmetric reduction weights;
    hyperparameters : tuple (spectra, alphas, betas, variance), the backend arguments before the
        modulation: a backend call takes ``(*hyperparameters, Modulation())`` for ModLap
        (``fastfm.cli.timing.kernel_arguments`` builds that tuple).
    """
    X = space.sample_encoded(n_points, seed=seed)
    C, D = space.split(X)
    C = np.ascontiguousarray(C / LENGTHSCALE)
    rng = np.random.default_rng(seed + 1)
    A = rng.standard_normal((n_points, n_points))
    W = 0.5 * (A + A.T) / n_points
    P = space.n_discrete
    return C, D, W, (space.packed_spectra, np.full(P, ALPHA), np.full(P, BETA), VARIANCE)


def candidate_inputs(space, n_candidates, seed=7):
    """Seeded acquisition candidates on ``space`` for the candidates × observations cross Gram:
    ``(C, D)`` with C divided by ``LENGTHSCALE`` (as in :func:`kernel_inputs`)."""
    C, D = space.split(space.sample_encoded(n_candidates, seed=seed))
    return np.ascontiguousarray(C / LENGTHSCALE), D


# ---------------------------------------------------------------------------- set kernels (SPEC §4)
# The performance target of the set-kernel issue: a full (N, m, d) = (500, 50, 2) Gram, Matérn 5/2.
DEFAULT_SET_SHAPE = (500, 50, 2)
DEFAULT_SET_SUBSAMPLE = 10
SET_LENGTHSCALE = 0.3


def set_inputs(n_sets, n_points, dim, seed=0):
    """Seeded sets (n_sets, n_points, dim) uniform in the unit cube and symmetric weights W (n_sets, n_sets)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_sets, n_sets))
    return rng.random((n_sets, n_points, dim)), W + W.T


# ------------------------------------------------------------------- hierarchical kernel (SPEC §3)
#: Hyperparameters of the timed ``Hierarchical`` kernel (``fastfm.kernels.Hierarchical`` keywords).
HIERARCHICAL_PARAMS = {"gamma": 0.7, "rho": 0.5, "lengthscale": 0.5}


def hierarchical_inputs(n, seed=0):
    """Seeded inputs of the Hierarchical-kernel timings on the DeepBranch space.

    Returns
    -------
    space : the DeepBranch space;  X : (n, n_encoded) encoded points of it;
    W : (n, n) symmetric reduction weights.  The backend arguments come from
        ``Hierarchical(space, base=..., **HIERARCHICAL_PARAMS)`` (``fastfm.cli.timing.hierarchical_arguments``).
    """
    from .conditional import DeepBranch

    space = DeepBranch().space
    X = space.sample_encoded(n, seed=seed)
    A = np.random.default_rng(seed + 1).standard_normal((n, n))
    return space, X, 0.5 * (A + A.T) / n
