import itertools

import numpy as np
import pytest

import fastfm as ff
from fastfm.acquisition import log_expected_improvement_and_grad
from fastfm.optim import MixedAcquisitionOptimizer, SearchSpaceExhaustedError
from fastfm.optim.trust_region import TrustRegionState, region_around


def _fitted_gp(space, f, n, seed):
    X = space.sample_encoded(n, seed=seed)
    y = np.array([f(x) for x in X])
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), n_restarts=2, random_state=seed)
    return gp.fit(X, y), X, y


def _acq(gp):
    return lambda mu, sigma: log_expected_improvement_and_grad(mu, sigma, gp.best_y_standardized_)


def _enumerate(space):
    grid = itertools.product(*[range(n) for n in space.n_states])
    return np.array(list(grid), dtype=float)


@pytest.fixture
def discrete_space():
    return ff.Space([ff.Categorical("a", list(range(4))), ff.Integer("b", 0, 4), ff.Ordinal("c", ["x", "y", "z"])])


def discrete_objective(x):
    return (x[0] - 2) ** 2 * 0.3 + (x[1] - 3) ** 2 * 0.5 + (x[2] == 1) * 0.7 + 0.1 * x[0] * x[2]


def test_finds_the_enumerated_maximiser_of_a_small_discrete_space(discrete_space):
    gp, X, _ = _fitted_gp(discrete_space, discrete_objective, 12, seed=1)
    acquisition = _acq(gp)
    grid = _enumerate(discrete_space)
    values = acquisition(*gp.predict_standardized(grid))[0]
    observed = {tuple(x) for x in X}
    allowed = np.array([tuple(g) not in observed for g in grid])
    best = grid[allowed][np.argmax(values[allowed])]
    # few random starts: hill climbing on the graphs has to do the work
    optimizer = MixedAcquisitionOptimizer(discrete_space, n_random=6, n_spray=0, n_starts=6)
    result = optimizer.optimize(gp, acquisition, X[0], X, np.random.default_rng(0))
    np.testing.assert_array_equal(result.x, best)
    assert result.value == pytest.approx(values[allowed].max(), rel=1e-9)


def test_never_returns_an_excluded_point(discrete_space):
    gp, X, _ = _fitted_gp(discrete_space, discrete_objective, 12, seed=2)
    acquisition = _acq(gp)
    grid = _enumerate(discrete_space)
    values = acquisition(*gp.predict_standardized(grid))[0]
    ranked = grid[np.argsort(-values)]
    exclude = np.vstack([X, ranked[:3]])         # forbid the three best points too
    optimizer = MixedAcquisitionOptimizer(discrete_space, n_random=200, n_starts=10)
    result = optimizer.optimize(gp, acquisition, X[0], exclude, np.random.default_rng(0))
    assert not any(np.array_equal(result.x, e) for e in exclude)
    observed = {tuple(e) for e in exclude}
    allowed = np.array([tuple(g) not in observed for g in grid])
    assert result.value == pytest.approx(values[allowed].max(), rel=1e-9)


def test_exhausted_discrete_space_raises_a_typed_error():
    space = ff.Space([ff.Categorical("a", [0, 1]), ff.Categorical("b", [0, 1, 2])])
    grid = _enumerate(space)
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), n_restarts=1, random_state=0).fit(grid, grid.sum(1))
    optimizer = MixedAcquisitionOptimizer(space, n_random=10, n_starts=3)
    with pytest.raises(SearchSpaceExhaustedError, match="all 6 points"):
        optimizer.optimize(gp, _acq(gp), grid[0], grid, np.random.default_rng(0))


def test_mixed_space_reaches_the_best_of_a_dense_grid():
    space = ff.Space([ff.Real("u", -1.0, 1.0), ff.Categorical("h", [0, 1, 2])])

    def f(x):
        return np.sin(6 * x[0]) * (1 + x[1]) + 0.3 * x[1]

    gp, X, _ = _fitted_gp(space, f, 10, seed=3)
    acquisition = _acq(gp)
    u = np.linspace(0, 1, 2001)
    grid = np.array([(ui, h) for h in range(3) for ui in u])
    grid_best = acquisition(*gp.predict_standardized(grid))[0].max()
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=10)
    result = optimizer.optimize(gp, acquisition, X[0], X, np.random.default_rng(1))
    assert result.value >= grid_best - 1e-6 * max(1.0, abs(grid_best))
    assert 0.0 <= result.x[0] <= 1.0 and result.x[1] in (0.0, 1.0, 2.0)


def test_local_search_improves_on_its_starts():
    space = ff.Space([ff.Real("u", 0, 1), ff.Real("w", 0, 1), ff.Categorical("h", list(range(5)))])
    gp, X, _ = _fitted_gp(space, lambda x: (x[0] - 0.3) ** 2 + (x[1] - 0.6) ** 2 + 0.2 * (x[2] != 3), 15, seed=4)
    optimizer = MixedAcquisitionOptimizer(space, n_random=20, n_spray=0, n_starts=5)
    result = optimizer.optimize(gp, _acq(gp), X[0], X, np.random.default_rng(2))
    assert result.value >= result.start_values.max()
    assert result.n_rounds >= 1


def test_mixed_space_runs_each_continuous_step_to_convergence_on_its_own(monkeypatch):
    """With discrete and continuous variables, each round's continuous step is every start's own quasi-Newton run to
    convergence (``_independent_runs``): the search ends at points where the acquisition's projected gradient in the
    continuous coordinates vanishes, in no more rounds and no lower than the lockstep L-BFGS-B's 5 iterations a round
    from the same starts; an explicit ``lbfgs_iterations_per_round`` keeps the lockstep run."""
    from fastfm.optim import mixed

    space = ff.Space([ff.Real("u", 0, 1), ff.Real("w", 0, 1), ff.Categorical("h", list(range(5)))])
    gp, X, _ = _fitted_gp(space, lambda x: np.sin(5 * x[0]) * (x[1] - 0.6) ** 2 + 0.2 * (x[2] != 3), 25, seed=4)
    acquisition = _acq(gp)
    starts = space.sample_encoded(10, seed=7)
    start_values = acquisition(*gp.predict_standardized(starts))[0]
    calls = []
    independent_runs = mixed._independent_runs
    monkeypatch.setattr(mixed, "_independent_runs", lambda *args: calls.append(args[-1]) or independent_runs(*args))
    default = MixedAcquisitionOptimizer(space)
    X_runs, runs, rounds = default._local_search(gp, acquisition, starts.copy(), start_values.copy())
    assert calls and set(calls) == {mixed.MIXED_ITERATIONS_PER_ROUND}
    mu, sigma, dmu, dsigma = gp.predict_standardized_with_input_gradient(X_runs)
    _, dvalue_dmu, dvalue_dsigma = acquisition(mu, sigma)
    gradient = dvalue_dmu[:, None] * dmu + dvalue_dsigma[:, None] * dsigma
    C = X_runs[:, :space.n_continuous]
    projected = np.clip(C + gradient, 0.0, 1.0) - C
    assert np.max(np.abs(projected)) < 1e-3 * np.maximum(1.0, np.abs(runs)).max()
    calls.clear()
    lockstep = MixedAcquisitionOptimizer(space, lbfgs_iterations_per_round=5)
    _, lockstep_runs, lockstep_rounds = lockstep._local_search(gp, acquisition, starts.copy(), start_values.copy())
    assert not calls
    assert rounds <= lockstep_rounds
    assert runs.max() >= lockstep_runs.max() - 1e-6 * max(1.0, abs(lockstep_runs.max()))


def test_set_space_runs_each_start_on_its_own_and_beats_the_lockstep_run():
    """A set space has no discrete part: one batched quasi-Newton run per start (one 'round'), whose optima are at
    least the lockstep L-BFGS-B's on the same starts (its restarts drop the curvature pairs)."""
    space = ff.Space([ff.Set("s", n_points=4, dim=2)])
    centres = np.array([[0.2, 0.3], [0.7, 0.8], [0.8, 0.2], [0.3, 0.75]])

    def f(x):        # coverage of four bumps: the best set puts one point on each
        points = x.reshape(4, 2)
        return -np.sum(np.max(np.exp(-np.sum((points[:, None] - centres[None]) ** 2, axis=2) / 0.02), axis=0))

    X = space.sample_encoded(20, seed=3)
    y = np.array([f(x) for x in X])
    kernel = ff.kernels.SetKernel(space=space, normalize=True) + ff.kernels.MMDSetKernel(space=space)
    gp = ff.GaussianProcessRegressor(kernel, n_restarts=1, random_state=3).fit(X, y)
    acquisition = _acq(gp)
    optimizer = MixedAcquisitionOptimizer(space, n_random=300, n_starts=8, n_set_point_moves=0)
    starts = space.sample_encoded(8, seed=5)
    start_values = acquisition(*gp.predict_standardized(starts))[0]
    X_runs, runs, n_rounds = optimizer._local_search(gp, acquisition, starts.copy(), start_values.copy())
    assert n_rounds == 1
    assert np.all(runs >= start_values) and np.any(runs > start_values + 1e-3)
    assert np.all((X_runs >= 0.0) & (X_runs <= 1.0))
    # the lockstep run from the same starts, alternation rounds and all, ends no higher overall
    lockstep = starts.copy()
    lockstep_values = start_values.copy()
    for _ in range(optimizer.max_rounds):
        C, values = optimizer._continuous_step(gp, acquisition, lockstep, lockstep_values)
        gain = values > lockstep_values + 1e-6 * np.maximum(1.0, np.abs(lockstep_values))
        if not gain.any():
            break
        lockstep[gain], lockstep_values[gain] = C[gain], values[gain]
    assert runs.max() >= lockstep_values.max() - 1e-6 * max(1.0, abs(lockstep_values.max()))


def test_threaded_scoring_matches_serial_scoring():
    """The scoring batches run in threads when there are cores: every score must be the serial one."""
    space = ff.Space([ff.Real("u", 0, 1), ff.Categorical("h", list(range(4))), ff.Integer("k", 0, 5)])
    gp, X, _ = _fitted_gp(space, lambda x: (x[0] - 0.3) ** 2 + 0.2 * (x[1] != 2) + 0.05 * x[2], 20, seed=5)
    candidates = space.sample_encoded(1000, seed=6)
    optimizer = MixedAcquisitionOptimizer(space, scoring_batch=64)
    scores = {}
    for threads in (1, 2):
        with ff.config_context(num_threads=threads):
            scores[threads] = optimizer.score(gp, _acq(gp), candidates)
    direct = _acq(gp)(*gp.predict_standardized(candidates))[0]
    # the 1,000-row call takes v = L⁻¹k* by a triangular product, the 64-row batches by a solve: equal
    # to rounding, which log-EI amplifies where σ² is a difference of nearly equal numbers.  Here the
    # worst point has σ² ≈ 1e-6 of the prior variance (so a few ulps of k** − vᵀv are ≈ 1e-9 of σ) and
    # z ≈ −1600, where log-EI ≈ −z²/2 doubles σ's relative error: 1.1e-8 measured, hence 5e-8.
    np.testing.assert_allclose(scores[1], direct, rtol=5e-8, atol=1e-12)
    np.testing.assert_array_equal(scores[2], scores[1])


def test_bad_settings_are_rejected():
    space = ff.Space([ff.Real("u", 0, 1)])
    with pytest.raises(ValueError, match="n_starts"):
        MixedAcquisitionOptimizer(space, n_starts=0)
    with pytest.raises(ValueError, match="lbfgs_iterations_per_round"):
        MixedAcquisitionOptimizer(space, lbfgs_iterations_per_round=0)


# ------------------------------------------------------------ conditional spaces (SPEC §3)
def _conditional_objective(space):
    def f(x):
        config = space.decode(x)
        value = (np.log10(config["C"]) - 1.0) ** 2 * 0.1
        if config["model"] == "svm":
            value -= 0.5 + 0.2 * np.log10(config.get("gamma", 1.0)) * (config["kernel"] != "sigmoid")
        if config["model"] == "mlp":
            value -= 0.3 * config["n_layers"] + 0.01 * config.get("width2", 0.0)
        return value
    return f


@pytest.fixture(scope="module")
def conditional_gp():
    from _spaces import make_conditional_space
    space = make_conditional_space()
    X = space.sample_encoded(25, seed=3)
    y = np.array([_conditional_objective(space)(x) for x in X])
    gp = ff.GaussianProcessRegressor(ff.kernels.Hierarchical(space), n_restarts=1, random_state=0).fit(X, y)
    return space, gp, X


def test_continuous_step_never_moves_an_inactive_coordinate(conditional_gp):
    space, gp, X = conditional_gp
    optimizer = MixedAcquisitionOptimizer(space, lbfgs_iterations_per_round=5)
    starts = space.sample_encoded(30, seed=4)
    acquisition = _acq(gp)
    C, _ = optimizer._continuous_step(gp, acquisition, starts, acquisition(*gp.predict_standardized(starts))[0])
    inactive = ~space.active_columns(starts)[:, : space.n_continuous]
    assert inactive.any() and (~inactive).any()
    np.testing.assert_array_equal(C[inactive], starts[:, : space.n_continuous][inactive])
    assert np.any(C[~inactive] != starts[:, : space.n_continuous][~inactive])    # active ones do move


def test_discrete_moves_that_change_activity_give_valid_points(conditional_gp):
    space, gp, _ = conditional_gp
    optimizer = MixedAcquisitionOptimizer(space)
    base = space.encode([{"model": "linear", "C": 1.0}, {"model": "svm", "C": 1.0, "kernel": "poly", "gamma": 0.1,
                                                         "degree": 3, "coef0": 0.5}])
    owner, var_index, new_state = optimizer._neighbourhoods(base)
    # only active variables move: model, kernel, degree in the svm/poly row; model in the linear row
    moved_columns = {(int(o), space.discrete_params[int(p)].name) for o, p in zip(owner, var_index)}
    assert moved_columns == {(0, "model"), (1, "model"), (1, "kernel"), (1, "degree")}
    # with no incumbent value to beat, every row moves to its best neighbour, a valid point
    moved, _ = optimizer._hill_climb_step(gp, _acq(gp), base, np.full(2, -np.inf))
    space.validate_encoded(moved)
    for config in space.decode(moved):
        assert set(config) == {n for n, on in space.is_active(config).items() if on}


def test_optimize_returns_a_valid_new_point_on_a_conditional_space(conditional_gp):
    space, gp, X = conditional_gp
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8, max_rounds=10)   # short: a unit test
    result = optimizer.optimize(gp, _acq(gp), X[0], X, np.random.default_rng(1))
    space.validate_encoded(result.x)                 # consistent inactive codes
    assert not optimizer._is_duplicate(result.x, X)


def _branch_space_and_gp(n_observed_in_b):
    """A root choice {a, b} whose branch b switches on a Real ``xb``; 12 observations in branch a, where the objective
    is high, and ``n_observed_in_b`` in branch b."""
    space = ff.Space([ff.Categorical("root", ["a", "b"]), ff.Real("x0", -1.0, 1.0),
                      ff.Real("xb", -1.0, 1.0, active_if={"root": "b"})])
    rng = np.random.default_rng(0)
    configs = [{"root": "a", "x0": float(v)} for v in rng.uniform(-1, 1, 12)]
    configs += [{"root": "b", "x0": float(v), "xb": float(w)} for v, w in rng.uniform(-1, 1, (n_observed_in_b, 2))]
    X = space.encode(configs)
    y = np.array([1.0 + c["x0"] ** 2 if c["root"] == "a" else c["x0"] ** 2 + c["xb"] for c in configs])
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), n_restarts=1, random_state=0).fit(X, y)
    return space, gp, X


@pytest.mark.parametrize("n_observed_in_b", [0, 1])
def test_a_continuous_variable_too_few_observations_have_active_is_held_at_its_centre(n_observed_in_b):
    # with fewer than two evaluated points of branch b, the model knows no trend along xb: the search would move it
    # onto its inactive code (0.0) or the face farthest from the data; every candidate holds it at the centre instead
    space, gp, X = _branch_space_and_gp(n_observed_in_b)
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8, max_rounds=10)
    result = optimizer.optimize(gp, _acq(gp), X[0], X, np.random.default_rng(1))
    xb = space.column("xb")
    in_b = space.active_columns(result.candidates)[:, xb]
    assert in_b.any()
    np.testing.assert_array_equal(result.candidates[in_b, xb], 0.5)
    space.validate_encoded(result.candidates)


def test_an_observed_branch_releases_its_continuous_variables():
    space, gp, X = _branch_space_and_gp(n_observed_in_b=2)
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8, max_rounds=10)
    result = optimizer.optimize(gp, _acq(gp), X[0], X, np.random.default_rng(1))
    xb = space.column("xb")
    in_b = space.active_columns(result.candidates)[:, xb]
    assert np.any(result.candidates[in_b, xb] != 0.5)
    assert optimizer._unexplored.mask is None        # the state of one call does not outlive it


@pytest.mark.parametrize("n_observed_in_b", [0, 1])
def test_in_a_trust_region_a_variable_inactive_at_its_centre_spans_its_range_and_is_held(n_observed_in_b):
    # centred on a branch-a point, where xb is inactive (code 0.0): the box around that code would put every
    # branch-b candidate near xb's lower face; xb spans its range instead, and the hold keeps it at the centre
    space, gp, X = _branch_space_and_gp(n_observed_in_b)
    state = TrustRegionState(length=0.2, length_discrete=1, successes=0, failures=0, start=0, best=0.0, n_restarts=0)
    region = region_around(X[0], state, space)
    xb, x0 = space.column("xb"), space.column("x0")
    assert (region.lower[xb], region.upper[xb]) == (0.0, 1.0)
    assert region.upper[x0] - region.lower[x0] == pytest.approx(0.2)     # an active variable keeps its side
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8, max_rounds=10)
    result = optimizer.optimize(gp, _acq(gp), X[0], X, np.random.default_rng(1), region=region)
    in_b = space.active_columns(result.candidates)[:, xb]
    assert in_b.any()
    np.testing.assert_array_equal(result.candidates[in_b, xb], 0.5)
    assert np.all(region.contains(result.candidates, space))


def test_in_a_trust_region_a_variable_active_at_its_centre_keeps_to_the_box_unheld():
    # centred on the one branch-b point: xb has a value there, and the region keeps candidates near it
    space, gp, X = _branch_space_and_gp(n_observed_in_b=1)
    state = TrustRegionState(length=0.2, length_discrete=1, successes=0, failures=0, start=0, best=0.0, n_restarts=0)
    centre = X[-1]
    region = region_around(centre, state, space)
    xb = space.column("xb")
    assert region.upper[xb] - region.lower[xb] <= 0.2 + 1e-12
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8, max_rounds=10)
    optimizer._begin(gp, region)
    assert optimizer._unexplored.mask is None
    optimizer._begin(None, None)
    result = optimizer.optimize(gp, _acq(gp), centre, X, np.random.default_rng(1), region=region)
    assert np.all(region.contains(result.candidates, space))


def test_fallback_enumerates_only_valid_points_of_a_discrete_conditional_space():
    space = ff.Space([ff.Categorical("a", ["x", "y"]), ff.Categorical("b", [0, 1, 2], active_if={"a": "y"})])
    X = space.encode([{"a": "x"}, {"a": "y", "b": 0}, {"a": "y", "b": 1}])
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), n_restarts=0, random_state=0).fit(X, [0.0, 1.0, 2.0])
    result = MixedAcquisitionOptimizer(space, n_random=5)._fallback(gp, _acq(gp), X, np.random.default_rng(0), 0, None)
    assert space.decode(result.x) == {"a": "y", "b": 2}     # the one valid point left


@pytest.mark.parametrize("parameters, n_random, n_starts", [
    ([ff.Real("x", 0.0, 1.0), ff.Categorical("c", list("abc"))], 2_048, 10),
    ([ff.Set("s", n_points=3, dim=2)], 10_000, 40),
    ([ff.Set("s", n_points=4, dim=2)], 10_000, 40),
    ([ff.Set("s", n_points=5, dim=3)], 6_400, 40),
    ([ff.Set("s", n_points=6, dim=2)], 4_444, 40),
    ([ff.Set("s", n_points=10, dim=2), ff.Real("x", 0.0, 1.0)], 2_048, 40),
    ([ff.Set("s", n_points=4, dim=2), ff.Set("t", n_points=4, dim=1)], 5_000, 40),
    ([ff.Set("s", n_points=4, dim=2), ff.Set("t", n_points=20, dim=1)], 2_048, 40),
])
def test_default_search_sizes_follow_the_space(parameters, n_random, n_starts):
    """Random candidates: N_RANDOM without sets; on set spaces 10,000 scaled by 4² / Σ m² (a score costs O(m²)
    there, issue 24 §3), between 2,048 and 10,000; 40 starts on any space with a Set."""
    optimizer = MixedAcquisitionOptimizer(ff.Space(parameters))
    assert (optimizer.n_random, optimizer.n_starts) == (n_random, n_starts)


def test_a_start_that_meets_a_better_one_stops_and_follows_it():
    """``_merge_met_starts``: an active start with the same discrete part as another leading start and continuous
    parts within MERGE_TOL stops behind the one with the higher acquisition (a tie: the lower index); a start apart in
    either part, or behind no one, goes on."""
    from fastfm.optim.mixed import MERGE_TOL, _merge_met_starts

    X = np.array([[0.20, 0.50, 1, 2],
                  [0.20 + MERGE_TOL / 2, 0.50, 1, 2],      # meets 0, lower acquisition: follows 0
                  [0.20, 0.50, 1, 3],                      # another discrete part
                  [0.20 + 3 * MERGE_TOL, 0.50, 1, 2],      # too far from 0
                  [0.20, 0.50 - MERGE_TOL / 2, 1, 3],      # meets 2 at the same acquisition: the lower index leads
                  [0.90, 0.10, 0, 0]])
    acq = np.array([1.0, 0.5, 0.7, 2.0, 0.7, 0.1])
    active = np.array([True, True, True, True, True, False])
    leader = np.arange(6)
    _merge_met_starts(X, acq, active, leader, n_continuous=2)
    np.testing.assert_array_equal(active, [True, False, True, True, False, False])
    np.testing.assert_array_equal(leader, [0, 0, 2, 3, 2, 5])
    # a start that reaches a stopped one with a higher acquisition stops too; one ahead of it goes on
    X2, acq2 = X.copy(), acq.copy()
    X2[3] = X2[5]
    acq2[3] = 0.05
    active2, leader2 = np.array([True, False, True, True, False, False]), leader.copy()
    _merge_met_starts(X2, acq2, active2, leader2, n_continuous=2)
    assert not active2[3] and leader2[3] == 5
    assert active2[0] and active2[2]


def _searches_with_and_without_merging(space, gp, acquisition, starts, monkeypatch):
    """(X, acq, rows scored) of the default local search from ``starts``, and the same without merging starts that
    meet."""
    from fastfm.optim import mixed

    optimizer = MixedAcquisitionOptimizer(space)
    start_values = acquisition(*gp.predict_standardized(starts))[0]
    results = []
    for merge in (mixed._merge_met_starts, lambda *args: None):
        rows = []
        monkeypatch.setattr(mixed, "_merge_met_starts", merge)
        for name in ("predict_standardized_with_input_gradient", "predict_standardized_from_cross"):
            method = getattr(gp, name)
            monkeypatch.setattr(gp, name, lambda *args, _method=method: rows.append(len(args[0])) or _method(*args))
        X, acq, _ = optimizer._local_search(gp, acquisition, starts.copy(), start_values.copy())
        monkeypatch.undo()
        results.append((X, acq, sum(rows)))
    return results


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_starts_that_meet_reach_the_same_maxima_for_less_work(seed, monkeypatch):
    """Starts drawn near each other meet in the first rounds.  Merging them (the default) ends every start at the
    acquisition value of the search without merging to 1e-6, the best one included, and scores
    fewer rows; each returned value is the acquisition at its returned point."""
    space = ff.Space([ff.Real("u", 0, 1), ff.Real("w", 0, 1)] + [ff.Categorical(f"h{i}", list(range(3)))
                                                                 for i in range(6)])

    def f(x):
        return (x[0] - 0.3) ** 2 + np.sin(4 * x[1]) * 0.3 + 0.2 * np.sum(x[2:] == 1) - 0.3 * (x[2] == x[3])

    gp, X, _ = _fitted_gp(space, f, 40, seed=seed)
    acquisition = _acq(gp)
    rng = np.random.default_rng(seed)
    base = space.sample_encoded(3, seed=seed + 10)
    starts = base[rng.integers(0, 3, 12)]
    starts[:, :2] = np.clip(starts[:, :2] + rng.normal(0, 0.01, (12, 2)), 0, 1)
    (X_merged, acq_merged, work_merged), (X_apart, acq_apart, work_apart) = _searches_with_and_without_merging(
        space, gp, acquisition, starts, monkeypatch)
    np.testing.assert_allclose(acq_merged, acq_apart, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(X_merged[:, 2:], X_apart[:, 2:])
    np.testing.assert_allclose(acq_merged, acquisition(*gp.predict_standardized(X_merged))[0], rtol=1e-12)
    assert work_merged < work_apart


def test_on_a_discrete_space_starts_that_meet_end_as_without_merging(monkeypatch):
    """On a discrete space two starts meet only at the same point, from which they climb alike: the search ends at
    the points it ends at without merging, with their values.  (Integers: path graphs, many steps to a maximum.)"""
    space = ff.Space([ff.Integer(f"n{i}", 0, 11) for i in range(4)])
    gp, X, _ = _fitted_gp(space, lambda x: np.sum((x - np.array([2, 9, 5, 7])) ** 2) + 3 * (x[0] > x[1]), 30, seed=5)
    acquisition = _acq(gp)
    (X_merged, acq_merged, work_merged), (X_apart, acq_apart, work_apart) = _searches_with_and_without_merging(
        space, gp, acquisition, space.sample_encoded(20, seed=3), monkeypatch)
    np.testing.assert_array_equal(X_merged, X_apart)
    # the values to the rounding of the batched solves, whose batch (the active starts' neighbours) is smaller
    np.testing.assert_allclose(acq_merged, acq_apart, rtol=1e-13)
    assert work_merged < work_apart


def test_a_start_searches_its_continuous_part_once_its_discrete_moves_stop_gaining(monkeypatch):
    """After the first round, the continuous search of a round takes exactly the starts whose discrete move did not
    gain in it; the search still ends where neither gains: no neighbour of a returned point scores higher, and the
    acquisition's projected gradient in the continuous coordinates vanishes there."""
    from fastfm.optim import mixed

    space = ff.Space([ff.Real("u", 0, 1), ff.Real("w", 0, 1)] + [ff.Categorical(f"h{i}", list(range(4)))
                                                                 for i in range(5)])

    def f(x):
        return (x[0] - 0.7) ** 2 + np.sin(4 * x[1]) * 0.3 + 0.25 * np.sum(x[2:] == 2) - 0.2 * (x[2] == x[4])

    gp, X, _ = _fitted_gp(space, f, 40, seed=8)
    acquisition = _acq(gp)
    starts = space.sample_encoded(10, seed=9)
    start_values = acquisition(*gp.predict_standardized(starts))[0]
    log = []
    hill_climb_step, independent_runs = MixedAcquisitionOptimizer._hill_climb_step, mixed._independent_runs

    def recording_step(self, gp, acquisition, X, current):
        moved, values = hill_climb_step(self, gp, acquisition, X, current)
        log.append(("discrete", X.copy(), values > current + mixed._tolerance(current)))
        return moved, values

    monkeypatch.setattr(MixedAcquisitionOptimizer, "_hill_climb_step", recording_step)
    monkeypatch.setattr(mixed, "_independent_runs", lambda opt, gp, acq, X, maxiter=None: log.append(
        ("continuous", X.copy(), None)) or independent_runs(opt, gp, acq, X, maxiter))
    optimizer = MixedAcquisitionOptimizer(space)
    X_end, acq_end, rounds = optimizer._local_search(gp, acquisition, starts.copy(), start_values.copy())
    assert rounds >= 3
    assert log[0][0] == "discrete" and log[1][0] == "continuous" and len(log[1][1]) == len(starts)
    skipped = 0
    for previous, entry in zip(log[2:], log[3:]):
        if previous[0] != "discrete":
            continue
        _, rows, gained = previous
        expected = rows[~gained]
        if entry[0] == "continuous":
            np.testing.assert_array_equal(entry[1], expected)
        else:
            assert len(expected) == 0
        skipped += int(gained.sum())
    assert skipped > 0
    monkeypatch.undo()
    _, neighbour_values = optimizer._hill_climb_step(gp, acquisition, X_end, acq_end)
    assert np.all(neighbour_values <= acq_end + mixed._tolerance(acq_end))
    mu, sigma, dmu, dsigma = gp.predict_standardized_with_input_gradient(X_end)
    _, dvalue_dmu, dvalue_dsigma = acquisition(mu, sigma)
    gradient = dvalue_dmu[:, None] * dmu + dvalue_dsigma[:, None] * dsigma
    C = X_end[:, :space.n_continuous]
    assert np.max(np.abs(np.clip(C + gradient, 0.0, 1.0) - C)) < 1e-3 * np.maximum(1.0, np.abs(acq_end)).max()
