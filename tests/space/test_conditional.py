"""Conditional (hierarchical) search spaces: conditions, activity, codec and errors (SPEC §3)."""
import numpy as np
import pytest
from _spaces import make_conditional_space

import fastfm as ff
from fastfm.exceptions import (InactiveParameterError, InvalidConfigError, MissingParameterError,
                               SpaceDefinitionError)


@pytest.fixture
def space():
    return make_conditional_space()


def test_is_active_follows_nested_conditions(space):
    assert space.is_conditional and not ff.Space([ff.Real("x", 0, 1)]).is_conditional
    linear = {"model": "linear", "C": 1.0}
    assert space.is_active(linear) == {"model": True, "C": True, "kernel": False, "gamma": False, "degree": False,
                                       "coef0": False, "n_layers": False, "width1": False, "width2": False}
    poly = {"model": "svm", "kernel": "poly", "degree": 3}
    assert space.is_active(poly, "gamma") and space.is_active(poly, "coef0") and space.is_active(poly, "degree")
    rbf = {"model": "svm", "kernel": "rbf"}
    assert space.is_active(rbf, "gamma") and not space.is_active(rbf, "degree")
    # coef0 needs degree >= 3, and degree needs kernel == poly: a grandchild
    assert not space.is_active({"model": "svm", "kernel": "poly", "degree": 2}, "coef0")
    assert not space.is_active({"model": "mlp", "kernel": "poly", "degree": 3}, "coef0")
    assert space.is_active({"model": "mlp", "n_layers": 2}, "width2")
    assert not space.is_active({"model": "mlp", "n_layers": 1}, "width2")
    assert space.ancestors("coef0") == ["model", "kernel", "degree"]


def test_sample_respects_conditions_and_round_trips(space):
    configs = space.sample(300, seed=0)
    for config in configs:
        active = space.is_active(config)
        assert set(config) == {name for name, on in active.items() if on}
    X = space.encode(configs)
    mask = space.active_columns(X)
    # inactive values are explicit: 0.0 for continuous, the extra state n for discrete
    for p in space.parameters:
        col = space.column(p.name)
        inactive = ~mask[:, col]
        assert inactive.any() or not p.is_conditional
        expected = 0.0 if p.is_continuous else p.n_states
        assert np.all(X[inactive, col] == expected)
        if not p.is_continuous:
            assert np.all(X[~inactive, col] < p.n_states)
    np.testing.assert_array_equal(space.encode(space.decode(X)), X)
    assert space.decode(X) == space.decode(space.encode(space.decode(X)))
    # every branch is reached, deep ones included
    assert any("coef0" in c for c in configs) and any("width2" in c for c in configs)
    np.testing.assert_array_equal(space.sample_encoded(50, seed=4), space.sample_encoded(50, seed=4))


def test_encoded_layout_and_graphs_of_conditional_variables(space):
    kernel_param = space["kernel"]
    col = space.column("kernel") - space.n_continuous
    assert space.n_states[col] == kernel_param.n_states + 1
    assert space.graphs[col].n_states == kernel_param.n_states + 1
    # nominal: the inactive state is one more category (a complete graph, O(1) path kept)
    assert space.graphs[col].is_complete
    # ordinal: a hub of total weight one joined to every state
    degree_col = space.column("degree") - space.n_continuous
    L = space.graphs[degree_col].laplacian()
    n = space["degree"].n_states
    np.testing.assert_allclose(L[n, :n], -1.0 / n, atol=1e-12)
    np.testing.assert_allclose(L[:n, :n] - np.diag(np.diag(L[:n, :n])),
                               -(np.eye(n, k=1) + np.eye(n, k=-1)), atol=1e-12)
    # moves stay among real states; an inactive variable has no moves
    assert all(u < n for adj in space.neighbours[degree_col][:n] for u in adj)
    assert len(space.neighbours[degree_col][n]) == 0


def test_space_without_conditions_encodes_as_before():
    space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("c", ["a", "b"]), ff.Integer("k", 0, 3)])
    np.testing.assert_array_equal(space.n_states, [2, 4])
    assert space.encode({"x": 0.0, "c": "b", "k": 2}).tolist() == [0.5, 1.0, 2.0]
    assert space.decode([0.5, 1.0, 2.0]) == {"x": 0.0, "c": "b", "k": 2}
    assert space.active_columns(space.sample_encoded(5, seed=0)).all()


def test_setting_an_inactive_parameter_is_a_typed_error_naming_it(space):
    with pytest.raises(InactiveParameterError, match="'gamma'") as info:
        space.encode({"model": "linear", "C": 1.0, "gamma": 0.1})
    assert info.value.parameter == "gamma" and info.value.value == 0.1
    with pytest.raises(InactiveParameterError, match="'width2'"):
        space.encode({"model": "mlp", "C": 1.0, "n_layers": 1, "width1": 8, "width2": 8})


def test_omitting_an_active_parameter_is_a_typed_error_naming_it(space):
    with pytest.raises(MissingParameterError, match="'gamma'") as info:
        space.encode({"model": "svm", "C": 1.0, "kernel": "rbf"})
    assert info.value.parameter == "gamma"
    with pytest.raises(MissingParameterError, match="'coef0'"):
        space.encode({"model": "svm", "C": 1.0, "kernel": "poly", "gamma": 0.1, "degree": 4})


def test_inconsistent_encoded_rows_are_rejected(space):
    X = space.sample_encoded(20, seed=1)
    mask = space.active_columns(X)
    col = space.column("gamma")
    row = int(np.flatnonzero(~mask[:, col])[0])
    X[row, col] = 0.3
    with pytest.raises(InvalidConfigError, match="'gamma'"):
        space.validate_encoded(X)
    X = space.sample_encoded(20, seed=1)
    col = space.column("kernel")
    row = int(np.flatnonzero(mask[:, col])[0])
    X[row, col] = space["kernel"].n_states     # "inactive" state in an active column
    with pytest.raises(InvalidConfigError, match="'kernel'"):
        space.validate_encoded(X)


@pytest.mark.parametrize("params, match", [
    ([ff.Real("a", 0, 1, active_if={"nope": [1]})], "unknown parameter 'nope'"),
    ([ff.Real("a", 0, 1), ff.Real("b", 0, 1, active_if={"a": [0.5]})], "continuous parameter 'a'"),
    ([ff.Categorical("c", ["x", "y"]), ff.Real("b", 0, 1, active_if={"c": ["z"]})], "'z'"),
    ([ff.Categorical("c", ["x", "y"], active_if={"d": ["u"]}),
      ff.Categorical("d", ["u", "v"], active_if={"c": ["x"]})], "cycle: c -> d -> c|cycle: d -> c -> d"),
])
def test_bad_conditions_are_typed_errors_at_construction(params, match):
    with pytest.raises(SpaceDefinitionError, match=match):
        ff.Space(params)


def test_malformed_active_if_is_rejected_by_the_parameter():
    with pytest.raises(SpaceDefinitionError, match="active_if"):
        ff.Real("a", 0, 1, active_if=["c"])
    with pytest.raises(SpaceDefinitionError, match="itself"):
        ff.Categorical("c", ["x"], active_if={"c": ["x"]})
    with pytest.raises(SpaceDefinitionError, match="no values"):
        ff.Real("a", 0, 1, active_if={"c": []})


def test_enforce_conditions_fills_new_children_and_clears_old_ones(space):
    X = space.encode([{"model": "linear", "C": 1.0}])
    before = space.active_columns(X)
    X[0, space.column("model")] = space["model"].encode_value("mlp")
    space.enforce_conditions(X, rng=0, previously_active=before)
    config = space.decode(X)[0]
    assert set(config) >= {"model", "C", "n_layers", "width1"}
    space.validate_encoded(X)
    X[0, space.column("model")] = space["model"].encode_value("linear")
    space.enforce_conditions(X, rng=0, previously_active=space.active_columns(X))
    assert space.decode(X)[0] == {"model": "linear", "C": pytest.approx(1.0)}


def test_flattened_space_and_prune(space):
    flat = space.flattened()
    assert not flat.is_conditional and flat.names == space.names
    assert space.is_conditional      # the original keeps its conditions
    config = flat.sample(1, seed=3)[0]
    pruned = space.prune(config)
    assert set(pruned) == {n for n, on in space.is_active(pruned).items() if on}
    space.encode(pruned)
