"""The history is the optimiser's own: what ask/tell/best/trials hand out are copies, bad tells are typed errors
that change nothing, and a 0-d array is a number."""
import math
import shutil

import numpy as np
import pytest

import fastfm as ff


def _optimizer(told=3):
    space = ff.Space([ff.Real("x", 0, 1), ff.Integer("k", 0, 5), ff.Categorical("c", ["a", "b"])])
    opt = ff.Optimizer(space, kernel="random", n_init=2, seed=0)
    for i in range(told):
        x = opt.ask()
        opt.tell(x, float(i))
    return opt


def test_editing_what_the_optimiser_hands_out_leaves_the_history_unchanged():
    opt = _optimizer()
    before = [(dict(t.config), t.value) for t in opt.trials]
    best, value = opt.best()
    best["x"] = 123.0
    opt.trials[0].config["k"] = 99
    x = opt.ask()
    told = opt.tell(x, 5.0)
    x["x"] = -1.0                       # the caller's dict, after tell
    told.config["c"] = "zzz"
    opt.pending                         # (nothing pending) still a copy
    assert [(dict(t.config), t.value) for t in opt.trials[:3]] == before
    assert opt.trials[3].config["x"] != -1.0 and opt.trials[3].config["c"] in ("a", "b")
    assert opt.best() == (before[0][0], 0.0)


@pytest.mark.parametrize("bad", [None, "abc", 3.5, [{"x": 0.5, "k": 1, "c": "a"}] * 2, ({"x": 0.5},)])
def test_a_bad_tell_is_a_typed_error_and_changes_nothing(bad):
    opt = _optimizer()
    pending = opt.ask()
    state = ([(dict(t.config), t.value) for t in opt.trials], [dict(p) for p in opt.pending])
    with pytest.raises(ff.FastFMError) as info:
        opt.tell(bad, 1.0)
    assert isinstance(info.value, (ValueError, TypeError))
    assert ([(dict(t.config), t.value) for t in opt.trials], [dict(p) for p in opt.pending]) == state
    opt.tell(pending, 2.0)              # and the optimiser goes on
    assert opt.ask() is not None


def test_bad_values_are_typed_errors_and_a_0d_array_is_a_number():
    opt = _optimizer()
    x = opt.ask()
    for bad in ["1.0", [1.0], np.array([1.0]), True, 1 + 2j]:
        with pytest.raises(ff.InvalidValueError, match="y must be a real number"):
            opt.tell(x, bad)
    assert opt.n_told == 3
    trial = opt.tell(x, np.array(2.5))
    assert trial.value == 2.5 and not trial.failed
    y = opt.ask()
    assert opt.tell(y, np.array(np.nan)).failed and math.isnan(opt.trials[-1].value)


def test_a_0d_array_is_its_value_for_every_kind_of_parameter():
    space = ff.Space([ff.Real("x", 0, 1), ff.Integer("k", 0, 5), ff.Categorical("c", ["a", "b"])])
    plain = space.encode({"x": 0.5, "k": 3, "c": "b"})
    assert np.array_equal(space.encode({"x": np.array(0.5), "k": np.array(3), "c": np.array("b")}), plain)
    with pytest.raises(ff.InvalidValueError, match="'x'"):
        space.encode({"x": np.array([0.5]), "k": 3, "c": "b"})


def test_the_model_of_the_last_suggestion_is_readable_and_predicts_the_told_values():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", ["a", "b", "c"])])

    def objective(config):
        return (config["x"] - 0.3) ** 2 + {"a": 0.0, "b": 0.5, "c": 1.0}[config["c"]]

    opt = ff.Optimizer(space, n_init=4, seed=0)
    for _ in range(4):                     # the initial design: no model yet
        assert opt.model is None
        x = opt.ask()
        opt.tell(x, objective(x))
    assert opt.model is None
    for n_told in (4, 5, 6):
        x = opt.ask()                      # a model-based suggestion, fitted on the evaluations told before it
        assert opt.model.X_train_.shape[0] == n_told
        opt.tell(x, objective(x))
    configs = [t.config for t in opt.trials[:5]]
    values = np.array([t.value for t in opt.trials[:5]])
    # a near noise-free fit interpolates what it was told, in the objective's units, from configs or encoded points
    np.testing.assert_allclose(opt.model.predict(configs), values, atol=0.05 * np.ptp(values))
    np.testing.assert_array_equal(opt.model.predict(space.encode(configs)), opt.model.predict(configs))
    random_search = ff.Optimizer(space, kernel="random", n_init=1, seed=0)
    for _ in range(4):
        x = random_search.ask()
        random_search.tell(x, objective(x))
    assert random_search.model is None


def test_a_loaded_optimizer_rebuilds_the_model_of_the_last_suggestion_and_goes_on_as_the_run_would(tmp_path):
    space = ff.Space([ff.Real("x", 0, 1), ff.Integer("k", 0, 4), ff.Categorical("c", ["a", "b", "c"])])

    def objective(config):
        return (config["x"] - 0.3) ** 2 + 0.1 * config["k"] + {"a": 0.0, "b": 0.5, "c": 1.0}[config["c"]]

    path = tmp_path / "run.jsonl"
    run = ff.Optimizer(space, n_init=4, seed=3, storage=path)
    for _ in range(9):
        x = run.ask()
        run.tell(x, objective(x))
    copies = [tmp_path / "read.jsonl", tmp_path / "unread.jsonl"]
    for copy in copies:
        shutil.copyfile(path, copy)
    loaded, unread = (ff.Optimizer.load(copy) for copy in copies)   # told 9: the last fit saw the 8 before it
    probe = space.sample(16, seed=1)
    assert loaded.model.X_train_.shape[0] == run.model.X_train_.shape[0] == 8
    np.testing.assert_array_equal(loaded.model.kernel_.theta, run.model.kernel_.theta)
    for got, expected in zip(loaded.model.predict(probe, return_std=True), run.model.predict(probe, return_std=True)):
        np.testing.assert_array_equal(got, expected)
    # reading the model draws nothing: the next suggestion is the uninterrupted run's, as without the read
    assert loaded.ask() == run.ask() == unread.ask()


class _Activation:                  # a choice object without __eq__: matched by identity
    def __init__(self, name):
        self.name = name


def test_a_choice_that_is_an_object_is_handed_out_as_itself_and_told_back(tmp_path):
    relu, tanh = _Activation("relu"), _Activation("tanh")
    space = ff.Space([ff.Categorical("act", [relu, tanh, math.sin]), ff.Real("x", 0, 1),
                      ff.Set("s", n_points=2, dim=1)])
    opt = ff.Optimizer(space, n_init=3, seed=0, storage=tmp_path / "run.jsonl")   # the journal's copy is a repr
    for _ in range(5):
        x = opt.ask()
        assert x["act"] in (relu, tanh, math.sin) and any(x["act"] is c for c in (relu, tanh, math.sin))
        opt.tell(x, x["x"] + {"relu": 0.0, "tanh": 1.0}.get(getattr(x["act"], "name", ""), 2.0))
    config, _ = opt.best()
    assert any(config["act"] is c for c in (relu, tanh, math.sin))
    config["s"][0, 0] = 99.0                       # the arrays handed out are still copies
    assert opt.best()[0]["s"][0, 0] != 99.0
    assert {id(t.config["act"]) for t in opt.trials} <= {id(relu), id(tanh), id(math.sin)}
