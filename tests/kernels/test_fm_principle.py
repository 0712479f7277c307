"""The frequency modulation principle (paper Thm. 3.2): ModLap factors are non-negative and
the kernel does not increase as the continuous distance grows; ModDif violates it."""
import numpy as np
import pytest

import fastfm as ff
from _spaces import SPACES
from fastfm import kernels as fk
from fastfm._backends import numpy_backend
from fastfm._backends.modulation import DIFFUSION, LAP_FAMILY, Modulation


@pytest.mark.parametrize("modulation", [Modulation(LAP_FAMILY), Modulation(LAP_FAMILY, (0.2, 1.0, 3.0), 1.5)],
                         ids=["ModLap", "generalised"])
def test_fm_factors_are_non_negative(space, rng, modulation):
    spectra = space.packed_spectra
    s = rng.exponential(2.0, size=(1, 64))
    for p, n in enumerate(spectra.n_states):
        v = np.arange(n)
        for beta in (1e-3, 0.3, 5.0, 100.0):
            for v1 in v:
                F, _, _ = numpy_backend._factor(spectra, p, np.array([v1]), v, np.repeat(s, n, 0)[:1].T @ np.ones((1, n)),
                                                beta, modulation, False)
                assert F.min() >= -1e-14


@pytest.mark.parametrize("factory", [fk.ModLap, lambda s, **k: fk.FMKernel(s, coefficients=(0.5, 2.0), exponent=1.0, **k)],
                         ids=["ModLap", "generalised"])
@pytest.mark.parametrize("space_name", [n for n, s in SPACES.items() if s.n_continuous > 0])
def test_kernel_does_not_increase_with_continuous_distance(space_name, rng, factory):
    space = SPACES[space_name]
    kernel = factory(space, backend="numpy")
    kernel.theta = rng.uniform(kernel.bounds[:, 0] * 0.5, kernel.bounds[:, 1] * 0.5)
    base = space.sample_encoded(200, seed=11)
    partner = space.sample_encoded(200, seed=12)
    far = partner.copy()
    # move the partner's continuous part away from base along the same direction
    cont = space.continuous_dims
    direction = partner[:, cont] - base[:, cont]
    far[:, cont] = base[:, cont] + direction * rng.uniform(1.0, 3.0, size=(200, 1))
    inside = np.all((far[:, cont] >= 0) & (far[:, cont] <= 1), axis=1)
    near_k = np.einsum("ii->i", kernel(base[inside], partner[inside]))
    far_k = np.einsum("ii->i", kernel(base[inside], far[inside]))
    assert inside.sum() > 20
    assert np.all(far_k <= near_k * (1 + 1e-12) + 1e-300)


def test_moddif_violates_the_principle_on_a_concrete_pair():
    """For v ≠ v' on a complete graph the ModDif factor is (1 − exp(−(1+αd²)βn))/n, which GROWS with d."""
    space = ff.Space([ff.Real("c", 0.0, 1.0), ff.Categorical("v", ["a", "b", "c"])])
    x = space.encode([{"c": 0.0, "v": "a"}])
    near = space.encode([{"c": 0.0, "v": "b"}])
    far = space.encode([{"c": 1.0, "v": "b"}])
    dif = fk.ModDif(space, lengthscale=0.5, alpha=1.0, beta=0.2)
    lap = fk.ModLap(space, lengthscale=0.5, alpha=1.0, beta=0.2)
    assert dif(x, far)[0, 0] > dif(x, near)[0, 0] * 1.5       # more distant, MORE similar: violation
    assert lap(x, far)[0, 0] < lap(x, near)[0, 0]              # ModLap behaves as a similarity


def test_complete_graph_factor_closed_form_matches_eigen_sum(rng):
    space = ff.Space([ff.Real("c", 0, 1), ff.Categorical("v", list(range(7)))])
    kernel = fk.ModLap(space, lengthscale=0.3, alpha=2.0, beta=0.4, variance=1.0, backend="numpy")
    X = space.sample_encoded(50, seed=4)
    K = kernel(X)
    d2 = ((X[:, None, 0] - X[None, :, 0]) / 0.3) ** 2
    n = 7
    f0 = 1.0 / (1.0 + 2.0 * d2)
    fn = 1.0 / (1.0 + 0.4 * n + 2.0 * d2)
    same = X[:, None, 1] == X[None, :, 1]
    factor = f0 / n + fn * (same - 1.0 / n)
    c = (1.0 / 1.0 + (n - 1) / (1.0 + 0.4 * n)) / n      # mean diagonal at d = 0 (variance parameterisation)
    np.testing.assert_allclose(K, factor / c, rtol=1e-12)


def test_modlap_on_a_conditional_space_is_a_psd_similarity():
    """SPEC §3: inactive continuous dims embed to 0, inactive discrete variables take an
    extra graph vertex; the FM kernel stays PD and a similarity measure (Thm. 3.2)."""
    from _spaces import make_conditional_space
    space = make_conditional_space()
    kernel = fk.ModLap(space, backend="numpy", alpha=2.0, beta=0.5)
    X = space.sample_encoded(250, seed=5)
    K = kernel(X)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    assert K.min() >= 0.0                                        # every factor ≥ 0 (FM-P3)
    d = np.sqrt(np.diag(K))
    assert np.all(K <= np.outer(d, d) * (1 + 1e-12))
    # an active continuous value moving away lowers the similarity; both inactive: no effect
    config = {"model": "svm", "C": 1.0, "kernel": "rbf", "gamma": 0.01}
    values = [kernel(space.encode([config]), space.encode([dict(config, gamma=g)]))[0, 0]
              for g in (0.01, 0.02, 0.1, 0.5)]
    assert np.all(np.diff(values) < 0)
    linear = space.encode([{"model": "linear", "C": 1.0}, {"model": "linear", "C": 1.0}])
    assert kernel(linear)[0, 1] == pytest.approx(kernel(linear)[0, 0], rel=1e-14)


@pytest.mark.parametrize("kernel_class", [fk.ModLap, fk.ModDif])
def test_variance_normalisers_of_several_kernels_in_one_pass(kernel_class):
    """fm.NormaliserLayout over several spaces' spectra gives every variable's c_p(β_p) = mean over states of
    F_p(v, v, 0 | β_p) and ∂log c_p/∂log β_p (finite differences), as each kernel's own normaliser does."""
    from fastfm.kernels.fm import NormaliserLayout
    spaces = [ff.Space([ff.Real("x", 0, 1), ff.Integer("i", 0, 5), ff.Categorical("a", list("abcd"))]),
              ff.Space([ff.Ordinal("o", [1, 2, 3]), ff.Graph("g", 4, [(0, 1), (1, 2), (2, 3), (0, 2)])])]
    kernels = [kernel_class(space) for space in spaces]
    betas = np.array([0.3, 2.0, 0.7, 5.0])
    modulation = kernels[0]._modulation
    c, dlog_c = NormaliserLayout([space.packed_spectra for space in spaces]).factors(modulation, betas)
    start = 0
    for space, kernel in zip(spaces, kernels):
        P = space.n_discrete
        own_product, own_dlog = kernel._normaliser_at(betas[start:start + P])
        assert own_product == pytest.approx(np.prod(c[start:start + P]), rel=1e-14)
        np.testing.assert_allclose(dlog_c[start:start + P], own_dlog, rtol=1e-14)
        for p, graph in enumerate(space.graphs):
            beta = betas[start + p]
            diagonal = [modulation.value(graph.eigenvalues, 0.0, beta) @ graph.eigenvectors[v] ** 2
                        for v in range(graph.n_states)]
            assert c[start + p] == pytest.approx(np.mean(diagonal), rel=1e-12)
            step = 1e-6
            up, down = (np.mean([modulation.value(graph.eigenvalues, 0.0, beta * np.exp(s)) @ graph.eigenvectors[v] ** 2
                                 for v in range(graph.n_states)]) for s in (step, -step))
            assert dlog_c[start + p] == pytest.approx((np.log(up) - np.log(down)) / (2 * step), rel=1e-6, abs=1e-9)
        start += P
