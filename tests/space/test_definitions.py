"""Definitions are validated at construction (issue 23 §3): every bad definition raises
SpaceDefinitionError (a ValueError) whose message names the parameter and the bad value."""
import math

import numpy as np
import pytest

import fastfm as ff
from fastfm.exceptions import SpaceDefinitionError
from fastfm.kernels import ModLap, ProdLap, set_space_kernel


def raises_naming(fragments, build):
    with pytest.raises(SpaceDefinitionError) as info:
        build()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# ------------------------------------------------------------------------------------ Graph
@pytest.mark.parametrize("edges, fragments", [
    ([(0, 1, 2.0, 3.0)], ["(0, 1, 2.0, 3.0)", "pair"]),          # 4-tuple
    ([(0,)], ["(0,)", "pair"]),                                   # 1-tuple
    ([5], ["edge 5", "pair"]),                                    # not a sequence
    (["ab"], ["'ab'", "pair"]),                                   # a string is not an edge
    ([(0, 7)], ["(0, 7)", "vertex 7"]),                           # unknown vertex
    ([(0, -1)], ["vertex -1"]),
    ([(0, 1.0)], ["vertex 1.0"]),                                 # float index
    ([(False, True)], ["vertex False"]),                          # bools are not indices
    ([(0, "z")], ["vertex 'z'"]),                                 # unknown label, no labels
    (None, ["got None"]),
])
def test_graph_malformed_edges(edges, fragments):
    raises_naming(["'g'"] + fragments, lambda: ff.Graph("g", 2, edges))


def test_graph_weighted_triples_are_accepted_and_match_weights_argument():
    a = ff.Graph("g", 3, [(0, 1, 2.0), (1, 2, 0.5)])
    b = ff.Graph("g", 3, [(0, 1), (1, 2)], weights=[2.0, 0.5])
    np.testing.assert_allclose(a.adjacency(), b.adjacency())
    assert a.adjacency()[0, 1] == 2.0 and "weights=[2.0, 0.5]" in repr(a)
    raises_naming(["'g'", "(0, 1, 2.0)", "weights="],
                  lambda: ff.Graph("g", 2, [(0, 1, 2.0)], weights=[1.0]))


def test_graph_edges_by_label():
    g = ff.Graph("g", 3, [("a", "b"), ("b", "c")], labels=["a", "b", "c"])
    np.testing.assert_allclose(g.adjacency(), ff.Graph("h", 3, [(0, 1), (1, 2)]).adjacency())
    raises_naming(["'g'", "vertex 'q'", "labels"],
                  lambda: ff.Graph("g", 2, [("a", "q")], labels=["a", "b"]))


@pytest.mark.parametrize("edges, weights, fragments", [
    ([(0, 1), (1, 0)], [1.0, 2.0], ["(1, 0)", "(0, 1)", "2.0", "1.0"]),   # same edge reversed
    ([(0, 1), (0, 1)], [1.0, 3.0], ["(0, 1)", "3.0"]),
    ([(0, 1, 1.0), (1, 0, 4.0)], None, ["(1, 0, 4.0)", "4.0"]),
])
def test_graph_duplicate_edges_with_conflicting_weights(edges, weights, fragments):
    raises_naming(["'g'", "different weight"] + fragments, lambda: ff.Graph("g", 2, edges, weights=weights))


def test_graph_duplicate_edge_with_same_weight_counts_once():
    g = ff.Graph("g", 2, [(0, 1), (1, 0)])
    assert g.edges == [(0, 1)] and g.adjacency()[0, 1] == 1.0


@pytest.mark.parametrize("labels, fragments", [
    (["a", "a"], ["duplicate vertex label 'a'"]),
    ([1, 1.0], ["duplicate vertex label 1.0"]),
    ([float("nan"), 1], ["vertex label nan", "NaN"]),
    ([[1], [2]], ["vertex label [1]", "unhashable"]),
    (["a"], ["1 labels", "n_states=2"]),
])
def test_graph_bad_labels(labels, fragments):
    raises_naming(["'g'"] + fragments, lambda: ff.Graph("g", 2, [(0, 1)], labels=labels))


def test_graph_self_loop():
    raises_naming(["'g'", "self-loop", "(1, 1)"], lambda: ff.Graph("g", 2, [(0, 1), (1, 1)]))


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf"), "a", None, True])
def test_graph_bad_weights(weight):
    raises_naming(["'g'", "(0, 1)", f"weight {weight!r}"],
                  lambda: ff.Graph("g", 2, [(0, 1)], weights=[weight]))
    raises_naming(["'g'", f"weight {weight!r}"], lambda: ff.Graph("g", 2, [(0, 1, weight)]))


def test_graph_weight_count_mismatch():
    raises_naming(["'g'", "2 weights", "1 edges"], lambda: ff.Graph("g", 2, [(0, 1)], weights=[1.0, 2.0]))


def test_graph_disconnected_is_an_error():
    raises_naming(["'g'", "disconnected", "2 components"], lambda: ff.Graph("g", 4, [(0, 1), (2, 3)]))


@pytest.mark.parametrize("n_states", [0, -1, 2.0, True, "3"])
def test_graph_bad_n_states(n_states):
    raises_naming(["'g'", f"n_states", repr(n_states)], lambda: ff.Graph("g", n_states, []))


# a single state: handled like a one-choice Categorical / Ordinal / Integer (a constant factor)
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("make", [
    lambda n: ff.Graph("p", 1, [], normalized_laplacian=n),
    lambda n: ff.Categorical("p", ["a"], normalized_laplacian=n),
    lambda n: ff.Ordinal("p", ["a"], normalized_laplacian=n),
    lambda n: ff.Integer("p", 3, 3, normalized_laplacian=n),
])
def test_one_state_parameters_give_finite_kernels(make, normalized):
    param = make(normalized)
    spectrum = param.spectrum
    assert spectrum.n_states == 1 and np.all(np.isfinite(spectrum.eigenvalues))
    np.testing.assert_array_equal(spectrum.eigenvalues, [0.0])
    space = ff.Space([ff.Real("x", 0.0, 1.0), param])
    X = space.sample_encoded(4, seed=0)
    for kernel in (ModLap(space), ProdLap(space)):
        K = kernel(X)
        assert np.all(np.isfinite(K)) and np.all(np.isfinite(kernel.diag(X)))
    assert space.decode(X)[0]["p"] == param.decode_value(0.0)


# ------------------------------------------------------------------------------------- Real
@pytest.mark.parametrize("low, high, log, fragments", [
    (-1e308, 1e308, False, ["high - low", "inf", "-1e+308", "1e+308"]),
    (-1.7e308, 1.7e308, False, ["inf"]),
    (float("nan"), 1.0, False, ["low", "nan"]),
    (0.0, float("inf"), False, ["high", "inf"]),
    (float("-inf"), 0.0, False, ["low", "-inf"]),
    (0, 10 ** 400, False, ["high", "1000000"]),          # an int too large for a float
    (1.0, 1.0, False, ["low < high", "low=1.0", "high=1.0"]),
    (2.0, 1.0, False, ["low < high", "low=2.0", "high=1.0"]),
    (0.0, 1.0, True, ["log=True", "low=0.0"]),
    (-1.0, 1.0, True, ["log=True", "low=-1.0"]),
    ("0", 1.0, False, ["low", "'0'"]),
    (True, 2.0, False, ["low", "True"]),
])
def test_real_bad_bounds(low, high, log, fragments):
    raises_naming(["'x'"] + fragments, lambda: ff.Real("x", low, high, log=log))


@pytest.mark.parametrize("low, high, log", [(-1e307, 1e307, False), (1e-300, 1e300, True), (5e-324, 1.0, True),
                                            (-8e307, 8e307, False)])
def test_real_wide_but_finite_ranges_round_trip(low, high, log):
    p = ff.Real("x", low, high, log=log)
    space = ff.Space([p])
    for value in (low, high):
        code = space.encode({"x": value})
        assert np.all((0.0 <= code) & (code <= 1.0))
        assert math.isclose(space.decode(code)["x"], value, rel_tol=1e-9)
    for config in space.sample(20, seed=0):
        assert low <= config["x"] <= high and math.isfinite(config["x"])


# ----------------------------------------------------------------------- Categorical / Ordinal
@pytest.mark.parametrize("kind", [ff.Categorical, ff.Ordinal])
@pytest.mark.parametrize("choices, fragments", [
    ([1.0, float("nan")], ["choice nan", "NaN"]),
    ([np.nan, "a"], ["choice nan"]),
    (["a", "b", "a"], ["duplicate choice 'a'"]),
    ([1, 1.0], ["duplicate choice 1.0"]),
    ([[1], [2]], ["choice [1]", "unhashable"]),
    ([{"a": 1}], ["choice {'a': 1}", "unhashable"]),
    ([np.array([1, 2])], ["unhashable"]),
    ([], ["must not be empty"]),
    (5, ["choices=5"]),
])
def test_choice_parameters_reject_untellable_choices(kind, choices, fragments):
    raises_naming([f"{kind.__name__} 'c'"] + fragments, lambda: kind("c", choices))


def test_true_and_one_are_distinct_choices():
    p = ff.Categorical("c", [True, 1, "1"])
    assert [p.encode_value(v) for v in (True, 1, "1")] == [0.0, 1.0, 2.0]


# -------------------------------------------------------------------------------------- Set
@pytest.mark.parametrize("others", [[], [ff.Real("x", 0.0, 1.0)], [ff.Categorical("c", ["a", "b"])]])
def test_set_of_one_one_dimensional_point_works(others):
    space = ff.Space([ff.Set("s", n_points=1, dim=1, low=-2.0, high=2.0)] + others)
    config = {"s": [[1.0]], **{p.name: ("a" if p.name == "c" else 0.5) for p in others}}
    x = space.encode(config)
    assert x.shape == (space.n_dims,) and x[0] == 0.75
    back = space.decode(x)
    np.testing.assert_allclose(back["s"], [[1.0]])
    X = space.sample_encoded(5, seed=0)
    assert X.shape == (5, space.n_dims)
    samples = space.sample(5, seed=0)
    assert all(np.shape(c["s"]) == (1, 1) for c in samples)
    np.testing.assert_allclose(space.encode(samples), X)
    K = set_space_kernel("modlap", space)(X)
    assert K.shape == (5, 5) and np.all(np.isfinite(K))


@pytest.mark.parametrize("kwargs, fragments", [
    (dict(n_points=0, dim=1), ["n_points", "0"]),
    (dict(n_points=1, dim=0), ["dim", "0"]),
    (dict(n_points=1.0, dim=1), ["n_points", "1.0"]),
    (dict(n_points=1, dim=1, low=1.0, high=1.0), ["low < high", "1.0"]),
    (dict(n_points=1, dim=2, low=[0.0], high=1.0), ["low", "[0.0]"]),
    (dict(n_points=1, dim=1, low=float("nan")), ["low", "nan"]),
])
def test_set_bad_definitions(kwargs, fragments):
    raises_naming(["Set 's'"] + fragments, lambda: ff.Set("s", **kwargs))


def test_only_categoricals_are_nominal():
    """``is_nominal`` (a complete graph) is what the initial design's size, untried values and value groups key on:
    a Graph whose edges join every pair is still a Graph of its own edges, and an Ordinal is a path."""
    complete_edges = [(a, b) for a in range(3) for b in range(a + 1, 3)]
    assert ff.Categorical("c", ["a", "b", "c"]).is_nominal
    assert not ff.Ordinal("o", [1, 2, 3]).is_nominal
    assert not ff.Integer("i", 0, 4).is_nominal
    assert not ff.Graph("g", 3, complete_edges).is_nominal
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", list(range(12))), ff.Ordinal("o", list(range(15)))])
    assert ff.bo.optimizer.initial_design_size(space) == 12
