"""The hyperparameter optimisation problems of the paper (SPEC §6): SVM and XGBoost.

Both follow Oh et al. (2021, Sec. 4.2, Tables 2 and 3) and the CoCaBO code they
build on, with bundled scikit-learn data sets in place of the ones the paper
downloaded (Boston housing is no longer shipped; Fashion-MNIST needs a download):

* :class:`SVM` — NuSVR on the diabetes regression data (442 × 10).
* :class:`XGBoost` — gradient boosting on the digits classification data
  (1797 × 64, 10 classes).

scikit-learn and xgboost are optional: ``pip install fastfm[bench]``.  They are
imported when a problem is constructed, never when this module is imported.
Every problem instance fixes its data splits and seeds at construction, so its
objective is a deterministic function of the config.
"""
import numpy as np

from ..space import Categorical, Integer, Real, Space
from .base import Problem

__all__ = ["SVM", "XGBoost"]

_INSTALL_HINT = "pip install fastfm[bench]"


def _require(module_name, problem_name):
    """Import an optional dependency or say how to install it."""
    import importlib
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"the {problem_name} benchmark needs the optional dependency {module_name!r}, which is not "
            f"installed; install the benchmark extras with: {_INSTALL_HINT}") from exc


def _standardise(train, test):
    """Scale both arrays by the train split's mean and standard deviation (constant columns: std 1)."""
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (train - mean) / std, (test - mean) / std


class SVM(Problem):
    """NuSVR hyperparameters (Oh et al. 2021, Table 2; SPEC §6).

    Search space: ``kernel`` ∈ {linear, poly, rbf, sigmoid}, ``gamma`` ∈
    {scale, auto}, ``shrinking`` ∈ {True, False} (nominal); ``C`` ∈ [1e-4, 10],
    ``tol`` ∈ [1e-6, 1], ``nu`` ∈ [1e-6, 1] (searched in log space).

    Objective: the mean test RMSE over ``n_splits`` random train:test = 7:3
    splits of scikit-learn's diabetes data (the paper's Boston housing data is
    no longer shipped).  Features and target are standardised with the train
    split's statistics, so the RMSE is in units of the train target's standard
    deviation (about 0.7 for a good model, 1.0 for predicting the mean).

    Parameters
    ----------
    n_splits : int, default 5
        Number of random splits averaged over.
    seed : int, default 0
        Seed of the splits; fixed per instance, so the objective is deterministic.

    Raises
    ------
    ImportError
        When scikit-learn is not installed.
    """

    name = "SVM"

    def __init__(self, n_splits=5, seed=0):
        _require("sklearn", "SVM")
        from sklearn.datasets import load_diabetes
        from sklearn.svm import NuSVR

        if int(n_splits) < 1:
            raise ValueError(f"n_splits must be a positive integer, got {n_splits!r}")
        self.n_splits, self.seed = int(n_splits), seed
        self._model = NuSVR
        self.space = Space([
            Categorical("kernel", ["linear", "poly", "rbf", "sigmoid"]),
            Categorical("gamma", ["scale", "auto"]),
            Categorical("shrinking", [True, False]),
            Real("C", 1e-4, 10.0, log=True),
            Real("tol", 1e-6, 1.0, log=True),
            Real("nu", 1e-6, 1.0, log=True),
        ])
        X, y = load_diabetes(return_X_y=True)
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        n_train = int(0.7 * len(y))  # 7:3, as in the paper and the CoCaBO code
        rng = np.random.default_rng(seed)
        self._splits = []
        for _ in range(self.n_splits):
            order = rng.permutation(len(y))
            train, test = order[:n_train], order[n_train:]
            X_train, X_test = _standardise(X[train], X[test])
            y_train, y_test = _standardise(y[train], y[test])
            self._splits.append((X_train, y_train, X_test, y_test))

    def _evaluate_config(self, config):
        rmse = []
        for X_train, y_train, X_test, y_test in self._splits:
            model = self._model(kernel=config["kernel"], gamma=config["gamma"], shrinking=config["shrinking"],
                                C=config["C"], tol=config["tol"], nu=config["nu"])
            model.fit(X_train, y_train)
            rmse.append(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
        return float(np.mean(rmse))


class XGBoost(Problem):
    """XGBoost hyperparameters (Oh et al. 2021, Table 3; SPEC §6).

    Search space: ``max_depth`` ∈ 1..10 (ordinal); ``booster`` ∈ {gbtree, dart},
    ``grow_policy`` ∈ {depthwise, lossguide}, ``objective`` ∈ {multi:softmax,
    multi:softprob} (nominal); ``eta`` ∈ [1e-6, 1], ``gamma`` ∈ [1e-4, 10],
    ``subsample`` ∈ [1e-3, 1] (log space); ``reg_lambda`` ∈ [0, 5] (linear;
    xgboost's ``lambda``).

    Objective: the best (smallest) test classification error over
    ``n_rounds`` boosting rounds, on one stratified train:test = 7:3 split of
    scikit-learn's digits data (1797 images, 10 classes).  The paper used
    Fashion-MNIST, which needs a download; digits is bundled, small (one
    evaluation takes about a second on one thread) and not so easy that the
    error is 0 everywhere: good configs reach 3-5 %, and 540 test images
    resolve differences of 1/540.  The wine data set was rejected: about half
    of the reasonable configs classify its 54 test points perfectly.

    Parameters
    ----------
    seed : int, default 0
        Seed of the split and of xgboost's row subsampling; fixed per instance,
        so the objective is deterministic.
    n_rounds : int, default 50
        Boosting rounds (the paper's 50).
    n_threads : int, default 1
        Threads xgboost may use.

    Raises
    ------
    ImportError
        When scikit-learn or xgboost is not installed.
    """

    name = "XGBoost"

    def __init__(self, seed=0, n_rounds=50, n_threads=1):
        _require("sklearn", "XGBoost")
        self._xgb = _require("xgboost", "XGBoost")
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        if int(n_rounds) < 1:
            raise ValueError(f"n_rounds must be a positive integer, got {n_rounds!r}")
        self.seed, self.n_rounds, self.n_threads = seed, int(n_rounds), int(n_threads)
        self.space = Space([
            Integer("max_depth", 1, 10),
            Categorical("booster", ["gbtree", "dart"]),
            Categorical("grow_policy", ["depthwise", "lossguide"]),
            Categorical("objective", ["multi:softmax", "multi:softprob"]),
            Real("eta", 1e-6, 1.0, log=True),
            Real("gamma", 1e-4, 10.0, log=True),
            Real("subsample", 1e-3, 1.0, log=True),
            Real("reg_lambda", 0.0, 5.0),
        ])
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(
            np.asarray(X, dtype=np.float64), y, test_size=0.3, stratify=y, random_state=seed)
        self._n_classes = int(np.max(y)) + 1
        self._train = self._xgb.DMatrix(X_train, label=y_train, nthread=self.n_threads)
        self._test = self._xgb.DMatrix(X_test, label=y_test, nthread=self.n_threads)

    def _evaluate_config(self, config):
        params = {
            "max_depth": config["max_depth"],
            "booster": config["booster"],
            "grow_policy": config["grow_policy"],
            "objective": config["objective"],
            "eta": config["eta"],
            "gamma": config["gamma"],
            "subsample": config["subsample"],
            "lambda": config["reg_lambda"],
            "num_class": self._n_classes,
            "eval_metric": "merror",
            "tree_method": "hist",  # lossguide needs it; the default since xgboost 2
            "nthread": self.n_threads,
            "seed": self.seed,
            "verbosity": 0,
        }
        history = {}
        self._xgb.train(params, self._train, num_boost_round=self.n_rounds, evals=[(self._test, "test")],
                        evals_result=history, verbose_eval=False)
        return float(min(history["test"]["merror"]))
