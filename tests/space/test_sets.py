"""The Set parameter: encoding, canonical order, bounds, errors, and Set columns in a mixed Space."""
import numpy as np
import pytest

import fastfm as ff


@pytest.fixture
def mixed_set_space():
    return ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("h", list("abc")),
                     ff.Set("centers", n_points=3, dim=2, low=[0.0, -2.0], high=[1.0, 2.0])])


def test_encoding_layout_and_round_trip(mixed_set_space):
    space = mixed_set_space
    assert (space.n_continuous, space.n_discrete, space.n_dims) == (7, 1, 8)
    assert space.column("x") == 0 and space.column("centers") == slice(1, 7) and space.column("h") == 7
    points = np.array([[0.5, 1.0], [0.0, -2.0], [1.0, 0.0]])
    x = space.encode({"x": 0.0, "h": "c", "centers": points})
    # unit-scaled per coordinate, points in lexicographic order
    np.testing.assert_allclose(x, [0.5, 0.0, 0.0, 0.5, 0.75, 1.0, 0.5, 2.0])
    config = space.decode(x)
    np.testing.assert_allclose(config["centers"], points[[1, 0, 2]])
    assert config["x"] == 0.0 and config["h"] == "c"


def test_reordered_sets_encode_identically(mixed_set_space, rng):
    points = rng.uniform([0, -2], [1, 2], size=(3, 2))
    encodings = [mixed_set_space.encode({"x": 0.1, "h": "a", "centers": points[p]})
                 for p in ([0, 1, 2], [2, 0, 1], [1, 2, 0])]
    np.testing.assert_array_equal(encodings[0], encodings[1])
    np.testing.assert_array_equal(encodings[0], encodings[2])


def test_samples_lie_in_the_box_and_are_canonical(mixed_set_space):
    configs = mixed_set_space.sample(50, seed=3)
    for config in configs:
        P = config["centers"]
        assert P.shape == (3, 2)
        assert np.all(P >= [0.0, -2.0]) and np.all(P <= [1.0, 2.0])
        assert np.all(np.lexsort(P.T[::-1]) == np.arange(3))


def test_canonical_sorts_only_set_columns(mixed_set_space, rng):
    X = mixed_set_space.sample_encoded(5, seed=1)
    shuffled = X.copy()
    block = shuffled[:, 1:7].reshape(5, 3, 2)
    shuffled[:, 1:7] = block[:, ::-1].reshape(5, 6)
    np.testing.assert_array_equal(mixed_set_space.canonical(shuffled), X)
    plain = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", "ab")])
    Y = plain.sample_encoded(4, seed=2)
    np.testing.assert_array_equal(plain.canonical(Y), Y)


def test_bad_values_raise_typed_errors_naming_the_parameter(mixed_set_space):
    base = {"x": 0.0, "h": "a"}
    with pytest.raises(ff.InvalidValueError, match=r"'centers'.*shape \(3, 2\)"):
        mixed_set_space.encode({**base, "centers": np.zeros((2, 2))})
    with pytest.raises(ff.OutOfBoundsError, match=r"'centers': point 1 coordinate 1 = 3\.0"):
        mixed_set_space.encode({**base, "centers": [[0.0, 0.0], [0.5, 3.0], [1.0, 1.0]]})
    with pytest.raises(ff.InvalidValueError, match="'centers'.*non-finite"):
        mixed_set_space.encode({**base, "centers": [[0.0, np.nan], [0.5, 0.0], [1.0, 1.0]]})
    X = mixed_set_space.sample_encoded(2, seed=0)
    X[1, 4] = 1.5
    with pytest.raises(ff.OutOfBoundsError, match="'centers'"):
        mixed_set_space.validate_encoded(X)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_points": 0, "dim": 2}, "n_points must be a positive integer"),
    ({"n_points": 2, "dim": 1.5}, "dim must be a positive integer"),
    ({"n_points": 2, "dim": 2, "low": [0, 0, 0]}, "low must be a finite number or 2 of them"),
    ({"n_points": 2, "dim": 2, "low": 1.0, "high": 1.0}, "need low < high"),
])
def test_bad_definitions_raise(kwargs, match):
    with pytest.raises(ff.SpaceDefinitionError, match=match):
        ff.Set("s", **kwargs)


@pytest.mark.parametrize("shape", [(6, 2), (9, 5, 2), (3, 4, 6, 3), (40, 10, 1)])
def test_canonical_set_order_sorts_each_set_on_its_own(shape):
    """One lexsort over all sets gives each set the order that sorting it alone gives (ties included: points on
    a grid of 3 values repeat, and a stable sort keeps them in index order)."""
    from fastfm.space.sets import canonical_set_order
    points = np.random.default_rng(3).integers(0, 3, size=shape).astype(float)
    expected = np.stack([np.lexsort(p.T[::-1]) for p in points.reshape(-1, *shape[-2:])]).reshape(shape[:-1])
    np.testing.assert_array_equal(canonical_set_order(points), expected)


def test_pooled_samples_share_points_yet_each_set_is_m_distinct_canonical_points(mixed_set_space):
    space, n, m, reuse = mixed_set_space, 2000, 3, 8
    X = space.sample_encoded(n, seed=4, set_point_reuse=reuse)
    assert X.shape == (n, space.n_dims)
    assert np.all((X[:, :space.n_continuous] >= 0.0) & (X[:, :space.n_continuous] <= 1.0))
    np.testing.assert_array_equal(space.canonical(X), X)
    points = X[:, space.column("centers")].reshape(n, m, 2)
    # the pool: max(⌈n·m/r⌉, m²) points, each in about r sets
    n_distinct = len(np.unique(points.reshape(-1, 2), axis=0))
    assert n_distinct <= -(-n * m // reuse)
    assert n_distinct > 0.9 * -(-n * m // reuse)            # the pool is nearly all used
    # the points of one set are distinct, and the sets are (almost all) different
    assert np.all(np.any(points[:, 1:] != points[:, :-1], axis=2))
    assert len(np.unique(points.reshape(n, -1), axis=0)) > 0.99 * n
    # every coordinate is still uniform on the unit interval
    for coordinate in range(2):
        assert abs(points[:, :, coordinate].mean() - 0.5) < 0.03
    # the other parameters are drawn as without the pool
    assert set(np.unique(X[:, space.column("h")])) == {0.0, 1.0, 2.0}


def test_point_reuse_of_one_or_a_pool_no_smaller_than_the_points_draws_as_before(mixed_set_space):
    space = mixed_set_space
    np.testing.assert_array_equal(space.sample_encoded(20, seed=5, set_point_reuse=1), space.sample_encoded(20, seed=5))
    # 2 sets of 3 points: the pool would need m² = 9 points, more than the 6 drawn one by one
    np.testing.assert_array_equal(space.sample_encoded(2, seed=5, set_point_reuse=8), space.sample_encoded(2, seed=5))
