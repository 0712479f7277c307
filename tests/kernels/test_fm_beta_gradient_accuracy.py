"""Accuracy of the FM kernels' β gradients where the β/σ² normaliser correction cancels.

σ² = variance / Π_p c_p(β_p) (``fastfm.kernels.fm``), so ∂K_ab/∂log β_p = σ² Q_p ∂F_p/∂log β_p
− (∂log c_p/∂log β_p)·K_ab.  At a = b both terms are of the size of K_aa, the largest entries of K, and
for a variable whose graph has constant projector diagonals (complete graphs, 2-state paths, cycles)
they cancel exactly.  With many factors K falls off steeply away from its diagonal, so the true
gradient can be 10⁻⁴ of those terms: here it is checked against a long-double reference to 1e-14 of
its own scale, and the a = b entries are checked to be exactly 0.  These are the paper's Eq. 5 kernels
(``unit_diagonal=False``); the unit-diagonal scaling on top of them is tested in test_unit_diagonal.py.
"""
import numpy as np
import pytest

import fastfm as ff
from fastfm._backends import available_backends

SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", -1.0, 1.0)]
                 + [ff.Categorical(f"c{i}", list(range(n))) for i, n in enumerate([2, 3, 5, 8, 4])]
                 + [ff.Ordinal(f"o{i}", list(range(n))) for i, n in enumerate([3, 8, 9, 2, 6])]
                 + [ff.Integer("i", 0, 10), ff.Graph("cycle", 5, [(k, (k + 1) % 5) for k in range(5)])])
CYCLE = SPACE.n_discrete - 1
# nominal variables, the 2-state ordinal and the cycle: constant projector diagonals
VERTEX_TRANSITIVE = [p for p, g in enumerate(SPACE.graphs) if g.is_complete or g.n_states == 2] + [CYCLE]
BACKENDS = [b for b in ("numpy", "cpp") if b in available_backends()]
LONG = np.longdouble


def _kernel(backend, kind="ModLap"):
    P, Dc = SPACE.n_discrete, SPACE.n_continuous
    rng = np.random.default_rng(33)
    common = dict(alpha=rng.uniform(0.1, 3.0, P), beta=rng.uniform(0.1, 3.0, P), variance=1.3, backend=backend)
    lengthscale = rng.uniform(0.2, 1.5, Dc)
    if kind == "GraphKernel":
        return ff.kernels.GraphKernel(SPACE, beta=common["beta"], variance=1.3, backend=backend)
    return ff.kernels.ModLap(SPACE, lengthscale=lengthscale, unit_diagonal=False, **common)


def _exact_projectors(p):
    """(eigenvalues, eigenprojectors) in long double: exact for complete graphs, 2-state paths and the
    5-cycle; from the float64 eigenvectors otherwise (those variables are well conditioned)."""
    spectrum = SPACE.graphs[p]
    n, values = spectrum.n_states, [LONG(v) for v in spectrum.group_values]
    J = np.full((n, n), LONG(1) / n)
    if spectrum.is_complete or n == 2:
        return values, [J, np.eye(n, dtype=LONG) - J]
    if p == CYCLE:   # eigenvalues 2 − 2cos(2πk/5): groups k = 0, {1, 4}, {2, 3}
        shift = np.subtract.outer(np.arange(n), np.arange(n)).astype(LONG)
        two_pi = 2 * np.arccos(LONG(-1))
        return values, [J] + [LONG(2) / n * np.cos(two_pi * k * shift / n) for k in (1, 2)]
    U = spectrum.eigenvectors.astype(LONG)
    starts = spectrum.group_starts
    return values, [U[:, starts[g]:starts[g + 1]] @ U[:, starts[g]:starts[g + 1]].T for g in range(len(values))]


def _reference_beta_gradients(kernel, X, W):
    """Σ_ab W_ab ∂K_ab/∂log β_p (with the normaliser) and the scale Σ_ab |W_ab ∂K_ab/∂log β_p|, per p."""
    P, Dc = SPACE.n_discrete, SPACE.n_continuous
    C, D = SPACE.split(X)
    betas = kernel._values("beta", P)
    if isinstance(kernel, ff.kernels.GraphKernel):
        R, alphas = np.zeros((len(X), len(X)), dtype=LONG), np.zeros(P)
    else:
        Cs = C.astype(LONG) / kernel._values("lengthscale", Dc).astype(LONG)
        R = sum((Cs[:, d, None] - Cs[None, :, d]) ** 2 for d in range(Dc))
        alphas = kernel._values("alpha", P)
    Fs, dFs, log_dc, normaliser = [], [], [], LONG(1)
    for p in range(P):
        values, projectors = _exact_projectors(p)
        beta, s = LONG(betas[p]), LONG(alphas[p]) * R
        F, dF, c, dc = np.zeros_like(R), np.zeros_like(R), LONG(0), LONG(0)
        for mu, projector in zip(values, projectors):   # ModLap: f = 1/(1 + βμ + s)
            weights = projector[np.ix_(D[:, p], D[:, p])]
            F += weights / (1 + beta * mu + s)
            dF += weights * (-beta * mu / (1 + beta * mu + s) ** 2)
            size = np.trace(projector)                  # |g|: c_p = (1/n) Σ_g |g| f(μ_g, 0)
            c += size / (1 + beta * mu)
            dc += size * (-beta * mu / (1 + beta * mu) ** 2)
        Fs.append(F), dFs.append(dF), log_dc.append(dc / c)
        normaliser *= c / SPACE.graphs[p].n_states
    sigma2 = LONG(kernel.variance) / normaliser          # σ² = variance / Π c_p
    WL = W.astype(LONG)
    gradients, scales = np.empty(P), np.empty(P)
    for p in range(P):
        Q = sigma2 * np.prod([Fs[q] for q in range(P) if q != p], axis=0)
        terms = WL * Q * (dFs[p] - log_dc[p] * Fs[p])
        gradients[p], scales[p] = terms.sum(), np.abs(terms).sum()
    return gradients, scales


@pytest.fixture(scope="module")
def problem():
    X = SPACE.sample_encoded(33, seed=34)
    W = np.random.default_rng(36).standard_normal((33, 33))
    return X, W + W.T


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18, reason="long double is not extended precision here")
@pytest.mark.parametrize("kind", ["ModLap", "GraphKernel"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_beta_gradients_match_a_long_double_reference(problem, backend, kind):
    X, W = problem
    kernel = _kernel(backend, kind)
    reference, scale = _reference_beta_gradients(kernel, X, W)
    # the a = b terms that cancel are 10³–10⁴ times the gradients' own scale on this space
    P = SPACE.n_discrete
    full = kernel.gradient_reduction(X, W)
    symmetric = kernel.gradient_reduction(X, W, symmetric=True)
    for got in (full, symmetric):
        beta = got[-1 - P:-1]
        np.testing.assert_array_less(np.abs(beta - reference), 1e-14 * scale)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_distance_beta_derivatives_of_vertex_transitive_variables_are_exactly_zero(problem, backend):
    X, _ = problem
    kernel = _kernel(backend)
    P = SPACE.n_discrete
    K, dK = kernel(X, eval_gradient=True)
    beta_block = dK[:, :, -1 - P:-1]
    diagonal = np.arange(len(X))
    assert np.all(beta_block[diagonal, diagonal][:, VERTEX_TRANSITIVE] == 0.0)
    assert np.all(beta_block[diagonal, diagonal][:, [p for p in range(P) if p not in VERTEX_TRANSITIVE]] != 0.0)
    # a diagonal W weighs only a = b pairs
    w = np.random.default_rng(1).standard_normal(len(X))
    gradient = kernel.gradient_reduction(X, np.diag(w))
    assert np.all(gradient[-1 - P:-1][VERTEX_TRANSITIVE] == 0.0)
    np.testing.assert_allclose(gradient[-1], np.sum(w * np.diag(K)), rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_likelihood_terms_agree_with_the_kernel_and_restore_w(problem, backend):
    """The GP's fast path zeroes W's diagonal in place for the backend call: same sums, W restored bit for bit."""
    X, W = problem
    kernel = _kernel(backend)
    terms = kernel._likelihood_terms(X)
    terms.gram(kernel.theta)
    W_before = W.copy()
    fast = terms.reduction(W)
    np.testing.assert_array_equal(W, W_before)
    expected = kernel.gradient_reduction(X, W, symmetric=True)
    _, dK = kernel(X, eval_gradient=True)
    scale = np.sum(np.abs(W[:, :, None] * dK), axis=(0, 1))
    np.testing.assert_array_less(np.abs(fast - expected), 1e-13 * (np.abs(expected) + scale))
