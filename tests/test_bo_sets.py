"""Bayesian optimisation over sets: suggestions respect the box, are canonical and new, and the
acquisition optimiser moves set coordinates by L-BFGS-B."""
import warnings

import numpy as np
import pytest

import fastfm as ff
from fastfm.acquisition import log_expected_improvement_and_grad
from fastfm.optim import MixedAcquisitionOptimizer
from fastfm.optim.mixed import _set_point_moves

FAST = {"n_random": 500, "n_starts": 6}    # a small acquisition search keeps the tests quick
TARGETS = np.array([[0.5, 0.5], [-0.5, -0.5], [0.5, -0.5]])


def coverage(config):
    """Σ over targets of the squared distance to the nearest point of the set: permutation invariant."""
    points = config["s"]
    return float(np.min(np.sum((points[:, None] - TARGETS[None]) ** 2, axis=2), axis=0).sum())


def test_ask_tell_on_a_set_space_gives_new_canonical_points_in_the_box():
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=[1.0, 0.8])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # the default kernel name works without a fallback warning
        optimizer = ff.Optimizer(space, n_init=6, seed=0, n_restarts=2, acq_options=FAST)
    encoded = []
    for _ in range(10):
        config = optimizer.ask()
        points = config["s"]
        assert points.shape == (3, 2)
        assert np.all(points >= -1.0) and np.all(points <= [1.0, 0.8])
        assert np.all(np.lexsort(points.T[::-1]) == np.arange(3))      # canonical order
        encoded.append(space.encode(config))
        optimizer.tell(config, coverage(config))
    assert optimizer.last_suggestion_info["source"] == "model"
    encoded = np.array(encoded)
    assert len({tuple(np.round(x, 12)) for x in encoded}) == len(encoded)
    # every pending suggestion was matched by its tell (canonical encodings agree)
    assert optimizer.pending == []


def test_minimize_on_a_mixed_space_with_a_set_improves_on_its_initial_design():
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=1.0), ff.Categorical("shift", [0.0, 0.3])])

    def objective(config):
        return coverage(config) + config["shift"]

    result = ff.minimize(objective, space, n_iter=20, n_init=8, seed=1, progress=False, n_restarts=2,
                         acq_options=FAST)
    values = np.array([v for _, v, _ in result.history])
    assert result.n_failed == 0 and len(values) == 20
    assert values[8:].min() < values[:8].min()


def test_acquisition_optimiser_moves_set_coordinates_by_gradient():
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=1.0)])
    X = space.sample_encoded(12, seed=2)
    y = np.array([coverage(c) for c in space.decode(X)])
    gp = ff.GaussianProcessRegressor(ff.kernels.make_kernel("modlap", space), n_restarts=2, random_state=0).fit(X, y)

    def acquisition(mu, sigma):
        return log_expected_improvement_and_grad(mu, sigma, gp.best_y_standardized_)

    optimizer = MixedAcquisitionOptimizer(space, n_random=300, n_spray=20, n_starts=5, max_rounds=10)
    result = optimizer.optimize(gp, acquisition, X[np.argmin(y)], X, np.random.default_rng(0))
    assert result.value > result.start_values.max()      # the quasi-Newton runs improved on the best start
    assert result.n_rounds == 1                          # a set space: one run per start, no alternation
    np.testing.assert_array_equal(space.canonical(result.x), result.x)


def _fitted_coverage_gp(space, n=12, seed=2):
    X = space.sample_encoded(n, seed=seed)
    y = np.array([coverage(c) for c in space.decode(X)])
    kernel = ff.kernels.make_kernel("matern52", space)
    return X, y, ff.GaussianProcessRegressor(kernel, n_restarts=1, random_state=0).fit(X, y)


def test_set_point_moves_change_exactly_one_point_of_a_best_observed_set():
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=1.0), ff.Real("r", 0.0, 1.0)])
    X, y, gp = _fitted_coverage_gp(space)
    incumbent = X[np.argmin(y)]
    moves = _set_point_moves(space, 400, gp, incumbent, np.random.default_rng(0))
    assert moves.shape == (400, space.n_dims)
    assert np.all((moves >= 0.0) & (moves <= 1.0))
    best_rows = gp.X_train_[np.argsort(gp.y_train_, kind="stable")[:5]]
    parents = np.vstack([incumbent, best_rows])[:5]
    relocated = 0
    for row in moves:
        # its parent is one of the best observed points: all columns but one point's equal
        differences = np.abs(parents - row)
        point_changed = differences[:, :6].reshape(len(parents), 3, 2).max(axis=2) > 0
        matches = (point_changed.sum(axis=1) <= 1) & (differences[:, 6] == 0)
        assert matches.any()
        relocated += np.min(point_changed.sum(axis=1)) == 1
    assert relocated > 300       # all but the jitters clipped back onto the parent move a point


def test_set_point_moves_are_off_with_zero_and_checked():
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=1.0)])
    with pytest.raises(ValueError, match="n_set_point_moves must be >= 0, got n_set_point_moves=-1"):
        MixedAcquisitionOptimizer(space, n_set_point_moves=-1)
    X, y, gp = _fitted_coverage_gp(space)

    def acquisition(mu, sigma):
        return log_expected_improvement_and_grad(mu, sigma, gp.best_y_standardized_)

    # the moves add starts to the search: with them the search reaches at least the value found without
    # them on this model (the starts without moves are the same points: the moves are drawn last)
    values = {}
    for n_moves in (0, 500):
        optimizer = MixedAcquisitionOptimizer(space, n_random=300, n_spray=20, n_starts=5, max_rounds=20,
                                              n_set_point_moves=n_moves)
        result = optimizer.optimize(gp, acquisition, X[np.argmin(y)], X, np.random.default_rng(0))
        np.testing.assert_array_equal(space.canonical(result.x), result.x)
        values[n_moves] = result.value
    assert values[500] >= values[0] - 1e-6



def test_random_sets_of_the_acquisition_search_share_a_pool_of_points():
    space = ff.Space([ff.Set("s", n_points=5, dim=2, low=-1.0, high=1.0), ff.Real("r", 0.0, 1.0)])
    with pytest.raises(ValueError, match="set_point_reuse must be >= 1, got set_point_reuse=0"):
        MixedAcquisitionOptimizer(space, set_point_reuse=0)
    n_distinct = {}
    for reuse in (8, 1):
        optimizer = MixedAcquisitionOptimizer(space, n_random=4000, set_point_reuse=reuse)
        X = optimizer._random(optimizer.n_random, np.random.default_rng(0))
        assert X.shape == (4000, space.n_dims)
        n_distinct[reuse] = len(np.unique(X[:, space.column("s")].reshape(-1, 2), axis=0))
    assert n_distinct[1] == 4000 * 5
    assert n_distinct[8] <= 4000 * 5 / 8 + 1


def test_starts_from_pooled_random_sets_share_no_point():
    from fastfm.optim.mixed import set_point_keys

    # a good point lifts every set it is in: the best-scored pooled sets share points, the starts must not
    space = ff.Space([ff.Set("s", n_points=3, dim=2, low=-1.0, high=1.0), ff.Real("r", 0.0, 1.0)])
    optimizer = MixedAcquisitionOptimizer(space, n_random=2000, set_point_reuse=8)
    X = optimizer._random(optimizer.n_random, np.random.default_rng(1))
    points = X[:, space.column("s")].reshape(len(X), 3, 2)
    favoured = points[0, 0]                                     # the sets holding this point score best
    holds = np.all(points == favoured, axis=2).any(axis=1)
    assert holds.sum() >= 3
    order = np.argsort(~holds, kind="stable")
    plain = optimizer._distinct_rows(X, order, 10)
    disjoint = optimizer._distinct_rows(X, order, 10, point_disjoint=True)
    assert holds[plain].sum() == holds.sum()                   # without the rule every holder is a start
    assert holds[disjoint].sum() == 1
    keys = [set_point_keys(space, X[i]) for i in disjoint]
    assert all(a.isdisjoint(b) for i, a in enumerate(keys) for b in keys[i + 1:])
    assert optimizer._pools_set_points() and not MixedAcquisitionOptimizer(space)._pools_set_points()
