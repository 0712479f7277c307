"""The conditional-space kernel of SPEC §3 beyond the shared contract tests
(which run it on every fixture space, the conditional one included)."""
import numpy as np
import pytest
from _spaces import make_conditional_space

import fastfm as ff
from fastfm import kernels as fk
from fastfm.kernels.continuous import matern52_profile, rbf_profile


@pytest.fixture(scope="module")
def space():
    return make_conditional_space()


def _random_hierarchical(space, base, seed):
    kernel = fk.Hierarchical(space, base=base, backend="numpy")
    rng = np.random.default_rng(seed)
    b = kernel.bounds
    kernel.theta = rng.uniform(b[:, 0] + 0.2 * (b[:, 1] - b[:, 0]), b[:, 1])
    return kernel


def _explicit_embedding(space, kernel, X):
    """The embeddings of SPEC §3 written out: ω(sin πρx̂, cos πρx̂) or (0, 0) for real
    columns, ω e_v or 0 for categorical ones."""
    is_real, omega, rho_pi, *_ = kernel._args()
    active = space.active_columns(X)
    params = space.continuous_params + space.discrete_params
    blocks = []
    for i, p in enumerate(params):
        if is_real[i]:
            x_hat = X[:, i] / (1.0 if p.is_continuous else p.n_states - 1)
            block = omega[i] * np.stack([np.sin(rho_pi[i] * x_hat), np.cos(rho_pi[i] * x_hat)], axis=1)
        else:
            block = np.zeros((len(X), p.n_states))
            rows = np.flatnonzero(active[:, i])
            block[rows, X[rows, i].astype(int)] = omega[i]
        blocks.append(np.where(active[:, i, None], block, 0.0))
    return np.hstack(blocks)


@pytest.mark.parametrize("base, profile", [("rbf", rbf_profile), ("matern52", matern52_profile)])
def test_gram_equals_the_euclidean_kernel_on_explicit_embeddings(space, base, profile):
    kernel = _random_hierarchical(space, base, seed=1)
    X = space.sample_encoded(60, seed=2)
    E = _explicit_embedding(space, kernel, X)
    sq = np.sum((E[:, None, :] - E[None, :, :]) ** 2, axis=2)
    g, _ = profile(sq / kernel.lengthscale ** 2)
    np.testing.assert_allclose(kernel(X), kernel.variance * g, rtol=1e-12, atol=1e-14)


def test_weights_multiply_gamma_along_ancestors(space):
    kernel = fk.Hierarchical(space, backend="numpy")
    gamma = np.linspace(0.3, 0.9, space.n_dims)
    kernel.gamma = gamma
    _, omega, *_ = kernel._args()
    col = space.column
    expected = gamma[col("model")] * gamma[col("kernel")] * gamma[col("degree")] * gamma[col("coef0")]
    assert omega[col("coef0")] == pytest.approx(expected, rel=1e-14)
    assert omega[col("C")] == pytest.approx(gamma[col("C")], rel=1e-14)


def test_distance_cases_of_one_dimension(space):
    """d_i = 0 (both inactive), ω_i (one active), ω_i√(2 − 2cos πρΔ) (both active, real)."""
    kernel = fk.Hierarchical(space, base="rbf", lengthscale=1.0, variance=1.0, backend="numpy")
    kernel.gamma = 1.0
    _, omega, rho_pi, *_ = kernel._args()
    base = {"model": "svm", "C": 1.0, "kernel": "rbf", "gamma": 1e-2}
    other = dict(base, gamma=1e-1)
    linear = {"model": "linear", "C": 1.0}
    X = space.encode([base, other, linear])
    K = kernel(X)
    g = space.column("gamma")
    delta = X[0, g] - X[1, g]
    np.testing.assert_allclose(-2 * np.log(K[0, 1]), 2 - 2 * np.cos(rho_pi[g] * delta), rtol=1e-12)
    # svm vs linear: model differs (2ω²), kernel and gamma active in one only (ω² each)
    np.testing.assert_allclose(-2 * np.log(K[0, 2]), 2 + 1 + 1, rtol=1e-12)


def test_differences_deep_in_the_hierarchy_count_less(space):
    kernel = fk.Hierarchical(space, gamma=0.5, backend="numpy")
    config = {"model": "svm", "C": 1.0, "kernel": "poly", "gamma": 0.01, "degree": 3, "coef0": 0.2}
    X = space.encode([config, dict(config, coef0=0.5), config])
    X[2, space.column("C")] += 0.3               # the same encoded step as coef0 0.2 -> 0.5
    K = kernel(X)
    assert K[0, 1] > K[0, 2]     # the same step in coef0 (depth 4) moves k less than in C (a root)


def test_make_kernel_and_bad_arguments(space):
    assert isinstance(fk.make_kernel("hierarchical", space), fk.Hierarchical)
    with pytest.raises(ValueError, match="base"):
        fk.Hierarchical(space, base="cosine")
    with pytest.raises(ff.SpaceDefinitionError, match="gamma_bounds"):
        fk.Hierarchical(space, gamma_bounds=(0.1, 2.0))


def test_theta_layout(space):
    kernel = fk.Hierarchical(space)
    n_real = space.n_continuous + 2      # degree and n_layers are ordinal
    assert kernel.n_real == n_real
    assert [h.name for h in kernel.hyperparameters] == ["gamma", "rho", "lengthscale", "variance"]
    assert kernel.theta.shape == (space.n_dims + n_real + 2,)
    assert np.all(kernel.bounds[: space.n_dims, 1] == 0.0)       # γ ≤ 1: log upper bound 0


def test_a_space_without_real_columns_takes_its_own_empty_rho_bounds_back():
    """Its ``hyperparameters`` list rho with bounds of shape (0, 2); building the kernel again from them (as a
    converter or a clone does) raised a ValueError from np.max of an empty array."""
    space = ff.Space([ff.Categorical("c", ["a", "b"])])
    kernel = ff.kernels.Hierarchical(space)
    rho = [h for h in kernel.hyperparameters if h.name == "rho"][0]
    assert rho.bounds.shape == (0, 2)
    again = ff.kernels.Hierarchical(space, rho_bounds=rho.bounds)
    X = space.sample_encoded(4, seed=0)
    np.testing.assert_array_equal(again(X), kernel(X))
    with pytest.raises(ff.exceptions.SpaceDefinitionError, match="rho_bounds must lie in"):
        ff.kernels.Hierarchical(ff.Space([ff.Real("x", 0.0, 1.0)]), rho_bounds=(0.5, 2.0))
