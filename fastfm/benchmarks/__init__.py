"""Benchmark problems of the FM-kernel paper (SPEC §6), with their spaces and known optima.

>>> from fastfm.benchmarks import get_problem
>>> problem = get_problem("func2c")
>>> y = problem(problem.space.sample(1, seed=0)[0])

The hyperparameter problems ("svm", "xgboost", "modelselection"), "kmeansinit" and "gmminit" need
``pip install fastfm[bench]``.
"deepbranch" and "modelselection" have conditional spaces (SPEC §3); set-valued problems
("setcoverage", "setchamfer", "kmeansinit", "gmminit", "pmedian", "setperiodic", "setdensity") are in ``fastfm.benchmarks.sets`` (SPEC §4).
The problems of 20-60 variables from the combinatorial and mixed BO literature (``LARGE_PROBLEMS``:
"contamination", "labs", "isingsparsification", "maxsatweighted", "mixed10c20n", "pestcontrol") are in
``fastfm.benchmarks.combinatorial``.
"""
from .base import LARGE_PROBLEMS, PROBLEMS, Problem, get_problem
from .combinatorial import LABS, Contamination, IsingSparsification, MaxSATWeighted, Mixed10C20N, PestControl
from .conditional import DeepBranch, ModelSelection
from .hpo import SVM, XGBoost
from .sets import GMMInit, KMeansInit, PMedian, SetChamfer, SetCoverage, SetDensity, SetPeriodic
from .synthetic import Ackley5C, Func2C, Func3C, beale, rosenbrock, six_hump_camel

__all__ = [
    "Problem", "PROBLEMS", "LARGE_PROBLEMS", "get_problem",
    "Func2C", "Func3C", "Ackley5C", "SVM", "XGBoost", "DeepBranch", "ModelSelection", "SetCoverage", "SetChamfer",
    "KMeansInit", "GMMInit", "PMedian", "SetPeriodic", "SetDensity", "Contamination", "LABS", "IsingSparsification",
    "MaxSATWeighted", "Mixed10C20N", "PestControl",
    "rosenbrock", "six_hump_camel", "beale",
]
