"""The conditional benchmark problems (SPEC §3): spaces, stated optimum, flattened evaluation."""
import numpy as np
import pytest
from scipy.optimize import minimize

from fastfm.benchmarks import DeepBranch, ModelSelection, get_problem
from fastfm.exceptions import InactiveParameterError


def test_deep_branch_optimum_is_in_the_deep_branch_and_is_the_minimum():
    problem = get_problem("DeepBranch")
    assert problem.space.is_conditional
    assert problem(problem.optimal_config) == pytest.approx(problem.optimum, abs=1e-6)
    assert problem.space.ancestors("xd2") == ["root", "leaf"]
    # no random point beats it, and a local search from the best random point of every other
    # branch stays above it
    configs = problem.space.sample(3000, seed=0)
    values = problem.evaluate_encoded(problem.space.encode(configs))
    assert values.min() > problem.optimum
    for root in ("shallow", "middle"):
        assert min(v for c, v in zip(configs, values) if c["root"] == root) > problem.optimum + 0.9
    # the stated optimal config is a local minimum of the deep-leaf function
    u = [problem.optimal_config[k] for k in ("x0", "xd1", "xd2")]
    local = minimize(lambda z: problem(dict(problem.optimal_config, x0=z[0], xd1=z[1], xd2=z[2])), u,
                     method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12})
    assert local.fun == pytest.approx(problem.optimum, abs=1e-7)


def test_flattened_configs_are_evaluated_on_their_active_part():
    problem = DeepBranch()
    flat = problem.space.flattened()
    config = flat.sample(1, seed=1)[0]
    with pytest.raises(InactiveParameterError):
        problem(config)                                   # every parameter set: some are inactive
    assert problem(problem.space.prune(config)) == problem._evaluate_config(problem.space.prune(config))


def test_model_selection_is_deterministic_and_covers_every_model():
    pytest.importorskip("sklearn")
    problem = ModelSelection(n_splits=1)
    configs = problem.space.sample(40, seed=2)
    assert {c["model"] for c in configs} == {"svc", "random_forest", "gradient_boosting"}
    chosen = [next(c for c in configs if c["model"] == m) for m in ("svc", "random_forest", "gradient_boosting")]
    values = [problem(c) for c in chosen]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == [problem(c) for c in chosen]
    good = {"model": "svc", "svc_C": 1.0, "svc_kernel": "rbf", "svc_gamma": 0.01}
    assert problem(good) < 0.1                           # a sensible SVC is accurate on this data
