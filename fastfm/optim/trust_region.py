"""Trust regions on mixed spaces (CASMOPOLITAN: Wan, Nguyen, Ha, Ru, Lu, Osborne 2021, "Think global and act
local: Bayesian optimisation over high-dimensional categorical and mixed search spaces", ICML).

The acquisition is maximised inside a region around the best point observed since the region began: a
Hamming ball of radius ``length_discrete`` on the discrete variables and a box of side ``length`` (in the unit
cube, scaled per coordinate by the GP's lengthscales as TuRBO and CASMOPOLITAN do) on the continuous ones.
After ``success_tolerance`` improvements in a row both lengths grow by ``multiplier``; after
``failure_tolerance`` non-improvements in a row both shrink by it (the Hamming radius rounded down).  When the
region collapses (``length_discrete`` at or below ``length_min_discrete`` on a space with discrete variables, or
``length`` at or below ``length_min``), the region restarts: the next suggestion is the best of random points by
the lower confidence bound μ − 1.96σ (CASMOPOLITAN's "guided restart" scores random points by this bound under
a GP of the previous regions' best points; here the model of all data plays that part), and the region is
centred where the next told values put their best.

Unlike CASMOPOLITAN, the GP is fitted on all the data, not only the current region's: at budgets of 100-200
evaluations every observation counts, and the model is shared with the rest of the loop.

The region's state is a pure function of the sequence of told values (:func:`trust_region_state` replays it),
so an optimiser loaded from its journal is in the same region as the run that wrote it.

This module is of the ``optim`` layer: spaces and fitted models are duck-typed.
"""
import dataclasses
import math
import numbers

import numpy as np

__all__ = ["TrustRegion", "TrustRegionState", "Region", "trust_region_state", "region_around",
           "trust_region_setting", "LCB_RESTART_Z"]

# CASMOPOLITAN's guided restart picks the random point with the lowest μ − 1.96σ (its code's constant)
LCB_RESTART_Z = 1.96


@dataclasses.dataclass(frozen=True)
class TrustRegion:
    """Settings of the CASMOPOLITAN trust region (``Optimizer(trust_region=...)``).

    The defaults are those of the CASMOPOLITAN code (``bo/localbo_cat.py``, TuRBO's for the continuous box),
    except ``length_max_discrete``: None is the number of discrete variables (the paper sets it per problem,
    e.g. 60 on its 60-variable MaxSAT).

    Parameters
    ----------
    length_init, length_min, length_max : float
        Side of the continuous box (unit cube, before the lengthscale weights): initial, collapse threshold
        and cap.  Defaults 0.8, 0.5**7, 1.6.
    length_init_discrete, length_min_discrete : int
        Hamming radius on the discrete variables: initial (capped at the number of discrete variables when
        used) and collapse threshold.  Defaults 20, 1.
    length_max_discrete : int or None
        Cap of the Hamming radius; None: the number of discrete variables.
    multiplier : float
        Growth on success, shrink on failure (default 1.5).
    success_tolerance, failure_tolerance : int
        Improvements (failures) in a row that expand (shrink) the region.  Defaults 3 and 40.
    improvement : float
        A told value succeeds when below ``best - improvement * abs(best)`` (default 1e-3).
    """

    length_init: float = 0.8
    length_min: float = 0.5 ** 7
    length_max: float = 1.6
    length_init_discrete: int = 20
    length_min_discrete: int = 1
    length_max_discrete: int = None
    multiplier: float = 1.5
    success_tolerance: int = 3
    failure_tolerance: int = 40
    improvement: float = 1e-3

    def __post_init__(self):
        def check(name, ok, what):
            value = getattr(self, name)
            if not ok(value):
                raise ValueError(f"TrustRegion {name} must be {what}, got {name}={value!r}")

        def positive_real(v):
            return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and v > 0

        def integer(v, low):
            return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= low

        for name in ("length_init", "length_min", "length_max"):
            check(name, positive_real, "a positive number")
        check("length_min", lambda v: v < self.length_init <= self.length_max,
              f"below length_init={self.length_init!r} <= length_max={self.length_max!r}")
        check("length_min_discrete", lambda v: integer(v, 0), "an integer >= 0")
        check("length_init_discrete", lambda v: integer(v, 1) and v > self.length_min_discrete,
              f"an integer above length_min_discrete={self.length_min_discrete!r}")
        check("length_max_discrete", lambda v: v is None or (integer(v, 1) and v >= self.length_init_discrete),
              f"None or an integer >= length_init_discrete={self.length_init_discrete!r}")
        check("multiplier", lambda v: positive_real(v) and v > 1, "a number above 1")
        check("success_tolerance", lambda v: integer(v, 1), "an integer >= 1")
        check("failure_tolerance", lambda v: integer(v, 1), "an integer >= 1")
        check("improvement", lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v < 1,
              "a number in [0, 1)")


def trust_region_setting(value):
    """The ``TrustRegion`` of ``Optimizer(trust_region=value)``, or None (off).

    None or False: off; True or "casmopolitan": the default ``TrustRegion()``; a ``TrustRegion``: itself; a
    dict: ``TrustRegion(**value)``.  Anything else raises a ValueError naming the value.
    """
    if value is None or value is False:
        return None
    if value is True or (isinstance(value, str) and value.lower() == "casmopolitan"):
        return TrustRegion()
    if isinstance(value, TrustRegion):
        return value
    if isinstance(value, dict):
        try:
            return TrustRegion(**value)
        except TypeError as exc:
            raise ValueError(f"trust_region has an unknown setting ({exc}), got trust_region={value!r}") from None
    raise ValueError("trust_region must be None, True, 'casmopolitan', a TrustRegion or a dict of its settings, "
                     f"got trust_region={value!r}")


@dataclasses.dataclass(frozen=True)
class TrustRegionState:
    """Where the trust region stands after a sequence of told values.

    ``start`` is the index (in told order) of the first value of the current region; ``best`` the best value
    told since then (inf when none: a restart is due); ``n_restarts`` how many regions collapsed before.
    """

    length: float
    length_discrete: int
    successes: int
    failures: int
    start: int
    best: float
    n_restarts: int

    @property
    def restarting(self):
        """No value has been told in this region yet: the next suggestion starts it."""
        return not math.isfinite(self.best)


def trust_region_state(settings, values, n_init, n_discrete):
    """Replay the told ``values`` (in told order; NaN for a failed evaluation) into a ``TrustRegionState``.

    The first region begins with the run and counts its first ``n_init`` values as its initial design: they
    set its best value but no success or failure (CASMOPOLITAN adjusts the region only once its initial
    design is told).  A region after a restart has no design of its own (the GP is fitted on all data): its
    first told value sets its best, and the following ones count.  A failed evaluation counts as a failure.

    Parameters
    ----------
    settings : TrustRegion
    values : sequence of float
    n_init : int
    n_discrete : int
        The number of discrete variables; 0 disables the Hamming collapse.
    """
    s = settings

    def fresh(start, n_restarts):
        return dict(length=s.length_init, length_discrete=s.length_init_discrete, successes=0, failures=0,
                    start=start, best=math.inf, n_restarts=n_restarts)

    length_max_discrete = n_discrete if s.length_max_discrete is None else s.length_max_discrete
    length_max_discrete = max(length_max_discrete, s.length_init_discrete)
    state = fresh(0, 0)
    for i, value in enumerate(values):
        value = float(value)
        ok = math.isfinite(value)
        if i < n_init or not math.isfinite(state["best"]):
            if ok:
                state["best"] = min(state["best"], value)
            continue
        best = state["best"]
        if ok and value < best - s.improvement * abs(best):
            state["successes"] += 1
            state["failures"] = 0
        else:
            state["successes"] = 0
            state["failures"] += 1
        if ok:
            state["best"] = min(best, value)
        if state["successes"] == s.success_tolerance:
            state["length"] = min(state["length"] * s.multiplier, s.length_max)
            state["length_discrete"] = int(min(state["length_discrete"] * s.multiplier, length_max_discrete))
            state["successes"] = 0
        elif state["failures"] == s.failure_tolerance:
            state["length"] = max(state["length"] / s.multiplier, s.length_min)
            state["length_discrete"] = int(state["length_discrete"] / s.multiplier)
            state["failures"] = 0
        collapsed = state["length"] <= s.length_min or (n_discrete > 0
                                                          and state["length_discrete"] <= s.length_min_discrete)
        if collapsed:
            state = fresh(i + 1, state["n_restarts"] + 1)
    return TrustRegionState(**state)


@dataclasses.dataclass(frozen=True)
class Region:
    """A region of the encoded space: Hamming distance ≤ ``radius`` from ``centre`` on the discrete columns, and
    ``lower`` ≤ x ≤ ``upper`` on the continuous ones (arrays of shape (n_continuous,))."""

    centre: np.ndarray
    radius: int
    lower: np.ndarray
    upper: np.ndarray

    def contains(self, X, space):
        """Whether each row of ``X`` (encoded) lies in the region (inactive columns of a conditional space are
        held at their codes, outside the box or not: only active continuous coordinates are checked)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        nc = space.n_continuous
        hamming = np.sum(X[:, nc:] != self.centre[nc:], axis=1)
        active = space.active_columns(X)[:, :nc]
        C = X[:, :nc]
        in_box = np.all(~active | ((C >= self.lower - 1e-12) & (C <= self.upper + 1e-12)), axis=1)
        return (hamming <= self.radius) & in_box

    def sample(self, n, space, rng):
        """``n`` random points of the region: a uniformly drawn number 1..radius of discrete variables moved to
        random other states (CASMOPOLITAN's ``random_sample_within_discrete_tr_ordinal``), the continuous
        coordinates uniform in the box; points a conditional space's repair pushes outside are dropped."""
        nc, nd = space.n_continuous, space.n_discrete
        X = np.repeat(self.centre[None, :], n, axis=0)
        if nc:
            X[:, :nc] = self.lower + (self.upper - self.lower) * rng.random((n, nc))
        if nd and self.radius > 0:
            # a conditional variable's extra "inactive" state is never drawn: the repair below sets it
            real_states = np.array([p.n_states for p in space.discrete_params], dtype=np.int64)
            movable = np.flatnonzero(real_states > 1)
            radius = min(self.radius, len(movable))
            if radius:
                k = rng.integers(1, radius + 1, size=n)
                # k distinct movable variables per row: the k smallest of uniform keys
                ranks = np.argsort(np.argsort(rng.random((n, len(movable))), axis=1), axis=1)
                rows, which = np.nonzero(ranks < k[:, None])
                cols = movable[which]
                states = real_states[cols]
                current = X[rows, nc + cols].astype(np.int64)
                base = np.where(current < states, current, 0)
                # a uniformly random OTHER state: shift by 1..states−1 modulo the real states
                shift = 1 + np.floor(rng.random(len(rows)) * (states - 1)).astype(np.int64)
                X[rows, nc + cols] = (base + shift) % states
        if getattr(space, "is_conditional", False):
            space.enforce_conditions(X, rng, previously_active=space.active_columns(
                np.repeat(self.centre[None, :], n, axis=0)))
            X = X[self.contains(X, space)]
        return X

    def clip(self, X, space):
        """``X`` with its continuous coordinates clipped into the box (a copy)."""
        X = np.array(X, dtype=float, copy=True)
        nc = space.n_continuous
        if nc:
            active = space.active_columns(X)[:, :nc]
            X[:, :nc] = np.where(active, np.clip(X[:, :nc], self.lower, self.upper), X[:, :nc])
        return X


def region_around(centre, state, space, lengthscales=None):
    """The ``Region`` of ``state`` centred at the encoded point ``centre``.

    The box's side on continuous coordinate i is ``length``·w_i, with w the lengthscales normalised to a
    geometric mean of 1 (TuRBO; CASMOPOLITAN's mixed code): a coordinate the model finds smooth gets a
    longer side.  Without lengthscales (a kernel that has none for these columns) the box is a cube.  On a
    conditional space a continuous variable inactive at the centre spans its whole range.
    """
    centre = np.asarray(centre, dtype=float)
    nc = space.n_continuous
    weights = np.ones(nc)
    if lengthscales is not None and nc:
        ls = np.broadcast_to(np.asarray(lengthscales, dtype=float), (nc,))
        if np.all(np.isfinite(ls)) and np.all(ls > 0):
            weights = ls / ls.mean()
            weights = weights / np.prod(np.power(weights, 1.0 / nc))
    half = weights * state.length / 2.0
    lower = np.clip(centre[:nc] - half, 0.0, 1.0)
    upper = np.clip(centre[:nc] + half, 0.0, 1.0)
    if nc and getattr(space, "is_conditional", False):
        # a variable inactive at the centre has no value there to stay near, only its inactive code (the lower
        # bound): a box around that code would put every point that activates it near a face of its range
        inactive = ~space.active_columns(centre[None, :])[0, :nc]
        lower, upper = np.where(inactive, 0.0, lower), np.where(inactive, 1.0, upper)
    radius = int(min(state.length_discrete, space.n_discrete))
    return Region(centre, radius, lower, upper)


def continuous_lengthscales(kernel, n_continuous):
    """The lengthscales of the continuous columns in a fitted kernel's parameters (the first parameter named
    ``lengthscale`` with one value, or ``n_continuous`` values), or None."""
    if not n_continuous:
        return None
    try:
        params = kernel.get_params()
    except AttributeError:
        return None
    for name, value in params.items():
        if name.split("__")[-1] == "lengthscale":
            value = np.asarray(value, dtype=float).ravel()
            if value.size in (1, n_continuous):
                return np.broadcast_to(value, (n_continuous,)).copy()
    return None
