"""The benchmark problem contract and the registry of the paper's problems (SPEC §6).

A :class:`Problem` is a black-box objective on a :class:`~fastfm.Space`, in the
style of BoTorch's ``test_functions``: it declares its space, its known optimum
(if any) and evaluates either config dicts or encoded arrays.  Data flows as
everywhere in fastfm: a config dict is validated and encoded by the space, and
the objective itself only ever sees the encoded array.
"""
import importlib

import numpy as np

__all__ = ["Problem", "PROBLEMS", "LARGE_PROBLEMS", "get_problem"]


class Problem:
    """A test problem: an objective to minimise over a mixed search space.

    Subclasses set the class attributes and implement :meth:`_evaluate` (on
    an encoded, already validated array; vectorise it where possible) or,
    for objectives that need the decoded values one at a time, implement
    :meth:`_evaluate_config` and keep the default :meth:`_evaluate`.

    Attributes
    ----------
    name : str
        The problem's name, as SPEC §6 spells it; :func:`get_problem` accepts it.
    space : Space
        The search space.
    optimum : float or None
        The known optimal (minimal) value, or None where it is unknown.
    optimal_config : dict or None
        A config attaining :attr:`optimum`, or None.
    minimize : bool
        Always True: every problem here is a minimisation problem.
    """

    name = None
    space = None
    optimum = None
    optimal_config = None
    minimize = True

    def __call__(self, config):
        """Evaluate one config.

        Parameters
        ----------
        config : dict
            A value for every parameter of :attr:`space`.

        Returns
        -------
        float

        Raises
        ------
        InvalidConfigError
            (or a subclass) when the config does not belong to the space; the
            error names the offending parameter and value.
        """
        x = self.space.encode(config)  # validates, raising the space's typed errors
        return float(self.evaluate_encoded(x[None, :])[0])

    def evaluate_encoded(self, X):
        """Evaluate encoded points.

        Parameters
        ----------
        X : array-like of shape (n_points, n_dims) or (n_dims,)
            Points in the layout of ``space.encode``: unit-scaled continuous
            columns first, then one state index per discrete variable.

        Returns
        -------
        ndarray of shape (n_points,), float64

        Raises
        ------
        InvalidConfigError
            (or a subclass) when ``X`` has the wrong shape or a value outside
            the encoded domain.
        """
        X = self.space.validate_encoded(X)
        return np.asarray(self._evaluate(X), dtype=np.float64).reshape(X.shape[0])

    def _evaluate(self, X):
        """Objective values of a validated encoded array of shape (n_points, n_dims)."""
        return np.array([self._evaluate_config(config) for config in self.space.decode(X)], dtype=np.float64)

    def _evaluate_config(self, config):
        """Objective value of one decoded, valid config."""
        raise NotImplementedError(f"{type(self).__name__} must implement _evaluate or _evaluate_config")

    def __repr__(self):
        return f"<{type(self).__name__} problem {self.name!r}: {len(self.space)} parameters, optimum={self.optimum!r}>"


# name (lower case) -> (module, class); imported on demand so that the registry
# has no import cycle with the modules that define the problems.
_REGISTRY = {
    "func2c": ("fastfm.benchmarks.synthetic", "Func2C"),
    "func3c": ("fastfm.benchmarks.synthetic", "Func3C"),
    "ackley5c": ("fastfm.benchmarks.synthetic", "Ackley5C"),
    "svm": ("fastfm.benchmarks.hpo", "SVM"),
    "xgboost": ("fastfm.benchmarks.hpo", "XGBoost"),
    # conditional spaces (SPEC §3), then set-valued ones (SPEC §4)
    "deepbranch": ("fastfm.benchmarks.conditional", "DeepBranch"),
    "modelselection": ("fastfm.benchmarks.conditional", "ModelSelection"),
    "setcoverage": ("fastfm.benchmarks.sets", "SetCoverage"),
    "setchamfer": ("fastfm.benchmarks.sets", "SetChamfer"),
    "kmeansinit": ("fastfm.benchmarks.sets", "KMeansInit"),
    "gmminit": ("fastfm.benchmarks.sets", "GMMInit"),
    "pmedian": ("fastfm.benchmarks.sets", "PMedian"),
    # the set-BO paper's §4.2 synthetic functions (Kim et al.; issue 24 §4)
    "setperiodic": ("fastfm.benchmarks.sets", "SetPeriodic"),
    "setdensity": ("fastfm.benchmarks.sets", "SetDensity"),
}

#: Names of the paper's problems (SPEC §6), accepted by :func:`get_problem` (case-insensitive).
PROBLEMS = tuple(_REGISTRY)

# issue 24: problems of 20-60 variables from the combinatorial and mixed BO literature, listed
# apart so that PROBLEMS stays the paper's suite
_LARGE_REGISTRY = {
    "contamination": ("fastfm.benchmarks.combinatorial", "Contamination"),
    "labs": ("fastfm.benchmarks.combinatorial", "LABS"),
    "isingsparsification": ("fastfm.benchmarks.combinatorial", "IsingSparsification"),
    "maxsatweighted": ("fastfm.benchmarks.combinatorial", "MaxSATWeighted"),
    "mixed10c20n": ("fastfm.benchmarks.combinatorial", "Mixed10C20N"),
    "pestcontrol": ("fastfm.benchmarks.combinatorial", "PestControl"),
}

#: Names of the many-variable problems (``fastfm.benchmarks.combinatorial``), also accepted by :func:`get_problem`.
LARGE_PROBLEMS = tuple(_LARGE_REGISTRY)


def get_problem(name, **kwargs):
    """Build a benchmark problem by name.

    Parameters
    ----------
    name : str
        One of :data:`PROBLEMS` or :data:`LARGE_PROBLEMS`, in any case (``"Func2C"``, ``"func2c"``, ...).
    **kwargs
        Passed to the problem's constructor (e.g. ``seed``, ``n_splits`` for "svm").

    Returns
    -------
    Problem

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid ones.
    ImportError
        For "svm" and "xgboost" when their optional dependencies are missing.
    """
    key = name.lower() if isinstance(name, str) else None
    registry = {**_REGISTRY, **_LARGE_REGISTRY}
    if key not in registry:
        raise ValueError(f"unknown benchmark problem {name!r}; valid names are {list(PROBLEMS + LARGE_PROBLEMS)}")
    module_name, class_name = registry[key]
    return getattr(importlib.import_module(module_name), class_name)(**kwargs)
