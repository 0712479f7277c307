"""The pooled prior on the FM smoothings (``PooledGaussianLogPrior``), which the dimension-scaled prior (what
``hyperparameter_prior="auto"`` takes from 20 encoded columns on) applies to the per-variable log β."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.priors import (DEFAULT_LOG_PRIORS, SMOOTHING_POOL_STD, GaussianLogPrior, PooledGaussianLogPrior,
                              dimension_scaled_hyperparameter_prior)


def _binary_space(n):
    return ff.Space([ff.Categorical(f"b{i}", [0, 1]) for i in range(n)])


def test_pooled_prior_adds_the_spread_around_the_group_mean_and_its_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    mean, std = rng.normal(size=7), rng.uniform(0.5, 2.0, size=7)
    group = [1, 2, 4, 5]
    pooled = PooledGaussianLogPrior(mean, std, group, pool_std=0.7)
    plain = GaussianLogPrior(mean, std)
    theta = rng.normal(size=7) * 2
    value, gradient = pooled(theta)
    spread = theta[group] - theta[group].mean()
    assert value == pytest.approx(plain(theta)[0] - 0.5 * np.sum((spread / 0.7) ** 2), rel=1e-13)
    step = 1e-6
    numeric = np.array([(pooled(theta + step * e)[0] - pooled(theta - step * e)[0]) / (2 * step)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-7, atol=1e-8)
    # the level of the group is left to the plain prior: a common shift changes only that part
    shifted = theta.copy()
    shifted[group] += 3.0
    assert pooled(shifted)[0] - plain(shifted)[0] == pytest.approx(value - plain(theta)[0], rel=1e-12)
    # restarts are drawn as from the plain prior
    bounds = np.tile([-10.0, 10.0], (7, 1))
    np.testing.assert_array_equal(pooled.sample(np.random.default_rng(1), 5, bounds),
                                  plain.sample(np.random.default_rng(1), 5, bounds))


@pytest.mark.parametrize("pool_std", [0.0, -1.0, float("nan"), float("inf")])
def test_pooled_prior_rejects_a_spread_that_is_not_positive_and_finite(pool_std):
    with pytest.raises(ValueError, match="pool_std"):
        PooledGaussianLogPrior(0.0, 1.0, [0, 1], pool_std)


def test_dimension_scaled_prior_pools_exactly_the_smoothings_of_the_fm_kernel():
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", 0.0, 1.0)]
                     + [ff.Categorical(f"c{i}", list("abc")) for i in range(3)] + [ff.Integer("n", 0, 6)])
    kernel = ff.kernels.ModLap(space, unit_diagonal=True)
    names = [h.name for h in kernel.hyperparameters if not h.fixed for _ in range(h.n_elements)] + ["noise"]
    prior = dimension_scaled_hyperparameter_prior(kernel, 30)
    assert isinstance(prior, PooledGaussianLogPrior) and prior.pool_std == SMOOTHING_POOL_STD
    assert [names[i] for i in prior.group] == ["beta"] * 4
    # the means and stds are the unpooled prior's; smoothing_pool_std=None gives that prior itself
    unpooled = dimension_scaled_hyperparameter_prior(kernel, 30, smoothing_pool_std=None)
    assert type(unpooled) is GaussianLogPrior
    np.testing.assert_array_equal(prior.mean, unpooled.mean)
    np.testing.assert_array_equal(prior.std, unpooled.std)
    # one discrete variable: nothing to pool
    single = ff.kernels.ModLap(ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", list("ab"))]),
                               unit_diagonal=True)
    assert type(dimension_scaled_hyperparameter_prior(single, 30)) is GaussianLogPrior


def test_auto_prior_pools_the_smoothings_on_a_large_binary_space():
    space = _binary_space(24)
    opt = ff.Optimizer(space, seed=0)                           # hyperparameter_prior="auto", 24 columns
    prior = opt.hyperparameter_prior(opt._kernel)
    assert isinstance(prior, PooledGaussianLogPrior) and len(prior.group) == 24


def test_pooling_narrows_the_fitted_smoothings_without_fixing_their_level():
    """On a sparse objective of 24 binary variables (4 matter) fitted at 40 points, the pooled fit's log β spread
    less than the unpooled fit's (the prior's purpose), and their mean is not pinned at the prior's centre."""
    rng = np.random.default_rng(3)
    space = _binary_space(24)
    X = rng.integers(0, 2, size=(40, 24)).astype(float)
    weights = np.zeros(24)
    weights[:4] = [2.0, -1.5, 1.0, 0.8]
    y = X @ weights + 0.5 * X[:, 0] * X[:, 1] + 0.05 * rng.standard_normal(40)
    spreads, levels = {}, {}
    for label, pool_std in (("pooled", 0.5), ("independent", None)):
        kernel = ff.kernels.ModLap(space, unit_diagonal=True)
        prior = dimension_scaled_hyperparameter_prior(kernel, space.n_dims, smoothing_pool_std=pool_std)
        gp = GaussianProcessRegressor(kernel, theta_prior=prior, n_restarts=3, random_state=0).fit(X, y)
        names = [h.name for h in gp.kernel_.hyperparameters if not h.fixed for _ in range(h.n_elements)]
        log_beta = np.asarray(gp.kernel_.theta)[[i for i, n in enumerate(names) if n == "beta"]]
        spreads[label], levels[label] = float(np.std(log_beta)), float(np.mean(log_beta))
    assert spreads["pooled"] < 0.8 * spreads["independent"]
    assert abs(levels["pooled"] - DEFAULT_LOG_PRIORS["beta"][0]) > 0.1      # the β prior's centre (unshifted)
