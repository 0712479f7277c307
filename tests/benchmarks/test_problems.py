"""Tests of the benchmark problems (SPEC §6): definitions, stated optima, the Problem contract."""
import itertools
import math
import sys

import numpy as np
import pytest
from scipy.optimize import minimize

from fastfm.benchmarks import PROBLEMS, Ackley5C, Func2C, Func3C, Problem, get_problem
from fastfm.exceptions import (InvalidConfigError, InvalidValueError, MissingParameterError, OutOfBoundsError,
                               UnknownParameterError)

# The optima SPEC §6 states, to the digits it states them.
SPEC_FUNC2C_MIN = -0.206326
SPEC_FUNC3C_MIN = -0.722140
SPEC_ARGMIN_U = (-0.04492, 0.35633)
SPEC_TOL = 1e-5  # SPEC rounds to 6 decimals

SYNTHETIC = [Func2C, Func3C, Ackley5C]


# ----------------------------------------------------------------------------- registry
def test_registry_names_and_case_insensitive_lookup():
    assert PROBLEMS == ("func2c", "func3c", "ackley5c", "svm", "xgboost", "deepbranch", "modelselection",
                        "setcoverage", "setchamfer", "kmeansinit", "gmminit", "pmedian", "setperiodic", "setdensity")
    for cls in SYNTHETIC:
        for name in (cls.name, cls.name.lower(), cls.name.upper()):
            assert type(get_problem(name)) is cls


def test_registry_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="unknown benchmark problem 'branin'.*func2c.*xgboost"):
        get_problem("branin")
    with pytest.raises(ValueError, match="valid names"):
        get_problem(None)


# ----------------------------------------------------------------------------- values by hand
# u = (0.25, −0.5), so x = 2u = (0.5, −1); SPEC §6's R, S, B worked out by hand:
#   R = [100(−1 − 0.25)² + (0.5 − 1)²]/300 = (156.25 + 0.25)/300
#   S = [(4 − 2.1·0.25 + 0.0625/3)·0.25 + 0.5·(−1) + (−4 + 4)·1]/10
#   B = [(1.5 − 0.5 − 0.5)² + (2.25 − 0.5 + 0.5)² + (2.625 − 0.5 − 0.5)²]/50 = (0.25 + 5.0625 + 2.640625)/50
U_HAND = (0.25, -0.5)
R_HAND = 156.5 / 300
S_HAND = ((4 - 0.525 + 0.0625 / 3) * 0.25 - 0.5) / 10
B_HAND = 7.953125 / 50
# SPEC §6 tables: h1 → (R, S, B), h2 → (R, S, B, B, B), h3 → (5S, 2R, 2B, 3B)
G1 = (R_HAND, S_HAND, B_HAND)
G2 = (R_HAND, S_HAND, B_HAND, B_HAND, B_HAND)
G3 = (5 * S_HAND, 2 * R_HAND, 2 * B_HAND, 3 * B_HAND)


def test_func2c_by_hand_at_every_h():
    problem = Func2C()
    for h1, h2 in itertools.product(range(3), range(5)):
        config = {"x1": U_HAND[0], "x2": U_HAND[1], "h1": h1, "h2": h2}
        assert problem(config) == pytest.approx(G1[h1] + G2[h2], rel=1e-13)


def test_func3c_by_hand_at_every_h():
    problem = Func3C()
    for h1, h2, h3 in itertools.product(range(3), range(5), range(4)):
        config = {"x1": U_HAND[0], "x2": U_HAND[1], "h1": h1, "h2": h2, "h3": h3}
        assert problem(config) == pytest.approx(G1[h1] + G2[h2] + G3[h3], rel=1e-13)


def test_ackley5c_by_hand():
    problem = Ackley5C()
    # z = (0, 0, 0, 0, 0, 1): mean z² = 1/6, mean cos 2πz = 1
    config = {"x1": 0.0, "h1": 8, "h2": 8, "h3": 8, "h4": 8, "h5": 16}
    assert problem(config) == pytest.approx(20 * (1 - math.exp(-0.2 * math.sqrt(1 / 6))), rel=1e-13)
    # z = (1, −1, −1, −1, −1, −1): mean z² = 1, mean cos 2πz = 1
    config = {"x1": 1.0, "h1": 0, "h2": 0, "h3": 0, "h4": 0, "h5": 0}
    assert problem(config) == pytest.approx(20 * (1 - math.exp(-0.2)), rel=1e-13)
    # z = (0.5, 0, 0, 0, 0, 0): mean z² = 1/24, mean cos 2πz = (5 − 1)/6
    config = {"x1": 0.5, "h1": 8, "h2": 8, "h3": 8, "h4": 8, "h5": 8}
    expected = -20 * math.exp(-0.2 * math.sqrt(0.25 / 6)) - math.exp(4 / 6) + 20 + math.e
    assert problem(config) == pytest.approx(expected, rel=1e-13)


# ----------------------------------------------------------------------------- stated optima
def _value_over_u(problem, h):
    """f(u) at fixed nominal values h, as a function of u ∈ [−1, 1]^Dc."""
    def f(u):
        return problem({**{f"x{i + 1}": float(v) for i, v in enumerate(u)}, **h})
    return f


@pytest.mark.parametrize("cls, spec_min, h", [
    (Func2C, SPEC_FUNC2C_MIN, {"h1": 1, "h2": 1}),
    (Func3C, SPEC_FUNC3C_MIN, {"h1": 1, "h2": 1, "h3": 0}),
])
def test_stated_optimum_is_a_local_minimum(cls, spec_min, h):
    problem = cls()
    f = _value_over_u(problem, h)
    for start in (SPEC_ARGMIN_U, (-SPEC_ARGMIN_U[0], -SPEC_ARGMIN_U[1])):  # the stated point and its mirror
        result = minimize(f, start, method="L-BFGS-B", bounds=[(-1, 1)] * 2,
                          options={"ftol": 1e-15, "gtol": 1e-12})
        assert result.fun == pytest.approx(spec_min, abs=SPEC_TOL)
        assert np.allclose(np.abs(result.x), np.abs(SPEC_ARGMIN_U), atol=1e-4)
        # the recorded optimum is the local minimum to (nearly) double precision
        assert result.fun == pytest.approx(problem.optimum, abs=1e-12)
        assert result.fun >= problem.optimum - 1e-14
    assert problem.optimum == pytest.approx(spec_min, abs=SPEC_TOL)
    assert problem(problem.optimal_config) == pytest.approx(problem.optimum, abs=1e-15)
    assert {k: problem.optimal_config[k] for k in h} == h


@pytest.mark.parametrize("cls, argmin_h", [(Func2C, (1, 1)), (Func3C, (1, 1, 0))])
def test_stated_optimum_is_global(cls, argmin_h):
    """Grid over u for every h, each h's best grid point polished by L-BFGS-B: nothing beats the optimum."""
    problem = cls()
    n_h = problem.space.n_discrete
    grid = np.linspace(0.0, 1.0, 201)  # encoded u: a step of 0.01 in u
    U = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    best_value, best_h = np.inf, None
    for h in itertools.product(*(range(n) for n in problem.space.n_states)):
        X = np.hstack([U, np.tile(np.array(h, dtype=float), (len(U), 1))])
        values = problem.evaluate_encoded(X)
        start = 2.0 * U[np.argmin(values)] - 1.0
        result = minimize(_value_over_u(problem, dict(zip([f"h{i + 1}" for i in range(n_h)], h))), start,
                          method="L-BFGS-B", bounds=[(-1, 1)] * 2)
        value = min(values.min(), result.fun)
        if value < best_value:
            best_value, best_h = value, h
    assert best_h == argmin_h
    assert best_value >= problem.optimum - 1e-10
    assert best_value == pytest.approx(problem.optimum, abs=1e-8)


@pytest.mark.parametrize("cls", SYNTHETIC)
def test_random_search_never_beats_the_optimum(cls):
    problem = cls()
    values = problem.evaluate_encoded(problem.space.sample_encoded(200_000, seed=0))
    assert values.min() >= problem.optimum - 1e-12


def test_ackley5c_optimum():
    problem = Ackley5C()
    assert problem(problem.optimal_config) == pytest.approx(0.0, abs=1e-12)
    assert problem.optimal_config == {"x1": 0.0, "h1": 8, "h2": 8, "h3": 8, "h4": 8, "h5": 8}
    f = _value_over_u(problem, {f"h{i}": 8 for i in range(1, 6)})
    assert f([1e-3]) > f([0.0]) and f([-1e-3]) > f([0.0])


# ----------------------------------------------------------------------------- the Problem contract
@pytest.mark.parametrize("cls", SYNTHETIC)
def test_encoded_and_config_evaluations_agree(cls):
    problem = cls()
    assert isinstance(problem, Problem) and problem.minimize
    X = problem.space.sample_encoded(50, seed=1)
    values = problem.evaluate_encoded(X)
    assert values.dtype == np.float64 and values.shape == (50,)
    expected = [problem(config) for config in problem.space.decode(X)]
    np.testing.assert_allclose(values, expected, rtol=1e-13, atol=1e-15)
    one = problem.evaluate_encoded(X[0])  # one point, 1-d
    assert one.shape == (1,) and one[0] == values[0]


@pytest.mark.parametrize("cls", SYNTHETIC)
def test_space_layout(cls):
    problem = cls()
    n_h = {Func2C: 2, Func3C: 3, Ackley5C: 5}[cls]
    n_u = 1 if cls is Ackley5C else 2
    assert problem.space.n_continuous == n_u and problem.space.n_discrete == n_h
    for p in problem.space.continuous_params:
        assert (p.low, p.high, p.log) == (-1.0, 1.0, False)
    for p in problem.space.discrete_params:
        assert p.graph_kind == "complete" and p.choices == list(range(p.n_states))  # SPEC §6: nominal


@pytest.mark.parametrize("config, error, parameter", [
    ({"x1": 0.0, "x2": 0.0, "h1": 3, "h2": 0}, InvalidValueError, "h1"),
    ({"x1": 0.0, "x2": 0.0, "h1": "1", "h2": 0}, InvalidValueError, "h1"),
    ({"x1": 1.5, "x2": 0.0, "h1": 0, "h2": 0}, OutOfBoundsError, "x1"),
    ({"x1": float("nan"), "x2": 0.0, "h1": 0, "h2": 0}, InvalidValueError, "x1"),
    ({"x1": 0.0, "h1": 0, "h2": 0}, MissingParameterError, "x2"),
    ({"x1": 0.0, "x2": 0.0, "h1": 0, "h2": 0, "h3": 0}, UnknownParameterError, "h3"),
])
def test_bad_config_raises_typed_error(config, error, parameter):
    with pytest.raises(error, match=repr(parameter)) as info:
        Func2C()(config)
    assert info.value.parameter == parameter


def test_bad_encoded_array_raises_typed_error():
    problem = Func2C()
    with pytest.raises(OutOfBoundsError, match="'h2'"):
        problem.evaluate_encoded([[0.5, 0.5, 0.0, 5.0]])
    with pytest.raises(OutOfBoundsError, match="'x1'"):
        problem.evaluate_encoded([[1.5, 0.5, 0.0, 0.0]])
    with pytest.raises(InvalidConfigError, match="shape"):
        problem.evaluate_encoded(np.zeros((2, 3)))


# ----------------------------------------------------------------------------- hyperparameter problems
def _check_hpo_problem(problem, make_again, n_configs=2):
    X = problem.space.sample_encoded(n_configs, seed=0)
    configs = problem.space.decode(X)
    values = problem.evaluate_encoded(X)
    assert values.shape == (n_configs,) and np.all(np.isfinite(values))
    # deterministic: the same instance again, and a new instance with the same seed
    assert [problem(c) for c in configs] == values.tolist()
    assert make_again()(configs[0]) == values[0]
    assert problem.optimum is None and problem.optimal_config is None
    return values


def test_svm():
    pytest.importorskip("sklearn")
    from fastfm.benchmarks import SVM
    problem = get_problem("SVM", n_splits=5, seed=3)
    assert isinstance(problem, SVM) and problem.space.names == ["kernel", "gamma", "shrinking", "C", "tol", "nu"]
    values = _check_hpo_problem(problem, lambda: SVM(n_splits=5, seed=3), n_configs=5)
    assert np.all(values > 0)
    # the splits depend on the seed
    config = problem.space.decode(problem.space.sample_encoded(1, seed=0))[0]
    assert SVM(seed=4)(config) != problem(config)
    with pytest.raises(OutOfBoundsError, match="'C'"):
        problem({**config, "C": 100.0})


def test_xgboost():
    pytest.importorskip("sklearn")
    pytest.importorskip("xgboost")
    from fastfm.benchmarks import XGBoost
    problem = get_problem("xgboost", seed=1, n_rounds=10)
    assert isinstance(problem, XGBoost)
    assert problem.space.names == ["max_depth", "booster", "grow_policy", "objective",
                                   "eta", "gamma", "subsample", "reg_lambda"]
    assert problem.space["max_depth"].graph_kind == "path"  # ordinal
    values = _check_hpo_problem(problem, lambda: XGBoost(seed=1, n_rounds=10))
    assert np.all((values >= 0) & (values <= 1))
    # an error rate on the 540 test digits
    np.testing.assert_allclose(values * 540, np.round(values * 540), atol=1e-4)


@pytest.mark.parametrize("name, module", [("svm", "sklearn"), ("xgboost", "xgboost")])
def test_missing_optional_dependency_says_how_to_install(monkeypatch, name, module):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(ImportError, match=r"pip install fastfm\[bench\]"):
        get_problem(name)
