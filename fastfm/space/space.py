"""The search space: an ordered set of parameters and the config <-> array codec.

Encoded layout (float64, shape (n_points, n_continuous + n_discrete)):
the unit-scaled continuous columns first, in declaration order (a ``Set`` takes
n_points·dim of them, point after point), then one column of integer state
indices per discrete variable, in declaration order.
Nothing below ``Space`` sees a config dict.

Conditional spaces (SPEC §3).  A parameter with ``active_if`` is active only
when every parent it names is active and takes one of the listed values.
Parents must be discrete; the conditions must form a DAG.  Inactive values
are explicit in the encoded array, so that every row has a value in every
column and the activity of each column is a function of the discrete columns:

* an inactive continuous parameter is encoded as 0.0 (its activity is then
  read from :meth:`Space.active_columns`, never from the value);
* a conditional discrete parameter with n states gets one extra state, index
  n, meaning "inactive" (``Space.n_states`` counts it).  Its graph gains one
  vertex for it (``_DiscreteParameter.conditional_spectrum``), which is what
  the FM kernels see; graph moves (``Space.neighbours``) never enter or leave it.

A config dict of a conditional space holds exactly its active parameters:
``encode`` rejects an inactive one that is set (``InactiveParameterError``)
and an active one that is missing (``MissingParameterError``); ``decode``
returns only the active ones.  A space without conditions encodes exactly as
before.
"""
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..exceptions import (InactiveParameterError, InvalidConfigError, InvalidValueError, MissingParameterError,
                          OutOfBoundsError, SpaceDefinitionError, UnknownParameterError)
from . import conditions
from .parameters import Parameter
from .sets import Set

__all__ = ["Space", "PackedSpectra"]


@dataclass(frozen=True, eq=False)
class PackedSpectra:
    """All discrete variables' spectra in flat arrays, the form the backends take.

    For variable p with n_p states and G_p distinct eigenvalues:
    ``eigenvectors[eigvec_offsets[p]:eigvec_offsets[p+1]]`` is U_p row-major
    (n_p × n_p, ``U_p[v, i]`` at ``v*n_p + i``);
    ``group_values[group_offsets[p]:group_offsets[p+1]]`` are μ_g ascending and
    ``group_sizes`` (same slice) the number of eigenvector columns in each
    group, consecutive in U_p.  ``is_complete[p]`` marks complete graphs
    (groups 0 and μ_1, projectors 11ᵀ/n and I − 11ᵀ/n), for the O(1) path.
    """

    n_states: np.ndarray        # (P,) int64
    eigvec_offsets: np.ndarray  # (P+1,) int64
    eigenvectors: np.ndarray    # (Σ n_p²,) float64
    group_offsets: np.ndarray   # (P+1,) int64
    group_values: np.ndarray    # (Σ G_p,) float64
    group_sizes: np.ndarray     # (Σ G_p,) int64
    is_complete: np.ndarray     # (P,) uint8

    @classmethod
    def from_spectra(cls, spectra):
        n_states = np.array([s.n_states for s in spectra], dtype=np.int64)
        eigvec_offsets = np.zeros(len(spectra) + 1, dtype=np.int64)
        eigvec_offsets[1:] = np.cumsum(n_states ** 2)
        group_offsets = np.zeros(len(spectra) + 1, dtype=np.int64)
        group_offsets[1:] = np.cumsum([s.n_groups for s in spectra])

        def cat(parts, dtype):
            return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0), dtype=dtype)

        return cls(
            n_states=n_states,
            eigvec_offsets=eigvec_offsets,
            eigenvectors=cat([np.ravel(s.eigenvectors) for s in spectra], np.float64),
            group_offsets=group_offsets,
            group_values=cat([s.group_values for s in spectra], np.float64),
            group_sizes=cat([np.diff(s.group_starts) for s in spectra], np.int64),
            is_complete=np.array([s.is_complete for s in spectra], dtype=np.uint8),
        )

    @property
    def n_variables(self):
        return len(self.n_states)


class Space:
    """A mixed search space.

    Parameters
    ----------
    parameters : sequence of Parameter
        ``Real``, ``Integer``, ``Ordinal``, ``Categorical``, ``Graph`` and ``Set``
        instances with distinct names.

    Examples
    --------
    >>> import fastfm as ff
    >>> space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("c", ["a", "b"])])
    >>> X = space.encode([{"x": 0.0, "c": "b"}])
    >>> X.tolist()
    [[0.5, 1.0]]
    >>> space.decode(X)
    [{'x': 0.0, 'c': 'b'}]
    """

    def __init__(self, parameters):
        parameters = list(parameters)
        if not parameters:
            raise SpaceDefinitionError("a Space needs at least one parameter, got none")
        seen = set()
        for p in parameters:
            if not isinstance(p, Parameter):
                raise SpaceDefinitionError(f"Space parameters must be fastfm parameters, got {p!r}")
            if p.name in seen:
                raise SpaceDefinitionError(f"duplicate parameter name {p.name!r}")
            seen.add(p.name)
        self.parameters = parameters
        self.continuous_params = [p for p in parameters if p.is_continuous]
        self.discrete_params = [p for p in parameters if not p.is_continuous]
        # encoded columns of each parameter: an int, or a slice for a Set (even a one-column one)
        self._column, self._column_owner = {}, []
        for p in self.continuous_params + self.discrete_params:
            start = len(self._column_owner)
            self._column[p.name] = (start if p.n_columns == 1 and not p.vector_valued
                                    else slice(start, start + p.n_columns))
            self._column_owner += [p] * p.n_columns
        self._by_name = {p.name: p for p in parameters}
        self._conditions, self._topological_order = conditions.resolve(self)

    # ------------------------------------------------------------ conditions (bodies in conditions.py)
    @property
    def is_conditional(self):
        """True when at least one parameter has an ``active_if`` condition."""
        return bool(self._conditions)

    def ancestors(self, name):
        """Names of every parameter ``name``'s activity depends on (transitively), parents first."""
        result = []
        for parent in (self[name].active_if or {}):
            for a in self.ancestors(parent) + [parent]:
                if a not in result:
                    result.append(a)
        return result

    def is_active(self, config, name=None):
        """Which parameters are active in ``config``.

        Parameters
        ----------
        config : dict
            A (possibly partial) config; a parent missing from it counts as inactive.
        name : str, optional
            Ask about one parameter.

        Returns
        -------
        dict of name -> bool in declaration order, or a bool when ``name`` is given.
        """
        active = conditions.activity(self, config)
        if name is not None:
            self[name]
            return active[name]
        return active

    def active_columns(self, X):
        """Activity of every encoded column, from the discrete columns.

        Parameters
        ----------
        X : array of shape (n_points, n_dims) or (n_dims,)

        Returns
        -------
        ndarray of bool, shape (n_points, n_dims) (or (n_dims,)); all True for a
        space without conditions.
        """
        return conditions.active_columns(self, X)

    def enforce_conditions(self, X, rng=None, previously_active=None):
        """Make encoded points consistent with the conditions, in place and returned.

        In topological order, every column that is inactive gets its inactive
        code, and every column that is active but was not (per
        ``previously_active``, or, for a discrete column, holds the inactive
        state) gets a value: uniformly random with ``rng``, else a fixed
        default (0.5 for a continuous column, state 0 for a discrete one), so
        that a local search sees the same point for the same move every time.
        This is what a move that changes a parent's value needs: its new
        children get values, its old children are cleared.

        Parameters
        ----------
        X : array of shape (n_points, n_dims), modified in place
        rng : numpy Generator or seed, optional
        previously_active : bool array of shape (n_points, n_dims), optional
        """
        return conditions.enforce(self, X, rng, previously_active)

    def prune(self, config):
        """``config`` without the parameters that are inactive in it (a new dict)."""
        active = self.is_active(config)
        return {k: v for k, v in config.items() if active.get(k, True)}

    def flattened(self):
        """The same parameters without any condition: every parameter always active."""
        import copy
        params = []
        for p in self.parameters:
            q = copy.copy(p)
            q.active_if = None
            params.append(q)
        return Space(params)

    def __deepcopy__(self, memo):
        # A Space is immutable after construction and caches its spectra:
        # kernels cloned for new hyperparameters share it instead of copying.
        return self

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parameters)
        return f"Space([\n    {inner},\n])"

    def __len__(self):
        return len(self.parameters)

    def __iter__(self):
        return iter(self.parameters)

    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownParameterError(f"unknown parameter {name!r}; the space has {self.names}", name) from None

    @property
    def names(self):
        return [p.name for p in self.parameters]

    @cached_property
    def n_continuous(self):
        """Number of continuous encoded columns (a Set counts n_points·dim); cached: kernels ask for it at
        every evaluation, and a Space does not change after construction."""
        return sum(p.n_columns for p in self.continuous_params)

    @property
    def set_params(self):
        """The set-valued parameters (``Set``), in declaration order."""
        return [p for p in self.continuous_params if isinstance(p, Set)]

    def canonical(self, X):
        """Encoded points as they decode and encode again, same shape as X: every Set's points in canonical
        (lexicographic) order, and every continuous-encoded Integer at the code of its nearest integer (so that
        an optimiser's point and the config it decodes to are one point, and a duplicate is seen as one)."""
        X = np.array(X, dtype=np.float64)
        rows = X.reshape(-1, self.n_dims)
        for p in self.set_params:
            rows[:, self._column[p.name]] = p.canonical_codes(rows[:, self._column[p.name]])
        for p in self.rounded_params:
            rows[:, self._column[p.name]] = p.snap_codes(rows[:, self._column[p.name]])
        return X

    @cached_property
    def rounded_params(self):
        """The continuous parameters whose codes stand for integers (``Integer(encoding="continuous")``)."""
        return [p for p in self.continuous_params if hasattr(p, "snap_codes")]

    @property
    def n_discrete(self):
        return len(self.discrete_params)

    @property
    def n_dims(self):
        return self.n_continuous + self.n_discrete

    @property
    def continuous_dims(self):
        """Columns of the encoded array holding continuous parameters."""
        return np.arange(self.n_continuous)

    @property
    def discrete_dims(self):
        """Columns of the encoded array holding discrete state indices."""
        return np.arange(self.n_continuous, self.n_dims)

    @property
    def n_states(self):
        """Number of encoded states of each discrete variable, in column order (a conditional
        variable counts its extra "inactive" state)."""
        return np.array([p.n_states + p.is_conditional for p in self.discrete_params], dtype=np.int64)

    def column(self, name):
        """The encoded column of parameter ``name`` (a slice of columns for a Set)."""
        self[name]
        return self._column[name]

    @property
    def graphs(self):
        """Laplacian spectrum of each discrete variable (cached per variable); a conditional
        variable's graph has the extra "inactive" vertex (module docstring)."""
        return [p.conditional_spectrum if p.is_conditional else p.spectrum for p in self.discrete_params]

    @cached_property
    def packed_spectra(self):
        """The spectra in the flat layout the compute backends take."""
        return PackedSpectra.from_spectra(self.graphs)

    @cached_property
    def neighbours(self):
        """Per discrete variable, ``neighbours[p][v]`` is the array of states adjacent to v."""
        # the variable's own graph: moves never enter or leave the "inactive" state,
        # which has no neighbours (an inactive variable does not move)
        result = []
        for p in self.discrete_params:
            adjacent = (p.adjacency() > 0) & ~np.eye(p.n_states, dtype=bool)
            result.append([np.flatnonzero(row) for row in adjacent]
                          + ([np.zeros(0, dtype=np.int64)] if p.is_conditional else []))
        return result

    # ------------------------------------------------------------------ codec
    def encode(self, configs):
        """Encode config dicts.

        Parameters
        ----------
        configs : dict or sequence of dict

        Returns
        -------
        ndarray of shape (n_dims,) for one dict, (n_configs, n_dims) for a sequence.
        """
        if isinstance(configs, dict):
            return self._encode_one(configs)
        configs = list(configs)
        X = np.empty((len(configs), self.n_dims))
        for row, config in enumerate(configs):
            X[row] = self._encode_one(config)
        return X

    def _encode_one(self, config):
        if not isinstance(config, dict):
            raise InvalidConfigError(f"a config must be a dict, got {config!r} ({type(config).__name__})")
        for name in config:
            if name not in self._by_name:
                raise UnknownParameterError(
                    f"unknown parameter {name!r} in config; the space has {self.names}", name, config[name])
        x = np.empty(self.n_dims)
        for name in self._topological_order:
            p = self._by_name[name]
            col = self._column[name]
            active = all(np.isin(x[parent_col], codes) for _, parent_col, codes in self._conditions.get(name, ()))
            if not active:
                if name in config:
                    raise InactiveParameterError(
                        f"config sets parameter {name!r} = {config[name]!r}, which is inactive in it "
                        f"(active_if {dict(p.active_if)!r}); leave it out", name, config[name])
                x[col] = conditions.inactive_code(p)
                continue
            if name not in config:
                raise MissingParameterError(f"config is missing parameter {name!r}", name)
            value = config[name]
            if isinstance(value, np.ndarray) and value.ndim == 0:    # a 0-d array is its one value
                value = value[()]
            x[col] = p.encode_value(value)
        return x

    def decode(self, X):
        """Decode an encoded array back to config dicts (inverse of :meth:`encode`)."""
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            return self._decode_one(self.validate_encoded(X[None, :])[0])
        return [self._decode_one(x) for x in self.validate_encoded(X)]

    def _decode_one(self, x):
        active = self.active_columns(x) if self._conditions else None
        return {p.name: p.decode_value(x[self._column[p.name]]) for p in self.parameters
                if active is None or np.all(active[self._column[p.name]])}

    def validate_encoded(self, X, name="X"):
        """Check an encoded array and return it as a C-contiguous float64 2-d array.

        Raises
        ------
        InvalidConfigError
            Wrong shape, non-finite entries, continuous values outside [0, 1]
            or discrete entries that are not valid state indices.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_dims:
            raise InvalidConfigError(
                f"{name} must have shape (n_points, {self.n_dims}) for this space, got {X.shape}", name)
        if not np.all(np.isfinite(X)):
            row, col = np.argwhere(~np.isfinite(X))[0]
            pname = self._name_of_column(col)
            raise InvalidValueError(f"{name}[{row}, {col}] (parameter {pname!r}) is {X[row, col]!r}", pname, X[row, col])
        Xc = X[:, : self.n_continuous]
        bad = (Xc < -1e-12) | (Xc > 1 + 1e-12)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            pname = self._name_of_column(col)
            raise OutOfBoundsError(
                f"{name}[{row}, {col}] (parameter {pname!r}) = {Xc[row, col]!r} is outside the unit interval",
                pname, Xc[row, col])
        Xd = X[:, self.n_continuous:]
        bad = (Xd != np.round(Xd)) | (Xd < 0) | (Xd >= self.n_states[None, :])
        if bad.any():
            row, col = np.argwhere(bad)[0]
            pname = self._name_of_column(self.n_continuous + col)
            raise OutOfBoundsError(
                f"{name}[{row}, {self.n_continuous + col}] (parameter {pname!r}) = {Xd[row, col]!r} "
                f"is not a state index in [0, {self.n_states[col] - 1}]", pname, Xd[row, col])
        if self._conditions:
            self._check_inactive_codes(X, name)
        return np.ascontiguousarray(X)

    def _check_inactive_codes(self, X, name):
        """Inactive columns must hold their inactive code, active discrete ones a real state."""
        active = self.active_columns(X)
        for p in self.parameters:
            if p.name not in self._conditions:
                continue
            col = self._column[p.name]
            code = conditions.inactive_code(p)
            bad = (~active[:, col] & (X[:, col] != code))
            if not p.is_continuous:
                bad |= active[:, col] & (X[:, col] == code)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                state = "active" if active[row, col] else "inactive"
                raise InvalidConfigError(
                    f"{name}[{row}, {col}] (parameter {p.name!r}) = {X[row, col]!r} but the parameter is {state} "
                    f"in that row; inactive values are encoded as {code!r}", p.name, X[row, col])

    def _name_of_column(self, col):
        return self._column_owner[col].name

    # --------------------------------------------------------------- sampling
    def sample_encoded(self, n, seed=None, set_point_reuse=1):
        """``n`` uniformly random points, encoded, shape (n, n_dims).

        ``set_point_reuse`` r > 1: every ``Set``'s points come from a pool shared by the n points, each pool point
        in about r of the sets (``Set.sample_codes``), so that a set kernel scores them r times cheaper; each set is
        still m uniform points."""
        def codes_of(p, rng, size):
            if isinstance(p, Set):
                return p.sample_codes(rng, size, point_reuse=set_point_reuse)
            return p.sample_codes(rng, size)
        return self._encoded_points(n, seed, codes_of)

    def sample_stratified_encoded(self, n, seed=None):
        """``n`` points, encoded, shape (n, n_dims), each parameter spread evenly over them: a Latin hypercube on the
        continuous parameters, every state of a discrete one equally often (n distinct states when it has n or
        more), each column shuffled on its own; Sets uniformly random.  In a conditional space a parameter is
        stratified over all n points and then cleared where it is inactive (and drawn where it became active).

        Why: the initial design of BO (``Optimizer(initial_design="stratified")``).  With 10 random points a
        nominal variable of 3–5 states often misses a state or sees one 4 times.  Measured at 60 evaluations
        over 40 seeds it was level with random points on Func2C and Func3C and ahead on Ackley5C
        (docs/benchmarks/bo-efficiency.md, "Choosing the kernel per run, and a stratified initial design").
        """
        return self._encoded_points(n, seed, lambda p, rng, size: p.stratified_codes(rng, size))

    def _encoded_points(self, n, seed, codes_of):
        """``n`` encoded points whose column(s) of each parameter p are ``codes_of(p, rng, n)``, the conditions
        then enforced."""
        rng = np.random.default_rng(seed)
        X = np.empty((int(n), self.n_dims))
        for p in self.parameters:
            X[:, self._column[p.name]] = codes_of(p, rng, int(n))
        return self.enforce_conditions(X, rng)

    def sample(self, n, seed=None):
        """``n`` uniformly random configs (log-scaled Reals are uniform in log space); in a
        conditional space each parameter is uniform given that it is active."""
        return self.decode(self.sample_encoded(n, seed)) if n > 0 else []

    def split(self, X):
        """Split an encoded array into (continuous float64, discrete int64) parts."""
        X = np.asarray(X, dtype=np.float64)
        return (np.ascontiguousarray(X[:, : self.n_continuous]),
                np.ascontiguousarray(X[:, self.n_continuous:], dtype=np.int64))
