"""Parameter types of a search space.

Continuous parameters encode to the unit interval (after an optional log
transform); discrete parameters encode to a state index 0..n-1 of their graph.

Any parameter can be *conditional* (SPEC §3): ``active_if={"kernel": ["rbf", "poly"]}``
makes it exist only when the discrete parameter ``kernel`` is active and takes
one of the listed values; several entries must all hold.  The ``Space``
resolves the names, checks the conditions form a DAG and defines the encoding
of inactive values (see ``fastfm.space.space``).
"""
import math
import numbers
from functools import cached_property

import numpy as np

from ..exceptions import InvalidValueError, OutOfBoundsError, SpaceDefinitionError
from .graphs import (complete_graph_spectrum, custom_graph_spectrum, graph_spectrum_from_adjacency, normalise_edges,
                     path_graph_spectrum)

__all__ = ["Parameter", "Real", "Integer", "Ordinal", "Categorical", "Graph"]


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise SpaceDefinitionError(f"parameter name must be a non-empty string, got {name!r}")
    return name


def _is_real_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite_float(value):
    """True when ``value`` converts to a finite float (a huge int overflows: False)."""
    try:
        return math.isfinite(float(value))
    except (OverflowError, TypeError, ValueError):
        return False


def _check_distinct_values(kind, name, what, values):
    """Reject values that cannot be told back: NaN-like (not equal to themselves), unhashable, duplicates."""
    for i, a in enumerate(values):
        try:
            hash(a)
        except TypeError:
            raise SpaceDefinitionError(
                f"{kind} {name!r}: {what} {a!r} is unhashable ({type(a).__name__}); use a hashable value "
                "such as a tuple or a string") from None
        if not _same_choice(a, a):
            raise SpaceDefinitionError(
                f"{kind} {name!r}: {what} {a!r} is not equal to itself (NaN?), so it could never be told back")
        for b in values[:i]:
            if _same_choice(a, b):
                raise SpaceDefinitionError(f"{kind} {name!r}: duplicate {what} {a!r} (equal to {b!r})")


def _check_conditions(name, active_if):
    """Normalise ``active_if`` to {parent name: tuple of allowed values}, or None.

    Only the form is checked here; the ``Space`` checks that every parent
    exists, is discrete, and that the allowed values are among its values.
    """
    if active_if is None:
        return None
    if not isinstance(active_if, dict) or not active_if:
        raise SpaceDefinitionError(
            f"parameter {name!r}: active_if must be a non-empty dict {{parent name: allowed values}}, "
            f"got active_if={active_if!r}")
    conditions = {}
    for parent, allowed in active_if.items():
        if not isinstance(parent, str) or not parent:
            raise SpaceDefinitionError(f"parameter {name!r}: active_if key {parent!r} is not a parameter name")
        if parent == name:
            raise SpaceDefinitionError(f"parameter {name!r}: active_if names the parameter itself")
        if isinstance(allowed, (str, bytes)) or not isinstance(allowed, (list, tuple, set, frozenset, range)):
            allowed = [allowed]   # a single allowed value
        allowed = tuple(allowed)
        if not allowed:
            raise SpaceDefinitionError(
                f"parameter {name!r}: active_if[{parent!r}] lists no values, so it could never be active")
        conditions[parent] = allowed
    return conditions


class Parameter:
    """Base class: a named variable of a search space."""

    is_continuous = False
    n_columns = 1   # encoded columns the parameter occupies (a Set takes n_points·dim)
    vector_valued = False   # values are arrays (a Set): the Space gives it a slice of columns even when n_columns == 1

    def __init__(self, name, active_if=None):
        self.name = _check_name(name)
        self.active_if = _check_conditions(self.name, active_if)

    @property
    def is_conditional(self):
        """True when the parameter has an ``active_if`` condition."""
        return bool(self.active_if)

    def __repr__(self):
        fields = dict(self._repr_fields())
        if self.active_if:
            fields["active_if"] = {k: list(v) for k, v in self.active_if.items()}
        args = ", ".join(f"{k}={v!r}" for k, v in fields.items())
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

    def stratified_codes(self, rng, n):
        """``n`` encoded values spread evenly over the parameter, in random order (``Space.sample_stratified_encoded``):
        uniformly random where a parameter has no finer rule."""
        return self.sample_codes(rng, n)


class _UnitRange:
    """The map of a (log-)scaled range [low, high] onto [0, 1]: ``Real``, and ``Integer`` searched as a rounded
    continuous variable (attributes ``low``, ``high``, ``log``)."""

    @cached_property
    def _transformed_bounds(self):
        if self.log:
            return math.log(self.low), math.log(self.high)
        return float(self.low), float(self.high)

    def _unit_code(self, value):
        """The code in [0, 1] of a value inside [low, high]."""
        lo, hi = self._transformed_bounds
        return ((math.log(value) if self.log else value) - lo) / (hi - lo)


class Real(_UnitRange, Parameter):
    """A continuous parameter in [low, high], optionally searched in log space.

    Encoded as (x - low)/(high - low), or the same on log(x), so that every
    continuous column of an encoded array lies in [0, 1].
    """

    is_continuous = True

    def __init__(self, name, low, high, log=False, active_if=None):
        super().__init__(name, active_if)
        for label, bound in (("low", low), ("high", high)):
            if not _is_real_number(bound) or not _finite_float(bound):
                raise SpaceDefinitionError(f"Real {name!r}: {label} must be a finite number, got {label}={bound!r}")
        low, high = float(low), float(high)
        if not low < high:
            raise SpaceDefinitionError(f"Real {name!r}: need low < high, got low={low!r}, high={high!r}")
        if log and low <= 0:
            raise SpaceDefinitionError(f"Real {name!r}: log=True needs low > 0, got low={low!r}")
        # encode divides by the range and decode multiplies by it: it must be a finite float
        span = math.log(high) - math.log(low) if log else high - low
        if not (math.isfinite(span) and span > 0):
            raise SpaceDefinitionError(
                f"Real {name!r}: the range {'log(high) - log(low)' if log else 'high - low'} = {span!r} "
                f"is not a finite positive float (low={low!r}, high={high!r}); narrow the bounds or rescale")
        self.low, self.high, self.log = low, high, bool(log)

    def _repr_fields(self):
        return {"low": self.low, "high": self.high, "log": self.log}

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
        return self._unit_code(min(max(value, self.low), self.high))

    def decode_value(self, code):
        lo, hi = self._transformed_bounds
        x = lo + min(max(float(code), 0.0), 1.0) * (hi - lo)
        value = math.exp(x) if self.log else x
        return min(max(value, self.low), self.high)

    def sample_codes(self, rng, n):
        return rng.random(n)

    def stratified_codes(self, rng, n):
        return _latin_hypercube_column(rng, n)


class _DiscreteParameter(Parameter):
    """A parameter with finitely many states, each a vertex of a graph."""

    graph_kind = None

    def __init__(self, name, normalized_laplacian=False, active_if=None):
        super().__init__(name, active_if)
        self.normalized_laplacian = bool(normalized_laplacian)

    @property
    def n_states(self):
        raise NotImplementedError

    @property
    def is_nominal(self):
        """Whether the values are unordered: a complete graph, every pair of values equally alike (a ``Categorical``;
        an ``Ordinal``'s graph is a path, a ``Graph``'s its own edges)."""
        return self.graph_kind == "complete"

    @cached_property
    def spectrum(self):
        """The Laplacian spectrum of this variable's graph, computed once."""
        return self._compute_spectrum()

    def sample_codes(self, rng, n):
        return rng.integers(0, self.n_states, size=n).astype(float)

    def stratified_codes(self, rng, n):
        return _balanced_states(rng, self.n_states, n).astype(float)

    def adjacency(self):
        """Weighted adjacency matrix of the graph, shape (n_states, n_states)."""
        raise NotImplementedError

    @cached_property
    def conditional_spectrum(self):
        """Spectrum of the graph with one extra vertex, index ``n_states``, for "inactive".

        Used when the parameter is conditional (SPEC §3: an inactive discrete
        variable needs a defined state).  The inactive vertex is joined to
        every state, because being inactive is equally unlike every value:

        * complete graph: weight 1, so the graph is K_{n+1} and "inactive" is
          exactly one more category (the O(1) complete-graph path still applies);
        * path and custom graphs: weight 1/n each, a total of one edge's weight,
          so that the shortcut through the hub leaves the graph's own structure
          (the order of an ordinal) dominant.
        """
        if self.is_nominal:
            return complete_graph_spectrum(self.n_states + 1, self.normalized_laplacian)
        return graph_spectrum_from_adjacency(self.conditional_adjacency(), self.normalized_laplacian)

    def conditional_adjacency(self):
        """Weighted adjacency of the graph of ``conditional_spectrum``, shape (n_states + 1, n_states + 1)."""
        n = self.n_states
        adjacency = np.zeros((n + 1, n + 1))
        adjacency[:n, :n] = self.adjacency()
        adjacency[n, :n] = adjacency[:n, n] = 1.0 if self.is_nominal else 1.0 / n
        return adjacency

    def _check_code(self, code):
        index = int(round(float(code)))
        if not 0 <= index < self.n_states:
            raise OutOfBoundsError(
                f"parameter {self.name!r}: state index {code!r} is outside [0, {self.n_states - 1}]", self.name, code)
        return index


class _ChoiceParameter(_DiscreteParameter):
    def __init__(self, name, choices, normalized_laplacian=False, active_if=None):
        super().__init__(name, normalized_laplacian, active_if)
        try:
            choices = list(choices)
        except TypeError:
            raise SpaceDefinitionError(
                f"{type(self).__name__} {name!r}: choices must be a sequence, got choices={choices!r}") from None
        if not choices:
            raise SpaceDefinitionError(f"{type(self).__name__} {name!r}: choices must not be empty")
        _check_distinct_values(type(self).__name__, name, "choice", choices)
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


def _path_adjacency(n):
    return np.eye(n, k=1) + np.eye(n, k=-1)


class Categorical(_ChoiceParameter):
    """Nominal choices without order: a complete graph on the choices.

    Parameters
    ----------
    name : str
    choices : sequence
        Distinct, hashable, equal to themselves: strings, numbers, None, tuples, or objects (functions, class
        instances).  A config's value is matched to a choice by equality, so an object without ``__eq__`` is
        matched by identity: the optimizer hands out the choice objects themselves, and an optimizer loaded from
        a journal (whose space is a pickled copy) knows its own copies of them, not the caller's.
    normalized_laplacian : bool, default False
        Use the normalised Laplacian of the complete graph.
    active_if : dict, optional
    """

    graph_kind = "complete"

    def adjacency(self):
        return np.ones((self.n_states, self.n_states)) - np.eye(self.n_states)

    def _compute_spectrum(self):
        return complete_graph_spectrum(self.n_states, self.normalized_laplacian)


class _Ordered:
    """The graph of an ordered variable (an ``Ordinal`` or a graph-encoded ``Integer``): the path of the order."""

    graph_kind = "path"

    def adjacency(self):
        return _path_adjacency(self.n_states)

    def _compute_spectrum(self):
        return path_graph_spectrum(self.n_states, self.normalized_laplacian)


class Ordinal(_Ordered, _ChoiceParameter):
    """Ordered choices.

    Parameters
    ----------
    name : str
    choices : sequence
        In their order; distinct, hashable, equal to themselves.
    encoding : {"graph", "continuous"}, default "graph"
        "graph": a discrete variable on the path of the choices (``_Ordered``); "continuous": the
        choice's index scaled to [0, 1], a continuous variable rounded to the nearest index on decode.
    normalized_laplacian : bool, default False
        Graph encoding only: use the normalised Laplacian.
    active_if : dict, optional
    """

    encoding = "graph"   # class default: also what an Ordinal pickled before the option had

    def __init__(self, name, choices, normalized_laplacian=False, active_if=None, *, encoding="graph"):
        super().__init__(name, choices, normalized_laplacian, active_if)
        if encoding not in ("graph", "continuous"):
            raise SpaceDefinitionError(
                f"Ordinal {name!r}: encoding must be 'graph' or 'continuous', got encoding={encoding!r}")
        self.encoding = encoding if self.n_states > 1 else "graph"   # one choice: nothing to scale
        self.is_continuous = self.encoding == "continuous"

    def _repr_fields(self):
        return {"choices": self.choices, **({"encoding": "continuous"} if self.is_continuous else {})}

    def encode_value(self, value):
        index = super().encode_value(value)
        return index / (self.n_states - 1) if self.is_continuous else index

    def decode_value(self, code):
        if not self.is_continuous:
            return super().decode_value(code)
        return self.choices[int(np.rint(min(max(float(code), 0.0), 1.0) * (self.n_states - 1)))]

    def snap_codes(self, codes):
        """Continuous encoding: each code moved to the code of its nearest choice."""
        return np.rint(np.clip(codes, 0.0, 1.0) * (self.n_states - 1)) / (self.n_states - 1)

    def sample_codes(self, rng, n):
        codes = super().sample_codes(rng, n)
        return codes / (self.n_states - 1) if self.is_continuous else codes

    def stratified_codes(self, rng, n):
        codes = super().stratified_codes(rng, n)
        return codes / (self.n_states - 1) if self.is_continuous else codes


# An Integer with more values than this is searched as a rounded continuous variable
# (encoding="auto"); measured in docs/benchmarks/robustness.md, "Integers".
MAX_GRAPH_INTEGER_STATES = 16
# A graph-encoded Integer holds its path's eigenbasis (n² numbers) and its kernel sums over n eigenvalues per
# pair: beyond this many values (200 MB of eigenbasis) encoding="graph" is refused with a typed error instead
# of a MemoryError at the first suggestion.
MAX_GRAPH_STATES = 5000
_INTEGER_ENCODINGS = ("auto", "graph", "continuous")


class Integer(_UnitRange, _Ordered, _DiscreteParameter):
    """Integers low..high (inclusive).

    Parameters
    ----------
    name : str
    low, high : int
        Inclusive bounds.
    log : bool, default False
        Search on a log scale (needs low ≥ 1): the integer is then a rounded continuous variable
        whose code is uniform in log(value).
    encoding : {"auto", "graph", "continuous"}, default "auto"
        "graph": a discrete variable whose states are the values, ordered (``_Ordered``).
        "continuous": a continuous variable in [low, high] (or its log) rounded to the nearest
        integer on decode; memory and time do not depend on the number of values.  "auto":
        "continuous" when ``log`` or more than ``MAX_GRAPH_INTEGER_STATES`` values, else "graph".
    normalized_laplacian : bool, default False
        Graph encoding only: use the normalised Laplacian.
    active_if : dict, optional
        The parameter's condition (module docstring).
    """

    # class defaults: also what an Integer pickled before these options had
    log = False
    encoding = "graph"

    def __init__(self, name, low, high, normalized_laplacian=False, active_if=None, *, log=False, encoding="auto"):
        super().__init__(name, normalized_laplacian, active_if)
        for label, bound in (("low", low), ("high", high)):
            if not isinstance(bound, (numbers.Integral, np.integer)) or isinstance(bound, bool):
                raise SpaceDefinitionError(f"Integer {name!r}: {label} must be an integer, got {bound!r}")
        if not low <= high:
            raise SpaceDefinitionError(f"Integer {name!r}: need low <= high, got low={low!r}, high={high!r}")
        if encoding not in _INTEGER_ENCODINGS:
            raise SpaceDefinitionError(
                f"Integer {name!r}: encoding must be one of {_INTEGER_ENCODINGS}, got encoding={encoding!r}")
        if log and low < 1:
            raise SpaceDefinitionError(f"Integer {name!r}: log=True needs low >= 1, got low={low!r}")
        self.low, self.high, self.log = int(low), int(high), bool(log)
        if not _finite_float(self.high - self.low):
            raise SpaceDefinitionError(
                f"Integer {name!r}: the range high - low = {self.high - self.low} overflows a float")
        if encoding == "auto":
            encoding = "continuous" if self.log or self.n_states > MAX_GRAPH_INTEGER_STATES else "graph"
        if encoding == "graph" and self.log:
            raise SpaceDefinitionError(f"Integer {name!r}: log=True needs encoding='continuous' (or 'auto')")
        if encoding == "graph" and self.n_states > MAX_GRAPH_STATES:
            raise SpaceDefinitionError(
                f"Integer {name!r}: encoding='graph' over {self.n_states} values would hold a "
                f"{self.n_states}² eigenbasis ({8 * self.n_states ** 2 / 2 ** 30:.1f} GiB); the limit is "
                f"{MAX_GRAPH_STATES} values: use encoding='continuous' (or 'auto')")
        if encoding == "continuous" and self.n_states < 2:
            encoding = "graph"   # one value: nothing to scale
        self.encoding = encoding
        self.is_continuous = encoding == "continuous"

    def _repr_fields(self):
        fields = {"low": self.low, "high": self.high}
        if self.log:
            fields["log"] = True
        if self.is_continuous and not self.log and self.n_states <= MAX_GRAPH_INTEGER_STATES:
            fields["encoding"] = "continuous"
        elif not self.is_continuous and self.n_states > MAX_GRAPH_INTEGER_STATES:
            fields["encoding"] = "graph"
        return fields

    @property
    def n_states(self):
        return self.high - self.low + 1

    def _check_value(self, value):
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
        return value

    def encode_value(self, value):
        value = self._check_value(value)
        if not self.is_continuous:
            return float(value - self.low)
        return self._unit_code(float(value))

    def decode_value(self, code):
        if not self.is_continuous:
            return self.low + self._check_code(code)
        return int(self._round_codes(np.array([float(code)]))[0])

    def _round_codes(self, codes):
        """The integers nearest to continuous codes (clipped to [low, high]), as an int64 array."""
        lo, hi = self._transformed_bounds
        x = lo + np.clip(codes, 0.0, 1.0) * (hi - lo)
        values = np.rint(np.exp(x) if self.log else x)
        return np.clip(values, self.low, self.high).astype(np.int64)

    def snap_codes(self, codes):
        """Continuous encoding: each code moved to the code of its nearest integer (``decode`` then ``encode``)."""
        lo, hi = self._transformed_bounds
        values = self._round_codes(np.asarray(codes, dtype=float)).astype(float)
        return ((np.log(values) if self.log else values) - lo) / (hi - lo)

    def sample_codes(self, rng, n):
        if not self.is_continuous:
            return super().sample_codes(rng, n)
        if self.log:   # uniform in log(value), at the integers' codes
            return self.snap_codes(rng.random(n))
        return (rng.integers(self.low, self.high + 1, size=n) - self.low) / float(self.high - self.low)

    def stratified_codes(self, rng, n):
        if not self.is_continuous:
            return super().stratified_codes(rng, n)
        if self.log:
            return self.snap_codes(_latin_hypercube_column(rng, n))
        states = np.floor(_latin_hypercube_column(rng, n) * (self.high - self.low + 1))
        return np.minimum(states, self.high - self.low) / float(self.high - self.low)


class Graph(_DiscreteParameter):
    """A discrete variable on a user graph.

    Parameters
    ----------
    name : str
    n_states : int
        Number of vertices; values are the vertex indices 0..n_states-1, or
        ``labels[i]`` when labels are given.
    edges : sequence of (u, v) or (u, v, weight)
        Undirected edges; the graph must be connected.  ``u`` and ``v`` are
        vertex indices, or labels when ``labels`` are given.  Self-loops and
        the same edge twice with different weights are rejected.
    weights : sequence of float, optional
        Positive, finite edge weights (default 1), one per edge; not allowed
        together with (u, v, weight) triples.
    labels : sequence, optional
        The value each vertex stands for (decode returns labels); distinct,
        hashable and equal to themselves (no NaN).
    """

    graph_kind = "custom"

    def __init__(self, name, n_states, edges, weights=None, labels=None, normalized_laplacian=False,
                 active_if=None):
        super().__init__(name, normalized_laplacian, active_if)
        if not isinstance(n_states, (numbers.Integral, np.integer)) or isinstance(n_states, bool) or n_states < 1:
            raise SpaceDefinitionError(f"Graph {name!r}: n_states must be a positive integer, got {n_states!r}")
        self._n_states = int(n_states)
        if labels is not None:
            if isinstance(labels, (str, bytes)):
                raise SpaceDefinitionError(f"Graph {name!r}: labels must be a sequence, got labels={labels!r}")
            labels = list(labels)
            if len(labels) != self._n_states:
                raise SpaceDefinitionError(
                    f"Graph {name!r}: got {len(labels)} labels for n_states={self._n_states} (labels={labels!r})")
            _check_distinct_values("Graph", name, "vertex label", labels)
        self.labels = labels
        # edges as index pairs, one per undirected edge; weights as floats (None: all 1)
        self.edges, checked_weights = normalise_edges(name, self._n_states, edges, weights, labels)
        self.weights = None if weights is None and all(w == 1.0 for w in checked_weights) else checked_weights
        # validate now (connectivity, edge indices), so errors surface at construction
        _ = self.spectrum

    def _repr_fields(self):
        fields = {"n_states": self._n_states, "edges": self.edges}
        if self.weights is not None:
            fields["weights"] = self.weights
        if self.labels is not None:
            fields["labels"] = self.labels
        return fields

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

    def adjacency(self):
        adjacency = np.zeros((self._n_states, self._n_states))
        weights = self.weights if self.weights is not None else [1.0] * len(self.edges)
        for (a, b), w in zip(self.edges, weights):
            adjacency[a, b] = adjacency[b, a] = w
        return adjacency

    def _compute_spectrum(self):
        return custom_graph_spectrum(self.name, self._n_states, self.edges, self.weights, self.normalized_laplacian)


def _latin_hypercube_column(rng, n):
    """One column of a Latin hypercube: one uniform draw in each of n equal strata of [0, 1), shuffled."""
    return (rng.permutation(n) + rng.random(n)) / n


def _balanced_states(rng, n_states, n):
    """n states, each as often as n allows (counts differ by at most one; which states get the extra one is
    random), shuffled: with n ≤ n_states, n distinct states."""
    return rng.permutation(np.resize(rng.permutation(n_states), n))
