"""Plots of a BO run and its model (the optional extra ``fastfm[plot]``: matplotlib).

    import fastfm as ff, fastfm.plot as ffplot
    result = ff.minimize(f, space, n_iter=60)
    ffplot.convergence(result)                                  # best value so far
    ffplot.convergence([run0, run1, run2], label="modlap")     # several seeds: mean ± s.e.
    ffplot.evaluations_over_time(result)
    ffplot.parameter_importance(result)                         # from the run's last fitted kernel
    ffplot.slice_1d(result, space, result.x, "lr")
    ffplot.slice_2d(result, space, result.x, ("lr", "dropout"))

Every function draws on ``ax`` (a new figure's axes when None) and returns that Axes.  matplotlib is
imported when a function is called, so ``import fastfm.plot`` works without it.

A run is an ``OptimizeResult``, an ``Optimizer`` (anything with ``.trials``), or, for ``convergence``, a
1-D sequence of objective values in evaluation order.  A model is a ``GaussianProcessRegressor``, or a run
whose last fitted GP is used: ``Optimizer.model``, the one its optimiser fitted for its last model-based
suggestion (so not conditioned on evaluations told after it; an optimiser loaded from a journal rebuilds it).
"""
import math
import numbers
from collections.abc import Mapping

import numpy as np

from .bo import Optimizer
from .exceptions import InactiveParameterError, InvalidValueError, MissingParameterError
from .kernels import RBF, AdditiveFM, FMKernel, GraphKernel, Kernel, Matern52, Product, SubspaceKernel, Sum
from .space import Integer, Set

__all__ = ["convergence", "evaluations_over_time", "parameter_importance", "slice_1d", "slice_2d"]

_INSTALL_HINT = "pip install fastfm[plot]"
# the band of the 1-D slice: ±2 std of the latent function, i.e. its 2.3 % and 97.7 % quantiles
_BAND_STDS = 2.0


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"fastfm.plot needs matplotlib: {_INSTALL_HINT}") from exc
    return plt


def _axes(ax):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots()
    return ax


# ------------------------------------------------------------------------------------------ runs
def _is_number(value):
    return value is None or (isinstance(value, numbers.Real) and not isinstance(value, bool))


def _trial_values(trials):
    """Objective values in evaluation order, NaN where the trial failed (failed flag, None or non-finite)."""
    values = [math.nan if (t.failed or t.value is None) else float(t.value) for t in trials]
    return _finite_or_nan(values)


def _finite_or_nan(values):
    # a failed evaluation is NaN in a Trial, +inf in OptimizeResult.best_so_far and the bench's curves
    values = np.array([math.nan if v is None else v for v in values], dtype=float)
    values[~np.isfinite(values)] = math.nan
    return values


def _run_values(run):
    if hasattr(run, "trials"):
        return _trial_values(run.trials)
    array = np.asarray(run, dtype=object) if not isinstance(run, np.ndarray) else run
    if array.ndim == 1 and all(_is_number(v) for v in array.tolist()):
        return _finite_or_nan(array.tolist())
    raise TypeError(f"a run must be an OptimizeResult, an Optimizer (anything with .trials) or a 1-D sequence "
                    f"of objective values, got {type(run).__name__}: {run!r:.80}")


def _runs(result_or_results):
    """(objective values of each run, whether several runs were given)."""
    given = result_or_results
    if hasattr(given, "trials"):
        return [_trial_values(given.trials)], False
    if isinstance(given, np.ndarray) and given.ndim == 2:
        return [_finite_or_nan(row.tolist()) for row in given], True
    if isinstance(given, (list, tuple, np.ndarray)):
        if len(given) == 0:
            raise InvalidValueError("result_or_results is empty: give a run or a non-empty list of runs",
                                    "result_or_results", given)
        if all(_is_number(v) for v in list(given)):      # one run's values
            return [_run_values(given)], False
        return [_run_values(run) for run in given], True
    raise TypeError(f"result_or_results must be an OptimizeResult, an Optimizer, a 1-D sequence of objective "
                    f"values, or a list of these; got {type(given).__name__}")


def _best_so_far(values):
    """Running minimum of objective values, skipping NaN (failed): NaN until the first success.

    Parameters
    ----------
    values : array of shape (n,)

    Returns
    -------
    ndarray of shape (n,)
    """
    values = np.asarray(values, dtype=float)
    return np.fmin.accumulate(values) if len(values) else values


def _mean_and_standard_error(curves):
    """Per evaluation, the mean and standard error over the runs that reached it with a success so far
    (runs of unequal length are padded with NaN; a step with one such run has error 0)."""
    length = max(len(c) for c in curves)
    table = np.full((len(curves), length), math.nan)
    for row, curve in zip(table, curves):
        row[:len(curve)] = curve
    present = np.isfinite(table)
    count = present.sum(axis=0)
    mean = np.full(length, math.nan)
    error = np.zeros(length)
    mean[count > 0] = np.nanmean(table[:, count > 0], axis=0)
    several = count > 1
    error[several] = np.nanstd(table[:, several], axis=0, ddof=1) / np.sqrt(count[several])
    error[count == 0] = math.nan
    return mean, error


def convergence(result_or_results, ax=None, label=None, band_alpha=0.25, **line_kwargs):
    """Best objective value so far against the number of evaluations.

    Parameters
    ----------
    result_or_results : run or list of runs
        A run is an ``OptimizeResult``, an ``Optimizer`` (its ``.trials``) or a 1-D sequence of objective
        values in evaluation order; a 2-D array is one run per row.  Failed evaluations (failed flag, None,
        NaN or inf) are skipped: the curve is NaN (not drawn) until a run's first success.  Given a list,
        the line is the mean over the runs and the band the mean ± one standard error, at each number of
        evaluations over the runs that reached it.
    ax : matplotlib Axes, optional
    label : str, optional
        Legend label of the line.
    band_alpha : float, default 0.25
        Opacity of the ± s.e. band.
    **line_kwargs
        Passed to ``ax.plot`` (color, linestyle, ...).

    Returns
    -------
    matplotlib Axes
        With one line (x = 1..n evaluations) and, for a list of runs, one ``fill_between`` band.
    """
    runs, several = _runs(result_or_results)
    ax = _axes(ax)
    curves = [_best_so_far(values) for values in runs]
    if several:
        mean, error = _mean_and_standard_error(curves)
    else:
        mean, error = curves[0], None
    steps = np.arange(1, len(mean) + 1)
    (line,) = ax.plot(steps, mean, label=label, **line_kwargs)
    if several:
        ax.fill_between(steps, mean - error, mean + error, color=line.get_color(), alpha=band_alpha, linewidth=0)
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"best value so far (mean ± s.e. of {len(runs)} runs)" if several else "best value so far")
    return ax


def _elapsed_seconds(trials):
    """Seconds from the start of the run to the end of each trial, rebuilt from its timings.

    ``Trial`` records no wall-clock timestamps (the journal does, ``Trial`` does not carry them), so the
    clock is the running sum of ``suggest_time + eval_time`` (a NaN timing, e.g. a config told without an
    ask, counts 0).  With several workers evaluations overlap, and this sums their compute time instead.
    """
    seconds = [np.nan_to_num(t.suggest_time, nan=0.0) + np.nan_to_num(t.eval_time, nan=0.0) for t in trials]
    return np.cumsum(np.asarray(seconds, dtype=float))


def evaluations_over_time(result, ax=None):
    """Each objective value, and the best so far, against the time since the start of the run.

    Time is the running sum of each trial's ``suggest_time + eval_time`` (``Trial`` has no timestamps):
    the wall-clock time of a serial run, and the total compute time of one with several workers.

    Parameters
    ----------
    result : OptimizeResult or Optimizer
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        With the successful evaluations (markers, label "evaluations"), the best so far (a step line,
        label "best so far") and, when some failed, their times as ticks along the bottom (label "failed").
    """
    if not hasattr(result, "trials"):
        raise TypeError(f"result must be an OptimizeResult or an Optimizer (with .trials), got "
                        f"{type(result).__name__}")
    ax = _axes(ax)
    trials = result.trials
    times = _elapsed_seconds(trials)
    values = _trial_values(trials)
    ok = np.isfinite(values)
    ax.plot(times[ok], values[ok], "o", markersize=4, alpha=0.6, label="evaluations")
    ax.plot(times, _best_so_far(values), drawstyle="steps-post", label="best so far")
    if (~ok).any():
        # failed evaluations have no value: a tick at their time along the bottom of the axes
        ax.plot(times[~ok], np.zeros((~ok).sum()), "|", color="red", markersize=10,
                transform=ax.get_xaxis_transform(), label="failed")
    ax.set_xlabel("seconds since the start (cumulative suggest + eval time)")
    ax.set_ylabel("objective value")
    ax.legend()
    return ax


# ------------------------------------------------------------------------------------------ models
def _fitted_model(source):
    """The GP regressor ``source`` is or holds: itself, or the last GP fitted by a run's optimiser."""
    if hasattr(source, "predict") and hasattr(source, "kernel"):
        return source
    optimizer = source if isinstance(source, Optimizer) else getattr(source, "optimizer", None)
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"expected a GaussianProcessRegressor, an OptimizeResult or an Optimizer, got "
                        f"{type(source).__name__}")
    model = optimizer.model
    if model is None:
        raise InvalidValueError(
            "the optimiser holds no fitted model: it fits one for each suggestion after its n_init random ones "
            f"(n_told={optimizer.n_told}, n_init={optimizer.n_init}), and kernel='random' never fits one",
            "model", None)
    return model


def _fitted_kernel(source):
    if isinstance(source, Kernel):
        return source
    model = _fitted_model(source)
    if not hasattr(model, "kernel_"):
        raise InvalidValueError("the GaussianProcessRegressor is not fitted: call fit(X, y) first "
                                "(its kernel_ holds the fitted hyperparameters)", "model", model)
    return model.kernel_


def _broadcast(kernel, name, n):
    return np.broadcast_to(np.asarray(getattr(kernel, name), dtype=float), (n,))


def _relevance_by_parameter(kernel):
    """{parameter name: (relevance, kind)} read from the kernel's hyperparameters (see parameter_importance)."""
    if isinstance(kernel, (Sum, Product)):
        # e.g. ProdLap = RBF · GraphKernel: each factor covers its own parameters
        first, second = _relevance_by_parameter(kernel.k1), _relevance_by_parameter(kernel.k2)
        shared = sorted(set(first) & set(second))
        if shared:
            raise TypeError(f"parameter_importance cannot combine the factors of {type(kernel).__name__}: both "
                            f"{type(kernel.k1).__name__} and {type(kernel.k2).__name__} depend on {shared}")
        return {**first, **second}
    if isinstance(kernel, SubspaceKernel):
        return _relevance_by_parameter(kernel.kernel)
    # AdditiveFM: its product's lengthscales and βs (its "lengthscale" and "beta"; the terms' main effects are
    # hyperparameters of their own, "additive_*")
    fm_like = (FMKernel, AdditiveFM)
    if not isinstance(kernel, fm_like + (GraphKernel, RBF, Matern52)):
        raise TypeError(f"parameter_importance reads lengthscales and graph betas of FMKernel (ModLap, ModDif), "
                        f"AdditiveFM, GraphKernel, RBF, Matern52 and their sums and products; got "
                        f"{type(kernel).__name__}")
    space = kernel.space
    relevance = {}
    if isinstance(kernel, fm_like + (RBF, Matern52)):
        if space is None:        # a kernel on plain arrays: its columns have no names
            n = int(np.size(kernel.lengthscale))
            inverse = 1.0 / _broadcast(kernel, "lengthscale", n)
            return {f"x{i}": (float(v), "continuous") for i, v in enumerate(inverse)}
        inverse = 1.0 / _broadcast(kernel, "lengthscale", space.n_continuous)
        for param in space.continuous_params:
            # a Set spans several columns (points × coordinates): the mean of their inverse lengthscales
            columns = np.atleast_1d(np.arange(space.n_continuous)[space.column(param.name)])
            relevance[param.name] = (float(inverse[columns].mean()), "continuous")
    if isinstance(kernel, fm_like + (GraphKernel,)):
        inverse_beta = 1.0 / _broadcast(kernel, "beta", space.n_discrete)
        for index, param in enumerate(space.discrete_params):
            relevance[param.name] = (float(inverse_beta[index]), "discrete")
    return relevance


def parameter_importance(model_or_result, ax=None, color_continuous="C0", color_discrete="C1"):
    """Bar chart of each parameter's relevance in a fitted kernel (larger = the model varies more along it).

    * continuous parameter (``Real``, an ``Integer``/``Ordinal`` encoded as continuous): 1 / lengthscale of
      its unit-scaled column (a ``Set``: the mean over its columns);
    * discrete parameter of an FM or graph kernel: 1 / β.  β scales the graph's Laplacian eigenvalues
      (f(βλ + α·d²) for ModLap, exp(−βλ) for the diffusion kernels), as a squared lengthscale does the
      squared distance: small β keeps the high graph frequencies, the states are little correlated and the
      model changes much from one state to the next (on a complete graph the correlation of two states is
      β/(1 + β) at zero continuous distance); large β smooths them into one.  α, the strength of the
      continuous modulation of that factor, is not a relevance and is not shown.  ``AdditiveFM`` (what
      kernel="auto" may choose): those of its product part.

    The two kinds are on different scales: compare continuous parameters with each other and discrete ones
    with each other.  The y axis is logarithmic (relevances span decades).

    Parameters
    ----------
    model_or_result : GaussianProcessRegressor, OptimizeResult, Optimizer or Kernel
        A fitted regressor (its ``kernel_``), a run (the last GP its optimiser fitted) or a kernel.
    ax : matplotlib Axes, optional
    color_continuous, color_discrete : matplotlib colours

    Returns
    -------
    matplotlib Axes
        One bar per parameter, in the space's order (continuous ones first within the kernel's space).

    Raises
    ------
    TypeError
        A kernel whose hyperparameters are not per-parameter lengthscales and betas (Hierarchical, ModNN,
        SetKernel, ...), naming its type.
    """
    kernel = _fitted_kernel(model_or_result)
    relevance = _relevance_by_parameter(kernel)
    ax = _axes(ax)
    names = list(relevance)
    heights = [relevance[name][0] for name in names]
    kinds = [relevance[name][1] for name in names]
    colors = [color_continuous if kind == "continuous" else color_discrete for kind in kinds]
    ax.bar(range(len(names)), heights, color=colors)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("relevance")
    ax.set_title(f"parameter relevance ({type(kernel).__name__})")
    from matplotlib.patches import Patch
    legend = [Patch(color=color_continuous, label="1 / lengthscale (continuous)"),
              Patch(color=color_discrete, label="1 / β (discrete)")]
    ax.legend(handles=[h for h, kind in zip(legend, ("continuous", "discrete")) if kind in kinds])
    return ax


# ------------------------------------------------------------------------------------------ slices
def _space_of(space, source, model):
    if space is not None:
        return space
    candidates = [getattr(getattr(source, "optimizer", None), "space", None), getattr(source, "space", None),
                  getattr(model, "space", None), getattr(getattr(model, "kernel_", None), "space", None)]
    for candidate in candidates:
        if candidate is not None:
            return candidate
    raise InvalidValueError("space=None and the model does not know its space: pass the space", "space", None)


def _axis_values(param, n):
    """(values to evaluate, x positions, tick labels or None, whether drawn as a line) along one parameter."""
    if isinstance(param, Set):
        raise InvalidValueError(f"cannot slice along the Set parameter {param.name!r}: it spans "
                                f"{param.n_columns} columns", param.name, None)
    is_integer = isinstance(param, Integer)
    if param.is_continuous and not hasattr(param, "choices"):        # Real, or an Integer searched as continuous
        grid = (np.geomspace if param.log else np.linspace)(param.low, param.high, n)
        if is_integer:
            values = [int(v) for v in np.unique(np.rint(grid))]
        else:
            values = [float(v) for v in grid]
        return values, np.asarray(values, dtype=float), None, True
    values = list(param.choices) if hasattr(param, "choices") else [param.decode_value(code)
                                                                     for code in range(param.n_states)]
    if is_integer:                                                  # Integer on a graph: numeric positions
        return values, np.asarray(values, dtype=float), None, False
    return values, np.arange(len(values), dtype=float), [str(v) for v in values], False


def _best_configs_first(source):
    """The configs of a run's successful trials, best value first (none for a regressor): where a slice
    activates a parameter the center lacks, the best trial in which it is active gives its value."""
    told = [t for t in getattr(source, "trials", ()) if not (t.failed or t.value is None)]   # as _trial_values
    return [t.config for t in sorted(told, key=lambda t: float(t.value))]


def _with_activated_values(space, config, best_configs):
    """``config`` with every active parameter it lacks taken from the first of ``best_configs`` that has it,
    repeated while a value taken activates another parameter (conditions nest)."""
    for _ in range(len(space.parameters)):
        active = space.is_active(config)
        missing = [name for name, is_active in active.items() if is_active and name not in config]
        # a choice may be None itself: a trial that has the parameter is looked for, not a value that is not None
        sources = {name: next((c for c in best_configs if name in c), None) for name in missing}
        filled = {name: source[name] for name, source in sources.items() if source is not None}
        if not filled:
            break
        config = {**config, **filled}
    return space.prune(config)


def _configs(space, center, assignments, best_configs=()):
    """The configs of ``center`` with each assignment (a dict of name -> value) set, inactive ones dropped, and
    a parameter the assignment activates but center lacks taken from ``best_configs`` (a run's trials)."""
    configs = []
    for assignment in assignments:
        config = _with_activated_values(space, space.prune({**center, **assignment}), best_configs)
        for name, value in assignment.items():
            if name not in config:
                raise InactiveParameterError(
                    f"parameter {name!r} is inactive at center with {name}={value!r}: the slice would not "
                    f"move the model; choose a center where it is active", name, value)
        configs.append(config)
    try:
        return space.encode(configs)
    except MissingParameterError as exc:
        raise MissingParameterError(
            f"{exc} (the slice sets {', '.join(f'{k}={v!r}' for k, v in assignments[0].items())}...: give center "
            "a value for every parameter the slice activates; values of parameters inactive at center are kept "
            "for that, and a run's best trial in which the parameter is active gives one)", exc.parameter,
            exc.value) from exc


def _check_center(center):
    if not isinstance(center, Mapping):
        raise InvalidValueError(f"center must be a config dict (e.g. result.x), got center={center!r}",
                                "center", center)


def _predictive(model, X):
    """(centre, lower, upper, description) in the units of y: the posterior mean ± 2 std, or, when the model
    transforms y, the median and the 2.3 % / 97.7 % quantiles (the ±2 std band of the transformed y mapped
    back, since predict's std is then in the transformed units)."""
    centre, std = model.predict(X, return_std=True)
    transform = getattr(model, "y_transform_", False)
    if not transform:
        return centre, centre - _BAND_STDS * std, centre + _BAND_STDS * std, "posterior mean ± 2 std"
    mu, sigma = model.predict_standardized(X)
    # the inverse transform has no public name: GaussianProcessRegressor._untransform_mean
    lower = model._untransform_mean(model.y_mean_ + model.y_std_ * (mu - _BAND_STDS * sigma))
    upper = model._untransform_mean(model.y_mean_ + model.y_std_ * (mu + _BAND_STDS * sigma))
    return centre, lower, upper, "posterior median, 2.3–97.7 % band"


def _center_position(param, center, values, positions):
    value = center.get(param.name)
    if value is None:
        return None
    for candidate, position in zip(values, positions):
        if candidate == value:
            return position
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def slice_1d(model, space, center, parameter, ax=None, n=200):
    """GP posterior along one parameter, the others fixed at ``center``.

    A continuous parameter is drawn as the posterior mean with a band of ±2 std (a log-scaled one on a
    log x axis); a discrete one as a point per value with error bars.  When the model transforms y
    (``y_transform_``, as BO's GPs do) the line is the posterior median and the band its 2.3 % and 97.7 %
    quantiles: the same ±2 std in the transformed units, mapped back.  The std is the latent function's
    (noise excluded).  A dotted vertical line marks the center's value.

    Parameters
    ----------
    model : GaussianProcessRegressor, OptimizeResult or Optimizer
        A regressor (``predict`` in the units of y), or a run (the last GP its optimiser fitted).
    space : Space or None
        The space the model was fitted on (None: the run's or the model's).
    center : dict
        A config, typically ``result.x``.  On a conditional space it may hold values of parameters inactive
        there: they are used where the slice activates them.  Where it lacks one that the slice activates and
        ``model`` is a run, the value comes from the run's best trial in which that parameter is active.
    parameter : str
    ax : matplotlib Axes, optional
    n : int, default 200
        Points along a continuous parameter (an integer one takes the distinct integers among them).

    Returns
    -------
    matplotlib Axes
        A continuous parameter: one line (the centre) and one band; a discrete one: an errorbar container.
    """
    gp = _fitted_model(model)
    space = _space_of(space, model, gp)
    _check_center(center)
    param = space[parameter]               # UnknownParameterError naming it
    values, positions, ticks, as_line = _axis_values(param, n)
    X = _configs(space, center, [{parameter: v} for v in values], _best_configs_first(model))
    centre, lower, upper, description = _predictive(gp, X)
    ax = _axes(ax)
    if as_line:
        (line,) = ax.plot(positions, centre, label=description)
        ax.fill_between(positions, lower, upper, color=line.get_color(), alpha=0.25, linewidth=0)
        if getattr(param, "log", False):
            ax.set_xscale("log")
    else:
        ax.errorbar(positions, centre, yerr=[centre - lower, upper - centre], fmt="o", capsize=3,
                    label=description)
        if ticks is not None:
            ax.set_xticks(positions)
            ax.set_xticklabels(ticks)
    marker = _center_position(param, center, values, positions)
    if marker is not None:
        ax.axvline(marker, color="gray", linestyle=":", linewidth=1)
    ax.set_xlabel(parameter)
    ax.set_ylabel(description)
    return ax


def slice_2d(model, space, center, parameters, ax=None, n=50, levels=20):
    """Contours of the GP posterior mean over two parameters, the others fixed at ``center``.

    Two continuous parameters give filled contours (``contourf``); with a discrete one the grid is drawn
    cell by cell (``pcolormesh``), its values as tick labels.  When the model transforms y the surface is
    the posterior median (``predict``'s mean).  A star marks the center.

    Parameters
    ----------
    model : GaussianProcessRegressor, OptimizeResult or Optimizer
    space : Space or None
    center : dict
        As for ``slice_1d``: values it lacks that the slice activates come from a run's best trial.
    parameters : (str, str)
        The x and the y parameter.
    ax : matplotlib Axes, optional
    n : int, default 50
        Points along each continuous parameter.
    levels : int, default 20
        Contour levels.

    Returns
    -------
    matplotlib Axes
        With the contour set (``ax.collections``) or the mesh, and a colour bar beside it.
    """
    gp = _fitted_model(model)
    space = _space_of(space, model, gp)
    _check_center(center)
    if isinstance(parameters, str) or len(parameters) != 2 or parameters[0] == parameters[1]:
        raise InvalidValueError(f"parameters must be two different parameter names, got parameters={parameters!r}",
                                "parameters", parameters)
    params = [space[name] for name in parameters]
    axes_values = [_axis_values(param, n) for param in params]
    (values_x, positions_x, ticks_x, line_x), (values_y, positions_y, ticks_y, line_y) = axes_values
    assignments = [{parameters[0]: vx, parameters[1]: vy} for vy in values_y for vx in values_x]
    X = _configs(space, center, assignments, _best_configs_first(model))
    surface = gp.predict(X).reshape(len(values_y), len(values_x))
    ax = _axes(ax)
    if line_x and line_y:
        mappable = ax.contourf(positions_x, positions_y, surface, levels=levels)
    else:
        mappable = ax.pcolormesh(positions_x, positions_y, surface, shading="nearest")
    ax.figure.colorbar(mappable, ax=ax, label="posterior mean" if not getattr(gp, "y_transform_", False)
                       else "posterior median")
    for param, (values, positions, ticks, _), set_scale, set_ticks, set_labels in (
            (params[0], axes_values[0], ax.set_xscale, ax.set_xticks, ax.set_xticklabels),
            (params[1], axes_values[1], ax.set_yscale, ax.set_yticks, ax.set_yticklabels)):
        if ticks is not None:
            set_ticks(positions)
            set_labels(ticks)
        elif getattr(param, "log", False):
            set_scale("log")
    marker_x = _center_position(params[0], center, values_x, positions_x)
    marker_y = _center_position(params[1], center, values_y, positions_y)
    if marker_x is not None and marker_y is not None:
        ax.plot([marker_x], [marker_y], "*", color="white", markeredgecolor="black", markersize=12)
    ax.set_xlabel(parameters[0])
    ax.set_ylabel(parameters[1])
    return ax
