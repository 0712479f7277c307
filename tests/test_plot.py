"""``fastfm.plot`` (the ``fastfm[plot]`` extra), ``OptimizeResult.to_dataframe`` and ``fastfm bench --plot``.

Each plot is checked through the artists it leaves on the Axes: line data against the values computed here
independently from the trials or the model, the ± s.e. band's vertices, bar heights against the kernel's
hyperparameters, and the typed errors of bad inputs.
"""
import math
import sys
import warnings

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import fastfm as ff  # noqa: E402
import fastfm.plot as ffplot  # noqa: E402
from fastfm.cli import main  # noqa: E402

SPACE = ff.Space([
    ff.Real("x1", -1.0, 1.0),
    ff.Real("lr", 1e-3, 1.0, log=True),
    ff.Categorical("color", ["red", "green", "blue"]),
    ff.Integer("layers", 1, 4),
])
CONDITIONAL = ff.Space([
    ff.Categorical("kernel", ["linear", "rbf"]),
    ff.Real("C", 1e-2, 1e2, log=True),
    ff.Real("gamma", 1e-4, 1.0, log=True, active_if={"kernel": "rbf"}),
])


def objective(config):
    """Cheap, with failures: NaN beyond x1 = 0.4, an exception for blue at 4 layers."""
    if config["x1"] > 0.4:
        return float("nan")
    if config["color"] == "blue" and config["layers"] == 4:
        raise ValueError("diverged")
    return ((config["x1"] + 0.3) ** 2 + 0.1 * abs(math.log10(config["lr"]) + 2)
            + {"red": 0.0, "green": 0.3, "blue": 0.6}[config["color"]] + 0.05 * config["layers"])


def conditional_objective(config):
    return math.log10(config["C"]) ** 2 + (0.0 if config["kernel"] == "linear" else config["gamma"])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def bo_result():
    """A short ModLap run (a fitted GP) with failed evaluations among its trials, its GP on a log of y (the
    default "auto" may model y as it is: here the quantile band of a transformed y is what is drawn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # the failed evaluations are warned about
        result = ff.minimize(objective, SPACE, n_iter=12, n_init=6, seed=0, progress=False, log_transform_y="shift")
    assert result.n_failed >= 1 and result.n_failed < result.n_evals
    return result


@pytest.fixture(scope="module")
def random_results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [ff.minimize(objective, SPACE, n_iter=n, n_init=3, kernel="random", seed=seed, progress=False)
                for seed, n in ((0, 15), (1, 15), (2, 12))]


@pytest.fixture(scope="module")
def plain_gp():
    """A GP on SPACE without a y transform: predict's std is in the units of y."""
    configs = SPACE.sample(15, seed=3)
    y = [((c["x1"] + 0.3) ** 2 + {"red": 0.0, "green": 0.3, "blue": 0.6}[c["color"]]) for c in configs]
    return ff.GaussianProcessRegressor(ff.kernels.ModLap(SPACE), space=SPACE, n_restarts=0, random_state=0,
                                       log_transform_y=False).fit(configs, y)


def _expected_best_so_far(trials):
    best, out = math.inf, []
    for trial in trials:
        if not trial.failed and trial.value is not None and math.isfinite(trial.value):
            best = min(best, trial.value)
        out.append(best if math.isfinite(best) else math.nan)
    return np.array(out)


def _band_at(collection, x):
    """(lowest, highest) y of a fill_between band's vertices at x."""
    vertices = np.vstack([path.vertices for path in collection.get_paths()])
    ys = vertices[np.isclose(vertices[:, 0], x), 1]
    return ys.min(), ys.max()


# ------------------------------------------------------------------------------------------ convergence
def test_convergence_of_one_run_draws_the_best_so_far_skipping_failed_trials(bo_result):
    ax = ffplot.convergence(bo_result, label="modlap")
    (line,) = ax.lines
    np.testing.assert_array_equal(line.get_xdata(), np.arange(1, bo_result.n_evals + 1))
    np.testing.assert_allclose(line.get_ydata(), _expected_best_so_far(bo_result.trials), equal_nan=True)
    assert line.get_label() == "modlap" and not ax.collections      # one run: no band
    # the Optimizer (its trials) draws the same curve
    line2 = ffplot.convergence(bo_result.optimizer).lines[0]
    np.testing.assert_allclose(line2.get_ydata(), line.get_ydata(), equal_nan=True)


def test_convergence_of_several_runs_draws_the_mean_and_a_standard_error_band(random_results):
    ax = ffplot.convergence(random_results, label="random")
    curves = [_expected_best_so_far(r.trials) for r in random_results]
    (line,) = ax.lines
    (band,) = ax.collections
    for step in range(1, 16):
        at_step = np.array([c[step - 1] for c in curves if len(c) >= step and np.isfinite(c[step - 1])])
        mean = at_step.mean()
        error = at_step.std(ddof=1) / math.sqrt(len(at_step)) if len(at_step) > 1 else 0.0
        assert line.get_ydata()[step - 1] == pytest.approx(mean)
        lower, upper = _band_at(band, step)
        assert (lower, upper) == (pytest.approx(mean - error), pytest.approx(mean + error))
    assert "3 runs" in ax.get_ylabel()


def test_convergence_takes_values_with_none_nan_and_inf_as_failures():
    runs = [[3.0, 1.0, float("nan"), 2.0], [2.0, 2.0, 0.5, None], [float("inf"), 4.0, 1.0, 1.0]]
    ax = ffplot.convergence(runs)
    # best so far: [3, 1, 1, 1], [2, 2, .5, .5], [nan, 4, 1, 1]; step 1 over the two runs with a success
    expected_mean = [2.5, 7 / 3, 2.5 / 3, 2.5 / 3]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected_mean)
    assert _band_at(ax.collections[0], 1) == (pytest.approx(2.0), pytest.approx(3.0))   # 2.5 ± 0.5
    one = ffplot.convergence(np.array([np.nan, 5.0, 7.0, 4.0])).lines[-1]
    np.testing.assert_allclose(one.get_ydata(), [np.nan, 5.0, 5.0, 4.0], equal_nan=True)


def test_convergence_reuses_the_axes_given(random_results):
    fig, ax = plt.subplots()
    assert ffplot.convergence(random_results[0], ax=ax) is ax
    assert ffplot.convergence(random_results, ax=ax, label="mean") is ax
    assert len(ax.lines) == 2 and len(fig.axes) == 1


@pytest.mark.parametrize("bad, error", [([], ff.InvalidValueError), ("abc", TypeError), ([{"a": 1}], TypeError)])
def test_convergence_rejects_what_is_not_a_run(bad, error):
    with pytest.raises(error, match="result_or_results|run"):
        ffplot.convergence(bad)


# ------------------------------------------------------------------------------------------ time
def test_evaluations_over_time_uses_cumulative_suggest_and_eval_time(bo_result):
    ax = ffplot.evaluations_over_time(bo_result)
    trials = bo_result.trials
    times = np.cumsum([np.nan_to_num(t.suggest_time) + np.nan_to_num(t.eval_time) for t in trials])
    ok = np.array([not t.failed for t in trials])
    lines = {line.get_label(): line for line in ax.lines}
    np.testing.assert_allclose(lines["evaluations"].get_xdata(), times[ok])
    np.testing.assert_allclose(lines["evaluations"].get_ydata(), [t.value for t in trials if not t.failed])
    np.testing.assert_allclose(lines["best so far"].get_ydata(), _expected_best_so_far(trials), equal_nan=True)
    np.testing.assert_allclose(lines["failed"].get_xdata(), times[~ok])
    assert len(lines["failed"].get_xdata()) == bo_result.n_failed
    fig, given = plt.subplots()
    assert ffplot.evaluations_over_time(bo_result.optimizer, ax=given) is given
    with pytest.raises(TypeError, match="result must be"):
        ffplot.evaluations_over_time([1.0, 2.0])


# ------------------------------------------------------------------------------------------ importance
def test_parameter_importance_of_a_run_reads_its_last_fitted_kernel(bo_result):
    kernel = bo_result.optimizer.model.kernel_
    ax = ffplot.parameter_importance(bo_result)
    heights = [bar.get_height() for bar in ax.patches]
    # continuous (x1, lr): 1/lengthscale; discrete (color, layers): 1/beta
    expected = [*(1 / np.asarray(kernel.lengthscale)), *(1 / np.asarray(kernel.beta))]
    np.testing.assert_allclose(heights, expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x1", "lr", "color", "layers"]
    assert type(kernel).__name__ in ax.get_title()


def test_parameter_importance_of_a_fitted_regressor_reuses_the_axes(plain_gp):
    fig, ax = plt.subplots()
    assert ffplot.parameter_importance(plain_gp, ax=ax) is ax
    np.testing.assert_allclose([bar.get_height() for bar in ax.patches][:2], 1 / plain_gp.kernel_.lengthscale)


def test_parameter_importance_of_a_product_baseline_and_a_set_parameter():
    prodlap = ff.kernels.ProdLap(SPACE, lengthscale=[0.5, 2.0], beta=[0.1, 4.0])
    heights = [bar.get_height() for bar in ffplot.parameter_importance(prodlap).patches]
    np.testing.assert_allclose(heights, [2.0, 0.5, 10.0, 0.25])
    with_set = ff.Space([ff.Set("centres", n_points=2, dim=2), ff.Real("w", 0.0, 1.0), ff.Categorical("c", "ab")])
    kernel = ff.kernels.ModLap(with_set, lengthscale=[1.0, 0.5, 0.25, 0.25, 2.0], beta=0.2)
    heights = [bar.get_height() for bar in ffplot.parameter_importance(kernel).patches]
    np.testing.assert_allclose(heights, [(1 + 2 + 4 + 4) / 4, 0.5, 5.0])   # the Set: mean over its 4 columns


def test_parameter_importance_names_a_kernel_it_cannot_read():
    with pytest.raises(TypeError, match="Hierarchical"):
        ffplot.parameter_importance(ff.kernels.Hierarchical(CONDITIONAL))
    with pytest.raises(TypeError, match="ModNN"):
        ffplot.parameter_importance(ff.kernels.ModNN(SPACE))
    with pytest.raises(TypeError, match="expected a GaussianProcessRegressor"):
        ffplot.parameter_importance("modlap")


def test_parameter_importance_of_a_random_search_says_there_is_no_model(random_results):
    with pytest.raises(ff.InvalidValueError, match="no fitted model"):
        ffplot.parameter_importance(random_results[0])


# ------------------------------------------------------------------------------------------ slices
def test_slice_1d_continuous_draws_the_mean_and_a_two_std_band(plain_gp):
    center = {"x1": 0.1, "lr": 0.01, "color": "green", "layers": 2}
    ax = ffplot.slice_1d(plain_gp, SPACE, center, "x1", n=25)
    grid = np.linspace(-1.0, 1.0, 25)
    mean, std = plain_gp.predict([{**center, "x1": v} for v in grid], return_std=True)
    (line,) = ax.lines[:1]
    np.testing.assert_allclose(line.get_xdata(), grid)
    np.testing.assert_allclose(line.get_ydata(), mean)
    for i in (0, 12, 24):
        assert _band_at(ax.collections[0], grid[i]) == (pytest.approx(mean[i] - 2 * std[i]),
                                                        pytest.approx(mean[i] + 2 * std[i]))
    assert ax.get_xlabel() == "x1"
    log_ax = ffplot.slice_1d(plain_gp, SPACE, center, "lr", n=10)
    assert log_ax.get_xscale() == "log"
    np.testing.assert_allclose(log_ax.lines[0].get_xdata(), np.geomspace(1e-3, 1.0, 10))


def test_slice_1d_discrete_draws_error_bars_per_value(plain_gp):
    center = {"x1": 0.1, "lr": 0.01, "color": "green", "layers": 2}
    fig, ax = plt.subplots()
    assert ffplot.slice_1d(plain_gp, SPACE, center, "color", ax=ax) is ax
    (container,) = ax.containers
    mean = plain_gp.predict([{**center, "color": c} for c in ["red", "green", "blue"]])
    np.testing.assert_allclose(container.lines[0].get_ydata(), mean)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["red", "green", "blue"]
    integer_ax = ffplot.slice_1d(plain_gp, SPACE, center, "layers")
    np.testing.assert_allclose(integer_ax.containers[0].lines[0].get_xdata(), [1, 2, 3, 4])


def test_slice_1d_of_a_run_with_a_transformed_y_draws_a_quantile_band_around_the_median(bo_result):
    gp = bo_result.optimizer.model
    assert gp.y_transform_                       # BO's GP models a transform of y
    ax = ffplot.slice_1d(bo_result, None, bo_result.x, "x1", n=30)
    line, band = ax.lines[0], ax.collections[0]
    grid = np.linspace(-1.0, 1.0, 30)
    np.testing.assert_allclose(line.get_ydata(), gp.predict(SPACE.encode([{**bo_result.x, "x1": v} for v in grid])))
    for x, median in zip(grid[::7], line.get_ydata()[::7]):
        lower, upper = _band_at(band, x)
        assert lower <= median + 1e-12 and median - 1e-12 <= upper
    assert "median" in ax.get_ylabel()


def test_slice_2d_draws_contours_of_the_mean_or_cells_for_a_discrete_axis(plain_gp):
    center = {"x1": 0.1, "lr": 0.01, "color": "green", "layers": 2}
    ax = ffplot.slice_2d(plain_gp, SPACE, center, ("x1", "lr"), n=12)
    grid_x, grid_lr = np.linspace(-1, 1, 12), np.geomspace(1e-3, 1, 12)
    surface = plain_gp.predict([{**center, "x1": x, "lr": lr} for lr in grid_lr for x in grid_x])
    (contours,) = [c for c in ax.collections if hasattr(c, "levels")]
    assert contours.levels.min() <= surface.min() and contours.levels.max() >= surface.max()
    assert ax.get_yscale() == "log" and len(ax.figure.axes) == 2           # and a colour bar
    fig, given = plt.subplots()
    assert ffplot.slice_2d(plain_gp, SPACE, center, ("x1", "color"), ax=given, n=8) is given
    mesh = given.collections[0]
    expected = plain_gp.predict([{**center, "x1": x, "color": c} for c in ["red", "green", "blue"]
                                 for x in np.linspace(-1, 1, 8)])
    np.testing.assert_allclose(np.asarray(mesh.get_array()).ravel(), expected)


def test_slices_name_the_bad_parameter(plain_gp):
    center = {"x1": 0.1, "lr": 0.01, "color": "green", "layers": 2}
    with pytest.raises(ff.UnknownParameterError, match="'depth'"):
        ffplot.slice_1d(plain_gp, SPACE, center, "depth")
    with pytest.raises(ff.UnknownParameterError, match="'depth'"):
        ffplot.slice_2d(plain_gp, SPACE, center, ("x1", "depth"))
    with pytest.raises(ff.InvalidValueError, match="parameters must be two different"):
        ffplot.slice_2d(plain_gp, SPACE, center, ("x1", "x1"))
    with pytest.raises(ff.InvalidValueError, match="center must be a config dict"):
        ffplot.slice_1d(plain_gp, SPACE, [0.1, 0.01, "green", 2], "x1")
    with pytest.raises(ff.OutOfBoundsError, match="x1"):
        ffplot.slice_1d(plain_gp, SPACE, {**center, "x1": 5.0}, "lr")
    with_set = ff.Space([ff.Set("centres", n_points=2, dim=1), ff.Categorical("c", "ab")])
    with pytest.raises(ff.InvalidValueError, match="Set parameter 'centres'"):
        ffplot.slice_1d(plain_gp, with_set, {"centres": np.zeros((2, 1)), "c": "a"}, "centres")


def test_slices_on_a_conditional_space():
    configs = CONDITIONAL.sample(10, seed=1)
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(CONDITIONAL), space=CONDITIONAL, n_restarts=0,
                                     random_state=0).fit(configs, [conditional_objective(c) for c in configs])
    linear = {"kernel": "linear", "C": 1.0}
    with pytest.raises(ff.InactiveParameterError, match="'gamma' is inactive"):
        ffplot.slice_1d(gp, CONDITIONAL, linear, "gamma")
    with pytest.raises(ff.MissingParameterError, match="gamma"):
        ffplot.slice_1d(gp, CONDITIONAL, linear, "kernel")     # kernel=rbf activates gamma, not in center
    ax = ffplot.slice_1d(gp, CONDITIONAL, {**linear, "gamma": 0.01}, "kernel")   # the inactive gamma is kept
    expected = gp.predict([linear, {"kernel": "rbf", "C": 1.0, "gamma": 0.01}])
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), expected)


def test_a_run_fills_what_the_slice_activates_from_its_best_trial_with_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ff.minimize(conditional_objective, CONDITIONAL, n_iter=14, n_init=6, kernel="modlap", seed=3,
                             progress=False)
    rbf_trials = sorted((t for t in result.trials if t.config["kernel"] == "rbf"), key=lambda t: t.value)
    assert rbf_trials, "the run never tried kernel=rbf: pick another seed"
    best_gamma = rbf_trials[0].config["gamma"]
    linear = {"kernel": "linear", "C": 3.0}                   # gamma inactive, so absent
    ax = ffplot.slice_1d(result, CONDITIONAL, linear, "kernel")
    expected = result.optimizer.model.predict([linear, {"kernel": "rbf", "C": 3.0, "gamma": best_gamma}])
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), expected)
    explicit = ffplot.slice_1d(result, CONDITIONAL, {**linear, "gamma": 0.5}, "kernel")   # the center's own wins
    np.testing.assert_allclose(explicit.containers[0].lines[0].get_ydata()[1],
                               result.optimizer.model.predict([{"kernel": "rbf", "C": 3.0, "gamma": 0.5}])[0])
    ax2 = ffplot.slice_2d(result, CONDITIONAL, linear, ("C", "kernel"), n=5)
    assert len(ax2.collections) >= 1


def test_a_filled_value_may_be_none():
    space = ff.Space([ff.Categorical("mode", ["a", "b"]), ff.Real("x", 0.0, 1.0),
                      ff.Categorical("extra", [None, 1, 2], active_if={"mode": "b"})])
    opt = ff.Optimizer(space, n_init=4, kernel="modlap", seed=0)
    told = [{"mode": "a", "x": 0.2}, {"mode": "a", "x": 0.8}, {"mode": "b", "x": 0.5, "extra": None},
            {"mode": "b", "x": 0.1, "extra": 2}, {"mode": "a", "x": 0.5}, {"mode": "b", "x": 0.9, "extra": 1}]
    for config, value in zip(told, [0.3, 0.9, 0.1, 0.5, 0.4, 0.7]):
        opt.tell(config, value)
    opt.ask()                                                  # fits the model the slice reads
    ax = ffplot.slice_1d(opt, space, {"mode": "a", "x": 0.5}, "mode")
    expected = opt.model.predict([{"mode": "a", "x": 0.5}, {"mode": "b", "x": 0.5, "extra": None}])
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), expected)


# ------------------------------------------------------------------------------------------ to_dataframe
def test_to_dataframe_has_one_row_per_trial_with_the_parameters_as_columns(bo_result):
    frame = bo_result.to_dataframe()
    assert list(frame.columns) == ["trial_id", "x1", "lr", "color", "layers", "value", "failed", "error",
                                   "suggest_time", "eval_time"]
    trials = bo_result.trials
    assert len(frame) == len(trials) == bo_result.n_evals
    assert frame["trial_id"].tolist() == [t.trial_id for t in trials]
    assert frame["color"].tolist() == [t.config["color"] for t in trials]
    np.testing.assert_allclose(frame["x1"], [t.config["x1"] for t in trials])
    np.testing.assert_allclose(frame["value"], [t.value for t in trials], equal_nan=True)
    assert frame["failed"].tolist() == [t.failed for t in trials]
    assert frame["value"][frame["failed"]].isna().all() and frame["error"][frame["failed"]].notna().all()
    np.testing.assert_allclose(frame["eval_time"], [t.eval_time for t in trials])


def test_to_dataframe_of_a_conditional_space_leaves_inactive_parameters_empty():
    result = ff.minimize(conditional_objective, CONDITIONAL, n_iter=12, n_init=3, kernel="random", seed=0,
                         progress=False)
    frame = result.to_dataframe()
    assert list(frame.columns)[1:4] == ["kernel", "C", "gamma"]
    linear = frame["kernel"] == "linear"
    assert 0 < linear.sum() < len(frame)
    assert frame["gamma"][linear].isna().all() and frame["gamma"][~linear].notna().all()


def test_an_optimizers_dataframe_is_its_runs(bo_result, tmp_path):
    # ask/tell users (and a journal loaded later) get the same frame from the optimizer itself
    pd = pytest.importorskip("pandas")
    frame = bo_result.to_dataframe()
    pd.testing.assert_frame_equal(bo_result.optimizer.to_dataframe(), frame)
    opt = ff.Optimizer(CONDITIONAL, n_init=3, kernel="random", seed=0, storage=tmp_path / "run.jsonl")
    for _ in range(5):
        x = opt.ask()
        opt.tell(x, conditional_objective(x))
    loaded = ff.Optimizer.load(tmp_path / "run.jsonl").to_dataframe()
    assert len(loaded) == 5 and list(loaded.columns)[1:4] == ["kernel", "C", "gamma"]
    pd.testing.assert_frame_equal(loaded, opt.to_dataframe())


def test_to_dataframe_without_pandas_says_how_to_install_it(bo_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)      # makes `import pandas` raise ImportError
    with pytest.raises(ImportError, match="OptimizeResult.to_dataframe needs pandas: pip install pandas"):
        bo_result.to_dataframe()
    with pytest.raises(ImportError, match="Optimizer.to_dataframe needs pandas: pip install pandas"):
        bo_result.optimizer.to_dataframe()


def test_plots_without_matplotlib_say_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install fastfm\[plot\]"):
        ffplot.convergence([1.0, 0.5])


# ------------------------------------------------------------------------------------------ CLI
def test_bench_plot_writes_a_png_of_the_convergence_over_the_seeds(tmp_path, monkeypatch, capsys):
    calls = []
    draw = ffplot.convergence

    def spy(runs, **kwargs):
        calls.append((runs, kwargs))
        return draw(runs, **kwargs)

    monkeypatch.setattr(ffplot, "convergence", spy)
    path = tmp_path / "curves.png"
    assert main(["bench", "func2c", "--budget", "8", "--n-init", "5", "--seeds", "2", "--quiet",
                 "--plot", str(path)]) == 0
    assert f"wrote {path}" in capsys.readouterr().out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
    ((runs, kwargs),) = calls                     # one kernel: one call with both seeds' curves
    assert len(runs) == 2 and all(len(curve) == 8 for curve in runs) and kwargs["label"] == "auto"
