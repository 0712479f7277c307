"""SetCrowdingKernel: the crowding w of a set, the kernel's contract (symmetry, PSD, gradients against finite
differences) and the GP's posterior input gradient through its non-constant diagonal."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.exceptions import InvalidConfigError, SpaceDefinitionError
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.solvers.cholesky import probe_diag
from fastfm.kernels import SetCrowdingKernel, set_space_kernel
from fastfm.kernels.set_crowding import crowding_and_gradient
from fastfm.kernels.sets import SpaceSum

SPACES = {
    "set_only": ff.Space([ff.Set("s", n_points=5, dim=2, low=-1.0, high=1.0)]),
    "mixed": ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("s", n_points=3, dim=2), ff.Categorical("c", list("abc"))]),
}


@pytest.fixture(params=sorted(SPACES), ids=sorted(SPACES))
def space(request):
    return SPACES[request.param]


def _crowded_sample(space, n, seed):
    """Random points of ``space``, the first two with two of the Set's points (nearly) coincident."""
    X = space.sample_encoded(n, seed=seed)
    columns = np.arange(space.n_dims)[space.column("s")]
    X[0, columns[2:4]] = X[0, columns[0:2]] + 0.003
    X[1, columns[2:4]] = X[1, columns[0:2]]
    return X


@pytest.mark.parametrize("m", [2, 5, 12])
def test_crowding_counts_the_points_lost(m):
    """w = m − m²/Σ_ij k_ij: 0 for points far apart, 2m/(m + 2) for one coincident pair, m − 1 for m copies."""
    spread = np.stack([np.arange(m, dtype=float), np.zeros(m)], axis=1)[None]        # 1 apart, h = 0.01
    pair = spread.copy()
    pair[0, 1] = pair[0, 0]
    copies = np.zeros((1, m, 2))
    w, _ = crowding_and_gradient(np.concatenate([spread, pair, copies]), 0.01, with_gradient=False)
    np.testing.assert_allclose(w, [0.0, 2.0 * m / (m + 2.0), m - 1.0], rtol=1e-12, atol=1e-12)


def test_crowding_gradient_matches_finite_differences():
    sets = np.random.default_rng(0).random((7, 6, 3))
    sets[0, 1] = sets[0, 0] + 0.01
    w, dw = crowding_and_gradient(sets, 0.05)
    numeric = np.zeros_like(dw)
    eps = 1e-6
    for index in np.ndindex(sets.shape[1:]):
        plus, minus = sets.copy(), sets.copy()
        plus[(slice(None),) + index] += eps
        minus[(slice(None),) + index] -= eps
        numeric[(slice(None),) + index] = (crowding_and_gradient(plus, 0.05, False)[0]
                                           - crowding_and_gradient(minus, 0.05, False)[0]) / (2 * eps)
    np.testing.assert_allclose(dw, numeric, rtol=1e-6, atol=1e-8)
    assert np.abs(dw[0]).max() > 1.0      # the crowded set's gradient is not trivially zero


def test_gram_is_symmetric_psd_and_permutation_invariant(space):
    kernel = SetCrowdingKernel(space, variance=1.7)
    X = _crowded_sample(space, 40, seed=1)
    K = kernel(X)
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() >= -1e-12 * np.trace(K)
    np.testing.assert_allclose(kernel.diag(X), np.diag(K), rtol=1e-14)
    param = space["s"]
    block = X[:, space.column("s")].reshape(len(X), param.n_points, param.dim)
    shuffled = X.copy()
    shuffled[:, space.column("s")] = block[:, ::-1].reshape(len(X), -1)
    np.testing.assert_allclose(kernel(shuffled, X), K, rtol=1e-12)
    assert K[0, 0] > 10 * np.median(np.diag(K))     # the crowded sets stand out


def test_hyperparameter_and_input_gradients_match_finite_differences(space):
    kernel = SpaceSum(set_space_kernel("modlap", space), SetCrowdingKernel(space, variance=1.3), space)
    X, Y = _crowded_sample(space, 6, seed=2), space.sample_encoded(4, seed=3)
    eps = 1e-6
    K, dK = kernel.gram_and_input_gradient(X, Y)
    numeric = np.zeros_like(dK)
    for c in range(space.n_continuous):
        plus, minus = X.copy(), X.copy()
        plus[:, c] += eps
        minus[:, c] -= eps
        numeric[:, :, c] = (kernel(plus, Y) - kernel(minus, Y)) / (2 * eps)
    np.testing.assert_allclose(dK, numeric, rtol=1e-5, atol=1e-7)
    crowding = kernel.k2
    _, gradient = crowding(X, eval_gradient=True)
    theta = crowding.theta.copy()
    crowding.theta = theta + eps
    plus = crowding(X)
    crowding.theta = theta - eps
    minus = crowding(X)
    crowding.theta = theta
    np.testing.assert_allclose(gradient[:, :, 0], (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-9)
    W = np.random.default_rng(4).standard_normal((len(X), len(X)))
    np.testing.assert_allclose(crowding.gradient_reduction(X, W), np.einsum("ab,abj->j", W, gradient), rtol=1e-12)


def test_diagonal_gradient_is_exact_and_declared(space):
    """k(x, x) = σ² w² moves with the points but not with a common shift of them, which a probe of shifted
    points can miss: the kernel declares it, and gives ∂k(x, x)/∂c exactly."""
    kernel = SpaceSum(set_space_kernel("modlap", space), SetCrowdingKernel(space, variance=1.3), space)
    X = _crowded_sample(space, 5, seed=5)
    assert kernel.diag_varies_with_continuous and probe_diag(kernel, X)
    assert not probe_diag(set_space_kernel("modlap", space), X)
    exact = kernel.diag_input_gradient(X, space.n_continuous)
    numeric = super(SpaceSum, kernel).diag_input_gradient(X, space.n_continuous)    # the base class's differences
    np.testing.assert_allclose(exact, numeric, rtol=1e-5, atol=1e-6)
    assert np.abs(exact[:2]).max() > 1.0


def test_posterior_input_gradient_through_the_diagonal():
    space = SPACES["set_only"]
    X = _crowded_sample(space, 25, seed=6)
    y = np.random.default_rng(7).standard_normal(len(X)) + 2.0 * (np.arange(len(X)) < 2)
    kernel = set_space_kernel("modlap", space, crowding=True)
    gp = GaussianProcessRegressor(kernel=kernel, n_restarts=0, random_state=0).fit(X, y)
    test = _crowded_sample(space, 4, seed=8)
    mu, sigma, dmu, dsigma = gp.predict_standardized_with_input_gradient(test)
    eps = 1e-6
    for c in range(space.n_continuous):
        plus, minus = test.copy(), test.copy()
        plus[:, c] += eps
        minus[:, c] -= eps
        mu_p, sigma_p = gp.predict_standardized(plus)
        mu_m, sigma_m = gp.predict_standardized(minus)
        np.testing.assert_allclose(dmu[:, c], (mu_p - mu_m) / (2 * eps), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(dsigma[:, c], (sigma_p - sigma_m) / (2 * eps), rtol=1e-4, atol=1e-6)


def test_set_space_kernel_adds_one_crowding_term_per_set():
    space = ff.Space([ff.Set("s", n_points=2, dim=3), ff.Set("t", n_points=3, dim=1), ff.Ordinal("o", [1, 2, 4])])
    text = repr(set_space_kernel("modlap", space, crowding=True))
    assert text.count("SetCrowdingKernel(parameter='s'") == 1 and text.count("SetCrowdingKernel(parameter='t'") == 1
    assert "SetCrowdingKernel" not in repr(set_space_kernel("modlap", space))


def test_bad_inputs_name_the_problem():
    space = ff.Space([ff.Set("s", n_points=2, dim=2), ff.Set("t", n_points=2, dim=2)])
    with pytest.raises(SpaceDefinitionError, match="parameter="):
        SetCrowdingKernel(space)
    with pytest.raises(SpaceDefinitionError, match="'x' is not a Set"):
        SetCrowdingKernel(ff.Space([ff.Real("x", 0, 1), ff.Set("s", n_points=2, dim=2)]), parameter="x")
    with pytest.raises(InvalidConfigError, match="X must have shape"):
        SetCrowdingKernel(space, parameter="s")(np.zeros((3, 5)))


def test_bo_runs_with_the_crowding_term():
    """An ask/tell loop on a set space with the term: every told value is kept, the asks are valid sets."""
    from fastfm.benchmarks import get_problem
    problem = get_problem("setchamfer")
    optimizer = ff.Optimizer(problem.space, kernel=set_space_kernel("modlap", problem.space, crowding=True),
                             n_init=5, seed=0)
    for _ in range(9):
        config = optimizer.ask()
        optimizer.tell(config, problem(config))
    assert len(optimizer.trials) == 9
    points = np.asarray(config["points"])
    assert points.shape == (5, 2) and np.all(np.abs(points) <= 1.0)
