"""The GP's linear-algebra solvers, chosen by ``method=`` and memory (``select_solver``).

* ``cholesky.ExactSolver`` / ``ExactPosterior``: one Cholesky factor, exact, O(N²) memory.
* ``cg.CGSolver`` / ``CGPosterior``: matrix-free PCG with the pivoted-Cholesky preconditioner of
  ``preconditioner`` (the iterations in ``_pcg``), O(N·rank) memory; DTC predictive std.

The same split as GPyTorch/linear_operator's choice between Cholesky and CG: ``max_exact_n`` plays the role of
``max_cholesky_size``.  Each solver has ``name``, ``refine_on_all_points`` and ``fit``; each posterior is a
view of a fitted regressor with ``mean`` and ``predict_standardized`` (the exact one also the cross-covariance,
input-gradient and full-covariance methods).  The device (CUDA) likelihood is not a solver: it is a compute
primitive of ``mll``; the final factor and every prediction are on the host.
"""
import math
import numbers

from ... import _parallel
from ...exceptions import InvalidConfigError
from .cg import CGPosterior, CGSolver, check_cg_options
from .cholesky import ExactPosterior, ExactSolver

__all__ = ["ExactSolver", "ExactPosterior", "CGSolver", "CGPosterior", "select_solver", "posterior"]

# ``method="auto"`` factorises exactly up to this many training points and uses the matrix-free PCG
# solver beyond, or fewer where memory is short (``max_exact_n="auto"``).  Beyond 20,000 the exact fit's
# hyperparameter refinement (up to 32 evaluations, each an N³ factorisation and inverse: about 150 s at
# N = 20,000 on two cores, eight times the 18.5 s measured at N = 10,000) costs more than the matrix-free
# solver's whole fit.
_MAX_EXACT_N = 20_000
# The exact solver's memory, in N × N float64 arrays: the likelihood's one buffer (per start running at
# the same time), the new factor L_, and a refit's previous L_ or its cached inverse, kept until the new fit
# has succeeded.  ``max_exact_n="auto"`` plans them in this share of the available memory (the rest is
# for the data, cross-covariance blocks at prediction and everything else in the process).
_EXACT_FOOTPRINT_ARRAYS = 3
_EXACT_MEMORY_SHARE = 0.75
_METHODS = ("auto", "cholesky", "cg")
_SOLVERS = {solver.name: solver for solver in (ExactSolver, CGSolver)}


def _memory_limited_exact_n():
    """``max_exact_n="auto"``: _MAX_EXACT_N, or the largest N whose exact fit fits in the available memory."""
    available = _parallel.available_memory()
    if available is None:
        return _MAX_EXACT_N
    return max(1, min(_MAX_EXACT_N, int(math.sqrt(_EXACT_MEMORY_SHARE * available / (8 * _EXACT_FOOTPRINT_ARRAYS)))))


def select_solver(method, max_exact_n, cg_options, n):
    """(ExactSolver or CGSolver, the max_exact_n compared with) for n training points.

    Checks ``method``, ``max_exact_n`` and ``cg_options`` (InvalidConfigError naming the parameter), the
    options whatever the solver, so that a bad one fails before any work."""
    if method not in _METHODS:
        raise InvalidConfigError(f"method must be one of {list(_METHODS)}, got method={method!r}", "method", method)
    limit = max_exact_n
    if isinstance(limit, str) and limit == "auto":
        limit = _memory_limited_exact_n()
    elif not isinstance(limit, numbers.Integral) or isinstance(limit, bool) or limit < 1:
        raise InvalidConfigError(f"max_exact_n must be a positive integer or 'auto', got max_exact_n={limit!r}",
                                 "max_exact_n", limit)
    check_cg_options(cg_options)
    if method != "auto":
        return _SOLVERS[method], int(limit)
    return (ExactSolver if n <= limit else CGSolver), int(limit)


def posterior(model):
    """The posterior view of a fitted regressor, for the solver it was fitted with (``solver_``)."""
    return (CGPosterior if model.solver_ == "cg" else ExactPosterior)(model)
