"""The runners behind ``fastfm time regression`` and ``fastfm bench`` on the set problems, called directly
on tiny sizes: every row they promise is there and its numbers are sane."""
import numpy as np
import pytest

from fastfm.benchmarks import GMMInit, KMeansInit, SetCoverage
from fastfm.cli.regression import run_exact_components, run_regression_benchmark, run_subset_study
from fastfm.cli.runs import run_set_method


def test_regression_benchmark_runs_and_reports_every_model():
    pytest.importorskip("sklearn")
    lines = []
    run_regression_benchmark(sizes=(50, 70), n_test=30, subset=40, n_restarts=0, peers=("sklearn",),
                             sklearn_max_n=50, cg_sizes=(70,), emit=lines.append, cg_options={"tol": 1e-6})
    rows = [line for line in lines if line.startswith("| ") and "|---" not in line][1:]
    methods = [row.split("|")[3].strip() for row in rows]
    assert [row.split("|")[1].strip() for row in rows] == ["fastfm ModLap"] * 3 + ["sklearn RBF one-hot"] * 2
    assert methods[:2] == ["cholesky", "cholesky"] and methods[2].startswith("cg")
    assert "skipped" in methods[4]
    rmse = [float(row.split("|")[7]) for row in rows[:4]]
    assert all(0 < r < 5 for r in rmse)


def test_regression_benchmark_fit_each_fits_hyperparameters_at_every_size(monkeypatch):
    from fastfm.gp import fitting
    monkeypatch.setattr(fitting, "_AUTO_SUBSET", 30)
    monkeypatch.setattr(fitting, "_AUTO_SUBSET_MIN_N", 60)
    lines = []
    run_regression_benchmark(sizes=(50, 70), n_test=30, n_restarts=0, peers=(), emit=lines.append, fit_each=True)
    rows = [line.split("|") for line in lines if line.startswith("| fastfm")]
    assert [row[3].strip() for row in rows] == ["cholesky θ: ML on 50 points",
                                                 "cholesky θ: ML on 30 points, refined on all"]
    assert all(0 < float(row[7]) < 5 for row in rows)


def test_regression_benchmark_takes_the_kernel_and_the_additive_one_fits_the_additive_set_better():
    # the mixed regression set is a sum of one-variable terms: AdditiveFM's per-variable terms are its structure
    rmse = {}
    for kernel, label in (("modlap", "fastfm ModLap"), ("modlap_additive", "fastfm AdditiveFM")):
        lines = []
        run_regression_benchmark(sizes=(100, 150), n_test=200, subset=100, n_restarts=0, peers=(),
                                 emit=lines.append, kernel=kernel)
        rows = [line.split("|") for line in lines if line.startswith("| fastfm")]
        assert [row[1].strip() for row in rows] == [label, label]
        rmse[kernel] = [float(row[7]) for row in rows]
    assert all(a < 0.8 * m for a, m in zip(rmse["modlap_additive"], rmse["modlap"])), rmse


def test_subset_study_reports_subset_refined_and_all_point_rows():
    lines = []
    run_subset_study(60, subsets=(30,), n_test=20, emit=lines.append)
    rows = [line.split("|") for line in lines if line.startswith("| ") and "|---" not in line][1:]
    assert [row[1].strip() for row in rows] == ["30 points", "30 random points, refined on all 60 "
                                                "(hyperparameter_subset=30)", "60 points (all)"]
    assert all(0 < float(row[4]) < 5 and np.isfinite(float(row[5])) for row in rows)


def test_exact_components_times_every_piece_of_the_exact_solver():
    lines = []
    run_exact_components(80, n_test=30, emit=lines.append)
    rows = [line.split("|") for line in lines if line.startswith("| ") and "|---" not in line][1:]
    assert [row[1].strip() for row in rows] == [
        "Gram K(X, X) (C++)", "Cholesky (LAPACK)", "predictive mean K(X*, X) α (matrix-free)", "cross Gram K(X*, X)",
        "triangular solve, n_test right-hand sides (std)"]
    assert all(float(row[2]) >= 0 and float(row[3]) >= 0 for row in rows)


@pytest.mark.parametrize("method", ["set", "set-L2", "set-norm", "vector", "split", "random"])
def test_every_baseline_runs_and_records_the_budget(method):
    problem = SetCoverage()
    result = run_set_method(problem, method, budget=6, n_init=4, seed=0)
    assert len(result.best_so_far) == 6 and result.n_failed == 0
    assert result.fun == result.best_so_far[-1] and result.fun >= problem.optimum
    points = np.asarray(result.x[problem.set_name]) if method != "vector" else None
    if points is not None:
        assert points.shape == (4, 2) and np.all(np.abs(points) <= 1.0)


@pytest.mark.parametrize("cls, method", [(KMeansInit, "kmeans++"), (KMeansInit, "data"), (GMMInit, "kmeans"),
                                         (GMMInit, "data")])
def test_clustering_baselines_take_the_best_of_the_budget(cls, method):
    problem = cls()
    result = run_set_method(problem, method, budget=4, seed=0)
    assert len(result.best_so_far) == 4 and np.isfinite(result.fun)
    centres = np.asarray(result.x[problem.set_name])
    param = problem.set_param
    assert centres.shape == (problem.n_clusters, 2) and np.all((centres >= param.low) & (centres <= param.high))
    assert result.fun == pytest.approx(problem(result.x), rel=1e-12)
    # the same seed draws the same initialisations; another seed draws others
    assert run_set_method(problem, method, budget=4, seed=0).best_so_far.tolist() == result.best_so_far.tolist()
    assert run_set_method(problem, method, budget=4, seed=1).best_so_far.tolist() != result.best_so_far.tolist()
    if method == "data":       # k distinct training points
        assert all(any(np.array_equal(c, t) for t in problem.train) for c in centres)
        assert len(np.unique(centres, axis=0)) == problem.n_clusters


def test_bad_set_methods():
    with pytest.raises(ValueError, match="'kmeans\\+\\+' applies to the clustering problems only.*SetCoverage"):
        run_set_method(SetCoverage(), "kmeans++", budget=2)
    with pytest.raises(ValueError, match="'kmeans' applies to the clustering problems only.*KMeansInit"):
        run_set_method(KMeansInit(), "kmeans", budget=2)
    with pytest.raises(ValueError, match="unknown set benchmark method 'nope'"):
        run_set_method(SetCoverage(), "nope", budget=2)


def test_n_init_option_takes_auto_or_a_positive_integer():
    import argparse

    from fastfm.cli.runs import _n_init_argument
    assert _n_init_argument("auto") == "auto" and _n_init_argument("12") == 12
    for bad in ("0", "-3", "ten", "2.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="--n-init must be 'auto' or a positive integer"):
            _n_init_argument(bad)
