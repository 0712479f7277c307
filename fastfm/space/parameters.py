"""Parameter types of a search space.

Continuous parameters encode to the unit interval (after an optional log
transform); discrete parameters encode to a state index 0..n-1 of their graph.
"""
import math
import numbers
from functools import cached_property

import numpy as np

from ..exceptions import InvalidValueError, OutOfBoundsError, SpaceDefinitionError
from .graphs import complete_graph_spectrum, custom_graph_spectrum, path_graph_spectrum

__all__ = ["Parameter", "Real", "Integer", "Ordinal", "Categorical", "Graph"]


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise SpaceDefinitionError(f"parameter name must be a non-empty string, got {name!r}")
    return name


def _is_real_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class Parameter:
    """Base class: a named variable of a search space."""

    is_continuous = False
    n_columns = 1   # encoded columns the parameter occupies (a Set takes n_points·dim)

    def __init__(self, name):
        self.name = _check_name(name)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._repr_fields().items())
        return f"{type(self).__name__}({self.name!r}, {args})"

    def _repr_fields(self):
        return {}

    # encode/decode of one value; arrays are handled by Space
    def encode_value(self, value):
        raise NotImplementedError

    def decode_value(self, code):
        raise NotImplementedError

    def sample_codes(self, rng, n):
        """``n`` uniformly random encoded values."""
        raise NotImplementedError


class Real(Parameter):
    """A continuous parameter in [low, high], optionally searched in log space.

    Encoded as (x - low)/(high - low), or the same on log(x), so that every
    continuous column of an encoded array lies in [0, 1].
    """

    is_continuous = True

    def __init__(self, name, low, high, log=False):
        super().__init__(name)
        for label, bound in (("low", low), ("high", high)):
            if not _is_real_number(bound) or not math.isfinite(bound):
                raise SpaceDefinitionError(f"Real {name!r}: {label} must be a finite number, got {bound!r}")
        if not low < high:
            raise SpaceDefinitionError(f"Real {name!r}: need low < high, got low={low!r}, high={high!r}")
        if log and low <= 0:
            raise SpaceDefinitionError(f"Real {name!r}: log=True needs low > 0, got low={low!r}")
        self.low, self.high, self.log = float(low), float(high), bool(log)

    def _repr_fields(self):
        return {"low": self.low, "high": self.high, "log": self.log}

    @cached_property
    def _transformed_bounds(self):
        if self.log:
            return math.log(self.low), math.log(self.high)
        return self.low, self.high

    def encode_value(self, value):
        if not _is_real_number(value):
            raise InvalidValueError(
                f"parameter {self.name!r} expects a real number, got {value!r} ({type(value).__name__})",
                self.name, value)
        value = float(value)
        if not math.isfinite(value):
            raise InvalidValueError(f"parameter {self.name!r} got non-finite value {value!r}", self.name, value)
        # a relative slack absorbs the rounding of decode(encode(x))
        slack = 1e-12 * max(1.0, abs(self.low), abs(self.high))
        if not (self.low - slack <= value <= self.high + slack):
            raise OutOfBoundsError(
                f"parameter {self.name!r} = {value!r} is outside [{self.low!r}, {self.high!r}]", self.name, value)
        value = min(max(value, self.low), self.high)
        lo, hi = self._transformed_bounds
        x = math.log(value) if self.log else value
        return (x - lo) / (hi - lo)

    def decode_value(self, code):
        lo, hi = self._transformed_bounds
        x = lo + min(max(float(code), 0.0), 1.0) * (hi - lo)
        value = math.exp(x) if self.log else x
        return min(max(value, self.low), self.high)

    def sample_codes(self, rng, n):
        return rng.random(n)


class _DiscreteParameter(Parameter):
    """A parameter with finitely many states, each a vertex of a graph."""

    graph_kind = None

    def __init__(self, name, normalized_laplacian=False):
        super().__init__(name)
        self.normalized_laplacian = bool(normalized_laplacian)

    @property
    def n_states(self):
        raise NotImplementedError

    @cached_property
    def spectrum(self):
        """The Laplacian spectrum of this variable's graph, computed once."""
        return self._compute_spectrum()

    def sample_codes(self, rng, n):
        return rng.integers(0, self.n_states, size=n).astype(float)

    def _check_code(self, code):
        index = int(round(float(code)))
        if not 0 <= index < self.n_states:
            raise OutOfBoundsError(
                f"parameter {self.name!r}: state index {code!r} is outside [0, {self.n_states - 1}]", self.name, code)
        return index


class _ChoiceParameter(_DiscreteParameter):
    def __init__(self, name, choices, normalized_laplacian=False):
        super().__init__(name, normalized_laplacian)
        choices = list(choices)
        if not choices:
            raise SpaceDefinitionError(f"{type(self).__name__} {name!r}: choices must not be empty")
        for i, a in enumerate(choices):
            if any(_same_choice(a, b) for b in choices[:i]):
                raise SpaceDefinitionError(f"{type(self).__name__} {name!r}: duplicate choice {a!r}")
        self.choices = choices

    def _repr_fields(self):
        return {"choices": self.choices}

    @property
    def n_states(self):
        return len(self.choices)

    def encode_value(self, value):
        for index, choice in enumerate(self.choices):
            if _same_choice(value, choice):
                return float(index)
        raise InvalidValueError(
            f"parameter {self.name!r} got unknown choice {value!r}; valid choices are {self.choices!r}",
            self.name, value)

    def decode_value(self, code):
        return self.choices[self._check_code(code)]


def _same_choice(a, b):
    """Choice equality that does not confuse True with 1 or 'a' with np.str_('a') issues."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


class Categorical(_ChoiceParameter):
    """Nominal choices without order: a complete graph on the choices."""

    graph_kind = "complete"

    def _compute_spectrum(self):
        return complete_graph_spectrum(self.n_states, self.normalized_laplacian)


class Ordinal(_ChoiceParameter):
    """Ordered choices: a path graph in the given order."""

    graph_kind = "path"

    def _compute_spectrum(self):
        return path_graph_spectrum(self.n_states, self.normalized_laplacian)


class Integer(_DiscreteParameter):
    """Integers low..high (inclusive), ordinal: a path graph on the values."""

    graph_kind = "path"

    def __init__(self, name, low, high, normalized_laplacian=False):
        super().__init__(name, normalized_laplacian)
        for label, bound in (("low", low), ("high", high)):
            if not isinstance(bound, (numbers.Integral, np.integer)) or isinstance(bound, bool):
                raise SpaceDefinitionError(f"Integer {name!r}: {label} must be an integer, got {bound!r}")
        if not low <= high:
            raise SpaceDefinitionError(f"Integer {name!r}: need low <= high, got low={low!r}, high={high!r}")
        self.low, self.high = int(low), int(high)

    def _repr_fields(self):
        return {"low": self.low, "high": self.high}

    @property
    def n_states(self):
        return self.high - self.low + 1

    def encode_value(self, value):
        if isinstance(value, bool) or not _is_real_number(value):
            raise InvalidValueError(
                f"parameter {self.name!r} expects an integer, got {value!r} ({type(value).__name__})",
                self.name, value)
        if not math.isfinite(float(value)) or float(value) != int(value):
            raise InvalidValueError(f"parameter {self.name!r} expects an integer, got {value!r}", self.name, value)
        value = int(value)
        if not self.low <= value <= self.high:
            raise OutOfBoundsError(
                f"parameter {self.name!r} = {value!r} is outside [{self.low}, {self.high}]", self.name, value)
        return float(value - self.low)

    def decode_value(self, code):
        return self.low + self._check_code(code)

    def _compute_spectrum(self):
        return path_graph_spectrum(self.n_states, self.normalized_laplacian)


class Graph(_DiscreteParameter):
    """A discrete variable on a user graph.

    Parameters
    ----------
    name : str
    n_states : int
        Number of vertices; values are the vertex indices 0..n_states-1, or
        ``labels[i]`` when labels are given.
    edges : sequence of (int, int)
        Undirected edges; the graph must be connected.
    weights : sequence of float, optional
        Non-negative edge weights (default 1).
    labels : sequence, optional
        The value each vertex stands for (decode returns labels).
    """

    graph_kind = "custom"

    def __init__(self, name, n_states, edges, weights=None, labels=None, normalized_laplacian=False):
        super().__init__(name, normalized_laplacian)
        if not isinstance(n_states, (numbers.Integral, np.integer)) or isinstance(n_states, bool) or n_states < 1:
            raise SpaceDefinitionError(f"Graph {name!r}: n_states must be a positive integer, got {n_states!r}")
        self._n_states = int(n_states)
        self.edges = [tuple(e) for e in edges]
        self.weights = None if weights is None else [float(w) for w in weights]
        if labels is not None:
            labels = list(labels)
            if len(labels) != self._n_states:
                raise SpaceDefinitionError(
                    f"Graph {name!r}: got {len(labels)} labels for n_states={self._n_states}")
        self.labels = labels
        # validate now (connectivity, edge indices), so errors surface at construction
        _ = self.spectrum

    def _repr_fields(self):
        return {"n_states": self._n_states, "edges": self.edges}

    @property
    def n_states(self):
        return self._n_states

    def encode_value(self, value):
        if self.labels is not None:
            for index, label in enumerate(self.labels):
                if _same_choice(value, label):
                    return float(index)
            raise InvalidValueError(
                f"parameter {self.name!r} got unknown vertex label {value!r}", self.name, value)
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
            if not (_is_real_number(value) and math.isfinite(value) and float(value) == int(value)):
                raise InvalidValueError(
                    f"parameter {self.name!r} expects a vertex index, got {value!r}", self.name, value)
        index = int(value)
        if not 0 <= index < self._n_states:
            raise OutOfBoundsError(
                f"parameter {self.name!r} = {value!r} is not a vertex in [0, {self._n_states - 1}]",
                self.name, value)
        return float(index)

    def decode_value(self, code):
        index = self._check_code(code)
        return self.labels[index] if self.labels is not None else index

    def _compute_spectrum(self):
        return custom_graph_spectrum(self.name, self._n_states, self.edges, self.weights, self.normalized_laplacian)
