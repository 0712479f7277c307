"""Benchmark problems of the FM-kernel paper (SPEC §6), with their spaces and known optima.

>>> from fastfm.benchmarks import get_problem
>>> problem = get_problem("func2c")
>>> y = problem(problem.space.sample(1, seed=0)[0])

The hyperparameter problems ("svm", "xgboost") and "kmeansinit" need ``pip install fastfm[bench]``.
Set-valued problems ("setcoverage", "setchamfer", "kmeansinit") are in ``fastfm.benchmarks.sets``.
"""
from .base import PROBLEMS, Problem, get_problem
from .hpo import SVM, XGBoost
from .sets import KMeansInit, SetChamfer, SetCoverage
from .synthetic import Ackley5C, Func2C, Func3C, beale, rosenbrock, six_hump_camel

__all__ = [
    "Problem", "PROBLEMS", "get_problem",
    "Func2C", "Func3C", "Ackley5C", "SVM", "XGBoost", "SetCoverage", "SetChamfer", "KMeansInit",
    "rosenbrock", "six_hump_camel", "beale",
]
