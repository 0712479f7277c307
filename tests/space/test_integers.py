"""Integers and ordinals (issue 23 §1): the stationary ordinal kernel graph, and integers searched as rounded
continuous variables (huge ranges, log scale)."""
import pickle

import numpy as np
import pytest

import fastfm as ff
from fastfm.exceptions import OutOfBoundsError, SpaceDefinitionError
from fastfm.space.parameters import MAX_GRAPH_INTEGER_STATES


# ------------------------------------------------------------------ graph-encoded integers
def test_graph_integer_moves_along_the_path():
    space = ff.Space([ff.Integer("i", 0, 5, encoding="graph"), ff.Ordinal("o", ["s", "m", "l"])])
    assert [list(a) for a in space.neighbours[0]] == [[1], [0, 2], [1, 3], [2, 4], [3, 5], [4]]
    assert [list(a) for a in space.neighbours[1]] == [[1], [0, 2], [1]]


def test_user_graphs_keep_their_own_laplacian():
    star = ff.Graph("star", 5, [(0, k) for k in range(1, 5)])
    assert star.spectrum.n_states == 5
    np.testing.assert_allclose(np.diag(star.spectrum.laplacian()), [4, 1, 1, 1, 1], atol=1e-12)


# ------------------------------------------------------------------ integers as rounded continuous variables
def test_auto_encoding_rule():
    assert not ff.Integer("i", 0, MAX_GRAPH_INTEGER_STATES - 1).is_continuous
    assert ff.Integer("i", 0, MAX_GRAPH_INTEGER_STATES).is_continuous
    assert ff.Integer("i", 1, 8, log=True).is_continuous
    assert ff.Integer("i", 0, 4000, encoding="graph").encoding == "graph"
    assert ff.Integer("i", 0, 3, encoding="continuous").is_continuous
    assert not ff.Integer("i", 5, 5, encoding="continuous").is_continuous     # one value: nothing to scale


@pytest.mark.parametrize("low, high, log", [(10, 100_000, False), (-10 ** 12, 10 ** 12, False), (1, 10 ** 9, True),
                                            (3, 7, True), (0, 200, False)])
def test_rounded_integers_round_trip_and_sample_integers(low, high, log):
    p = ff.Integer("n", low, high, log=log)
    space = ff.Space([ff.Real("x", 0.0, 1.0), p])
    assert space.n_discrete == 0 and space.rounded_params == [p]
    configs = space.sample(300, seed=1)
    values = np.array([c["n"] for c in configs])
    assert all(type(c["n"]) is int for c in configs) and values.min() >= low and values.max() <= high
    X = space.encode(configs)
    assert np.all((X >= 0) & (X <= 1))
    assert space.decode(X) == configs
    np.testing.assert_array_equal(space.canonical(X), X)          # already at integer codes
    for v in (low, high, (low + high) // 2):
        assert space.decode(space.encode({"x": 0.5, "n": v}))["n"] == v
    if log:   # uniform in log(value): the median of the values is near the geometric mean
        assert abs(np.log(np.median(values)) - 0.5 * (np.log(low) + np.log(high))) < 0.15 * np.log(high / low) + 0.5


def test_rounded_integer_sampling_is_uniform_over_the_values():
    space = ff.Space([ff.Integer("n", 0, 4, encoding="continuous")])
    counts = np.bincount([c["n"] for c in space.sample(5000, seed=0)], minlength=5)
    assert counts.min() > 850 and counts.max() < 1150      # ends as likely as the inside (not half as)


def test_canonical_snaps_rounded_integers_to_their_codes():
    space = ff.Space([ff.Integer("n", 0, 10, encoding="continuous"), ff.Ordinal("o", [1, 2, 4], encoding="continuous"),
                      ff.Real("x", 0.0, 1.0)])
    X = np.array([[0.26, 0.3, 0.26], [0.94, 0.8, 0.5]])
    np.testing.assert_allclose(space.canonical(X), [[0.3, 0.5, 0.26], [0.9, 1.0, 0.5]])
    assert space.decode(space.canonical(X)) == space.decode(X)


@pytest.mark.parametrize("kwargs, match", [
    (dict(low=0, high=100, log=True), "log=True needs low >= 1"),
    (dict(low=1, high=100, encoding="wide"), "encoding must be one of"),
    (dict(low=1, high=100, log=True, encoding="graph"), "log=True needs encoding='continuous'"),
])
def test_bad_integer_definitions_name_the_parameter(kwargs, match):
    with pytest.raises(SpaceDefinitionError, match="'n'.*" + match.replace("(", r"\(").replace(")", r"\)")):
        ff.Integer("n", **kwargs)


def test_rounded_integer_rejects_values_outside_and_non_integers():
    p = ff.Integer("n", 10, 100_000)
    with pytest.raises(OutOfBoundsError, match="'n'"):
        ff.Space([p]).encode({"n": 9})
    with pytest.raises(ff.exceptions.InvalidValueError, match="'n'"):
        ff.Space([p]).encode({"n": 10.5})


def test_huge_integer_optimizer_suggests_distinct_integers_without_a_graph():
    """Integer(10, 100000) beside one Real tried to allocate a 99,991² matrix (74.5 GiB) at the first ask."""
    space = ff.Space([ff.Integer("n_estimators", 10, 100_000), ff.Real("lr", 1e-3, 1.0, log=True)])
    opt = ff.Optimizer(space, n_init=5, seed=0)
    seen = []
    for _ in range(12):
        config = opt.ask()
        assert isinstance(config["n_estimators"], int)
        opt.tell(config, (np.log(config["n_estimators"]) - 6.0) ** 2 + np.log(config["lr"]) ** 2)
        seen.append((config["n_estimators"], config["lr"]))
    assert len(set(seen)) == len(seen)
    assert opt.last_suggestion_info["source"] == "model"


def test_small_rounded_integer_space_never_repeats_a_point():
    """Suggestions are snapped to integer codes before the duplicate check, so a 1-D space of 40 values is
    searched without repeats until it is exhausted."""
    space = ff.Space([ff.Integer("n", 0, 39, encoding="continuous")])
    opt = ff.Optimizer(space, n_init=3, seed=1, acq_options={"n_random": 64, "n_starts": 2})
    told = []
    for _ in range(25):
        config = opt.ask()
        told.append(config["n"])
        opt.tell(config, float((config["n"] - 17) ** 2))
    assert len(set(told)) == len(told)
    assert 17 in told


def test_integer_pickled_before_the_encoding_option_still_works():
    p = ff.Integer("n", 0, 9)
    state = dict(p.__dict__)
    for name in ("encoding", "log", "is_continuous"):
        state.pop(name, None)
    old = ff.Integer.__new__(ff.Integer)
    old.__dict__.update(state)
    restored = pickle.loads(pickle.dumps(old))
    assert not restored.is_continuous and restored.encoding == "graph" and not restored.log
    assert ff.Space([restored]).decode(np.array([[3.0]])) == [{"n": 3}]


def test_ordinal_continuous_encoding():
    o = ff.Ordinal("o", [16, 32, 64, 128], encoding="continuous")
    space = ff.Space([o])
    assert space.n_discrete == 0
    assert space.encode({"o": 64})[0] == pytest.approx(2 / 3)
    assert space.decode(np.array([[0.6]])) == [{"o": 64}]
    with pytest.raises(SpaceDefinitionError, match="'o'.*encoding"):
        ff.Ordinal("o", [1, 2], encoding="auto-ish")
    assert "encoding='continuous'" in repr(o)


def test_a_rounded_integer_cannot_be_a_condition_parent_and_the_error_says_what_to_do():
    with pytest.raises(SpaceDefinitionError, match="'n' is searched as a rounded continuous variable; pass "
                                                   "encoding='graph'"):
        ff.Space([ff.Integer("n", 1, 1000), ff.Real("x", 0.0, 1.0, active_if={"n": [3]})])
    space = ff.Space([ff.Integer("n", 1, 1000, encoding="graph"), ff.Real("x", 0.0, 1.0, active_if={"n": [3]})])
    assert space.decode(space.encode({"n": 3, "x": 0.5})) == {"n": 3, "x": 0.5}


def test_a_graph_over_too_many_values_is_refused_before_any_allocation():
    from fastfm.space.parameters import MAX_GRAPH_STATES
    ff.Integer("n", 1, MAX_GRAPH_STATES, encoding="graph")
    with pytest.raises(SpaceDefinitionError, match=r"'n': encoding='graph' over 100000 values .*74\.5 GiB.*"
                                                   r"encoding='continuous'"):
        ff.Integer("n", 1, 100_000, encoding="graph")
