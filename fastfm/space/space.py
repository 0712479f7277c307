"""The search space: an ordered set of parameters and the config <-> array codec.

Encoded layout (float64, shape (n_points, n_continuous + n_discrete)):
the unit-scaled continuous columns first, in declaration order (a ``Set`` takes
n_points·dim of them, point after point), then one column of integer state
indices per discrete variable, in declaration order.
Nothing below ``Space`` sees a config dict.
"""
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..exceptions import (InvalidConfigError, InvalidValueError, MissingParameterError, OutOfBoundsError,
                          SpaceDefinitionError, UnknownParameterError)
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
        # encoded columns of each parameter: an int, or a slice for a multi-column Set
        self._column, self._column_owner = {}, []
        for p in self.continuous_params + self.discrete_params:
            start = len(self._column_owner)
            self._column[p.name] = start if p.n_columns == 1 else slice(start, start + p.n_columns)
            self._column_owner += [p] * p.n_columns
        self._by_name = {p.name: p for p in parameters}

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

    @property
    def n_continuous(self):
        """Number of continuous encoded columns (a Set counts n_points·dim)."""
        return sum(p.n_columns for p in self.continuous_params)

    @property
    def set_params(self):
        """The set-valued parameters (``Set``), in declaration order."""
        return [p for p in self.continuous_params if isinstance(p, Set)]

    def canonical(self, X):
        """Encoded points with every Set's points in canonical (lexicographic) order, same shape as X."""
        X = np.array(X, dtype=np.float64)
        rows = X.reshape(-1, self.n_dims)
        for p in self.set_params:
            rows[:, self._column[p.name]] = p.canonical_codes(rows[:, self._column[p.name]])
        return X

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
        """Number of states of each discrete variable, in column order."""
        return np.array([p.n_states for p in self.discrete_params], dtype=np.int64)

    def column(self, name):
        """The encoded column of parameter ``name`` (a slice of columns for a Set)."""
        self[name]
        return self._column[name]

    @property
    def graphs(self):
        """Laplacian spectrum of each discrete variable (cached per variable)."""
        return [p.spectrum for p in self.discrete_params]

    @cached_property
    def packed_spectra(self):
        """The spectra in the flat layout the compute backends take."""
        return PackedSpectra.from_spectra(self.graphs)

    @cached_property
    def neighbours(self):
        """Per discrete variable, ``neighbours[p][v]`` is the array of states adjacent to v."""
        result = []
        for spectrum in self.graphs:
            laplacian = spectrum.laplacian()
            adjacent = (np.abs(laplacian) > 1e-10) & ~np.eye(spectrum.n_states, dtype=bool)
            result.append([np.flatnonzero(row) for row in adjacent])
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
        for p in self.parameters:
            if p.name not in config:
                raise MissingParameterError(f"config is missing parameter {p.name!r}", p.name)
            x[self._column[p.name]] = p.encode_value(config[p.name])
        return x

    def decode(self, X):
        """Decode an encoded array back to config dicts (inverse of :meth:`encode`)."""
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            return self._decode_one(self.validate_encoded(X[None, :])[0])
        return [self._decode_one(x) for x in self.validate_encoded(X)]

    def _decode_one(self, x):
        return {p.name: p.decode_value(x[self._column[p.name]]) for p in self.parameters}

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
        return np.ascontiguousarray(X)

    def _name_of_column(self, col):
        return self._column_owner[col].name

    # --------------------------------------------------------------- sampling
    def sample_encoded(self, n, seed=None):
        """``n`` uniformly random points, encoded, shape (n, n_dims)."""
        rng = np.random.default_rng(seed)
        X = np.empty((int(n), self.n_dims))
        for p in self.parameters:
            X[:, self._column[p.name]] = p.sample_codes(rng, int(n))
        return X

    def sample(self, n, seed=None):
        """``n`` uniformly random configs (log-scaled Reals are uniform in log space)."""
        return self.decode(self.sample_encoded(n, seed)) if n > 0 else []

    def split(self, X):
        """Split an encoded array into (continuous float64, discrete int64) parts."""
        X = np.asarray(X, dtype=np.float64)
        return (np.ascontiguousarray(X[:, : self.n_continuous]),
                np.ascontiguousarray(X[:, self.n_continuous:], dtype=np.int64))
