"""Bayesian optimisation on mixed spaces: the ask/tell ``Optimizer`` and one-call ``minimize``.

The BO loop of SPEC §5: an exact GP on an FM kernel (hyperparameters by marginal likelihood, 10
restarts), expected improvement in log form, and the mixed acquisition optimiser.  This layer is thin: it
keeps the trials (``trials``), turns configs into arrays (``Space.encode``) and back, conditions new asks on
the pending ones (``optimizer``), runs evaluations in parallel (``minimize``) and records everything in a
crash-safe journal (``journal``).  It never loses an observation: a failed evaluation (NaN, inf, an
exception, a timeout) is recorded as failed, a failed model fit falls back to a random suggestion, and a
stopped run returns everything it has.
"""
from ..acquisition import UCB_BETA, acquisition_function  # noqa: F401  (UCB_BETA: public here too)
from ..gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior  # noqa: F401  (public names of bo)
from .journal import Journal
from .minimize import STATUSES, OptimizeResult, minimize
from .optimizer import ModelFitWarning, Optimizer
from .trials import Suggestion, Trial

__all__ = ["Optimizer", "minimize", "OptimizeResult", "Trial", "Suggestion", "Journal", "STATUSES",
           "ModelFitWarning", "default_hyperparameter_prior"]
