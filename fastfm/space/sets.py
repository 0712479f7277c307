"""Set-valued parameters: a set of ``n_points`` points in a box of R^dim (SPEC §1, §4).

A ``Set`` is continuous and occupies ``n_points * dim`` encoded columns, point
after point (``[p0_x0, p0_x1, ..., p1_x0, ...]``), each coordinate scaled to
the unit interval by its box.  The order of the points carries no meaning:
``decode`` returns them in canonical (lexicographic) order and ``encode``
canonicalises too, so two orderings of the same set encode to the same row.
"""
import numbers

import numpy as np

from ..exceptions import InvalidValueError, OutOfBoundsError, SpaceDefinitionError
from .parameters import Parameter, _is_real_number

__all__ = ["Set", "canonical_set_order"]


def canonical_set_order(points):
    """Indices that sort points lexicographically (first coordinate first), shape (..., m).

    Parameters
    ----------
    points : array of shape (..., m, dim)
    """
    points = np.asarray(points, dtype=np.float64)
    # every set sorted at once along its own axis, one stable pass per coordinate from the last to the first: the
    # order of a lexicographic sort of each set alone (ties included), 5x faster than one lexsort of all the
    # points keyed by set (10,000 random sets of 10 points in the plane: 5 against 29 ms)
    m, dim = points.shape[-2:]
    flat = points.reshape(-1, m, dim)
    order = np.broadcast_to(np.arange(m), flat.shape[:2])
    for j in range(dim - 1, -1, -1):
        keys = np.take_along_axis(flat[:, :, j], order, axis=1)
        order = np.take_along_axis(order, np.argsort(keys, axis=1, kind="stable"), axis=1)
    return order.reshape(points.shape[:-1])


class Set(Parameter):
    """A set of ``n_points`` points in the box [low, high]^dim, order immaterial.

    Parameters
    ----------
    name : str
    n_points : int
        m, the number of points in the set (fixed).
    dim : int
        d, the dimension of each point.
    low, high : float or array of shape (dim,)
        The box, per coordinate (a scalar applies to every coordinate).

    Notes
    -----
    Values are arrays of shape (n_points, dim).  In a ``Space`` beside other
    parameters, the default kernels multiply a (normalised) ``SetKernel`` on
    this parameter with the kernel on the other parameters (see
    ``fastfm.kernels.sets.set_space_kernel``).

    Examples
    --------
    >>> import fastfm as ff
    >>> space = ff.Space([ff.Set("centers", n_points=2, dim=2, low=0.0, high=1.0)])
    >>> space.encode({"centers": [[0.5, 0.5], [0.0, 1.0]]}).tolist()
    [0.0, 1.0, 0.5, 0.5]
    """

    is_continuous = True
    vector_valued = True   # a slice of columns even for n_points == dim == 1

    def __init__(self, name, n_points, dim, low=0.0, high=1.0):
        super().__init__(name)
        for label, value in (("n_points", n_points), ("dim", dim)):
            if not isinstance(value, (numbers.Integral, np.integer)) or isinstance(value, bool) or value < 1:
                raise SpaceDefinitionError(f"Set {name!r}: {label} must be a positive integer, got {value!r}")
        self.n_points, self.dim = int(n_points), int(dim)
        bounds = []
        for label, value in (("low", low), ("high", high)):
            array = np.asarray(value, dtype=object)
            if array.ndim == 0:
                array = np.full(self.dim, value, dtype=object)
            if array.shape != (self.dim,) or not all(_is_real_number(v) and np.isfinite(float(v)) for v in array):
                raise SpaceDefinitionError(
                    f"Set {name!r}: {label} must be a finite number or {self.dim} of them, got {value!r}")
            bounds.append(array.astype(np.float64))
        self.low, self.high = bounds
        if np.any(self.low >= self.high):
            raise SpaceDefinitionError(f"Set {name!r}: need low < high in every coordinate, "
                                       f"got low={value_repr(self.low)}, high={value_repr(self.high)}")

    @property
    def n_columns(self):
        """Encoded columns this parameter occupies: n_points · dim."""
        return self.n_points * self.dim

    def _repr_fields(self):
        return {"n_points": self.n_points, "dim": self.dim, "low": value_repr(self.low), "high": value_repr(self.high)}

    def canonical_codes(self, codes):
        """Encoded rows with each set's points sorted lexicographically, shape (n, n_columns)."""
        points = np.asarray(codes, dtype=np.float64).reshape(-1, self.n_points, self.dim)
        order = canonical_set_order(points)
        return np.take_along_axis(points, order[:, :, None], axis=1).reshape(-1, self.n_columns)

    def encode_value(self, value):
        try:
            points = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidValueError(f"parameter {self.name!r} expects an array of shape "
                                    f"({self.n_points}, {self.dim}), got {value!r}", self.name, value) from None
        if points.shape != (self.n_points, self.dim):
            raise InvalidValueError(f"parameter {self.name!r} expects an array of shape ({self.n_points}, {self.dim}), "
                                    f"got shape {points.shape}", self.name, value)
        if not np.all(np.isfinite(points)):
            raise InvalidValueError(f"parameter {self.name!r} holds non-finite coordinates: {value!r}", self.name, value)
        slack = 1e-12 * np.maximum(1.0, np.maximum(np.abs(self.low), np.abs(self.high)))
        outside = (points < self.low - slack) | (points > self.high + slack)
        if outside.any():
            i, k = np.argwhere(outside)[0]
            value = float(points[i, k])
            raise OutOfBoundsError(f"parameter {self.name!r}: point {i} coordinate {k} = {value!r} is outside "
                                   f"[{float(self.low[k])!r}, {float(self.high[k])!r}]", self.name, value)
        codes = (np.clip(points, self.low, self.high) - self.low) / (self.high - self.low)
        return self.canonical_codes(codes)[0]

    def decode_value(self, code):
        codes = self.canonical_codes(np.clip(np.asarray(code, dtype=np.float64), 0.0, 1.0))[0]
        points = self.low + codes.reshape(self.n_points, self.dim) * (self.high - self.low)
        return np.clip(points, self.low, self.high)

    def sample_codes(self, rng, n, point_reuse=1):
        """``n`` uniformly random sets, encoded, shape (n, n_columns).

        With ``point_reuse`` r > 1 the points come from a pool of max(⌈n·m/r⌉, m²) uniform points shared by
        the n sets (each point in about r of them; the m points of one set distinct): every set is still m
        uniform points, and a set kernel scores the n sets through the pool's distinct points
        (``SetKernel``'s cross-covariance), r times fewer point pairs.  Where the pool would not be smaller
        than n·m, the points are drawn one by one as with r = 1.
        """
        m = self.n_points
        n_pool = max(-(-n * m // int(point_reuse)), m * m) if point_reuse > 1 else n * m
        if n_pool >= n * m:
            return self.canonical_codes(rng.random((n, self.n_columns)))
        pool = rng.random((n_pool, self.dim))
        return self.canonical_codes(pool[_distinct_draws(rng, n_pool, n, m)].reshape(n, self.n_columns))


def _distinct_draws(rng, n_pool, n, m):
    """(n, m) indices into range(n_pool), distinct within each row, every row a uniform m-subset (in random order).

    Rows drawn with replacement are redrawn while they repeat an index: with n_pool ≥ m² a row repeats one with
    probability below 1 − e^(−1/2), so a few rounds suffice."""
    draws = rng.integers(n_pool, size=(n, m))
    while True:
        ordered = np.sort(draws, axis=1)
        repeating = np.flatnonzero(np.any(ordered[:, 1:] == ordered[:, :-1], axis=1))
        if not len(repeating):
            return draws
        draws[repeating] = rng.integers(n_pool, size=(len(repeating), m))


def value_repr(array):
    """A bound array as a scalar when all its entries agree (for messages and repr)."""
    return float(array[0]) if np.all(array == array[0]) else array.tolist()
