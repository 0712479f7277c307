"""Choosing between fitted GPs by leave-one-out predictive density (``fastfm.gp.selection``): the closed form
against refitting-free brute force, the choice it makes, and its errors."""
import numpy as np
import pytest
from scipy.stats import norm

import fastfm as ff
from fastfm.gp import GaussianProcessRegressor
from fastfm.gp.selection import (log_jacobian_of_targets, loo_difference, loo_log_predictive_densities,
                                 loo_log_predictive_density, select_by_loo)
from fastfm.kernels import AdditiveFM, ModLap

SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("a", list(range(4))), ff.Categorical("b", list(range(4)))])


def _data(n, seed, additive=True):
    rng = np.random.default_rng(seed)
    X = SPACE.sample_encoded(n, seed=rng)
    a, b = X[:, 1].astype(int), X[:, 2].astype(int)
    if additive:     # main effects of a and b on a shared curve in x
        y = np.sin(6 * X[:, 0]) + 1.5 * rng.normal(size=4)[a] + 1.5 * rng.normal(size=4)[b]
    else:            # none: each combination its own phase of the curve
        y = np.sin(6 * X[:, 0] + 2 * np.pi * rng.uniform(size=16)[4 * a + b])
    return X, y + 0.01 * rng.normal(size=n)


def _brute_force_loo(gp):
    """Σ_i log N(y_i; μ_−i, σ²_−i) with the fitted hyperparameters, conditioning on the other N − 1 points."""
    X, y = gp.X_train_, gp.y_train_
    K = gp.kernel_(X) + gp.noise_ * np.eye(len(y))
    total = 0.0
    for i in range(len(y)):
        rest = np.arange(len(y)) != i
        weights = np.linalg.solve(K[np.ix_(rest, rest)], K[rest, i])
        mean = weights @ y[rest]
        variance = K[i, i] - weights @ K[rest, i]
        total += norm.logpdf(y[i], mean, np.sqrt(variance))
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_closed_form_is_leave_one_out_conditioning(seed):
    X, y = _data(25, seed)
    gp = GaussianProcessRegressor(ModLap(SPACE), n_restarts=2, random_state=seed).fit(X, y)
    assert gp.jitter_ == 0.0
    np.testing.assert_allclose(loo_log_predictive_density(gp), _brute_force_loo(gp), rtol=1e-8, atol=1e-8)


def test_main_effects_make_the_additive_kernel_predict_better_and_pure_interactions_do_not():
    """Main effects of the nominal variables: AdditiveFM predicts held-out points far better than ModLap (the
    reason kernel="auto" offers it); with pure interactions its terms shrink and the two are nearly level."""
    margins = {True: [], False: []}
    for seed in range(3):
        for additive in (True, False):
            X, y = _data(40, seed, additive)
            fits = [GaussianProcessRegressor(kernel, n_restarts=3, random_state=seed).fit(X, y)
                    for kernel in (ModLap(SPACE, unit_diagonal=True), AdditiveFM(SPACE))]
            margins[additive].append(loo_log_predictive_density(fits[1]) - loo_log_predictive_density(fits[0]))
            if additive:
                assert select_by_loo({"modlap": fits[0], "additive": fits[1]}) == "additive"
    assert min(margins[True]) > 5.0
    assert min(margins[True]) > 2 * max(np.abs(margins[False]))


def test_a_tie_keeps_the_first_name_and_other_targets_are_refused():
    X, y = _data(20, 0)
    first = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0).fit(X, y)
    second = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0).fit(X, y)
    assert select_by_loo({"one": first, "two": second}) == "one"
    assert select_by_loo({"two": second, "one": first}) == "two"
    other = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0).fit(X, y + np.arange(20.0))
    with pytest.raises(ValueError, match="other targets"):
        select_by_loo({"one": first, "other": other})


def test_the_per_point_densities_are_each_point_left_out():
    X, y = _data(15, 5)
    gp = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0).fit(X, y)
    points = loo_log_predictive_densities(gp)
    assert points.shape == (15,)
    K = gp.kernel_(X) + gp.noise_ * np.eye(15)
    z = gp.y_train_
    for i in (0, 7, 14):
        rest = np.arange(15) != i
        weights = np.linalg.solve(K[np.ix_(rest, rest)], K[rest, i])
        expected = norm.logpdf(z[i], weights @ z[rest], np.sqrt(K[i, i] - weights @ K[rest, i]))
        np.testing.assert_allclose(points[i], expected, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(np.sum(points), loo_log_predictive_density(gp), rtol=1e-12)
    y_positive = np.exp(y)
    shifted = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0, log_transform_y="shift")
    shifted.fit(X, y_positive)
    np.testing.assert_allclose(np.sum(loo_log_predictive_densities(shifted, y_positive)),
                               loo_log_predictive_density(shifted, y_positive), rtol=1e-12)


def test_a_preferred_model_is_kept_unless_another_is_ahead_by_the_standard_errors_asked():
    """The paired comparison: a model that predicts every point a little worse is kept within its standard errors of
    the better one, and a model far behind is not kept."""
    X, y = _data(30, 1)
    good = GaussianProcessRegressor(ModLap(SPACE), n_restarts=2, random_state=0).fit(X, y)
    # the same kernel with its noise pinned well above the fitted one: a few nats worse, on most points
    worse = GaussianProcessRegressor(good.kernel_, noise=4 * good.noise_ + 1e-3, noise_bounds="fixed",
                                     n_restarts=0, optimizer=None).fit(X, y)
    far = GaussianProcessRegressor(good.kernel_, noise=1.0, noise_bounds="fixed", n_restarts=0,
                                   optimizer=None).fit(X, y)
    gap_points = loo_log_predictive_densities(good) - loo_log_predictive_densities(worse)
    gap, standard_error = np.sum(gap_points), np.sqrt(30) * np.std(gap_points, ddof=1)
    assert gap > 0
    gps = {"good": good, "worse": worse}
    assert select_by_loo(gps) == "good"
    assert select_by_loo(gps, preferred="worse") == "good"            # no margin: the plain choice
    assert select_by_loo(gps, preferred="worse", standard_errors=gap / standard_error + 0.01) == "worse"
    assert select_by_loo(gps, preferred="worse", standard_errors=gap / standard_error - 0.01) == "good"
    assert select_by_loo(gps, preferred="good", standard_errors=100.0) == "good"
    assert select_by_loo(gps, preferred="missing", standard_errors=100.0) == "good"
    far_points = loo_log_predictive_densities(good) - loo_log_predictive_densities(far)
    assert np.sum(far_points) > 2.0 * np.sqrt(30) * np.std(far_points, ddof=1)
    assert select_by_loo({"good": good, "far": far}, preferred="far", standard_errors=2.0) == "good"


def test_a_matrix_free_fit_has_no_closed_form():
    X, y = _data(30, 0)
    gp = GaussianProcessRegressor(ModLap(SPACE), n_restarts=0, method="cg", random_state=0).fit(X, y)
    assert gp.L_ is None
    with pytest.raises(ValueError, match="exact GP fit"):
        loo_log_predictive_density(gp)
    exact = GaussianProcessRegressor(AdditiveFM(SPACE), n_restarts=0, random_state=0).fit(X, y)
    assert select_by_loo({"cg": gp, "exact": exact}) == "cg"


def _standardised_targets(gp, y):
    """z(y) of the fitted ``gp``: its transform with the shift, scale and standardisation it was fitted with."""
    y = np.asarray(y, dtype=float)
    if gp.y_transform_ == "shift":
        t = np.log1p((y - gp.y_shift_) / gp.y_log_scale_)
    elif gp.y_transform_ is True:
        t = np.log(y)
    else:
        t = y
    return (t - gp.y_mean_) / gp.y_std_


@pytest.mark.parametrize("transform", [False, True, "shift"])
def test_the_jacobian_of_the_targets_is_the_slope_of_the_transform(transform):
    X, y = _data(20, 3)
    y = np.exp(y)                    # positive, with an upper tail, for the log
    gp = GaussianProcessRegressor(ModLap(SPACE), n_restarts=0, random_state=0, log_transform_y=transform).fit(X, y)
    assert gp.y_transform_ == transform
    np.testing.assert_allclose(_standardised_targets(gp, y), gp.y_train_, rtol=1e-12, atol=1e-12)
    h = 1e-6 * np.maximum(1.0, np.abs(y))
    slopes = (_standardised_targets(gp, y + h) - _standardised_targets(gp, y - h)) / (2 * h)
    np.testing.assert_allclose(log_jacobian_of_targets(gp, y), np.sum(np.log(np.abs(slopes))), rtol=1e-7)


@pytest.mark.parametrize("transform", [False, "shift"])
def test_the_density_of_y_is_the_density_of_the_targets_changed_in_variables(transform):
    X, y = _data(25, 4)
    gp = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0, log_transform_y=transform).fit(X, y)
    expected = _brute_force_loo(gp) + log_jacobian_of_targets(gp, y)
    np.testing.assert_allclose(loo_log_predictive_density(gp, y), expected, rtol=1e-8, atol=1e-8)


def test_transforms_are_compared_by_the_density_of_y():
    """Without y, fits of different transforms cannot be compared (other standardised targets); with it the
    choice follows the density of y: y with a heavy upper tail (the exponential of a smooth function) is predicted
    better through the log, a smooth function with a narrow well below a flat level better as it is."""
    X, smooth = _data(40, 5)
    heavy = np.exp(3 * smooth)
    fits = {t: GaussianProcessRegressor(ModLap(SPACE), n_restarts=2, random_state=0, log_transform_y=t).fit(X, heavy)
            for t in (False, "shift")}
    with pytest.raises(ValueError, match="other targets"):
        select_by_loo(fits)
    assert select_by_loo(fits, heavy) == "shift"
    assert loo_log_predictive_density(fits["shift"], heavy) > loo_log_predictive_density(fits[False], heavy) + 5
    well = -np.exp(-((X[:, 0] - 0.5) / 0.15) ** 2) + 0.01 * np.sin(40 * X[:, 0])
    fits = {t: GaussianProcessRegressor(ModLap(SPACE), n_restarts=2, random_state=0, log_transform_y=t).fit(X, well)
            for t in ("shift", False)}
    assert select_by_loo(fits, well) is False
    assert loo_log_predictive_density(fits[False], well) > loo_log_predictive_density(fits["shift"], well) + 5
    copula = GaussianProcessRegressor(ModLap(SPACE), n_restarts=0, random_state=0, log_transform_y="copula")
    copula.fit(X, well)
    with pytest.raises(ValueError, match="no density in y"):
        select_by_loo({"copula": copula, "plain": fits[False]}, well)
    # one transform among all: the Jacobian is common, the comparison that of the targets
    assert select_by_loo({"a": copula, "b": copula}, well) == "a"


def test_the_paired_difference_and_the_margin_of_the_choice():
    """``loo_difference``: the sum of the pointwise density differences, antisymmetric, with the paired standard
    error √n · std(d_i); ``select_by_loo`` keeps the preferred fit exactly while the other is ahead by no more than
    ``standard_errors`` of them."""
    X, y = _data(30, 4)
    modlap = GaussianProcessRegressor(ModLap(SPACE, unit_diagonal=True), n_restarts=2, random_state=0).fit(X, y)
    additive = GaussianProcessRegressor(AdditiveFM(SPACE), n_restarts=2, random_state=0).fit(X, y)
    ahead, standard_error = loo_difference(additive, modlap)
    d = loo_log_predictive_densities(additive) - loo_log_predictive_densities(modlap)
    assert ahead == pytest.approx(np.sum(d)) and ahead == pytest.approx(
        loo_log_predictive_density(additive) - loo_log_predictive_density(modlap))
    assert standard_error == pytest.approx(np.sqrt(30) * np.std(d, ddof=1)) and standard_error > 0
    back, back_error = loo_difference(modlap, additive)
    assert back == pytest.approx(-ahead) and back_error == pytest.approx(standard_error)
    assert ahead > 0       # main effects: AdditiveFM ahead
    fits = {"modlap": modlap, "additive": additive}
    margin = ahead / standard_error
    assert select_by_loo(fits, preferred="modlap", standard_errors=0.99 * margin) == "additive"
    assert select_by_loo(fits, preferred="modlap", standard_errors=1.01 * margin) == "modlap"
    other = GaussianProcessRegressor(ModLap(SPACE), n_restarts=1, random_state=0).fit(X, y + np.arange(30.0))
    with pytest.raises(ValueError, match="different targets"):
        loo_difference(additive, other)
