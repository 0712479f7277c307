"""Untried values of nominal parameters (``fastfm.bo.untried``): a stalled run tries, at the incumbent, the values
of a nominal parameter that no evaluation has used; at most one such point pending at a time; a loaded journal
continues as the run did; ``untried_patience`` is validated and journaled."""
import shutil

import numpy as np
import pytest

import fastfm as ff
from fastfm.bo.untried import CLEAR_IMPROVEMENT, _nominal_columns, told_since_progress, untried_value_point

N_VALUES = 16


def _space():
    return ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", list(range(N_VALUES))),
                     ff.Categorical("flag", ["a", "b"])])


def _needle(config):
    """Flat in every value of c but one, which the initial design of 4 points cannot have tried."""
    return (0.0 if config["c"] == N_VALUES - 1 else 1.0) + 0.2 * config["x"] ** 2


def _untried_flags(opt, objective, n):
    flags = []
    for _ in range(n):
        x = opt.ask()
        flags.append(bool(opt.last_suggestion_info.get("untried_value")))
        opt.tell(x, objective(x))
    return flags


def test_told_since_progress_counts_from_the_last_clear_best_or_new_value():
    columns = [(1, 4)]                        # one nominal column of 4 values after one continuous column
    X = np.array([[0.1, 0], [0.2, 1], [0.3, 1], [0.4, 1], [0.5, 1], [0.6, 0]], dtype=float)
    values = np.array([5.0, 4.0, 4.0, 3.0, 3.0, 3.5])
    assert told_since_progress(X, values, columns) == 2          # the clear new best 3.0 at index 3
    values = np.array([5.0, 4.0, 4.0, 4.0 - 0.5 * CLEAR_IMPROVEMENT, 4.0, 4.5])   # a best by less than the margin
    assert told_since_progress(X, values, columns) == 4          # index 1: a new value (1) and a new best
    X[5, 1] = 3                                               # the last point brings value 3
    assert told_since_progress(X, values, columns) == 0
    X[5, 1] = 0
    assert told_since_progress(X, values, columns, n_init=4) == 2   # the initial design counts as progress
    assert told_since_progress(X, values, columns, n_init=10) == 0   # still in the design


def test_no_untried_value_point_before_the_model_has_searched_for_patience_steps():
    # a conditional parameter is drawn only where it is active, so the design's last points may bring no new
    # value; counted from the start, the design alone would already be a stall
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("root", ["a", "b", "c"]),
                      ff.Categorical("leaf", list(range(8)), active_if={"root": ["c"]})])
    opt = ff.Optimizer(space, n_init=6, seed=2, n_restarts=2, untried_patience=2)
    flags = _untried_flags(opt, lambda c: 1.0, 6)
    X, values = space.encode([t.config for t in opt.trials]), np.ones(6)
    columns = _nominal_columns(space)         # the columns the optimizer counts
    assert told_since_progress(X, values, columns) >= 2
    assert told_since_progress(X, values, columns, n_init=6) == 0
    flags += _untried_flags(opt, lambda c: 1.0, 2)
    assert not any(flags)                     # the design and the model's first 2 steps


def test_a_stalled_run_tries_every_untried_value_at_the_incumbent():
    space = _space()
    opt = ff.Optimizer(space, n_init=4, seed=0, n_restarts=2, untried_patience=1)
    flags = _untried_flags(opt, _needle, 4 + 2 * N_VALUES)
    configs = [t.config for t in opt.trials]
    assert sorted({c["c"] for c in configs}) == list(range(N_VALUES))
    assert min(t.value for t in opt.trials) < 0.5                 # the needle's value was found
    for i in np.flatnonzero(flags):
        earlier = configs[:i]
        incumbent = min(opt.trials[:i], key=lambda t: t.value).config
        assert configs[i]["c"] not in {c["c"] for c in earlier}   # a value no earlier point used
        assert configs[i]["x"] == incumbent["x"] and configs[i]["flag"] == incumbent["flag"]


def test_no_untried_values_without_patience_or_with_every_value_tried():
    space = _space()
    opt = ff.Optimizer(space, n_init=4, seed=0, n_restarts=2, untried_patience=None)
    assert not any(_untried_flags(opt, _needle, 14))
    small = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", ["a", "b", "c"])])
    opt = ff.Optimizer(small, n_init=4, seed=0, n_restarts=2, untried_patience=1)
    assert not any(_untried_flags(opt, lambda c: 1.0, 12))      # the initial design tried all three


def test_no_second_untried_value_point_while_one_is_pending():
    space = _space()
    X = space.encode([{"x": 0.1 * i, "c": c, "flag": "a"} for i, c in enumerate([0, 1, 1, 1])])
    values = np.array([1.0, 0.5, 1.0, 1.0])    # two told values since the best, which brought c = 1

    def score(Z):
        return -Z[:, 1] - 100.0 * Z[:, 2]      # the lowest untried value of c (flag = "b" is untried too)

    pending = np.zeros((0, space.n_dims))
    x, value = untried_value_point(space, X, X, values, pending, X[1], score, patience=2)
    assert value == -2.0 and x[1] == 2 and x[2] == X[1, 2] and x[0] == X[1, 0]
    assert untried_value_point(space, X, X, values, x[None, :], X[1], score, patience=2) is None
    tried_before = X[2:3]                      # a pending point whose values are all tried: no hold
    x2, _ = untried_value_point(space, X, X, values, tried_before, X[1], score, patience=2)
    assert x2[1] == 2
    assert untried_value_point(space, X, X, values, pending, X[1], score, patience=3) is None


def test_a_conditional_parent_gets_an_untried_value_with_valid_children():
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("kind", list(range(12))),
                      ff.Real("y", 0.0, 1.0, active_if={"kind": [10, 11]})])
    opt = ff.Optimizer(space, n_init=4, seed=2, n_restarts=2, untried_patience=1)
    flags = _untried_flags(opt, lambda c: 1.0 + 0.1 * c["x"], 20)
    assert any(flags)
    for t in opt.trials:                                          # every config encodes: children set iff active
        assert ("y" in t.config) == (t.config["kind"] in (10, 11))
        space.encode([t.config])


def test_a_loaded_run_makes_the_same_untried_value_suggestions(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(_space(), n_init=4, seed=3, n_restarts=2, untried_patience=2, storage=path)
    # until the first untried-value suggestion: its step depends on the fits' last bits (step 9-12 on AVX2
    # machines, 15 on an AVX-512 one), not on what this test checks
    flags = []
    while not any(flags) and len(flags) < 30:
        flags += _untried_flags(opt, _needle, 1)
    assert any(flags)
    copy = tmp_path / "copy.jsonl"            # its own file: two optimizers on one journal would share trials
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    assert loaded.untried_patience == 2
    for _ in range(6):
        a, b = opt.ask(), loaded.ask()
        assert a == b and opt.last_suggestion_info.get("untried_value") == \
            loaded.last_suggestion_info.get("untried_value")
        opt.tell(a, _needle(a))
        loaded.tell(b, _needle(b))


@pytest.mark.parametrize("bad", [0, -3, 2.5, "5", True])
def test_untried_patience_is_validated(bad):
    with pytest.raises(ValueError, match="untried_patience must be None or an integer >= 1") as info:
        ff.Optimizer(_space(), untried_patience=bad)
    assert info.value.parameter == "untried_patience"
