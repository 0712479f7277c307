"""Set benchmark problems: documented optima, permutation invariance, several modes (the baselines that
run on them are tested with the CLI, tests/cli/test_runners.py)."""
import numpy as np
import pytest

from fastfm.benchmarks import KMeansInit, SetChamfer, SetCoverage, get_problem

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
