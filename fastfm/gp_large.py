"""Deprecated alias of the matrix-free GP solver's former module (kept for one release).

The code moved into ``fastfm.gp.solvers`` (``cg``: the options, ``solve_system``, ``dtc_variance``,
``stochastic_lml_gradient``; ``preconditioner``: the pivoted Cholesky and its preconditioner; ``_pcg``: PCG)
and ``fastfm.kernels.matvec`` (``kernel_matvec``).  Every name this module had, in ``__all__`` or imported
from it elsewhere, still imports from here, with a DeprecationWarning naming its new module; pickles that
name ``fastfm.gp_large.CGInfo`` or ``PivotedCholeskyPreconditioner`` still load.

Setting a name here raises AttributeError: the solver does not read this module, so a monkeypatch on it
would change nothing.  Patch the module that defines the name.
"""
import importlib
import sys
import types
import warnings

__all__ = ["kernel_matvec", "pivoted_cholesky", "pivot_blocks", "PivotedCholeskyPreconditioner", "pcg", "CGInfo",
           "stochastic_lml_gradient", "dtc_variance", "DEFAULT_CG_OPTIONS", "check_cg_options", "default_rank",
           "default_block_size"]

_NEW_HOME = {
    "kernel_matvec": "fastfm.kernels.matvec", "_single_precision_product": "fastfm.kernels.matvec",
    "pivoted_cholesky": "fastfm.gp.solvers.preconditioner", "pivot_blocks": "fastfm.gp.solvers.preconditioner",
    "PivotedCholeskyPreconditioner": "fastfm.gp.solvers.preconditioner",
    "default_rank": "fastfm.gp.solvers.preconditioner", "default_block_size": "fastfm.gp.solvers.preconditioner",
    "pcg": "fastfm.gp.solvers._pcg", "CGInfo": "fastfm.gp.solvers._pcg",
    "DEFAULT_CG_OPTIONS": "fastfm.gp.solvers.cg", "check_cg_options": "fastfm.gp.solvers.cg",
    "solve_system": "fastfm.gp.solvers.cg", "dtc_variance": "fastfm.gp.solvers.cg",
    "stochastic_lml_gradient": "fastfm.gp.solvers.cg", "low_rank_gradient_reduction": "fastfm.gp.solvers.cg",
}


def __getattr__(name):
    home = _NEW_HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"fastfm.gp_large is deprecated; import {name} from {home}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(home), name)


def __dir__():
    return sorted(set(globals()) | set(_NEW_HOME))


class _Alias(types.ModuleType):
    def __setattr__(self, name, value):
        if name.startswith("__") and name.endswith("__"):   # the import system's own attributes (reload)
            return super().__setattr__(name, value)
        raise AttributeError(f"fastfm.gp_large is a read-only alias: set {name} on "
                             f"{_NEW_HOME.get(name, 'the module that defines it')}, the module the solver reads")


sys.modules[__name__].__class__ = _Alias
