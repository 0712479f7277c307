"""Conditional (hierarchical) benchmark problems (SPEC §3).

* :class:`DeepBranch` — synthetic, with its known optimum three levels deep
  in the condition DAG, so that finding it needs the right root choice, the
  right child choice and continuous values that exist only there.
* :class:`ModelSelection` — scikit-learn model selection: choose among an
  SVC, a random forest and gradient boosting, each with its own
  hyperparameters (the SVC's nested: ``gamma`` only for the rbf/poly
  kernels, ``degree`` only for poly), on the bundled breast-cancer data.

Both declare their conditional ``space``; ``space.flattened()`` gives the same
parameters always active (every config of it can be evaluated after
``space.prune``), the "flat" baseline of the benchmark comparison.
"""
import numpy as np

from ..space import Categorical, Integer, Ordinal, Real, Space
from .base import Problem
from .hpo import _require, _standardise
from .synthetic import six_hump_camel

__all__ = ["DeepBranch", "ModelSelection"]


class DeepBranch(Problem):
    """A synthetic conditional problem with its optimum in a deep branch.

    Search space (x0 and every ``x*`` in [−1, 1])::

        root ∈ {shallow, middle, deep}     x0 always active
        shallow: xs
        middle:  level ∈ 1..3 (ordinal), xm
        deep:    leaf ∈ {a, b, c}, xd1
                 leaf b: xd2

    Objective, with S the six-hump camel of SPEC §6 (on x = 2u, divided by 10,
    minimum −0.1031628 at u = ±(−0.04492, 0.35633)):

    * shallow: ``0.5 + (xs − 0.3)² + 0.25 (x0 − 0.2)²``  (minimum 0.5)
    * middle: ``0.1 (3 − level) + 0.1 + (xm + 0.4)² + 0.25 (x0 − 0.2)²``  (minimum 0.1 at level 3)
    * deep, leaf a: ``0.15 + (xd1 − 0.5)² + 0.25 x0²``;  leaf c: ``0.2 + xd1²``
    * deep, leaf b: ``10 S(xd1, xd2) + 0.25 (x0 − 0.2)²`` — minimum −1.031628 at
      (xd1, xd2) = (−0.04492, 0.35633) (and its mirror), x0 = 0.2: the optimum.

    A search that treats every parameter as always active wastes evaluations
    on xs, xm, level and xd2 where they do not matter.
    """

    name = "DeepBranch"
    optimum = 10.0 * -0.1031628453
    optimal_config = {"root": "deep", "x0": 0.2, "leaf": "b", "xd1": -0.04492, "xd2": 0.35633}

    def __init__(self):
        self.space = Space([
            Categorical("root", ["shallow", "middle", "deep"]),
            Real("x0", -1.0, 1.0),
            Real("xs", -1.0, 1.0, active_if={"root": "shallow"}),
            Integer("level", 1, 3, active_if={"root": "middle"}),
            Real("xm", -1.0, 1.0, active_if={"root": "middle"}),
            Categorical("leaf", ["a", "b", "c"], active_if={"root": "deep"}),
            Real("xd1", -1.0, 1.0, active_if={"root": "deep"}),
            Real("xd2", -1.0, 1.0, active_if={"leaf": "b"}),
        ])

    def _evaluate_config(self, config):
        x0 = config["x0"]
        if config["root"] == "shallow":
            return 0.5 + (config["xs"] - 0.3) ** 2 + 0.25 * (x0 - 0.2) ** 2
        if config["root"] == "middle":
            return 0.1 * (3 - config["level"]) + 0.1 + (config["xm"] + 0.4) ** 2 + 0.25 * (x0 - 0.2) ** 2
        if config["leaf"] == "a":
            return 0.15 + (config["xd1"] - 0.5) ** 2 + 0.25 * x0 ** 2
        if config["leaf"] == "c":
            return 0.2 + config["xd1"] ** 2
        u = np.array([config["xd1"], config["xd2"]])
        return float(10.0 * six_hump_camel(2.0 * u) + 0.25 * (x0 - 0.2) ** 2)


class ModelSelection(Problem):
    """Choose and tune a classifier: SVC, random forest or gradient boosting (scikit-learn).

    Search space::

        model ∈ {svc, random_forest, gradient_boosting}
        svc:               svc_C ∈ [1e-2, 1e3] (log), svc_kernel ∈ {rbf, poly, linear}
                           svc_gamma ∈ [1e-4, 1] (log)      if svc_kernel ∈ {rbf, poly}
                           svc_degree ∈ 2..4               if svc_kernel = poly
        random_forest:     rf_n_estimators ∈ {10, 30, 60}, rf_max_depth ∈ 1..12,
                           rf_max_features ∈ [0.05, 1]
        gradient_boosting: gb_learning_rate ∈ [1e-3, 1] (log), gb_n_estimators ∈ {10, 30, 60},
                           gb_max_depth ∈ 1..4, gb_subsample ∈ [0.3, 1]

    Objective: the mean test classification error over ``n_splits``
    stratified train:test = 7:3 splits of scikit-learn's breast-cancer data
    (569 × 30, features standardised with the train split's statistics);
    models are seeded, so the objective is deterministic.  Forests are kept
    small so that one evaluation takes well under a second on one core.

    Parameters
    ----------
    n_splits : int, default 3
    seed : int, default 0
    """

    name = "ModelSelection"

    def __init__(self, n_splits=3, seed=0):
        _require("sklearn", "ModelSelection")
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import StratifiedShuffleSplit

        if int(n_splits) < 1:
            raise ValueError(f"n_splits must be a positive integer, got {n_splits!r}")
        self.n_splits, self.seed = int(n_splits), seed
        self.space = Space([
            Categorical("model", ["svc", "random_forest", "gradient_boosting"]),
            Real("svc_C", 1e-2, 1e3, log=True, active_if={"model": "svc"}),
            Categorical("svc_kernel", ["rbf", "poly", "linear"], active_if={"model": "svc"}),
            Real("svc_gamma", 1e-4, 1.0, log=True, active_if={"svc_kernel": ["rbf", "poly"]}),
            Integer("svc_degree", 2, 4, active_if={"svc_kernel": "poly"}),
            Ordinal("rf_n_estimators", [10, 30, 60], active_if={"model": "random_forest"}),
            Integer("rf_max_depth", 1, 12, active_if={"model": "random_forest"}),
            Real("rf_max_features", 0.05, 1.0, active_if={"model": "random_forest"}),
            Real("gb_learning_rate", 1e-3, 1.0, log=True, active_if={"model": "gradient_boosting"}),
            Ordinal("gb_n_estimators", [10, 30, 60], active_if={"model": "gradient_boosting"}),
            Integer("gb_max_depth", 1, 4, active_if={"model": "gradient_boosting"}),
            Real("gb_subsample", 0.3, 1.0, active_if={"model": "gradient_boosting"}),
        ])
        X, y = load_breast_cancer(return_X_y=True)
        splitter = StratifiedShuffleSplit(n_splits=self.n_splits, test_size=0.3, random_state=seed)
        self._splits = []
        for train, test in splitter.split(X, y):
            X_train, X_test = _standardise(np.asarray(X[train], dtype=float), np.asarray(X[test], dtype=float))
            self._splits.append((X_train, y[train], X_test, y[test]))

    def _make_model(self, config):
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
        from sklearn.svm import SVC

        if config["model"] == "svc":
            kernel = config["svc_kernel"]
            return SVC(C=config["svc_C"], kernel=kernel, gamma=config.get("svc_gamma", "scale"),
                       degree=config.get("svc_degree", 3))
        if config["model"] == "random_forest":
            return RandomForestClassifier(n_estimators=config["rf_n_estimators"], max_depth=config["rf_max_depth"],
                                          max_features=config["rf_max_features"], random_state=self.seed, n_jobs=1)
        return GradientBoostingClassifier(learning_rate=config["gb_learning_rate"],
                                          n_estimators=config["gb_n_estimators"], max_depth=config["gb_max_depth"],
                                          subsample=config["gb_subsample"], random_state=self.seed)

    def _evaluate_config(self, config):
        errors = []
        for X_train, y_train, X_test, y_test in self._splits:
            model = self._make_model(config).fit(X_train, y_train)
            errors.append(np.mean(model.predict(X_test) != y_test))
        return float(np.mean(errors))
