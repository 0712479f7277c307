"""Kernels on encoded mixed-space arrays (see ``fastfm.kernels.base`` for the contract)."""
from .additive import AdditiveFM
from .base import Hyperparameter, Kernel, Product, Sum
from .baselines import AddDif, AddLap, ProdDif, ProdLap
from .continuous import RBF, Matern52
from .fm import FMKernel, GraphKernel, ModDif, ModLap, ModNN
from .hierarchical import Hierarchical
from .sets import MMDSetKernel, SetKernel, SpaceProduct, SubspaceKernel
from .set_crowding import SetCrowdingKernel
from ._factory import make_kernel, set_space_kernel

__all__ = [
    "Kernel", "Hyperparameter", "Sum", "Product",
    "FMKernel", "ModLap", "ModDif", "ModNN", "GraphKernel", "AdditiveFM",
    "ProdLap", "AddLap", "ProdDif", "AddDif",
    "RBF", "Matern52", "Hierarchical",
    "SetKernel", "MMDSetKernel", "SetCrowdingKernel", "SubspaceKernel", "SpaceProduct", "set_space_kernel",
    "make_kernel",
]
