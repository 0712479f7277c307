import numpy as np
import pytest
from scipy.fft import dct

import fastfm as ff
from fastfm.exceptions import SpaceDefinitionError
from fastfm.space import complete_graph_spectrum, custom_graph_spectrum, path_graph_spectrum


def _laplacian(adjacency):
    return np.diag(adjacency.sum(1)) - adjacency


@pytest.mark.parametrize("n", [1, 2, 3, 7, 17])
def test_complete_graph_closed_form_equals_full_eigensum(n):
    spectrum = complete_graph_spectrum(n)
    rng = np.random.default_rng(n)
    # any f: compare Σ_i U f(λ_i) Uᵀ with the two-group closed form f(0)/n + f(n)(δ - 1/n)
    shift = rng.uniform()
    f = lambda lam: 1.0 / (1.0 + 0.7 * lam + shift)  # noqa: E731
    full = spectrum.eigenvectors @ np.diag(f(spectrum.eigenvalues)) @ spectrum.eigenvectors.T
    closed = f(0.0) / n + f(float(n)) * (np.eye(n) - 1.0 / n) if n > 1 else np.array([[f(0.0)]])
    np.testing.assert_allclose(full, closed, atol=1e-13)
    assert spectrum.n_groups == min(n, 2)
    np.testing.assert_allclose(spectrum.laplacian(), _laplacian(np.ones((n, n)) - np.eye(n)), atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 8, 30])
def test_path_graph_eigenvectors_are_dct2_basis(n):
    spectrum = path_graph_spectrum(n)
    # orthonormal DCT-II matrix: row k holds basis vector k
    basis = dct(np.eye(n), type=2, norm="ortho", axis=0)
    np.testing.assert_allclose(spectrum.eigenvectors, basis.T, atol=1e-12)
    adjacency = np.eye(n, k=1) + np.eye(n, k=-1)
    np.testing.assert_allclose(spectrum.laplacian(), _laplacian(adjacency), atol=1e-12)
    lam = np.linalg.eigvalsh(_laplacian(adjacency))
    np.testing.assert_allclose(spectrum.eigenvalues, lam, atol=1e-12)


def test_custom_graph_groups_repeated_eigenvalues():
    n = 6
    spectrum = custom_graph_spectrum("cycle", n, [(i, (i + 1) % n) for i in range(n)])
    # the 6-cycle has eigenvalues 2 - 2cos(2πk/6): 0, 1, 1, 3, 3, 4
    np.testing.assert_allclose(spectrum.group_values, [0.0, 1.0, 3.0, 4.0], atol=1e-12)
    np.testing.assert_array_equal(np.diff(spectrum.group_starts), [1, 2, 2, 1])
    projectors = spectrum.projectors()
    np.testing.assert_allclose(projectors.sum(0), np.eye(n), atol=1e-12)
    for g, P in enumerate(projectors):
        np.testing.assert_allclose(P @ P, P, atol=1e-12)


def test_weighted_and_normalized_laplacian():
    edges, weights = [(0, 1), (1, 2), (0, 2)], [1.0, 2.0, 3.0]
    spectrum = custom_graph_spectrum("tri", 3, edges, weights)
    A = np.zeros((3, 3))
    for (a, b), w in zip(edges, weights):
        A[a, b] = A[b, a] = w
    np.testing.assert_allclose(spectrum.laplacian(), _laplacian(A), atol=1e-12)
    normalized = custom_graph_spectrum("tri", 3, edges, weights, normalized=True)
    d = A.sum(1)
    expected = np.eye(3) - A / np.sqrt(np.outer(d, d))
    np.testing.assert_allclose(normalized.laplacian(), expected, atol=1e-12)


def test_disconnected_graph_is_rejected_with_its_name():
    with pytest.raises(SpaceDefinitionError, match="'g'.*disconnected"):
        ff.Graph("g", n_states=4, edges=[(0, 1), (2, 3)])


@pytest.mark.parametrize("edges, match", [([(0, 5)], "vertex 5"), ([(1, 1)], "self-loop")])
def test_bad_edges_are_rejected(edges, match):
    with pytest.raises(SpaceDefinitionError, match=match):
        ff.Graph("g", n_states=3, edges=edges)


def test_negative_weight_is_rejected():
    with pytest.raises(SpaceDefinitionError, match="weight"):
        ff.Graph("g", n_states=2, edges=[(0, 1)], weights=[-1.0])
