"""Transforms of y the GP models (issue 23 §2): the rank-based "copula" and "auto", which switches to it when one
value (a failure penalty of 1e10 among values near 1) or a heavy tail would squash all the others."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.gp._data import (AUTO_COPULA_SPAN, SHIFT_SCALE_FLOOR, copula_scores, resolve_y_transform, shift_scale,
                              transform_y)

SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", ["a", "b"])])


def _clean(n, seed=0):
    rng = np.random.default_rng(seed)
    X = SPACE.sample_encoded(n, seed=seed)
    y = (X[:, 0] - 0.3) ** 2 + 0.2 * X[:, 1] + 0.01 * rng.standard_normal(n)
    return X, y


def test_auto_resolves_by_the_span_of_the_top_value():
    _, y = _clean(30)
    assert resolve_y_transform(y, "auto") == "shift"
    assert resolve_y_transform(np.r_[y, 1e10], "auto") == "copula"
    assert resolve_y_transform(np.exp(40 * y), "auto") == "copula"       # a heavy upper tail
    assert resolve_y_transform(np.r_[1.0, 1.0, 2.0], "auto") == "shift"   # too few values to tell
    iqr = np.subtract(*np.percentile(y, [75, 25]))
    just_below = np.r_[y, np.median(y) + 0.99 * AUTO_COPULA_SPAN * iqr]
    assert resolve_y_transform(just_below, "auto") == "shift"
    assert resolve_y_transform(np.full(10, 3.0), "auto") == "shift"
    assert resolve_y_transform(y, "shift") == "shift" and resolve_y_transform(y, False) is False


def test_copula_scores_are_normal_scores_of_the_ranks_with_ties_averaged():
    y = np.array([3.0, 1.0, 2.0, 2.0, 1e300])
    scores = copula_scores(y)
    assert np.all(np.isfinite(scores))
    assert scores[1] < scores[2] == scores[3] < scores[0] < scores[4]
    np.testing.assert_allclose(copula_scores(-y), -scores, atol=1e-12)   # reversing the order mirrors the scores
    y_train, mean, std, _, _, name, table = transform_y(y, "copula", True)
    assert name == "copula"
    np.testing.assert_allclose(np.mean(y_train), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.std(y_train), 1.0)
    np.testing.assert_array_equal(table[1], np.sort(y))


def test_one_outlier_no_longer_squashes_the_other_values():
    X, y = _clean(25)
    y_out = np.r_[y, 1e10]
    X_out = np.vstack([X, SPACE.sample_encoded(1, seed=99)])
    std_scaled = np.log1p((y_out - y_out.min()) / np.std(y_out))
    std_scaled = (std_scaled - std_scaled.mean()) / std_scaled.std()
    assert np.ptp(std_scaled[:-1]) < 1e-6       # what the default before issue 23 modelled: the 25 values all alike
    shift = transform_y(y_out, "shift", True)[0]
    assert np.ptp(shift[:-1]) > 0.1             # its scale, median − min, is not moved by the outlier
    auto = transform_y(y_out, "auto", True)[0]
    assert np.ptp(auto[:-1]) > 2.0
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(SPACE), log_transform_y="auto", random_state=0).fit(X_out, y_out)
    assert gp.y_transform_ == "copula"
    mean = gp.predict(X)
    # the model keeps the order of the clean values, and its predictions stay within the observed values
    assert np.corrcoef(np.argsort(np.argsort(mean)), np.argsort(np.argsort(y)))[0, 1] > 0.8
    assert np.all((mean >= y_out.min()) & (mean <= y_out.max()))
    mu, sigma = gp.predict_standardized(X)
    assert np.all(np.isfinite(mu)) and np.all(sigma > 0)


def test_auto_keeps_the_shift_transform_bit_for_bit_on_ordinary_values():
    X, y = _clean(20)
    a = ff.GaussianProcessRegressor(ff.kernels.ModLap(SPACE), log_transform_y="auto", random_state=0).fit(X, y)
    b = ff.GaussianProcessRegressor(ff.kernels.ModLap(SPACE), log_transform_y="shift", random_state=0).fit(X, y)
    assert a.y_transform_ == "shift" and a.y_copula_ is None
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_bayesian_optimisation_recovers_from_a_failure_penalty():
    """One region returns 1e10 (a crashed run with a penalty value): with the default "auto" the search still
    finds the minimum of the rest (before: the other values became a constant and the search stalled)."""
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", ["a", "b", "c"])])

    def objective(config):
        if config["x"] > 0.85:
            return 1e10
        return (config["x"] - 0.3) ** 2 + (0.0 if config["c"] == "b" else 0.3)

    result = ff.minimize(objective, space, n_iter=30, n_init=8, seed=1, progress=False)
    assert any(value == 1e10 for _, value, _ in result.history)
    assert result.fun < 0.01 and result.x["c"] == "b"
    assert result.optimizer.model.y_transform_ == "copula"


def test_bad_transform_names_are_typed_errors():
    with pytest.raises(ValueError, match="log_transform_y must be .*got log_transform_y='rank'"):
        ff.Optimizer(SPACE, log_transform_y="rank")
    X, y = _clean(5)
    with pytest.raises(ValueError, match="log_transform_y must be"):
        ff.GaussianProcessRegressor(ff.kernels.ModLap(SPACE), log_transform_y="rank").fit(X, y)


def test_shift_scale_is_the_smaller_of_std_and_median_above_minimum():
    _, y = _clean(31)
    assert shift_scale(y, y.min()) == pytest.approx(min(np.std(y), np.median(y) - y.min()))
    tail = y.copy()
    tail[np.argsort(y)[-3:]] *= 1e3                        # a heavy upper tail inflates the std, not the median
    assert shift_scale(tail, tail.min()) == pytest.approx(np.median(y) - y.min())   # nor the floor (top decile)
    lower_tail = np.r_[0.0, 0.5, 10.0 + np.linspace(0.0, 1.0, 9)]   # good values far below the bulk: the std
    assert shift_scale(lower_tail, 0.0) == pytest.approx(np.std(lower_tail))
    at_minimum = np.r_[np.zeros(6), 1.0, 2.0, 5.0]         # half the values at the minimum: the std
    assert shift_scale(at_minimum, 0.0) == pytest.approx(np.std(at_minimum))
    assert shift_scale(np.full(5, 2.0), 2.0) == 1.0
    huge = np.r_[-1e308, 0.0, 1e308]                       # median − min overflows: the std, finite
    assert np.isfinite(shift_scale(huge, -1e308)) and np.all(np.isfinite(transform_y(huge, "shift", True)[0]))


def test_shift_scale_has_a_floor_where_the_values_pile_up_at_the_minimum():
    # a search re-evaluating a plateau: most values within 1e-4 of the best, the earlier ones spread above it
    rng = np.random.default_rng(3)
    spread = -1.4 + rng.random(20)
    y = np.r_[-1.4 + 1e-4 * rng.random(60), spread]
    assert np.median(y) - y.min() < 1e-3
    clipped = np.minimum(y, np.percentile(y, 90))
    assert shift_scale(y, y.min()) == pytest.approx(SHIFT_SCALE_FLOOR * np.std(clipped))
    assert shift_scale(y, y.min()) > 10 * (np.median(y) - y.min())
    # an upper tail of fewer than a tenth of the values, 1000 above the rest, leaves the floor about where it was
    # (a larger tail moves it: the limit of a clipped std)
    heavy = y.copy()
    heavy[np.argsort(y)[-7:]] += 1e3
    assert shift_scale(y, y.min()) / 2 < shift_scale(heavy, heavy.min()) < 2 * shift_scale(y, y.min())


def test_shift_keeps_the_best_values_apart_under_a_heavy_upper_tail():
    """The differences among the better half of y stay a sizeable share of the standardised range when the upper
    tail grows 100-fold; with std y as the scale (before issue 24) they shrank with it (Func2C's stalled seeds)."""
    best = np.linspace(0.0, 1.0, 10)
    y, heavier = np.r_[best, 5.0, 20.0, 50.0], np.r_[best, 5.0, 20.0, 5000.0]

    def gap_of_best_two(values, scale):
        t = np.log1p((values - values.min()) / scale)
        return (t[1] - t[0]) / np.ptp(t)

    new = [gap_of_best_two(v, shift_scale(v, v.min())) for v in (y, heavier)]
    old = [gap_of_best_two(v, np.std(v)) for v in (y, heavier)]
    assert new[1] > 0.4 * new[0]
    assert old[1] < 0.05 * old[0]
    t = transform_y(heavier, "shift", True)[0]            # the library's transform is that map, standardised
    np.testing.assert_allclose((t[1] - t[0]) / np.ptp(t), new[1])
