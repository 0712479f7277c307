"""Graphs of discrete variables and their Laplacian spectra (SPEC §1).

Each discrete variable p carries a connected undirected graph G_p on its n_p
states.  Its Laplacian L_p = U_p diag(λ^p) U_pᵀ is decomposed once and cached;
the product graph (Π n_p vertices) is never formed.

Equal eigenvalues are grouped: Σ_i U[v,i] f(λ_i) U[v',i] = Σ_g f(μ_g) P_g[v,v'],
with P_g the eigenprojector of the distinct eigenvalue μ_g.  A complete graph
has two groups (0 and n), which makes a nominal factor O(1) per pair.
"""
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ..exceptions import SpaceDefinitionError

__all__ = ["GraphSpectrum", "complete_graph_spectrum", "path_graph_spectrum", "custom_graph_spectrum",
           "graph_spectrum_from_adjacency"]

# Relative tolerance under which two eigenvalues are treated as equal.
_EIGENVALUE_GROUP_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class GraphSpectrum:
    """Eigendecomposition of one variable's graph Laplacian.

    Attributes
    ----------
    kind : {"complete", "path", "custom"}
    n_states : int
    eigenvalues : ndarray of shape (n_states,)
        Ascending.
    eigenvectors : ndarray of shape (n_states, n_states)
        Orthonormal columns, ``eigenvectors[v, i]`` is U[v, i].
    group_values : ndarray of shape (n_groups,)
        The distinct eigenvalues μ_g, ascending.
    group_starts : ndarray of shape (n_groups + 1,)
        Eigenvalues ``group_starts[g]:group_starts[g+1]`` all equal μ_g.
    normalized : bool
        True for the symmetric normalised Laplacian I - D^-1/2 A D^-1/2.
    """

    kind: str
    n_states: int
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    group_values: np.ndarray
    group_starts: np.ndarray
    normalized: bool = False
    _projectors: list = field(default=None, repr=False)

    @property
    def n_groups(self):
        return len(self.group_values)

    @property
    def is_complete(self):
        return self.kind == "complete"

    def projector(self, g):
        """Eigenprojector P_g = U_g U_gᵀ of group ``g``, shape (n_states, n_states)."""
        u = self.eigenvectors[:, self.group_starts[g] : self.group_starts[g + 1]]
        return u @ u.T

    def projectors(self):
        """All eigenprojectors, shape (n_groups, n_states, n_states)."""
        return np.stack([self.projector(g) for g in range(self.n_groups)])

    def laplacian(self):
        """Rebuild L = U diag(λ) Uᵀ (for tests and diagnostics)."""
        return (self.eigenvectors * self.eigenvalues) @ self.eigenvectors.T

    def apply(self, f_values):
        """Return the matrix Σ_g f_values[g] P_g, i.e. U f(Λ) Uᵀ with f evaluated per group."""
        f_values = np.asarray(f_values, dtype=float)
        sizes = np.diff(self.group_starts)
        return (self.eigenvectors * np.repeat(f_values, sizes)) @ self.eigenvectors.T


def _group(eigenvalues):
    """Indices where a new distinct eigenvalue starts, and the group values."""
    scale = max(1.0, float(np.max(np.abs(eigenvalues))))
    new_group = np.empty(len(eigenvalues), dtype=bool)
    new_group[0] = True
    new_group[1:] = np.diff(eigenvalues) > _EIGENVALUE_GROUP_RTOL * scale
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(eigenvalues))
    values = np.array([eigenvalues[s:e].mean() for s, e in zip(starts, ends)])
    return values, np.append(starts, len(eigenvalues)).astype(np.int64)


def _from_laplacian(kind, laplacian, normalized):
    eigenvalues, eigenvectors = np.linalg.eigh(laplacian)
    eigenvalues = np.where(np.abs(eigenvalues) < 1e-12 * max(1.0, eigenvalues[-1]), 0.0, eigenvalues)
    values, starts = _group(eigenvalues)
    return GraphSpectrum(kind, laplacian.shape[0], eigenvalues, eigenvectors, values, starts, normalized)


def _laplacian(adjacency, normalized):
    degree = adjacency.sum(axis=1)
    if not normalized:
        return np.diag(degree) - adjacency
    inv_sqrt = 1.0 / np.sqrt(degree)
    return np.eye(len(degree)) - inv_sqrt[:, None] * adjacency * inv_sqrt[None, :]


def graph_spectrum_from_adjacency(adjacency, normalized=False):
    """Spectrum of a connected graph given by its symmetric, non-negative adjacency matrix."""
    return _from_laplacian("custom", _laplacian(np.asarray(adjacency, dtype=float), normalized), normalized)


def complete_graph_spectrum(n_states, normalized=False):
    """Spectrum of the complete graph K_n (nominal variables).

    Unnormalised: eigenvalue 0 once (constant eigenvector) and n with
    multiplicity n-1, so the two projectors are 11ᵀ/n and I - 11ᵀ/n.
    """
    if n_states == 1:
        return GraphSpectrum("complete", 1, np.zeros(1), np.ones((1, 1)), np.zeros(1), np.array([0, 1]), normalized)
    adjacency = np.ones((n_states, n_states)) - np.eye(n_states)
    spectrum = _from_laplacian("complete", _laplacian(adjacency, normalized), normalized)
    # The closed form is exact; replace the rounded eigenvalues by it.
    top = n_states / (n_states - 1.0) if normalized else float(n_states)
    eigenvalues = np.r_[0.0, np.full(n_states - 1, top)]
    return GraphSpectrum(
        "complete", n_states, eigenvalues, spectrum.eigenvectors, np.array([0.0, top]),
        np.array([0, 1, n_states], dtype=np.int64), normalized,
    )


def path_graph_spectrum(n_states, normalized=False):
    """Spectrum of the path graph P_n (ordinal variables).

    Unnormalised: λ_k = 2 - 2 cos(πk/n) with the DCT-II eigenvectors
    U[v, k] = c_k cos(πk(v + 1/2)/n), c_0 = sqrt(1/n), c_k = sqrt(2/n).
    """
    if n_states == 1:
        return GraphSpectrum("path", 1, np.zeros(1), np.ones((1, 1)), np.zeros(1), np.array([0, 1]), normalized)
    if normalized:
        adjacency = np.eye(n_states, k=1) + np.eye(n_states, k=-1)
        return _from_laplacian("path", _laplacian(adjacency, True), True)
    k = np.arange(n_states)
    eigenvalues = 2.0 - 2.0 * np.cos(np.pi * k / n_states)
    eigenvalues[0] = 0.0
    v = np.arange(n_states)[:, None]
    eigenvectors = np.sqrt(2.0 / n_states) * np.cos(np.pi * k[None, :] * (v + 0.5) / n_states)
    eigenvectors[:, 0] = np.sqrt(1.0 / n_states)
    # path-graph eigenvalues are all distinct
    return GraphSpectrum("path", n_states, eigenvalues, eigenvectors, eigenvalues.copy(),
                         np.arange(n_states + 1, dtype=np.int64), False)


def _is_index(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _same_label(a, b):
    if isinstance(a, (bool, np.bool_)) != isinstance(b, (bool, np.bool_)):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _resolve_vertex(name, n_states, edge, vertex, labels):
    """Index of ``vertex``: an integer index in [0, n_states), or (when labels are given) a label."""
    if _is_index(vertex):
        if 0 <= vertex < n_states:
            return int(vertex)
    elif labels is not None:
        matches = [i for i, label in enumerate(labels) if _same_label(vertex, label)]
        if len(matches) == 1:
            return matches[0]
    known = f"an integer in [0, {n_states - 1}]" + ("" if labels is None else f" or one of the labels {labels!r}")
    raise SpaceDefinitionError(
        f"Graph {name!r}: edge {edge!r} names vertex {vertex!r}, which is not {known}")


def _check_weight(name, edge, weight):
    try:
        w = float(weight)
    except (TypeError, ValueError, OverflowError):
        w = None
    if isinstance(weight, (bool, np.bool_)) or w is None or not np.isfinite(w) or w <= 0:
        raise SpaceDefinitionError(
            f"Graph {name!r}: edge {edge!r} has weight {weight!r}; weights must be finite numbers > 0")
    return w


def _as_list(name, value, what, items):
    """``value`` as a list, or SpaceDefinitionError when it is not a sequence (a string or None is not one here)."""
    if value is None or isinstance(value, (str, bytes)):
        raise SpaceDefinitionError(f"Graph {name!r}: {what} must be a sequence of {items}, got {value!r}")
    try:
        return list(value)
    except TypeError:
        raise SpaceDefinitionError(f"Graph {name!r}: {what} must be a sequence of {items}, got {value!r}") from None


def normalise_edges(name, n_states, edges, weights=None, labels=None):
    """Validate a user edge list; return (edges as sorted index pairs, weights as floats), one entry per edge.

    An edge is a pair ``(u, v)`` or a triple ``(u, v, weight)`` (only when ``weights`` is not given);
    ``u`` and ``v`` are vertex indices, or labels when ``labels`` are given.  Weights must be finite
    and > 0 (default 1).  Self-loops, and the same edge given twice with different weights, are
    rejected; the same edge given twice with the same weight counts once.

    Raises
    ------
    SpaceDefinitionError
        Naming the graph, the offending edge and the offending value.
    """
    edges = _as_list(name, edges, "edges", "(u, v) pairs")
    if weights is not None:
        weights = _as_list(name, weights, "weights", "numbers")
        if len(weights) != len(edges):
            raise SpaceDefinitionError(
                f"Graph {name!r}: got {len(weights)} weights for {len(edges)} edges (weights={weights!r})")
    seen = {}
    for i, edge in enumerate(edges):
        if isinstance(edge, (str, bytes)) or not isinstance(edge, (tuple, list, np.ndarray)) or len(edge) not in (2, 3):
            raise SpaceDefinitionError(
                f"Graph {name!r}: edge {edge!r} is not a pair (u, v) or a triple (u, v, weight)")
        edge = tuple(edge.tolist() if isinstance(edge, np.ndarray) else edge)
        if len(edge) == 3:
            if weights is not None:
                raise SpaceDefinitionError(
                    f"Graph {name!r}: edge {edge!r} carries a weight and weights= is given too; use one or the other")
            weight = edge[2]
        else:
            weight = 1.0 if weights is None else weights[i]
        a = _resolve_vertex(name, n_states, edge, edge[0], labels)
        b = _resolve_vertex(name, n_states, edge, edge[1], labels)
        if a == b:
            raise SpaceDefinitionError(f"Graph {name!r}: self-loop edge {edge!r} (vertex {a}) is not allowed")
        w = _check_weight(name, edge, weight)
        key = (min(a, b), max(a, b))
        if key in seen and seen[key][0] != w:
            raise SpaceDefinitionError(
                f"Graph {name!r}: edge {edge!r} repeats edge {seen[key][1]!r} with a different weight "
                f"({w!r} vs {seen[key][0]!r})")
        seen.setdefault(key, (w, edge))
    return list(seen), [w for w, _ in seen.values()]


def custom_graph_spectrum(name, n_states, edges, weights=None, normalized=False, labels=None):
    """Spectrum of a user graph given by an edge list with optional positive weights.

    Raises
    ------
    SpaceDefinitionError
        If an edge is malformed or names a missing vertex, is a self-loop or a conflicting
        duplicate, a weight is not a finite number > 0, or the graph is not connected.
    """
    edges, weights = normalise_edges(name, n_states, edges, weights, labels)
    if n_states == 1:
        # a single state: L = 0 (also normalised, where D^-1/2 is undefined), as for K_1 and P_1
        return GraphSpectrum("custom", 1, np.zeros(1), np.ones((1, 1)), np.zeros(1), np.array([0, 1]), normalized)
    adjacency = np.zeros((n_states, n_states))
    for (a, b), w in zip(edges, weights):
        adjacency[a, b] = adjacency[b, a] = w
    n_components, _ = connected_components(csr_matrix(adjacency > 0), directed=False)
    if n_components != 1:
        raise SpaceDefinitionError(
            f"Graph {name!r} is disconnected ({n_components} components among its {n_states} states); "
            "every state must be reachable through edges of positive weight")
    return _from_laplacian("custom", _laplacian(adjacency, normalized), normalized)
