"""Set benchmark problems: documented optima, permutation invariance, several modes (the baselines that
run on them are tested with the CLI, tests/cli/test_runners.py)."""
import numpy as np
import pytest

from fastfm.benchmarks import (GMMInit, KMeansInit, PMedian, SetChamfer, SetCoverage, SetDensity, SetPeriodic,
                               get_problem)

SYNTHETIC = [SetCoverage, SetChamfer, PMedian, SetPeriodic, SetDensity]


@pytest.mark.parametrize("cls", SYNTHETIC)
def test_documented_optimum_is_attained_and_is_a_lower_bound(cls):
    problem = cls()
    assert problem(problem.optimal_config) == pytest.approx(problem.optimum, abs=1e-12)
    values = [problem(c) for c in problem.space.sample(300, seed=1)]
    assert min(values) > problem.optimum


@pytest.mark.parametrize("cls", SYNTHETIC + [KMeansInit, GMMInit])
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
    for name, cls in (("setcoverage", SetCoverage), ("SetChamfer", SetChamfer), ("kmeansinit", KMeansInit),
                      ("GMMInit", GMMInit), ("PMedian", PMedian), ("setperiodic", SetPeriodic), ("SetDensity", SetDensity)):
        assert isinstance(get_problem(name), cls)
    assert get_problem("setdensity", n_points=20).space["points"].n_points == 20


def test_pmedian_best_known_set_is_a_fixed_point_of_cooper_location_allocation():
    """Each best-known facility is the Weiszfeld (geometric) median of the demand it serves, and no facility
    serves nobody: moving any one facility a little in any direction makes f worse."""
    problem = PMedian()
    facilities = problem.best_known
    served = problem.distances(facilities).argmin(axis=1)
    for i, x in enumerate(facilities):
        demand = problem.demand[served == i]
        assert len(demand) > 0
        weights = 1.0 / np.linalg.norm(demand - x, axis=1)
        assert np.allclose(weights @ demand / weights.sum(), x, atol=1e-8)       # Weiszfeld's update stays put
        for step in ([1e-3, 0], [0, 1e-3], [-1e-3, 0], [0, -1e-3]):
            moved = facilities.copy()
            moved[i] += step
            assert problem.set_value(moved) > problem.optimum
    # the demand is fixed: two constructions agree, and it lies in the unit square
    assert np.array_equal(PMedian().demand, problem.demand)
    assert problem.demand.shape == (280, 2) and problem.demand.min() >= 0.0 and problem.demand.max() <= 1.0


def test_pmedian_by_hand():
    problem = PMedian()
    one_corner = np.zeros((6, 2))                      # every facility at the origin: mean distance to it
    assert problem.set_value(one_corner) == pytest.approx(np.linalg.norm(problem.demand, axis=1).mean(), rel=1e-12)


@pytest.mark.parametrize("cls", [SetPeriodic, SetDensity])
def test_paper_synthetic_functions_are_the_mean_of_g_over_the_points(cls, rng):
    problem = cls(n_points=7)
    points = rng.uniform(-1.0, 1.0, (7, 2))
    by_hand = np.mean([problem.point_value(p[None, :])[0] for p in points])
    assert problem.set_value(points) == pytest.approx(by_hand, rel=1e-12)
    # every point on a global minimiser of g is optimal: no point of g is lower
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, 201), np.linspace(-1, 1, 201)), axis=-1).reshape(-1, 2)
    assert problem.point_value(grid).min() >= problem.optimum - 1e-12


def test_paper_synthetic_functions_by_hand():
    assert SetPeriodic(n_points=1).set_value(np.array([[0.25, -0.25]])) == pytest.approx(-1.0)
    assert SetPeriodic(n_points=2).set_value(np.array([[0.25, -0.25], [0.0, 0.3]])) == pytest.approx(-0.5)
    # at μ₁ the first density is 1/(2π σ₁²); the other components' tails add 0.4 %
    density = SetDensity(n_points=1)
    assert density.set_value(np.array([[0.5, 0.5]])) == pytest.approx(-1 / (2 * np.pi * 0.15 ** 2), rel=1e-2)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_paper_synthetic_functions_reject_a_bad_n_points(bad):
    with pytest.raises(ValueError, match=f"n_points must be a positive integer, got n_points={bad!r}"):
        SetPeriodic(n_points=bad)


def test_gmm_start_depends_on_the_set_alone():
    """GMMInit's EM start by hand (its docstring): nearest-mean counts, weights (n_j + 1)/(n + k), covariances
    (S_j + Σ)/(n_j + 1) about the proposed means; a mean that wins no point starts as the global spread."""
    problem = GMMInit()
    points = problem.means.copy()
    points[-1] = points[0]         # a duplicate mean: the nearest-mean assignment gives every tie to the first
    weights, means, precisions = problem.em_start(points)
    nearest = np.argmin(np.linalg.norm(problem.train[:, None, :] - points[None, :, :], axis=2), axis=1)
    n, k = len(problem.train), len(points)
    assert np.array_equal(means, points) and weights.sum() == pytest.approx(1.0, abs=1e-12)
    global_covariance = np.cov(problem.train, rowvar=False)
    for j in range(k):
        mine = problem.train[nearest == j]
        assert weights[j] == pytest.approx((len(mine) + 1) / (n + k), rel=1e-12)
        scatter = (mine - points[j]).T @ (mine - points[j])
        assert np.allclose(np.linalg.inv(precisions[j]), (scatter + global_covariance) / (len(mine) + 1), rtol=1e-10)
        assert np.all(np.linalg.eigvalsh(precisions[j]) > 0)
    assert np.sum(nearest == k - 1) == 0 and np.allclose(np.linalg.inv(precisions[-1]), global_covariance)
    # the value is a function of the set: repeated and fresh instances agree exactly
    assert problem.set_value(points) == GMMInit().set_value(points) == problem.set_value(points)


def test_gmm_value_is_the_held_out_negative_log_likelihood_of_the_converged_mixture():
    from scipy.stats import multivariate_normal
    problem = GMMInit()
    points = problem.space.sample(1, seed=3)[0][problem.set_name]
    model = problem.fit(points)
    assert model.converged_
    density = sum(w * multivariate_normal(m, c).pdf(problem.test)
                  for w, m, c in zip(model.weights_, model.means_, model.covariances_))
    assert problem.set_value(points) == pytest.approx(-np.mean(np.log(density)), rel=1e-10)


def test_gmm_start_on_the_true_means_beats_a_start_with_all_means_in_one_cluster():
    """The landscape the BO searches: a start that covers the mixture converges to a better mixture than one that
    crowds every mean into one component (EM cannot spread them out again), and random sets fall in between."""
    problem = GMMInit()
    crowded = problem.means[0] + 0.1 * np.random.default_rng(0).standard_normal((problem.n_clusters, 2))
    good = problem.set_value(problem.means)
    values = [problem(c) for c in problem.space.sample(20, seed=4)]
    assert good < min(values) and max(values) < problem.set_value(crowded)
