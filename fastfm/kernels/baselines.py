"""The paper's baseline kernels (Supp. E): products and sums of an RBF kernel on
the continuous part and a graph kernel (Laplacian or diffusion) on the discrete part."""
from ._space_kernel import BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS
from .base import Product, Sum
from .continuous import RBF
from .fm import GraphKernel

__all__ = ["ProdLap", "AddLap", "ProdDif", "AddDif"]


class _ProductBaseline(Product):
    _graph_kind = None

    def __init__(self, space, lengthscale=0.5, beta=1.0, variance=1.0, lengthscale_bounds=LENGTHSCALE_BOUNDS,
                 beta_bounds=BETA_BOUNDS, variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        # one variance only: the RBF factor's is fixed at 1 (a product has one scale)
        super().__init__(
            RBF(space, lengthscale, 1.0, lengthscale_bounds, "fixed", backend),
            GraphKernel(space, self._graph_kind, beta, variance, beta_bounds, variance_bounds, backend))
        self.space = space


class _SumBaseline(Sum):
    _graph_kind = None

    def __init__(self, space, lengthscale=0.5, beta=1.0, continuous_variance=0.5, discrete_variance=0.5,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        super().__init__(
            RBF(space, lengthscale, continuous_variance, lengthscale_bounds, variance_bounds, backend),
            GraphKernel(space, self._graph_kind, beta, discrete_variance, beta_bounds, variance_bounds, backend))
        self.space = space


class ProdLap(_ProductBaseline):
    """k_RBF(c, c') · k_Lap(v, v')."""
    _graph_kind = "laplacian"


class ProdDif(_ProductBaseline):
    """k_RBF(c, c') · k_Dif(v, v')."""
    _graph_kind = "diffusion"


class AddLap(_SumBaseline):
    """k_RBF(c, c') + k_Lap(v, v')."""
    _graph_kind = "laplacian"


class AddDif(_SumBaseline):
    """k_RBF(c, c') + k_Dif(v, v')."""
    _graph_kind = "diffusion"
