"""Trust regions on mixed spaces (CASMOPOLITAN; ``fastfm.optim.trust_region``, ``Optimizer(trust_region=...)``)
and the dimension-scaled lengthscale prior (``fastfm.gp.priors.dimension_scaled_hyperparameter_prior``)."""
import math
import shutil

import numpy as np
import pytest

import _bo_objectives as objectives
import fastfm as ff
from fastfm.acquisition import log_expected_improvement_and_grad
from fastfm.gp import fantasy
from fastfm.gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior, dimension_scaled_hyperparameter_prior
from fastfm.optim import MixedAcquisitionOptimizer
from fastfm.optim.trust_region import (TrustRegion, TrustRegionState, region_around, trust_region_setting,
                                       trust_region_state)


def _mixed_space():
    return ff.Space([ff.Real("x1", 0.0, 1.0), ff.Real("x2", -2.0, 2.0), ff.Real("x3", 0.0, 5.0)]
                    + [ff.Categorical(f"c{i}", list("abcd")) for i in range(6)]
                    + [ff.Integer(f"k{i}", 0, 4) for i in range(4)])


def _objective(x):
    return float(np.sum((x[:3] - 0.3) ** 2) + 0.2 * np.sum(x[3:] == 1) + 0.05 * np.sum(x[3:]))


def _state(length=0.4, length_discrete=3):
    return TrustRegionState(length=length, length_discrete=length_discrete, successes=0, failures=0, start=0,
                            best=0.0, n_restarts=0)


@pytest.fixture(scope="module")
def fitted():
    space = _mixed_space()
    X = space.sample_encoded(30, seed=1)
    y = np.array([_objective(x) for x in X])
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space, unit_diagonal=True), n_restarts=2,
                                     random_state=0).fit(X, y)
    return space, gp, X, y


# ------------------------------------------------------------------------------------------ the region
def test_region_samples_stay_inside_the_hamming_ball_and_the_box(fitted):
    space, gp, X, y = fitted
    centre = X[int(np.argmin(y))].copy()
    nc = space.n_continuous
    centre[:nc] = 0.5
    region = region_around(centre, _state(), space, lengthscales=[0.1, 1.0, 10.0])
    # lengthscale-weighted sides with a geometric mean of 1 (TuRBO): the smooth coordinate gets the long side
    # (0.4 × [0.1, 1, 10], the last clipped to the unit interval)
    np.testing.assert_allclose(region.upper - region.lower, [0.04, 0.4, 1.0], rtol=1e-12)
    S = region.sample(2000, space, np.random.default_rng(0))
    hamming = np.sum(S[:, nc:] != centre[nc:], axis=1)
    assert hamming.max() == 3 and hamming.min() >= 1        # every radius 1..3 is drawn, none beyond
    assert np.all(S[:, :nc] >= region.lower) and np.all(S[:, :nc] <= region.upper)
    assert np.all(region.contains(S, space))
    space.validate_encoded(S)                               # valid states only


def test_every_candidate_of_the_acquisition_optimizer_stays_in_the_region(fitted):
    space, gp, X, y = fitted
    centre = X[int(np.argmin(y))]
    region = region_around(centre, _state(length=0.3, length_discrete=2), space, lengthscales=[0.5, 0.5, 0.5])
    optimizer = MixedAcquisitionOptimizer(space, n_random=500, n_starts=8)
    acquisition = lambda mu, sigma: log_expected_improvement_and_grad(mu, sigma, gp.best_y_standardized_)  # noqa
    rng = np.random.default_rng(0)
    result = optimizer.optimize(gp, acquisition, centre, X, rng, region=region)
    assert region.contains(result.x, space)[0]
    assert np.all(region.contains(result.candidates, space))      # local optima and scored fallbacks alike
    # the next point of a batch is searched on the model conditioned on the first, as Optimizer.ask(n) does (on the
    # same model a converged local search finds the first point's maximum again, to within its tolerance)
    model = fantasy.condition_on(gp, result.x[None, :])
    acquisition_next = lambda mu, sigma: log_expected_improvement_and_grad(  # noqa: E731
        mu, sigma, model.best_y_standardized_)
    following = optimizer.optimize_next(model, acquisition_next, result.candidates, np.vstack([X, result.x]), rng,
                                        region=region)
    assert region.contains(following.x, space)[0]
    assert not np.allclose(following.x, result.x)
    # without a region the same search leaves it (the region does constrain)
    free = optimizer.optimize(gp, acquisition, centre, X, np.random.default_rng(0))
    assert not np.all(region.contains(free.candidates, space))


# ------------------------------------------------------------------------- expand, shrink, restart
def test_successes_expand_failures_shrink_and_a_collapse_restarts():
    settings = TrustRegion(success_tolerance=2, failure_tolerance=3, length_init_discrete=6)
    design = [5.0, 4.0, 6.0]
    state = trust_region_state(settings, design, n_init=3, n_discrete=10)
    assert (state.length, state.length_discrete, state.best, state.start) == (0.8, 6, 4.0, 0)
    # two improvements in a row (by more than 1e-3 relative): both lengths grow by 1.5
    state = trust_region_state(settings, design + [3.0, 2.0], n_init=3, n_discrete=10)
    assert state.length == pytest.approx(1.2) and state.length_discrete == 9 and state.successes == 0
    # a non-improvement resets the successes; the discrete radius is capped at n_discrete
    state = trust_region_state(settings, design + [3.0, 2.0, 2.0, 1.0, 0.5], n_init=3, n_discrete=10)
    assert state.length == pytest.approx(1.6) and state.length_discrete == 10     # 1.2·1.5 capped at 1.6
    # three failures in a row shrink (a failed evaluation counts as one), the radius rounded down
    values = design + [4.5, float("nan"), 4.0]
    state = trust_region_state(settings, values, n_init=3, n_discrete=10)
    assert state.length == pytest.approx(0.8 / 1.5) and state.length_discrete == 4 and state.failures == 0
    # 6 → 4 → 2 → 1: the third shrink collapses the Hamming radius and the region restarts after that value
    values = design + [9.0] * 9
    state = trust_region_state(settings, values, n_init=3, n_discrete=10)
    assert state.n_restarts == 1 and state.start == len(values) and state.restarting
    # the new region's first value is its best; it counts nothing; the next ones count against it
    state = trust_region_state(settings, values + [7.0, 6.0, 5.0], n_init=3, n_discrete=10)
    assert not state.restarting and state.best == 5.0 and state.length_discrete == 9 and state.n_restarts == 1
    # on a space without discrete variables only the box can collapse
    state = trust_region_state(settings, values, n_init=3, n_discrete=0)
    assert state.n_restarts == 0 and state.length == pytest.approx(0.8 / 1.5 ** 3)


@pytest.mark.parametrize("value, name", [
    ({"length_init": -1.0}, "length_init"), ({"multiplier": 1.0}, "multiplier"),
    ({"failure_tolerance": 0}, "failure_tolerance"), ({"length_init_discrete": 1}, "length_init_discrete"),
    ({"length_max_discrete": 5}, "length_max_discrete"), ({"length_min": 1.0}, "length_min"),
    ({"success_tolerance": 2.5}, "success_tolerance"),
])
def test_bad_trust_region_settings_raise_naming_the_setting(value, name):
    with pytest.raises(ValueError, match=f"{name}="):
        ff.Optimizer(objectives.SPACE, trust_region=value)


@pytest.mark.parametrize("value", ["turbo", 3, [1], {"radius": 2}])
def test_a_bad_trust_region_value_raises_naming_it(value):
    with pytest.raises(ValueError, match="trust_region"):
        ff.Optimizer(objectives.SPACE, trust_region=value)


def test_trust_region_settings_forms():
    assert trust_region_setting(None) is None and trust_region_setting(False) is None
    assert trust_region_setting(True) == TrustRegion() == trust_region_setting("casmopolitan")
    assert trust_region_setting({"failure_tolerance": 5}) == TrustRegion(failure_tolerance=5)


# ------------------------------------------------------------------------------------------- in the loop
def _run(opt, n):
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, objectives.value_of(x))


def test_loop_suggestions_stay_in_the_region_and_restart_on_collapse():
    settings = {"failure_tolerance": 2, "success_tolerance": 2, "length_init_discrete": 2}
    opt = ff.Optimizer(objectives.SPACE, n_init=4, seed=0, n_restarts=2, trust_region=settings)
    space = objectives.SPACE
    seen_restart = False
    for _ in range(16):
        x = opt.ask()
        info = opt.last_suggestion_info
        if info.get("source") == "model" and not info["restart"]:
            X = opt._X
            values = np.array([t.value for t in opt.trials])
            state = trust_region_state(TrustRegion(**settings), values, 4, space.n_discrete)
            since = np.arange(len(values)) >= state.start
            centre = X[since][int(np.argmin(values[since]))]
            assert np.sum(space.encode(x)[space.n_continuous:] != centre[space.n_continuous:]) <= \
                min(state.length_discrete, space.n_discrete)
        seen_restart |= bool(info.get("restart"))
        opt.tell(x, objectives.value_of(x))
    assert seen_restart


def test_a_batch_with_a_trust_region_is_distinct_and_in_the_region():
    opt = ff.Optimizer(objectives.SPACE, n_init=5, seed=1, n_restarts=2, trust_region={"length_init_discrete": 2})
    _run(opt, 8)
    batch = opt.ask(n=3)
    X = objectives.SPACE.encode(batch)
    assert len({tuple(np.round(x, 12)) for x in X}) == 3
    assert opt.last_suggestion_info["source"] == "model"


@pytest.mark.parametrize("pending", ["believer", "liar_min"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_batch_in_a_trust_region_is_spread_out(seed, pending):
    """ask(n=4) on Func3C (as tests/bo/test_batch.py without a region): no two points share their discrete
    values with every continuous value within 2% of its range — with the believer's fantasies counted for the
    incumbent, which inside a region is what keeps them apart."""
    from fastfm.benchmarks import Func3C
    problem = Func3C()
    opt = ff.Optimizer(problem.space, n_init=5, seed=seed, n_restarts=2, pending=pending, trust_region=True)
    _run_problem(opt, problem, 12)
    batch = opt.ask(n=4)
    assert opt.last_suggestion_info["n_pending"] == 3 and not opt.last_suggestion_info["restart"]
    X = problem.space.encode(batch)
    nc = problem.space.n_continuous
    for i in range(4):
        for j in range(i):
            same = np.all(X[i, nc:] == X[j, nc:]) and np.all(np.abs(X[i, :nc] - X[j, :nc]) <= 0.02)
            assert not same, (batch[i], batch[j])


def _run_problem(opt, problem, n):
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, problem(x))


def test_a_loaded_optimizer_with_a_trust_region_continues_the_run(tmp_path):
    path = tmp_path / "run.jsonl"
    settings = {"failure_tolerance": 2, "success_tolerance": 2, "length_init_discrete": 2}
    opt = ff.Optimizer(objectives.SPACE, n_init=4, seed=3, n_restarts=2, storage=path, trust_region=settings)
    _run(opt, 14)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    assert loaded._trust_region == TrustRegion(**settings)
    for _ in range(4):                              # through a restart and its region's first values
        a, b = opt.ask(), loaded.ask()
        assert a == b and a.trial_id == b.trial_id
        opt.tell(a, objectives.value_of(a))
        loaded.tell(b, objectives.value_of(b))
    assert opt.ask(n=2) == loaded.ask(n=2)


def test_trust_region_bo_on_a_large_problem_improves_on_its_initial_design():
    from fastfm.benchmarks import get_problem
    problem = get_problem("mixed10c20n")
    opt = ff.Optimizer(problem.space, seed=0, n_restarts=3, trust_region=True)
    values = []
    for _ in range(30):
        x = opt.ask()
        values.append(float(problem(x)))
        opt.tell(x, values[-1])
    assert opt.last_suggestion_info["trust_region"]["length"] > 0
    assert min(values[10:]) < min(values[:10])


# ------------------------------------------------------------------------------ dimension-scaled prior
def test_dimension_scaled_prior_shifts_lengthscale_and_smoothing_means_by_half_log_d():
    space = _mixed_space()
    kernel = ff.kernels.ModLap(space, unit_diagonal=True)
    base = default_hyperparameter_prior(kernel)
    names = [h.name for h in kernel.hyperparameters for _ in range(h.n_elements)] + ["noise"]
    for n_dims in (1, 13, 60):
        prior = dimension_scaled_hyperparameter_prior(kernel, n_dims, smoothing=True)
        shift = np.asarray(prior.mean) - np.asarray(base.mean)
        for name, s in zip(names, shift):
            expected = 0.5 * math.log(n_dims) if name in ("lengthscale", "beta") else 0.0
            assert s == pytest.approx(expected, abs=1e-15), name
        np.testing.assert_array_equal(prior.std, base.std)
    only = dimension_scaled_hyperparameter_prior(kernel, 60)         # the default: lengthscales only
    beta = np.array(names) == "beta"
    np.testing.assert_array_equal(np.asarray(only.mean)[beta], np.asarray(base.mean)[beta])
    lengthscale = np.array(names) == "lengthscale"
    np.testing.assert_allclose(np.asarray(only.mean)[lengthscale] - np.asarray(base.mean)[lengthscale],
                               0.5 * math.log(60), rtol=1e-15)
    assert DEFAULT_LOG_PRIORS["lengthscale"][0] == math.log(0.5)     # the table itself is untouched
    with pytest.raises(ValueError, match="n_dims=0"):
        dimension_scaled_hyperparameter_prior(kernel, 0)


def test_optimizer_takes_the_dimension_scaled_prior_by_name(tmp_path):
    opt = ff.Optimizer(objectives.SPACE, n_init=3, seed=0, n_restarts=1, hyperparameter_prior="dimension_scaled",
                       storage=tmp_path / "run.jsonl")
    prior = opt.hyperparameter_prior(opt._kernel)
    expected = dimension_scaled_hyperparameter_prior(opt._kernel, objectives.SPACE.n_dims)
    np.testing.assert_array_equal(prior.mean, expected.mean)
    _run(opt, 5)
    loaded = ff.Optimizer.load(tmp_path / "run.jsonl")
    np.testing.assert_array_equal(loaded.hyperparameter_prior(loaded._kernel).mean, expected.mean)
    with pytest.raises(ValueError, match="hyperparameter_prior='dimension'"):
        ff.Optimizer(objectives.SPACE, hyperparameter_prior="dimension")


def test_auto_prior_is_dimension_scaled_from_20_columns_on():
    from fastfm.bo.surrogate import DIMENSION_SCALED_MIN_DIMS
    assert DIMENSION_SCALED_MIN_DIMS == 20
    for n_dims in (2, 19, 20, 30):
        space = ff.Space([ff.Real(f"x{i}", 0.0, 1.0) for i in range(n_dims - 1)] + [ff.Categorical("c", list("ab"))])
        assert space.n_dims == n_dims
        opt = ff.Optimizer(space, seed=0)                       # hyperparameter_prior="auto"
        prior = opt.hyperparameter_prior(opt._kernel)
        expected = (dimension_scaled_hyperparameter_prior(opt._kernel, n_dims) if n_dims >= 20
                    else default_hyperparameter_prior(opt._kernel))
        np.testing.assert_array_equal(prior.mean, expected.mean)
    assert ff.Optimizer(objectives.SPACE).hyperparameter_prior is default_hyperparameter_prior
