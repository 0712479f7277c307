"""Kernels on encoded mixed-space arrays (see ``fastfm.kernels.base`` for the contract)."""
from .base import Hyperparameter, Kernel, Product, Sum
from .baselines import AddDif, AddLap, ProdDif, ProdLap
from .continuous import RBF, Matern52
from .fm import FMKernel, GraphKernel, ModDif, ModLap, ModNN
from .hierarchical import Hierarchical
from .sets import SetKernel, SpaceProduct, SubspaceKernel, set_space_kernel

__all__ = [
    "Kernel", "Hyperparameter", "Sum", "Product",
    "FMKernel", "ModLap", "ModDif", "ModNN", "GraphKernel",
    "ProdLap", "AddLap", "ProdDif", "AddDif",
    "RBF", "Matern52", "Hierarchical",
    "SetKernel", "SubspaceKernel", "SpaceProduct", "set_space_kernel",
    "make_kernel",
]

_BY_NAME = {
    "modlap": ModLap, "moddif": ModDif, "modnn": ModNN, "fm": FMKernel,
    "prodlap": ProdLap, "addlap": AddLap, "proddif": ProdDif, "adddif": AddDif,
    "rbf": RBF, "matern52": Matern52, "hierarchical": Hierarchical,
}


def make_kernel(kernel, space, **kwargs):
    """A kernel object from a name ("modlap", "prodlap", ...) or pass an object through.

    On a space with ``Set`` parameters the named kernel covers the other
    parameters and is multiplied by a ``SetKernel`` per set (``set_space_kernel``).
    """
    if isinstance(kernel, Kernel):
        return kernel
    if not isinstance(kernel, str) or kernel.lower() not in _BY_NAME:
        raise ValueError(f"unknown kernel {kernel!r}; choose a Kernel object or one of {sorted(_BY_NAME)}")
    if space.set_params:
        return set_space_kernel(kernel, space, **kwargs)
    return _BY_NAME[kernel.lower()](space, **kwargs)
