"""The kernel for conditional spaces of Hutter & Osborne (2013), SPEC §3.

Every encoded column i is embedded, weighted by ω_i = Π_{j ∈ anc(i) ∪ {i}} γ_j
(paper Eq. 6; γ_j ∈ (0, 1], so differences deep in the hierarchy count less):

* a real column (a continuous parameter, or an ordinal one on its index scale
  x̂ = v/(n − 1)): inactive → (0, 0), active → ω_i (sin πρ_i x̂, cos πρ_i x̂);
* a categorical column (Categorical, Graph) with m values: inactive → 0 ∈ R^m,
  active with value v → ω_i e_v.

A stationary Euclidean kernel κ (RBF or Matérn 5/2) with one lengthscale ℓ
on the concatenated embeddings is then positive definite (κ is PD on R^n).
The squared distance is Σ_i d_i² with the closed forms of SPEC §3, so the
embeddings are never materialised.  Hyperparameters, all learnt by the GP:
γ (one per column), ρ (one per real column, ρ ∈ (0, 1]), ℓ and σ².  One ℓ
suffices: per-column scales are the γ (an ARD lengthscale per column would
duplicate them), and ω_i/ℓ still spans (0, 1/ℓ_min].
"""
import numpy as np

from .._backends import gpu_module_for
from ..exceptions import SpaceDefinitionError
from ._space_kernel import LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS, SpaceKernel

__all__ = ["Hierarchical"]

GAMMA_BOUNDS = (1e-3, 1.0)   # γ ∈ [0, 1] (SPEC §3), kept away from 0 for the log parameterisation
RHO_BOUNDS = (1e-2, 1.0)     # ρ ∈ [0, 1]; ρ → 0 makes a real dimension constant
_PROFILES = {"rbf": 0, "matern52": 1}


def _is_ordinal(p):
    return p.graph_kind == "path" and p.n_states > 1


class Hierarchical(SpaceKernel):
    """k(x, x') = σ² κ(Σ_i d_i(x, x')² / ℓ²), the conditional-space kernel of SPEC §3.

    Works on any ``Space``; on one without conditions every dimension is always
    active and it is a stationary kernel on the (sin, cos) / one-hot embeddings.

    Parameters
    ----------
    space : Space
    base : {"matern52", "rbf"}
        The Euclidean kernel κ applied to the embeddings.
    gamma : float or array of shape (n_dims,)
        γ_j per encoded column, in (0, 1].
    rho : float or array of shape (n_real,)
        ρ_i per real column (continuous parameters, then ordinal discrete ones,
        in column order), in (0, 1].
    lengthscale, variance : float
    *_bounds : (low, high) or "fixed"
    backend : {"auto", "numpy", "cpp", "cuda"}
    """

    def __init__(self, space, base="matern52", gamma=0.9, rho=0.5, lengthscale=0.5, variance=1.0,
                 gamma_bounds=GAMMA_BOUNDS, rho_bounds=RHO_BOUNDS, lengthscale_bounds=LENGTHSCALE_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        super().__init__(space, backend)
        if base not in _PROFILES:
            raise ValueError(f"base must be one of {sorted(_PROFILES)}, got base={base!r}")
        for name, bounds in (("gamma", gamma_bounds), ("rho", rho_bounds)):
            # np.any, not np.max: a space without real columns has rho bounds of shape (0, 2), which
            # the kernel's own ``hyperparameters`` hands back (a clone passes them in again)
            if not isinstance(bounds, str) and np.any(np.asarray(bounds, dtype=float) > 1.0):
                raise SpaceDefinitionError(f"{name}_bounds must lie in (0, 1], got {name}_bounds={bounds!r}")
        self.base = base
        self.gamma = gamma
        self.rho = rho
        self.lengthscale = lengthscale
        self.variance = variance
        self.gamma_bounds = gamma_bounds
        self.rho_bounds = rho_bounds
        self.lengthscale_bounds = lengthscale_bounds
        self.variance_bounds = variance_bounds

    # ------------------------------------------------------------- structure
    def _structure(self):
        """(is_real (n_dims,) uint8, scale (n_dims,), ancestry (n_dims, n_dims) with
        ancestry[i, j] = 1 when column j is column i or one of its ancestors)."""
        space = self.space
        if "_structure_cache" not in self.__dict__:
            params = space.continuous_params + space.discrete_params
            is_real = np.array([p.is_continuous or _is_ordinal(p) for p in params], dtype=np.uint8)
            scale = np.array([1.0 if p.is_continuous else (1.0 / (p.n_states - 1) if _is_ordinal(p) else 1.0)
                              for p in params])
            ancestry = np.eye(len(params))
            for i, p in enumerate(params):
                for a in space.ancestors(p.name):
                    ancestry[i, space.column(a)] = 1.0
            self.__dict__["_structure_cache"] = (is_real, scale, ancestry)
        return self.__dict__["_structure_cache"]

    @property
    def n_real(self):
        """Number of real (sin/cos-embedded) columns, the length of ``rho``."""
        return int(self._structure()[0].sum())

    def _hyperparameter_specs(self):
        return [("gamma", self.space.n_dims), ("rho", self.n_real), ("lengthscale", 1), ("variance", 1)]

    def _static_key(self):
        return (self.base,)

    def _args(self):
        """(is_real, ω, πρ, ℓ, σ², profile): the trailing backend arguments, memoised."""
        return self._memo("args", self._compute_args)

    def _compute_args(self):
        is_real, _, ancestry = self._structure()
        gamma = self._values("gamma", self.space.n_dims)
        # ω_i = Π_{j ∈ anc(i) ∪ {i}} γ_j  (paper Eq. 6)
        omega = np.exp(ancestry @ np.log(gamma))
        rho_pi = np.zeros(self.space.n_dims)
        rho_pi[is_real.astype(bool)] = np.pi * self._values("rho", self.n_real)
        return (is_real, omega, rho_pi, float(self._values("lengthscale", 1)[0]),
                float(self._values("variance", 1)[0]), _PROFILES[self.base])

    def _inputs(self, X):
        """(V, M): per-column embedding coordinates and activity (backend conventions)."""
        _, scale, _ = self._structure()
        V = np.ascontiguousarray(X * scale[None, :])
        M = np.ascontiguousarray(self.space.active_columns(X), dtype=np.uint8)
        return V, M

    # ------------------------------------------------------------ evaluation
    def _gram(self, X, Y):
        V1, M1 = self._inputs(X)
        V2, M2 = (None, None) if Y is None else self._inputs(Y)
        return self._backend_call("hier_gram", V1, M1, V2, M2, *self._args())

    def _diag(self, X):
        return np.full(X.shape[0], float(self._values("variance", 1)[0]))

    def _device_module(self, X):
        return self._gpu_for(*self._inputs(X))

    def _gpu_for(self, V, M):
        return gpu_module_for(self._backend_module(), "hier_gram", (V, M, None, None))

    def _gram_on_device(self, X):
        V, M = self._inputs(X)
        return self._gpu_for(V, M).hier_gram_device(V, M, *self._args())

    def _full_reduction_on_device(self, X, W):
        V, M = self._inputs(X)
        t, u, g_variance = self._gpu_for(V, M).hier_grad_reduction(V, M, W, *self._args())
        return self._assemble(np.asarray(t), np.asarray(u), g_variance)

    def _full_reduction(self, X, W):
        V, M = self._inputs(X)
        t, u, g_variance = self._backend_call("hier_grad_reduction", V, M, W, *self._args())
        return self._assemble(np.asarray(t), np.asarray(u), g_variance)

    def _assemble(self, t, u, g_variance):
        """Gradient w.r.t. (log γ, log ρ, log ℓ, log σ²) from the backend's sums (see
        ``numpy_backend.hier_grad_reduction``)."""
        is_real, _, ancestry = self._structure()
        g_gamma = 2.0 * ancestry.T @ t          # d_i² ∝ ω_i² = Π_{j ∈ anc(i) ∪ {i}} γ_j²
        g_rho = u[is_real.astype(bool)]
        g_lengthscale = -2.0 * t.sum()          # r² = Σ_i d_i² / ℓ²
        return np.concatenate([g_gamma, g_rho, [g_lengthscale, g_variance]])

    def _full_gradient(self, X):
        from .._backends import numpy_backend
        V, M = self._inputs(X)
        is_real, omega, rho_pi, lengthscale, variance, profile = self._args()
        D2, dD2 = numpy_backend.hier_distance_terms(V, M, None, None, is_real, omega, rho_pi, True)
        g, dg = numpy_backend._hier_profile(profile, D2.sum(axis=2) / lengthscale ** 2)
        K = variance * g
        Omega = variance * dg / lengthscale ** 2
        _, _, ancestry = self._structure()
        dK_gamma = 2.0 * np.einsum("abi,ij->abj", Omega[:, :, None] * D2, ancestry)
        dK_rho = (Omega[:, :, None] * dD2)[:, :, is_real.astype(bool)]
        dK_ls = -2.0 * Omega * D2.sum(axis=2)
        return K, np.concatenate([dK_gamma, dK_rho, dK_ls[:, :, None], K[:, :, None]], axis=2)

    def _gram_and_input_gradient(self, X1, X2):
        from .._backends import numpy_backend
        V1, M1 = self._inputs(X1)
        V2, M2 = self._inputs(X2)
        K, dV = numpy_backend.hier_cross_gradient(V1, M1, V2, M2, *self._args())
        _, scale, _ = self._structure()
        # V = X·scale; only the continuous columns are inputs of the gradient
        nc = self.space.n_continuous
        return K, dV[:, :, :nc] * scale[None, None, :nc]
