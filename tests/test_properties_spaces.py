"""Property-based tests (hypothesis) of search spaces, their codec, the kernels on them and ask/tell.

A composite strategy draws random ``Space``s mixing every parameter kind: Real (linear and log),
Integer, Categorical with mixed choice types, Ordinal, Graph (a random weighted connected graph:
a random spanning tree plus extra edges), Set, and a conditional parameter ``active_if`` a
Categorical value.

Integers come in every encoding: small graph-encoded ranges, ranges up to 10^12 values (a rounded
continuous variable, ``Integer(encoding="auto")``), log-scaled ones, and explicit encodings.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fastfm as ff
from fastfm.optim.mixed import SearchSpaceExhaustedError
from fastfm.kernels import make_kernel

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KERNEL_NAMES = ["modlap", "moddif", "modnn", "fm", "prodlap", "addlap", "proddif", "adddif", "rbf", "matern52",
                "hierarchical"]

# ----------------------------------------------------------------------------- strategies
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
# mixed choice types; floats are finite (NaN choices are rejected by design, tested below)
choice_value = st.one_of(st.integers(-50, 50), st.text("abcxyz", min_size=0, max_size=3),
                         st.floats(-10, 10, allow_nan=False, allow_infinity=False), st.booleans(), st.none())


def _distinct(values):
    """Drop values equal to an earlier one, with the library's rule: bool never equals int/float."""
    out = []
    for v in values:
        if not any(isinstance(v, bool) == isinstance(w, bool) and v == w for w in out):
            out.append(v)
    return out


@st.composite
def real_params(draw, name):
    if draw(st.booleans()):
        low = draw(st.floats(1e-4, 1e3))
        high = low * draw(st.floats(1.01, 1e4))
        return ff.Real(name, low, high, log=True)
    low = draw(finite)
    high = low + draw(st.floats(1e-3, 1e3))
    return ff.Real(name, low, high)


@st.composite
def integer_params(draw, name):
    kind = draw(st.sampled_from(["graph", "huge", "log", "explicit"]))
    if kind == "huge":    # up to 10^12 values: encoding="auto" makes it a rounded continuous variable
        low = draw(st.integers(-10 ** 12, 10 ** 12))
        return ff.Integer(name, low, low + draw(st.integers(0, 10 ** 12)))
    if kind == "log":
        low = draw(st.integers(1, 10 ** 6))
        return ff.Integer(name, low, low + draw(st.integers(0, 10 ** 9)), log=True)
    low = draw(st.integers(-1000, 1000))
    high = low + draw(st.integers(0, 199))
    if kind == "explicit":
        return ff.Integer(name, low, high, encoding=draw(st.sampled_from(["graph", "continuous"])))
    return ff.Integer(name, low, high, normalized_laplacian=draw(st.booleans()))


@st.composite
def categorical_params(draw, name, min_size=1):
    choices = _distinct(draw(st.lists(choice_value, min_size=min_size, max_size=6)))
    assume(len(choices) >= min_size)
    return ff.Categorical(name, choices, normalized_laplacian=draw(st.booleans()))


@st.composite
def ordinal_params(draw, name):
    choices = _distinct(draw(st.lists(choice_value, min_size=1, max_size=12)))
    return ff.Ordinal(name, choices)


@st.composite
def graph_params(draw, name):
    n = draw(st.integers(1, 9))
    edges = {}
    for v in range(1, n):                                  # random spanning tree: connected
        u = draw(st.integers(0, v - 1))
        edges[(u, v)] = None
    for _ in range(draw(st.integers(0, n))):               # extra edges
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if a != b:
            edges[(min(a, b), max(a, b))] = None
    edge_list = list(edges)
    if n == 1:
        edge_list = []
    weights = [draw(st.floats(0.05, 20.0)) for _ in edge_list]
    labels = None
    if draw(st.booleans()):
        labels = [f"v{i}" for i in range(n)]
        edge_list = [(labels[a], labels[b]) for a, b in edge_list]
    return ff.Graph(name, n, edge_list, weights=weights if edge_list and draw(st.booleans()) else None,
                    labels=labels, normalized_laplacian=draw(st.booleans()))


@st.composite
def set_params(draw, name):
    dim = draw(st.integers(1, 2))
    low = draw(st.floats(-5, 5))
    return ff.Set(name, n_points=draw(st.integers(1, 3)), dim=dim, low=low, high=low + draw(st.floats(0.1, 10)))


KINDS = {"real": real_params, "int": integer_params, "cat": categorical_params, "ord": ordinal_params,
         "graph": graph_params, "set": set_params}


@st.composite
def spaces(draw, allow_sets=True, allow_conditional=True):
    kinds = draw(st.lists(st.sampled_from(sorted(k for k in KINDS if allow_sets or k != "set")),
                          min_size=1, max_size=4))
    params = [KINDS[k](f"p{i}_{k}") for i, k in enumerate(kinds)]
    params = [draw(p) for p in params]
    if allow_conditional and draw(st.booleans()):
        parent = draw(categorical_params("parent", min_size=2))
        allowed = draw(st.lists(st.sampled_from(parent.choices), min_size=1, max_size=len(parent.choices) - 1,
                                unique_by=lambda v: (type(v) is bool, repr(v))))
        allowed = _distinct(allowed)
        child_kind = draw(st.sampled_from(["real", "int", "cat", "ord"]))
        if child_kind == "real":
            child = ff.Real("child", 0.0, 1.0, active_if={"parent": allowed})
        elif child_kind == "int":
            child = ff.Integer("child", 0, draw(st.integers(0, 10)), active_if={"parent": allowed})
        elif child_kind == "cat":
            child = ff.Categorical("child", ["u", "v", 3], active_if={"parent": allowed})
        else:
            child = ff.Ordinal("child", [1, 2, 3, 4], active_if={"parent": allowed})
        params += [parent, child]
    return ff.Space(params)


# ----------------------------------------------------------------------------- helpers
def assert_configs_equal(space, a, b):
    assert set(a) == set(b)
    for name, va in a.items():
        vb = b[name]
        p = space[name]
        if isinstance(p, ff.Set):
            np.testing.assert_allclose(va, vb, rtol=1e-9, atol=1e-9 * float(np.max(np.abs(p.high - p.low))))
        elif isinstance(p, ff.Real):
            assert math.isclose(va, vb, rel_tol=1e-9, abs_tol=1e-9 * (p.high - p.low))
        else:
            assert type(va) is type(vb) and va == vb, (name, va, vb)


# ----------------------------------------------------------------------------- 1, 2: codec and sampling
@FAST
@given(space=spaces(), seed=st.integers(0, 2**31 - 1))
def test_encode_decode_round_trip(space, seed):
    configs = space.sample(6, seed=seed)
    X = space.encode(configs)                                   # every sampled config encodes
    assert X.shape == (6, space.n_dims)
    for config, back in zip(configs, space.decode(X)):
        assert_configs_equal(space, config, back)
    Xs = space.sample_encoded(6, seed=seed)
    np.testing.assert_array_equal(space.validate_encoded(Xs), Xs)
    np.testing.assert_allclose(space.encode(space.decode(Xs)), Xs, rtol=0, atol=1e-9)
    # single-dict form agrees with the batch form
    np.testing.assert_array_equal(space.encode(configs[0]), X[0])


# ----------------------------------------------------------------------------- 3: kernels
def _kernels(space, name):
    """(numpy, cpp) kernels, or None when the name is documented not to apply (SpaceDefinitionError)."""
    try:
        return make_kernel(name, space, backend="numpy"), make_kernel(name, space, backend="cpp")
    except ff.SpaceDefinitionError:
        return None


@pytest.fixture(scope="module")
def cpp_built():
    pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")


@SETTINGS
@given(space=spaces(), seed=st.integers(0, 2**31 - 1))
def test_kernel_gram_is_psd_and_backends_agree(cpp_built, space, seed):
    for name in KERNEL_NAMES:
        _check_kernel(space, seed, name)


def _check_kernel(space, seed, name):
    pair = _kernels(space, name)
    if pair is None:
        assert space.n_discrete == 0 and name not in ("rbf", "matern52")    # the documented case only
        return
    k_np, k_cpp = pair
    X = space.sample_encoded(8, seed=seed)
    K = k_np(X)
    assert K.shape == (8, 8) and np.all(np.isfinite(K))
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=1e-14 * np.abs(K).max(), err_msg=name)
    eig = np.linalg.eigvalsh((K + K.T) / 2)
    assert eig[0] >= -1e-8 * max(eig[-1], 1e-300), (name, eig)
    Kc = k_cpp(X)
    np.testing.assert_allclose(Kc, K, rtol=1e-10, atol=1e-10 * np.abs(K).max(), err_msg=name)


# ----------------------------------------------------------------------------- 4: gradients
@SETTINGS
@given(space=spaces(), seed=st.integers(0, 2**31 - 1))
def test_gradient_matches_finite_differences(space, seed):
    name = "modlap" if space.n_discrete else "matern52"
    kernel = make_kernel(name, space, backend="numpy")
    X = space.sample_encoded(6, seed=seed)
    K, dK = kernel(X, eval_gradient=True)
    theta = kernel.theta
    eps = 1e-6
    for j in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[j] += eps
        down[j] -= eps
        fd = (kernel.clone_with_theta(up)(X) - kernel.clone_with_theta(down)(X)) / (2 * eps)
        np.testing.assert_allclose(dK[:, :, j], fd, rtol=1e-5, atol=1e-6 * max(np.abs(K).max(), 1.0),
                                   err_msg=f"{name} theta[{j}]")


# ----------------------------------------------------------------------------- 5: malformed definitions
names = st.text("abcdefgh_", min_size=1, max_size=6).map(lambda s: "q" + s)
bad_float = st.sampled_from([math.nan, math.inf, -math.inf])


@st.composite
def bad_definitions(draw):
    name = draw(names)
    case = draw(st.sampled_from(["real_nonfinite", "real_order", "real_log", "int_order", "cat_empty",
                                 "cat_dup", "cat_nan", "ord_dup", "graph_self_loop", "graph_out_of_range",
                                 "graph_disconnected", "graph_weight", "set_order"]))
    x = draw(st.floats(-100, 100))
    if case == "real_nonfinite":
        low, high = (draw(bad_float), x) if draw(st.booleans()) else (x, draw(bad_float))
        return lambda: ff.Real(name, low, high), name
    if case == "real_order":
        return lambda: ff.Real(name, x, x - draw(st.floats(0, 10))), name
    if case == "real_log":
        return lambda: ff.Real(name, -abs(x), abs(x) + 1.0, log=True), name
    if case == "int_order":
        lo = draw(st.integers(-100, 100))
        return lambda: ff.Integer(name, lo, lo - draw(st.integers(1, 10))), name
    if case == "cat_empty":
        return lambda: ff.Categorical(name, []), name
    if case in ("cat_dup", "ord_dup"):
        v = draw(choice_value)
        choices = draw(st.permutations([v, v] + _distinct([draw(choice_value)])))
        cls = ff.Categorical if case == "cat_dup" else ff.Ordinal
        return lambda: cls(name, list(choices)), name
    if case == "cat_nan":
        return lambda: ff.Categorical(name, ["a", math.nan]), name
    n = draw(st.integers(2, 6))
    tree = [(v - 1, v) for v in range(1, n)]
    if case == "graph_self_loop":
        v = draw(st.integers(0, n - 1))
        return lambda: ff.Graph(name, n, tree + [(v, v)]), name
    if case == "graph_out_of_range":
        v = draw(st.one_of(st.integers(n, n + 5), st.integers(-5, -1)))
        return lambda: ff.Graph(name, n, tree + [(0, v)]), name
    if case == "graph_disconnected":
        return lambda: ff.Graph(name, n, tree[:-1]), name
    if case == "graph_weight":
        w = draw(st.one_of(st.floats(max_value=0.0, allow_nan=False), bad_float))
        weights = [1.0] * len(tree)
        weights[draw(st.integers(0, len(tree) - 1))] = w
        return lambda: ff.Graph(name, n, tree, weights=weights), name
    # set_order
    return lambda: ff.Set(name, 2, 1, low=x, high=x - draw(st.floats(0, 5))), name


@FAST
@given(definition=bad_definitions())
def test_malformed_definitions_raise_space_definition_error(definition):
    build, name = definition
    with pytest.raises(ff.SpaceDefinitionError) as info:
        build()
    assert isinstance(info.value, ValueError)
    assert repr(name) in str(info.value) or name in str(info.value)


# ----------------------------------------------------------------------------- 6: ask/tell
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(space=spaces(), seed=st.integers(0, 2**31 - 1))
def test_random_search_ask_tell_invariants(space, seed):
    opt = ff.Optimizer(space, kernel="random", seed=seed)
    ids = []
    for i in range(6):
        try:
            config = opt.ask()
        except SearchSpaceExhaustedError:
            break                                              # a tiny finite space can run out
        ids.append(config.trial_id)
        space.encode(dict(config))                             # a valid config of the space
        opt.tell(config, float(i))
    assert len(ids) == len(set(ids))
