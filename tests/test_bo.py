import math
import warnings

import numpy as np
import pytest

import fastfm as ff
from fastfm.benchmarks import Func2C

FAST = {"n_random": 2000, "n_starts": 10}   # a smaller acquisition search keeps the tests quick


def test_short_bo_run_on_func2c_improves_on_its_initial_design():
    problem = Func2C()
    # 40 evaluations: seed 0's initial design already holds 0.065 (an S + B basin), which the default kernel
    # passes at evaluation 31 (ModLap alone at 30)
    res = ff.minimize(problem, problem.space, n_iter=40, n_init=10, seed=0, progress=False, acq_options=FAST)
    values = np.array([v for _, v, _ in res.history])
    assert len(values) == 40 and res.n_failed == 0
    assert values[10:].min() < values[:10].min()
    assert res.fun == values.min()
    assert res.x == res.history[int(np.argmin(values))][0]


def test_same_seed_gives_the_same_run():
    problem = Func2C()
    runs = [ff.minimize(problem, problem.space, n_iter=13, n_init=5, seed=7, progress=False, acq_options=FAST)
            for _ in range(2)]
    assert [c for c, _, _ in runs[0].history] == [c for c, _, _ in runs[1].history]


def test_failed_evaluations_are_recorded_and_the_run_goes_on():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", ["a", "b"])])
    calls = []

    def fun(config):
        calls.append(config)
        if len(calls) % 3 == 0:
            raise RuntimeError("simulator crashed")
        if len(calls) % 4 == 0:
            return float("nan")
        return (config["x"] - 0.3) ** 2 + (config["c"] == "b")

    with pytest.warns(RuntimeWarning, match="simulator crashed"):
        res = ff.minimize(fun, space, n_iter=14, n_init=4, seed=1, progress=False, acq_options=FAST)
    assert res.n_evals == 14
    failed = [t for t in res.trials if t.failed]
    assert len(failed) == res.n_failed >= 4
    assert any(t.error and "simulator crashed" in t.error for t in failed)
    assert all(math.isnan(t.value) for t in failed)
    assert math.isfinite(res.fun)


def test_all_evaluations_failing_stops_with_a_result_that_says_why():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", ["a", "b"])])
    res = ff.minimize(lambda c: float("inf"), space, n_iter=6, n_init=3, seed=0, progress=False)
    # the initial design all failed: the run stops there instead of spending the budget, and says so
    assert res.status == "all_failed" and "every evaluation failed (3 of 3)" in res.message
    assert res.n_evals == res.n_failed == 3 and res.x is None and math.isnan(res.fun)
    assert all(t.error == "the objective returned inf" for t in res.trials)


def test_tell_rejects_bad_configs_and_changes_nothing():
    space = ff.Space([ff.Real("x", 0, 1), ff.Integer("k", 1, 3)])
    opt = ff.Optimizer(space, n_init=2, seed=0)
    x = opt.ask()
    opt.tell(x, 1.0)
    for bad, error in [({"x": 2.0, "k": 1}, ff.OutOfBoundsError), ({"x": 0.5}, ff.MissingParameterError),
                       ({"x": 0.5, "k": 1, "z": 0}, ff.UnknownParameterError),
                       ({"x": 0.5, "k": 1.5}, ff.InvalidValueError)]:
        with pytest.raises(error):
            opt.tell(bad, 0.0)
    with pytest.raises(ff.InvalidValueError, match="y must be a real number"):
        opt.tell({"x": 0.5, "k": 1}, "0.3")
    assert opt.n_told == 1


def test_ask_twice_gives_distinct_points_and_tell_accepts_them_in_any_order():
    space = ff.Space([ff.Categorical("a", [0, 1, 2]), ff.Categorical("b", [0, 1])])
    opt = ff.Optimizer(space, n_init=2, seed=0, acq_options=FAST)
    asked = [opt.ask() for _ in range(6)]          # the whole space: 6 points, all distinct
    assert len({tuple(sorted(c.items())) for c in asked}) == 6
    for config in reversed(asked):
        opt.tell(config, config["a"] + config["b"])
    with pytest.raises(ff.optim.SearchSpaceExhaustedError):
        opt.ask()


def test_constant_objective_and_model_suggestions_work():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", ["a", "b", "c"])])
    opt = ff.Optimizer(space, n_init=3, seed=0, acq_options=FAST)
    for _ in range(6):
        opt.tell(opt.ask(), 2.5)
    assert opt.last_suggestion_info["source"] == "model"
    assert opt.best()[1] == 2.5


def test_random_search_kernel_and_continuous_only_space():
    space = ff.Space([ff.Real("x", -1, 1), ff.Real("y", -1, 1)])
    res = ff.minimize(lambda c: c["x"] ** 2 + c["y"] ** 2, space, n_iter=8, n_init=4, kernel="random", seed=0,
                      progress=False)
    assert res.n_evals == 8
    with pytest.warns(RuntimeWarning, match="Matern52"):     # an FM kernel asked for by name
        res = ff.minimize(lambda c: c["x"] ** 2 + c["y"] ** 2, space, n_iter=8, n_init=4, kernel="modlap", seed=0,
                          progress=False, acq_options=FAST)
    assert res.fun < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # the default asks for none: Matern52 without a word
        res = ff.minimize(lambda c: c["x"] ** 2 + c["y"] ** 2, space, n_iter=8, n_init=4, seed=0, progress=False,
                          acq_options=FAST)
    assert res.fun < 0.5


def test_default_prior_covers_every_free_hyperparameter():
    space = ff.Space([ff.Real("x", 0, 1), ff.Real("y", 0, 1), ff.Categorical("c", "abc"), ff.Integer("k", 0, 3)])
    for kernel in (ff.kernels.ModLap(space), ff.kernels.ProdLap(space), ff.kernels.ModNN(space)):
        prior = ff.bo.default_hyperparameter_prior(kernel)
        theta = np.append(kernel.theta, np.log(1e-3))
        value, grad = prior(theta)
        assert grad.shape == theta.shape and np.isfinite(value)
        # the prior pulls towards its mean: the gradient points back from a displaced theta
        _, grad_far = prior(theta + 3.0)
        assert np.all(grad_far < 0)


def test_bad_arguments():
    space = ff.Space([ff.Real("x", 0, 1)])
    with pytest.raises(ValueError, match="n_init"):
        ff.Optimizer(space, n_init=0)
    with pytest.raises(ValueError, match="acquisition"):
        ff.Optimizer(space, acquisition="pi")
    with pytest.raises(ValueError, match="log_transform_y"):
        ff.Optimizer(space, log_transform_y="sqrt")
    with pytest.raises(ValueError, match="hyperparameter_prior"):
        ff.Optimizer(space, hyperparameter_prior="strong")
    with pytest.raises(ValueError, match="n_iter"):
        ff.minimize(lambda c: 0.0, space, n_iter=0)
    # refused when made, not when the first fit fails (a fit that fails suggests random points, with a warning)
    for bad in (-1, 2.5, "3", True):
        with pytest.raises(ff.InvalidValueError, match="n_restarts") as info:
            ff.Optimizer(space, n_restarts=bad)
        assert info.value.parameter == "n_restarts" and info.value.value == bad
    for bad in ({"x": (0, 1)}, [ff.Real("x", 0, 1)]):
        with pytest.raises(ff.InvalidValueError, match="space must be a fastfm.Space"):
            ff.Optimizer(bad)
        with pytest.raises(ff.InvalidValueError, match="space must be a fastfm.Space"):
            ff.minimize(lambda c: 0.0, bad, n_iter=2, progress=False)
    with pytest.raises(ff.InvalidValueError, match="callback must be callable") as info:
        ff.minimize(lambda c: 0.0, space, n_iter=2, progress=False, callback=3)
    assert info.value.parameter == "callback"
    opt = ff.Optimizer(space, n_init=2, seed=0)
    x = opt.ask()
    for kwargs in ({"eval_time": "1 s"}, {"eval_time": True}, {"error": 404}):
        with pytest.raises(ff.InvalidValueError, match=next(iter(kwargs))):
            opt.tell(x, None, **kwargs)
    assert opt.n_told == 0 and len(opt.pending) == 1        # nothing recorded
    opt.tell(x, None, error=ZeroDivisionError("division by zero"), eval_time=np.float32(0.5))
    assert opt.trials[0].error == "ZeroDivisionError: division by zero" and opt.trials[0].eval_time == 0.5
    for bad in (-1, 1.5, "abc"):
        with pytest.raises(ff.InvalidValueError, match="seed") as info:
            ff.Optimizer(space, seed=bad)
        assert info.value.parameter == "seed" and info.value.value == bad


# ------------------------------------------------------------ conditional spaces (SPEC §3)
def _svm_like_space():
    return ff.Space([
        ff.Categorical("kernel", ["linear", "rbf", "poly"]),
        ff.Real("C", 1e-2, 1e2, log=True),
        ff.Real("gamma", 1e-4, 1.0, log=True, active_if={"kernel": ["rbf", "poly"]}),
        ff.Integer("degree", 2, 4, active_if={"kernel": "poly"}),
    ])


def _svm_like(config):
    value = (np.log10(config["C"]) - 1.0) ** 2
    if "gamma" in config:
        value += (np.log10(config["gamma"]) + 2.0) ** 2 - 1.0
    return value + 0.5 * (config.get("degree", 3) - 3) ** 2


@pytest.mark.parametrize("kernel", ["hierarchical", "modlap"])
def test_ask_returns_exactly_the_active_parameters(kernel):
    space = _svm_like_space()
    opt = ff.Optimizer(space, kernel=kernel, n_init=5, seed=0, n_restarts=2, acq_options=FAST)
    for _ in range(12):
        config = opt.ask()
        assert set(config) == {name for name, on in space.is_active(config).items() if on}
        opt.tell(config, _svm_like(config))
    assert opt.last_suggestion_info["source"] == "model"
    assert isinstance(opt.model.kernel_, ff.kernels.Hierarchical if kernel == "hierarchical" else ff.kernels.ModLap)


def test_minimize_with_the_hierarchical_kernel_improves_on_its_initial_design():
    space = _svm_like_space()
    res = ff.minimize(_svm_like, space, n_iter=25, n_init=8, kernel="hierarchical", seed=0, progress=False,
                      n_restarts=2, acq_options=FAST)
    values = np.array([v for _, v, _ in res.history])
    assert values[8:].min() < values[:8].min()
    assert res.n_failed == 0


def test_tell_rejects_inactive_and_missing_conditional_parameters():
    space = _svm_like_space()
    opt = ff.Optimizer(space, n_init=2, seed=0)
    with pytest.raises(ff.InactiveParameterError, match="'gamma'"):
        opt.tell({"kernel": "linear", "C": 1.0, "gamma": 0.1}, 1.0)
    with pytest.raises(ff.MissingParameterError, match="'degree'"):
        opt.tell({"kernel": "poly", "C": 1.0, "gamma": 0.1}, 1.0)
    assert opt.n_told == 0
    opt.tell({"kernel": "poly", "C": 1.0, "gamma": 0.1, "degree": 2}, 1.0)
    assert opt.n_told == 1


def test_default_prior_covers_the_hierarchical_kernel():
    kernel = ff.kernels.Hierarchical(_svm_like_space())
    prior = ff.bo.default_hyperparameter_prior(kernel)
    theta = np.append(kernel.theta, np.log(1e-3))
    assert np.all(np.isfinite(prior(theta)[1]))
    # γ is centred inside its (0, 1] range, not at the log midpoint of its bounds
    assert prior.mean[0] == pytest.approx(np.log(0.7))


def test_warm_refits_run_fewer_restarts_and_a_geometric_schedule_runs_all(monkeypatch):
    """A refit after one more value runs WARM_RESTARTS random restarts and races them (WARM_FINALISTS); the first
    fit and the refits where the data have grown by FULL_REFIT_GROWTH since the last full one run all n_restarts,
    FULL_FINALISTS of them to convergence (what the GP regressor is given, counted at its fit), and then fit the
    other transform of y (Y_TRANSFORM_CANDIDATES) from that optimum as a warm refit does."""
    from fastfm.bo import surrogate as optimizer_module
    from fastfm.gp import GaussianProcessRegressor

    fits = []
    original_fit = GaussianProcessRegressor.fit

    def recording_fit(self, X, y):
        fits.append((len(X), self.n_restarts, self.n_finalists))
        return original_fit(self, X, y)

    monkeypatch.setattr(GaussianProcessRegressor, "fit", recording_fit)
    problem = Func2C()
    opt = ff.Optimizer(problem.space, kernel="modlap", n_init=3, seed=0, n_restarts=7, acq_options=FAST)
    for _ in range(16):
        x = opt.ask()
        opt.tell(x, problem(x))
    assert fits, "the model was never fitted"
    warm = (optimizer_module.WARM_RESTARTS, optimizer_module.WARM_FINALISTS)
    # each full fit is followed by the other transform's fit at the same size, with a warm refit's settings
    other_transform = [i + 1 for i, (n, r, _) in enumerate(fits) if r == 7]
    assert all(fits[i][0] == fits[i - 1][0] and fits[i][1:] == warm for i in other_transform)
    given = [(n, r) for i, (n, r, _) in enumerate(fits) if i not in other_transform]
    finalists = {n: k for i, (n, _, k) in enumerate(fits) if i not in other_transform}
    assert given[0] == (3, 7)                                   # the first fit: all restarts
    full = {n for n, n_restarts in given[1:] if n_restarts == 7}
    assert all(n_restarts in (7, optimizer_module.WARM_RESTARTS) for _, n_restarts in given[1:])
    # the full refits are where floor(log n / log 1.25) steps up: 4, 5, 6, 8, 10, 12, 15 (told values)
    assert full == {n for n, _ in given[1:] if n in (4, 5, 6, 8, 10, 12, 15)}
    assert {7, 9, 11, 13, 14} <= {n for n, r in given[1:] if r == optimizer_module.WARM_RESTARTS}
    # both race: a full fit has at least 8 starts here (the kernel's θ and 7 random ones), a warm one 2 or more
    warm_finalists, full_finalists = optimizer_module.WARM_FINALISTS, optimizer_module.FULL_FINALISTS
    assert warm_finalists < min(2, full_finalists) and full_finalists < 8
    assert all(finalists[n] == (optimizer_module.FULL_FINALISTS if r == 7 else optimizer_module.WARM_FINALISTS)
               for n, r in given)
    opt.ask()                                                   # 16 told: a warm refit, its record says so
    assert opt._fit_record["n_told"] == 16 and opt._fit_record["n_finalists"] == optimizer_module.WARM_FINALISTS
    # and on: each full refit a quarter more data than the last
    assert [n for n in range(16, 30) if optimizer_module._is_full_refit(n)] == [19, 23, 29]


def test_warm_refits_race_only_on_small_spaces():
    """Racing is measured on the spaces where kernel="auto" considers AdditiveFM; from ADDITIVE_MAX_DIMS encoded
    columns on (MaxSATWeighted lost with it) every refit, warm or full, runs its starts to convergence."""
    from fastfm.bo import surrogate

    space = ff.Space([ff.Categorical(f"b{i}", [0, 1]) for i in range(surrogate.ADDITIVE_MAX_DIMS)])
    opt = ff.Optimizer(space, n_init=3, seed=0, acq_options=FAST)
    for _ in range(7):
        x = opt.ask()
        opt.tell(x, float(sum(x.values())))
    x = opt.ask()                               # 7 told: a warm refit (4, 5, 6 and 8 are full ones)
    assert opt._fit_record["n_told"] == 7 and opt._fit_record["warm"] is not None
    assert opt._fit_record["n_restarts"] == surrogate.WARM_RESTARTS and "n_finalists" not in opt._fit_record
    opt.tell(x, float(sum(x.values())))
    opt.ask()                                   # 8 told: a full refit, every start run to convergence
    assert opt._fit_record["n_told"] == 8 and opt._fit_record["n_restarts"] == opt.n_restarts
    assert "n_finalists" not in opt._fit_record


def test_a_journal_written_before_racing_refits_without_it(tmp_path, monkeypatch):
    """Fit records without "n_finalists" (journals of earlier versions) rebuild their fit without racing, so a
    loaded run continues as it was recorded; the records of this version race its warm refits on replay too."""
    from fastfm.gp import GaussianProcessRegressor

    problem = Func2C()
    journal = tmp_path / "run.jsonl"
    opt = ff.Optimizer(problem.space, kernel="modlap", n_init=3, seed=0, acq_options=FAST, storage=journal)
    for _ in range(9):
        x = opt.ask()
        opt.tell(x, problem(x))
    opt.ask()                                   # the fit of 9 told values: a warm refit, raced
    assert opt._fit_record["n_finalists"] == 1
    record = dict(opt._fit_record)
    seen = []
    original_fit = GaussianProcessRegressor.fit
    monkeypatch.setattr(GaussianProcessRegressor, "fit",
                        lambda self, X, y: (seen.append(self.n_finalists), original_fit(self, X, y))[1])
    raced = opt._fit(record)                     # as a load rebuilds it: from the record alone
    del record["n_finalists"]
    unraced = opt._fit(record)
    assert seen == [1, None]
    np.testing.assert_array_equal(raced.kernel_.theta, opt.model.kernel_.theta)     # replay: bit for bit
    assert np.all(np.isfinite(unraced.kernel_.theta))


def test_the_exploration_margin_reaches_the_acquisition():
    """Same seed, same told points, so the same fit: the best log-EI found is lower under a larger margin."""
    space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("c", ["a", "b", "c"])])
    rng = np.random.default_rng(0)
    told = [{"x": float(rng.uniform(-1, 1)), "c": str(rng.choice(["a", "b", "c"]))} for _ in range(12)]
    values = {}
    for xi in (0.0, 0.001, 0.5):
        opt = ff.Optimizer(space, seed=3, n_init=5, xi=xi)
        for config in told:
            opt.tell(config, config["x"] ** 2 + (config["c"] != "b"))
        opt.ask()
        values[xi] = opt.last_suggestion_info["acquisition"]
    assert values[0.0] > values[0.001] > values[0.5]
