"""The pooled prior on the FM smoothings (``PooledGaussianLogPrior``), which the dimension-scaled prior (what
``hyperparameter_prior="auto"`` takes from 20 encoded columns on) applies to the per-variable log β, and the
left tail −c/ℓ² that the default priors put on the continuous lengthscales."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.priors import (DEFAULT_LOG_PRIORS, LENGTHSCALE_TAIL, LENGTHSCALE_TAIL_MIN_DIMS, SMOOTHING_POOL_STD,
                              GaussianLogPrior, PooledGaussianLogPrior, default_hyperparameter_prior,
                              dimension_scaled_hyperparameter_prior, restart_distribution)


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


# ------------------------------------------------------------------ the left tail on the continuous lengthscales
def test_the_tail_subtracts_c_over_lengthscale_squared_and_its_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    mean, std = rng.normal(size=6), rng.uniform(0.5, 2.0, size=6)
    tailed = GaussianLogPrior(mean, std, tail_indices=[0, 3], tail_scale=0.1)
    plain = GaussianLogPrior(mean, std)
    theta = rng.normal(size=6)
    value, gradient = tailed(theta)
    assert value == pytest.approx(plain(theta)[0] - 0.1 * (np.exp(-2 * theta[0]) + np.exp(-2 * theta[3])), rel=1e-13)
    step = 1e-6
    numeric = np.array([(tailed(theta + step * e)[0] - tailed(theta - step * e)[0]) / (2 * step)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-7, atol=1e-8)
    # only the tail's entries change, and only on the short side: at ℓ = 0.1 it costs 10 nats, at ℓ = 2 0.025
    np.testing.assert_array_equal(np.delete(gradient, [0, 3]), np.delete(plain(theta)[1], [0, 3]))
    short, long = theta.copy(), theta.copy()
    short[0], long[0] = np.log(0.1), np.log(2.0)
    assert plain(short)[0] - tailed(short)[0] > 10.0 - 0.1 * np.exp(-2 * theta[3]) - 1e-9
    assert plain(long)[0] - tailed(long)[0] < 0.03 + 0.1 * np.exp(-2 * theta[3])
    # restarts are drawn from the Gaussian part alone
    bounds = np.tile([-10.0, 10.0], (6, 1))
    np.testing.assert_array_equal(tailed.sample(np.random.default_rng(1), 5, bounds),
                                  plain.sample(np.random.default_rng(1), 5, bounds))


@pytest.mark.parametrize("tail_scale", [-0.1, float("nan"), float("inf")])
def test_a_tail_scale_that_is_not_finite_and_non_negative_is_refused(tail_scale):
    with pytest.raises(ValueError, match="tail_scale"):
        GaussianLogPrior(0.0, 1.0, tail_indices=[0], tail_scale=tail_scale)


def _mixed_kernel(n_reals):
    space = ff.Space([ff.Real(f"x{i}", 0.0, 1.0) for i in range(n_reals)]
                     + [ff.Categorical(f"c{i}", list("abc")) for i in range(3)])
    return ff.kernels.ModLap(space, unit_diagonal=True)


def _names(kernel):
    return [h.name for h in kernel.hyperparameters if not h.fixed for _ in range(h.n_elements)] + ["noise"]


def test_default_and_dimension_scaled_priors_put_the_tail_on_exactly_the_continuous_lengthscales():
    kernel = _mixed_kernel(LENGTHSCALE_TAIL_MIN_DIMS)
    for prior in (default_hyperparameter_prior(kernel), dimension_scaled_hyperparameter_prior(kernel, 30)):
        assert [_names(kernel)[i] for i in prior.tail_indices] == ["lengthscale"] * LENGTHSCALE_TAIL_MIN_DIMS
        assert prior.tail_scale == LENGTHSCALE_TAIL > 0
    assert isinstance(dimension_scaled_hyperparameter_prior(kernel, 30), PooledGaussianLogPrior)
    theta = np.append(kernel.theta, np.log(1e-3))
    assert default_hyperparameter_prior(kernel, lengthscale_tail=0.0)(theta)[0] > default_hyperparameter_prior(
        kernel)(theta)[0]
    # AdditiveFM: its product's lengthscales and its one-variable terms' (one set per term)
    additive = ff.kernels.AdditiveFM(_mixed_kernel(LENGTHSCALE_TAIL_MIN_DIMS).space)
    tailed = [_names(additive)[i] for i in default_hyperparameter_prior(additive).tail_indices]
    assert tailed.count("lengthscale") == LENGTHSCALE_TAIL_MIN_DIMS
    assert tailed.count("additive_lengthscale") == _names(additive).count("additive_lengthscale") > 0
    # the restart distribution draws only: no tail to carry
    assert restart_distribution(kernel).tail_scale == 0.0


def test_below_the_minimum_number_of_continuous_dimensions_the_prior_has_no_tail():
    """The paper's problems (one or two continuous variables) keep the plain log-normal prior."""
    for kernel in (_mixed_kernel(1), _mixed_kernel(LENGTHSCALE_TAIL_MIN_DIMS - 1),
                   ff.kernels.AdditiveFM(_mixed_kernel(2).space)):
        prior = default_hyperparameter_prior(kernel)
        assert prior.tail_indices.size == 0
        theta = np.append(kernel.theta, np.log(1e-3)) - 2.0
        np.testing.assert_array_equal(prior(theta)[1], GaussianLogPrior(prior.mean, prior.std)(theta)[1])


def test_the_tail_keeps_a_fit_of_few_noisy_points_off_the_shortest_lengthscales():
    """Fifteen points of noise in four continuous dimensions: the marginal likelihood alone explains them with
    lengthscales far below the box; with the tail the fitted lengthscales are longer (the tail's purpose)."""
    rng = np.random.default_rng(0)
    space = ff.Space([ff.Real(f"x{i}", 0.0, 1.0) for i in range(LENGTHSCALE_TAIL_MIN_DIMS)])
    X = rng.uniform(size=(15, LENGTHSCALE_TAIL_MIN_DIMS))
    y = rng.standard_normal(15)
    fitted = {}
    for tail in (0.0, LENGTHSCALE_TAIL):
        prior = default_hyperparameter_prior(ff.kernels.Matern52(space), lengthscale_tail=tail)
        gp = GaussianProcessRegressor(ff.kernels.Matern52(space), theta_prior=prior, n_restarts=5, random_state=0)
        gp.fit(X, y)
        fitted[tail] = np.asarray(gp.kernel_.lengthscale, dtype=float)
    assert fitted[0.0].min() < 0.3
    assert fitted[LENGTHSCALE_TAIL].min() > 1.2 * fitted[0.0].min()


def test_a_new_mean_or_std_is_used_at_once_and_a_pickled_prior_keeps_its_values():
    """The broadcast arrays are kept between calls (a fit makes thousands): setting ``mean`` or ``std`` drops them,
    a std that is not positive is refused when the prior is called, and pickles round-trip, those of the plain
    attributes written before the properties included."""
    import pickle
    theta = np.array([0.3, -1.0, 2.0])
    prior = PooledGaussianLogPrior(np.zeros(3), 1.0, [0, 1], pool_std=0.7, tail_indices=[2], tail_scale=0.1)
    first = prior(theta)
    prior.mean = np.array([1.0, 0.0, -1.0])
    moved = PooledGaussianLogPrior(np.array([1.0, 0.0, -1.0]), 1.0, [0, 1], pool_std=0.7, tail_indices=[2],
                                   tail_scale=0.1)
    assert prior(theta)[0] == moved(theta)[0] and prior(theta)[0] != first[0]
    np.testing.assert_array_equal(prior(theta)[1], moved(theta)[1])
    prior.std = 2.0
    assert prior(theta)[0] != moved(theta)[0]
    restored = pickle.loads(pickle.dumps(prior))
    assert restored(theta)[0] == prior(theta)[0] and restored.std == 2.0
    state = {name: value for name, value in prior.__getstate__().items()}
    state["mean"], state["std"] = state.pop("_mean"), state.pop("_std")      # how an older pickle holds them
    older = PooledGaussianLogPrior.__new__(PooledGaussianLogPrior)
    older.__setstate__(state)
    assert older(theta)[0] == prior(theta)[0]
    prior.std = np.array([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="std must be positive"):
        prior(theta)
