"""log_transform_y="auto" in the optimizer: each full fit chooses between the log of y above its minimum and y as
it is by the leave-one-out density of y (``fastfm.bo.surrogate.Y_TRANSFORM_CANDIDATES``), the warm refits keep
the choice, a journal replays it, and the other options leave the transform alone."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.bo import surrogate
from fastfm.bo.surrogate import _is_full_refit

SPACE = ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("z", 0.0, 1.0), ff.Categorical("a", ["p", "q", "r"])])
_OFFSET = {"p": 0.0, "q": 0.3, "r": 0.6}


def _well(config):
    """A narrow well below a nearly flat level (Hartmann's shape): a log of y above its minimum stretches the few
    good values and flattens the rest."""
    r2 = (config["x"] - 0.7) ** 2 + (config["z"] - 0.3) ** 2
    return -np.exp(-r2 / 0.02) + 0.05 * _OFFSET[config["a"]]


def _tail(config):
    """Values that grow by orders of magnitude towards the corners (an exponential of a bowl)."""
    return float(np.exp(8.0 * ((config["x"] - 0.4) ** 2 + (config["z"] - 0.6) ** 2)) + _OFFSET[config["a"]])


def _run(opt, objective, n):
    choices = []
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, objective(x))
        choices.append((opt.n_told - 1, opt.last_suggestion_info.get("y_transform", "none")))
    return [(n, c) for n, c in choices if c != "none"]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_well_is_modelled_as_it_is_and_a_heavy_tail_through_the_log(seed):
    well = _run(ff.Optimizer(SPACE, seed=seed, n_restarts=3), _well, 25)
    tail = _run(ff.Optimizer(SPACE, seed=seed, n_restarts=3), _tail, 25)
    assert len(well) == len(tail) == 15
    assert well[-1][1] is False
    assert tail[-1][1] == "shift"
    for choices in (well, tail):      # the choice changes only where a full refit was made
        for (_, before), (n, after) in zip(choices, choices[1:]):
            assert before == after or _is_full_refit(n), (n, before, after)


def test_a_journal_replays_the_choice(tmp_path):
    """The loaded optimizer holds the same fit record, and rebuilding the fit from it gives the same transform and
    hyperparameters (the ask-for-ask replay of a run that changes its choices: test_kernel_selection)."""
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(SPACE, n_init=6, seed=3, n_restarts=2, storage=path)
    _run(opt, _well, 19)
    opt.ask()                 # a full refit at 19 told values; the journal ends with its ask
    assert opt._fit_record["n_told"] == 19 and opt._fit_record["transforms"] == [False, "auto"]
    assert opt._fit_record["transform"] is False
    loaded = ff.Optimizer.load(path)
    assert loaded._fit_record == opt._fit_record
    rebuilt = loaded._fit(dict(loaded._fit_record))
    assert rebuilt.y_transform_ is opt.model.y_transform_ is False
    np.testing.assert_array_equal(rebuilt.kernel_.theta, opt.model.kernel_.theta)
    assert rebuilt.noise_ == opt.model.noise_


def test_a_record_without_candidates_fits_the_option_alone():
    """Journals written before the choice hold fit records without "transforms": they refit with the option's own
    resolution ("shift" here), as the run that wrote them did."""
    opt = ff.Optimizer(SPACE, n_init=6, seed=4, n_restarts=1)
    _run(opt, _well, 12)
    record = {k: v for k, v in opt._fit_record.items() if k not in ("transforms", "transform")}
    assert opt._fit(record).y_transform_ == "shift"
    assert "transform" not in record


@pytest.mark.parametrize("options", [{"log_transform_y": "shift"}, {"log_transform_y": False},
                                     {"gp_options": {"log_transform_y": "shift"}}])
def test_other_options_leave_the_transform_alone(options):
    opt = ff.Optimizer(SPACE, n_init=6, seed=5, n_restarts=1, **options)
    assert _run(opt, _well, 10) == []
    assert "transforms" not in opt._fit_record and "transform" not in opt._fit_record
    expected = options.get("log_transform_y", "shift")
    assert opt.model.y_transform_ == expected


def test_an_extreme_tail_keeps_the_copula():
    """Where "auto" resolves to the copula (values over 1000 interquartile ranges above the median) y as it is is
    not a candidate: the copula has no density in y to compare, and a failure penalty would swamp y as it is."""
    def penalised(config):
        return 1e10 if config["x"] > 0.8 else _well(config)
    opt = ff.Optimizer(SPACE, n_init=8, seed=6, n_restarts=1)
    choices = _run(opt, penalised, 20)
    values = np.array([t.value for t in opt.trials])
    assert np.any(values == 1e10)
    first_penalty = int(np.argmax(values == 1e10))
    assert all(c == "copula" for n, c in choices if n > first_penalty)


def test_from_the_choice_limit_on_every_fit_takes_the_log(monkeypatch):
    """Past Y_TRANSFORM_CHOICE_BELOW told values a run refines around its incumbent, which the log of y above its
    minimum resolves: the well that is modelled as it is before the limit is modelled through the log after it."""
    monkeypatch.setattr(surrogate, "Y_TRANSFORM_CHOICE_BELOW", 15)
    opt = ff.Optimizer(SPACE, seed=0, n_restarts=2)
    choices = _run(opt, _well, 22)
    assert any(c is False for n, c in choices if n < 15)
    assert [c for n, c in choices if n >= 15] == ["shift"] * 7
    assert opt._fit_record["transforms"] == ["auto"]
