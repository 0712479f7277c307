import math

import numpy as np
import pytest

import fastfm as ff
from fastfm.exceptions import (InvalidValueError, MissingParameterError, OutOfBoundsError, SpaceDefinitionError,
                               UnknownParameterError)


@pytest.fixture
def issue_space():
    return ff.Space([
        ff.Real("x", -1.0, 1.0),
        ff.Real("lr", 1e-4, 1e-1, log=True),
        ff.Integer("depth", 1, 10),
        ff.Ordinal("size", ["s", "m", "l"]),
        ff.Categorical("booster", ["gbtree", "dart"]),
        ff.Graph("pair", n_states=6, edges=[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]),
    ])


def good_config():
    return {"x": 0.1, "lr": 1e-3, "depth": 4, "size": "m", "booster": "dart", "pair": 2}


def test_encode_layout_and_round_trip(issue_space):
    X = issue_space.encode([good_config()])
    assert X.shape == (1, 6) and X.dtype == np.float64
    # continuous columns first (unit-scaled; lr in log space), then state indices
    np.testing.assert_allclose(X[0], [0.55, (math.log(1e-3) - math.log(1e-4)) / (math.log(1e-1) - math.log(1e-4)),
                                      3, 1, 1, 2])
    decoded = issue_space.decode(X)[0]
    assert decoded.keys() == good_config().keys()
    for name, value in good_config().items():
        assert decoded[name] == pytest.approx(value) if isinstance(value, float) else decoded[name] == value
    np.testing.assert_array_equal(issue_space.continuous_dims, [0, 1])
    np.testing.assert_array_equal(issue_space.discrete_dims, [2, 3, 4, 5])


def test_single_dict_encodes_to_vector(issue_space):
    x = issue_space.encode(good_config())
    assert x.shape == (6,)
    assert issue_space.decode(x)["size"] == "m"


def test_sample_is_in_bounds_reproducible_and_round_trips(issue_space):
    configs = issue_space.sample(200, seed=3)
    assert configs == issue_space.sample(200, seed=3)
    X = issue_space.encode(configs)
    assert np.all((X[:, :2] >= 0) & (X[:, :2] <= 1))
    np.testing.assert_allclose(issue_space.encode(issue_space.decode(X)), X, atol=1e-12)
    lrs = np.array([c["lr"] for c in configs])
    assert lrs.min() >= 1e-4 and lrs.max() <= 1e-1
    # log-uniform: about half the mass below the geometric midpoint 10^-2.5
    assert 0.35 < np.mean(lrs < 10 ** -2.5) < 0.65
    depths = {c["depth"] for c in configs}
    assert depths <= set(range(1, 11)) and len(depths) == 10


def test_spectra_are_cached_per_variable(issue_space):
    first = issue_space.graphs
    second = issue_space.graphs
    assert all(a is b for a, b in zip(first, second))
    assert [g.kind for g in first] == ["path", "path", "complete", "custom"]
    assert [g.n_states for g in first] == [10, 3, 2, 6]


@pytest.mark.parametrize("change, error, words", [
    ({"colour": 1}, UnknownParameterError, ["'colour'"]),
    ({"x": 1.5}, OutOfBoundsError, ["'x'", "1.5"]),
    ({"x": float("nan")}, InvalidValueError, ["'x'", "nan"]),
    ({"lr": 1.0}, OutOfBoundsError, ["'lr'", "1.0"]),
    ({"depth": 2.5}, InvalidValueError, ["'depth'", "2.5"]),
    ({"depth": 11}, OutOfBoundsError, ["'depth'", "11"]),
    ({"depth": "3"}, InvalidValueError, ["'depth'", "'3'"]),
    ({"size": "xl"}, InvalidValueError, ["'size'", "'xl'"]),
    ({"booster": "gblinear"}, InvalidValueError, ["'booster'", "'gblinear'"]),
    ({"pair": 6}, OutOfBoundsError, ["'pair'", "6"]),
    ({"x": "0.1"}, InvalidValueError, ["'x'", "'0.1'"]),
])
def test_bad_values_raise_typed_errors_naming_parameter_and_value(issue_space, change, error, words):
    config = {**good_config(), **change}
    with pytest.raises(error) as info:
        issue_space.encode([config])
    for word in words:
        assert word in str(info.value)
    assert isinstance(info.value, ff.InvalidConfigError)


def test_missing_parameter(issue_space):
    config = good_config()
    del config["size"]
    with pytest.raises(MissingParameterError, match="'size'"):
        issue_space.encode(config)


def test_integer_accepts_integral_floats_and_numpy_ints(issue_space):
    for depth in (4.0, np.int64(4)):
        assert issue_space.encode({**good_config(), "depth": depth})[2] == 3


@pytest.mark.parametrize("build, match", [
    (lambda: ff.Space([ff.Real("a", 0, 1), ff.Real("a", 0, 2)]), "duplicate parameter name 'a'"),
    (lambda: ff.Categorical("c", []), "'c'.*empty"),
    (lambda: ff.Ordinal("o", ["a", "a"]), "duplicate choice 'a'"),
    (lambda: ff.Real("r", 1.0, 1.0), "'r'.*low < high"),
    (lambda: ff.Real("r", 0.0, 1.0, log=True), "'r'.*log"),
    (lambda: ff.Integer("i", 3, 1), "'i'.*low <= high"),
    (lambda: ff.Integer("i", 0.5, 3), "'i'.*integer"),
    (lambda: ff.Space([]), "at least one"),
])
def test_bad_space_definitions(build, match):
    with pytest.raises(SpaceDefinitionError, match=match):
        build()


def test_validate_encoded_names_the_parameter(issue_space):
    X = issue_space.encode([good_config()])
    bad = X.copy()
    bad[0, 3] = 7
    with pytest.raises(OutOfBoundsError, match="'size'"):
        issue_space.validate_encoded(bad)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidValueError, match="'x'"):
        issue_space.validate_encoded(bad)
    with pytest.raises(ff.InvalidConfigError, match="shape"):
        issue_space.validate_encoded(X[:, :3])


def test_neighbours_follow_the_graphs(issue_space):
    depth, size, booster, pair = issue_space.neighbours
    np.testing.assert_array_equal(depth[0], [1])
    np.testing.assert_array_equal(depth[4], [3, 5])
    np.testing.assert_array_equal(booster[0], [1])
    np.testing.assert_array_equal(pair[5], [4])
