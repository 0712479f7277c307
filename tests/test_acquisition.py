"""Acquisition functions: EI / log-EI against the direct formula, far-tail stability, gradients, UCB sign."""
import numpy as np
import pytest
from scipy.stats import norm

from fastfm.acquisition import (SIGMA_FLOOR, expected_improvement, expected_improvement_and_grad,
                                log_expected_improvement, log_expected_improvement_and_grad,
                                upper_confidence_bound, upper_confidence_bound_and_grad)
from fastfm import acquisition as acq
from fastfm.acquisition import log_h


def _direct_ei(mu, sigma, best, xi=0.0):
    z = (best - xi - mu) / sigma
    return sigma * norm.pdf(z) + (best - xi - mu) * norm.cdf(z)


@pytest.fixture
def moderate():
    rng = np.random.default_rng(0)
    mu = rng.uniform(-2.0, 2.0, 50)
    sigma = rng.uniform(0.05, 2.0, 50)
    return mu, sigma


@pytest.mark.parametrize("xi", [0.0, 0.1])
def test_ei_and_log_ei_match_direct_formula(moderate, xi):
    mu, sigma = moderate
    best = 0.3
    direct = _direct_ei(mu, sigma, best, xi)
    assert np.all(np.abs((best - xi - mu) / sigma) < 45)
    np.testing.assert_allclose(expected_improvement(mu, sigma, best, xi), direct, rtol=1e-10, atol=1e-300)
    keep = direct > 1e-200
    np.testing.assert_allclose(log_expected_improvement(mu, sigma, best, xi)[keep], np.log(direct[keep]),
                               rtol=1e-10)


def test_log_h_across_the_branches():
    z = np.array([-30.0, -5.0, -1.0 - 1e-12, -1.0, -1.0 + 1e-12, 0.0, 2.0, 20.0])
    expected = np.log(norm.pdf(z) + z * norm.cdf(z))
    np.testing.assert_allclose(log_h(z), expected, rtol=1e-9)
    # continuity at the asymptotic switch (−1/√eps)
    zs = -1.0 / np.sqrt(np.finfo(float).eps)
    left, right = log_h(np.array([zs * (1 + 1e-9), zs * (1 - 1e-9)]))
    assert abs(left - right) < 1e-6 * abs(left)


def test_log_ei_far_from_incumbent_is_finite_with_nonzero_gradient():
    mu, sigma, best = np.array([40.0, 1e3, 1e8]), np.ones(3), 0.0  # z = −40, −1e3, −1e8
    value, d_mu, d_sigma = log_expected_improvement_and_grad(mu, sigma, best)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(d_mu)) and np.all(np.isfinite(d_sigma))
    assert np.all(d_mu < 0) and np.all(d_sigma > 0)
    assert expected_improvement(mu[:1], sigma[:1], best)[0] == 0.0  # plain EI underflows here
    # log h(z) ≈ log φ(z) − 2 log|z| and d log EI/dμ ≈ −|z| − 2/|z| for z → −∞
    assert value[0] == pytest.approx(norm.logpdf(-40.0) - 2 * np.log(40.0), rel=1e-3)
    np.testing.assert_allclose(d_mu, -(mu + 2 / mu), rtol=1e-4)
    # ordered: further from the incumbent is worse
    assert value[0] > value[1] > value[2]


@pytest.mark.parametrize("z", [-40.0, -3.0, -1.0, -0.2, 0.5, 4.0])
def test_log_ei_gradient_matches_finite_differences(z):
    sigma, best = 0.7, 0.2
    mu = best - z * sigma
    _, d_mu, d_sigma = log_expected_improvement_and_grad(np.array([mu]), np.array([sigma]), best)
    h = 1e-6
    f = lambda m, s: log_expected_improvement(np.array([m]), np.array([s]), best)[0]  # noqa: E731
    assert d_mu[0] == pytest.approx((f(mu + h, sigma) - f(mu - h, sigma)) / (2 * h), rel=1e-6)
    assert d_sigma[0] == pytest.approx((f(mu, sigma + h) - f(mu, sigma - h)) / (2 * h), rel=1e-6)


def test_ei_gradient_matches_finite_differences(moderate):
    mu, sigma = moderate
    best, h = 0.1, 1e-6
    _, d_mu, d_sigma = expected_improvement_and_grad(mu, sigma, best)
    np.testing.assert_allclose(d_mu, (expected_improvement(mu + h, sigma, best)
                                      - expected_improvement(mu - h, sigma, best)) / (2 * h), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(d_sigma, (expected_improvement(mu, sigma + h, best)
                                         - expected_improvement(mu, sigma - h, best)) / (2 * h), rtol=1e-5, atol=1e-9)


def test_zero_sigma():
    mu, sigma, best = np.array([-1.0, 0.5, 2.0]), np.zeros(3), 0.5
    np.testing.assert_allclose(expected_improvement(mu, sigma, best), [1.5, 0.0, 0.0], atol=SIGMA_FLOOR)
    value, d_mu, d_sigma = log_expected_improvement_and_grad(mu, sigma, best)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(d_mu))
    assert value[0] == pytest.approx(np.log(1.5))
    assert value[2] < value[1] < value[0]          # EI = 0 ranks below any improvement, still ordered in μ
    np.testing.assert_array_equal(d_sigma, 0.0)
    assert d_mu[2] < 0


def test_ucb_is_a_lower_confidence_bound_to_maximise():
    mu, sigma = np.array([1.0, 1.0, 0.0]), np.array([0.5, 1.0, 0.5])
    value, d_mu, d_sigma = upper_confidence_bound_and_grad(mu, sigma, beta=4.0)
    np.testing.assert_allclose(value, -(mu - 2.0 * sigma))
    np.testing.assert_allclose(upper_confidence_bound(mu, sigma, 4.0), value)
    np.testing.assert_array_equal(d_mu, -1.0)
    np.testing.assert_array_equal(d_sigma, 2.0)
    assert value[1] > value[0]  # more uncertainty is preferred
    assert value[2] > value[0]  # a lower mean is preferred (minimisation)
    with pytest.raises(ValueError, match="beta"):
        upper_confidence_bound(mu, sigma, -1.0)


def test_acquisitions_prefer_lower_mean():
    sigma = np.full(3, 0.5)
    mu = np.array([-1.0, 0.0, 1.0])
    for f in (lambda m, s: expected_improvement(m, s, 0.0), lambda m, s: log_expected_improvement(m, s, 0.0),
              lambda m, s: upper_confidence_bound(m, s, 1.0)):
        v = f(mu, sigma)
        assert v[0] > v[1] > v[2]


@pytest.mark.parametrize("name", ["logei", "ei", "ucb"])
def test_acquisition_function_by_name_matches_the_functions(name):
    rng = np.random.default_rng(0)
    mu, sigma, best = rng.normal(size=20), rng.uniform(0.01, 2.0, size=20), 0.3
    value, d_mu, d_sigma = acq.acquisition_function(name, best)(mu, sigma)
    reference = {"logei": lambda: acq.log_expected_improvement(mu, sigma, best),
                 "ei": lambda: acq.expected_improvement(mu, sigma, best),
                 "ucb": lambda: acq.upper_confidence_bound(mu, sigma, acq.UCB_BETA)}[name]()
    np.testing.assert_allclose(value, reference, rtol=1e-12)
    h = 1e-6   # the derivatives it hands the optimiser, against central differences
    f = acq.acquisition_function(name, best)
    np.testing.assert_allclose(d_mu, (f(mu + h, sigma)[0] - f(mu - h, sigma)[0]) / (2 * h), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(d_sigma, (f(mu, sigma + h)[0] - f(mu, sigma - h)[0]) / (2 * h), rtol=1e-5, atol=1e-8)


def test_acquisition_function_rejects_an_unknown_name():
    with pytest.raises(ValueError, match="unknown acquisition 'pi'"):
        acq.acquisition_function("pi", 0.0)


@pytest.mark.parametrize("name", ["logei", "ei"])
def test_acquisition_function_passes_the_exploration_margin(name):
    rng = np.random.default_rng(1)
    mu, sigma, best, xi = rng.normal(size=20), rng.uniform(0.001, 2.0, size=20), 0.3, 0.05
    value = acq.acquisition_function(name, best, xi)(mu, sigma)[0]
    reference = {"logei": acq.log_expected_improvement, "ei": acq.expected_improvement}[name](mu, sigma, best, xi)
    np.testing.assert_allclose(value, reference, rtol=1e-12)
    # a margin lowers every candidate's improvement, most where σ is small next to it
    plain = acq.acquisition_function(name, best)(mu, sigma)[0]
    assert np.all(value < plain)
    assert acq.acquisition_function("ucb", best, xi)(mu, sigma)[0] == pytest.approx(
        acq.acquisition_function("ucb", best)(mu, sigma)[0])


def test_margin_discounts_a_sure_tiny_gain_below_an_uncertain_one():
    """What the BO default ξ = 0.001 is for: a move predicted 1e-3 better than the incumbent with σ = 1e-3 (a
    continuous refinement at a cusp) against a move of unknown worth (μ 1.6 above it, σ 0.6): plain log-EI ranks
    the sure tiny gain first, the margin the uncertain move."""
    mu, sigma, best = np.array([-1e-3, 1.6]), np.array([1e-3, 0.6]), 0.0
    plain = acq.log_expected_improvement(mu, sigma, best)
    margin = acq.log_expected_improvement(mu, sigma, best, xi=0.001)
    assert plain[0] > plain[1]
    assert margin[1] > margin[0]
