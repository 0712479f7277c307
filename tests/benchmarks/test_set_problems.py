"""Set benchmark problems: documented optima, permutation invariance, several modes, and every
baseline of the set benchmark running end to end on a tiny budget."""
import numpy as np
import pytest

from fastfm.benchmarks import KMeansInit, SetChamfer, SetCoverage, get_problem
from fastfm.benchmarks.sets import run_set_method

SYNTHETIC = [SetCoverage, SetChamfer]


@pytest.mark.parametrize("cls", SYNTHETIC)
def test_documented_optimum_is_attained_and_is_a_lower_bound(cls):
    problem = cls()
    assert problem(problem.optimal_config) == pytest.approx(problem.optimum, abs=1e-12)
    values = [problem(c) for c in problem.space.sample(300, seed=1)]
    assert min(values) > problem.optimum


@pytest.mark.parametrize("cls", SYNTHETIC + [KMeansInit])
def test_objective_is_permutation_invariant(cls, rng):
    problem = cls()
    for config in problem.space.sample(5, seed=2):
        points = config[problem.set_name]
        assert problem.set_value(points[rng.permutation(len(points))]) == pytest.approx(problem.set_value(points),
                                                                                        rel=1e-12)


def test_coverage_has_a_local_minimum_that_leaves_a_bump_uncovered():
    problem = SetCoverage()
    doubled = problem.centres.copy()
    doubled[3] = doubled[0] + 1e-3                      # two points on the heaviest bump, the lightest uncovered
    assert problem.set_value(doubled) == pytest.approx(-2.4, abs=1e-3)
    # moving the extra point a little does not help: a local minimum of the set function
    for step in ([0.05, 0], [0, 0.05], [-0.05, 0], [0, -0.05]):
        moved = doubled.copy()
        moved[3] += step
        assert problem.set_value(moved) >= problem.set_value(doubled) - 1e-9


def test_problems_are_registered():
    for name, cls in (("setcoverage", SetCoverage), ("SetChamfer", SetChamfer), ("kmeansinit", KMeansInit)):
        assert isinstance(get_problem(name), cls)


@pytest.mark.parametrize("method", ["set", "set-L2", "set-norm", "vector", "random"])
def test_every_baseline_runs_and_records_the_budget(method):
    problem = SetCoverage()
    result = run_set_method(problem, method, budget=6, n_init=4, seed=0)
    assert len(result.best_so_far) == 6 and result.n_failed == 0
    assert result.fun == result.best_so_far[-1] and result.fun >= problem.optimum
    points = np.asarray(result.x[problem.set_name]) if method != "vector" else None
    if points is not None:
        assert points.shape == (4, 2) and np.all(np.abs(points) <= 1.0)


def test_kmeans_plus_plus_baseline_and_bad_methods():
    problem = KMeansInit()
    result = run_set_method(problem, "kmeans++", budget=4, seed=0)
    assert len(result.best_so_far) == 4 and np.isfinite(result.fun)
    with pytest.raises(ValueError, match="KMeansInit only"):
        run_set_method(SetCoverage(), "kmeans++", budget=2)
    with pytest.raises(ValueError, match="unknown set benchmark method 'nope'"):
        run_set_method(SetCoverage(), "nope", budget=2)
