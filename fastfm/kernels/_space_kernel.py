"""Shared plumbing of kernels built on a ``Space``: input checks, splitting, backend choice."""
import numpy as np

from .._backends import backend_function, get_backend
from ..exceptions import InvalidConfigError
from .base import Kernel

__all__ = ["SpaceKernel"]

# Default hyperparameter bounds (original scale).  Continuous inputs live in
# the unit cube and y is standardised by the GP, which is what these assume.
LENGTHSCALE_BOUNDS = (1e-2, 1e2)
ALPHA_BOUNDS = (1e-4, 1e4)
BETA_BOUNDS = (1e-3, 1e2)
VARIANCE_BOUNDS = (1e-2, 1e2)


class SpaceKernel(Kernel):
    """A kernel on the encoded arrays of a ``Space``."""

    def __init__(self, space, backend="auto"):
        self.space = space
        self.backend = backend

    @property
    def n_dims(self):
        return self.space.n_dims

    def _check_X(self, X, name="X"):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.space.n_dims:
            raise InvalidConfigError(
                f"{name} must have shape (n_points, {self.space.n_dims}) for this kernel's space, got {np.shape(X)}",
                name)
        if X.shape[0] and self.space.n_discrete:
            D = X[:, self.space.n_continuous:]
            if np.any(D < 0) or np.any(D >= self.space.n_states[None, :]) or np.any(D != np.floor(D)):
                # defer to the space for a message naming the parameter and value
                self.space.validate_encoded(X, name)
        return np.ascontiguousarray(X)

    def _split(self, X):
        return self.space.split(X)

    def _backend_module(self):
        return get_backend(self.backend)

    def _backend_call(self, function_name, *args):
        return backend_function(self._backend_module(), function_name)(*args)
