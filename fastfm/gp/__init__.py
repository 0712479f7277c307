"""Gaussian process regression on encoded mixed-space arrays (SPEC §5).

``GaussianProcessRegressor`` is the scikit-learn estimator (``regressor``); the default priors and the
restart distribution are in ``priors``.  This package exports the public names only: private constants and
helpers live in (and are patched in) the module that uses them.
"""
from .priors import GaussianLogPrior, restart_distribution
from .regressor import GaussianProcessRegressor, JitterWarning

__all__ = ["GaussianProcessRegressor", "GaussianLogPrior", "JitterWarning", "restart_distribution"]
