"""The FM kernel plus one-variable FM terms: a product that also learns main effects (issue 24 §1).

    k(x, x') = σ² k̃(x, x') + (σ²_add / P) Σ_p k̃_p((c, v_p), (c', v'_p))

k̃ is the FM kernel of the whole space (Eq. 5 of Oh et al., UAI 2021) and k̃_p the same kernel on the
continuous variables and the one discrete variable v_p, with the SAME lengthscales θ, α_p and β_p: the
p-th factor of Eq. 5 alone.  Both are built with a unit diagonal (``FMKernel(unit_diagonal=True)``), so
σ² and σ²_add are the prior variances of the two parts at every point.

Why: with 10–35 observations the product kernel has to learn each combination of the discrete
variables from the points that share it.  On Func2C (two nominal variables) the marginal likelihood
then either makes one variable irrelevant (β_p at its bound) or makes the kernel nearly white noise
(α large), and BO stays in the wrong combination's basin for the rest of a 60-evaluation run
(docs/benchmarks/bo-efficiency.md, "Small budgets").  The additive part lets every observation inform
the mean of each of its categories, whatever the others: the main effects a tree-structured sampler
(TPE) learns first.  Sums of PSD kernels are PSD, and every term keeps the frequency modulation
principle (FM-P3), so k does.

Sharing θ, α and β keeps the model at one hyperparameter more than the FM kernel; the terms are
computed by the FM kernel's own backends on the columns of their variables.
"""
import copy

import numpy as np

from ..exceptions import SpaceDefinitionError
from ..space import Graph, Space
from ._space_kernel import ALPHA_BOUNDS, BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS
from .base import Kernel
from .fm import ModDif, ModLap
from .sets import SubspaceKernel

__all__ = ["AdditiveFM"]

_BASES = {"modlap": ModLap, "moddif": ModDif}


class AdditiveFM(Kernel):
    """An FM kernel plus its one-discrete-variable terms, with shared hyperparameters (module docstring).

    Parameters
    ----------
    space : Space
        Needs at least one discrete variable.  On a conditional space a term's variable keeps its
        "inactive" state as one more vertex of its graph (``Parameter.conditional_spectrum``).
    base : {"modlap", "moddif"}, default "modlap"
        The FM kernel of the product and of every term.
    lengthscale : float or array of shape (n_continuous,)
    alpha, beta : float or array of shape (n_discrete,)
        Shared by the product and the terms (``FMKernel``).
    variance : float
        Prior variance of the product part.
    additive_variance : float
        Prior variance of the additive part (each of the P terms has 1/P of it).
    *_bounds : (low, high) or "fixed"
    backend : {"auto", "numpy", "cpp", "cuda"}
    unit_diagonal : bool, default True
        ``FMKernel``'s option, for the product and every term.
    """

    def __init__(self, space, base="modlap", shared=False, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 additive_variance=0.3, additive_lengthscale=0.5, additive_alpha=1.0, additive_beta=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, additive_variance_bounds=VARIANCE_BOUNDS, backend="auto",
                 unit_diagonal=True):
        if not isinstance(base, str) or base.lower() not in _BASES:
            raise ValueError(f"base must be one of {sorted(_BASES)}, got base={base!r}")
        if space.n_discrete == 0:
            raise SpaceDefinitionError("AdditiveFM needs at least one discrete variable; the space has none "
                                       "(use RBF or Matern52 for purely continuous spaces)")
        self.space = space
        self.base = base.lower()
        self.shared = bool(shared)
        self.backend = backend
        self.unit_diagonal = bool(unit_diagonal)
        self.lengthscale = lengthscale
        self.alpha = alpha
        self.beta = beta
        self.variance = variance
        self.additive_variance = additive_variance
        self.lengthscale_bounds = lengthscale_bounds
        self.alpha_bounds = alpha_bounds
        self.beta_bounds = beta_bounds
        self.variance_bounds = variance_bounds
        self.additive_variance_bounds = additive_variance_bounds
        # the terms' own θ, α and β (shared=False) take the product's bounds
        self.additive_lengthscale, self.additive_alpha, self.additive_beta = (
            additive_lengthscale, additive_alpha, additive_beta)
        self.additive_lengthscale_bounds = lengthscale_bounds
        self.additive_alpha_bounds, self.additive_beta_bounds = alpha_bounds, beta_bounds
        kernel_class = _BASES[self.base]
        self._product = kernel_class(space, backend=backend, unit_diagonal=self.unit_diagonal)
        continuous = [_unconditional(p) for p in space.continuous_params]
        self._terms = [SubspaceKernel(kernel_class(Space(continuous + [_standalone(p)]), backend=backend,
                                                   unit_diagonal=self.unit_diagonal), space)
                       for p in space.discrete_params]

    def _hyperparameter_specs(self):
        Dc, P = self.space.n_continuous, self.space.n_discrete
        product = [("lengthscale", Dc), ("alpha", P), ("beta", P), ("variance", 1)]
        if self.shared:
            return product + [("additive_variance", 1)]
        return product + [("additive_lengthscale", P * Dc), ("additive_alpha", P), ("additive_beta", P),
                          ("additive_variance", P)]

    def _static_key(self):
        return (self.base, self.shared, self.unit_diagonal)

    @property
    def n_dims(self):
        return self.space.n_dims

    def _n_discrete(self):
        return self.space.n_discrete

    def _check_X(self, X, name="X"):
        return self._product._check_X(X, name)

    # ---- the components at this kernel's hyperparameters
    def _components(self):
        """(product, terms) holding this kernel's current values (set once per hyperparameter state)."""
        return self._memo("components", self._set_components)

    def _set_components(self):
        Dc, P = self.space.n_continuous, self.space.n_discrete
        product = self._product
        product.lengthscale = self._values("lengthscale", Dc)
        product.alpha, product.beta = self._values("alpha", P), self._values("beta", P)
        product.variance = float(self.variance)
        if self.shared:
            lengthscales = np.tile(product.lengthscale, (P, 1))
            alphas, betas = product.alpha, product.beta
            variances = np.full(P, float(self.additive_variance) / P)
        else:
            lengthscales = self._values("additive_lengthscale", P * Dc).reshape(P, Dc)
            alphas, betas = self._values("additive_alpha", P), self._values("additive_beta", P)
            variances = self._values("additive_variance", P)
        for p, term in enumerate(self._terms):
            inner = term.kernel
            inner.lengthscale, inner.alpha, inner.beta = lengthscales[p], float(alphas[p]), float(betas[p])
            inner.variance = float(variances[p])
        return product, self._terms

    def _jacobians(self):
        """∂(component's log hyperparameters)/∂(this kernel's), one 0/1 matrix of shape (n_component, n_all)
        per component, product first.  Shared: a term's θ, α and β are the product's, its log variance
        log σ²_add − log P.  Not shared: each term reads its own block."""
        return self._memo("jacobians", self._compute_jacobians)

    def _compute_jacobians(self):
        Dc, P = self.space.n_continuous, self.space.n_discrete
        n_product = Dc + 2 * P + 1
        n_all = sum(n for _, n in self._hyperparameter_specs())
        jacobians = [np.eye(n_product, n_all)]
        for p in range(P):                 # a term's θ: [log θ (Dc) | log α_p | log β_p | log σ²_p]
            if self.shared:
                columns = list(range(Dc)) + [Dc + p, Dc + P + p, n_all - 1]
            else:
                start = n_product + p * Dc           # then α (P), β (P) and σ² (P) blocks after all θ
                alpha = n_product + P * Dc
                columns = list(range(start, start + Dc)) + [alpha + p, alpha + P + p, alpha + 2 * P + p]
            term = np.zeros((Dc + 3, n_all))
            term[np.arange(Dc + 3), columns] = 1.0
            jacobians.append(term)
        return jacobians

    def _chain(self, per_component):
        """Σ_c v_c J_c: this kernel's gradients (last axis) from the components' (``_jacobians``)."""
        return sum(vector @ jacobian for vector, jacobian in zip(per_component, self._jacobians()))

    # ---- evaluation
    def _gram(self, X, Y):
        product, terms = self._components()
        K = product._gram(X, Y)
        for term in terms:
            K += term._gram(X, Y)
        return K

    def _diag(self, X):
        product, terms = self._components()
        return product._diag(X) + sum(term._diag(X) for term in terms)

    def _full_reduction(self, X, W):
        product, terms = self._components()
        return self._chain([product._full_reduction(X, W)] + [term._full_reduction(X, W) for term in terms])

    def _full_reduction_symmetric(self, X, W):
        product, terms = self._components()
        return self._chain([product._full_reduction_symmetric(X, W)]
                           + [term.kernel._full_reduction_symmetric(term._select(X), W) for term in terms])

    def _full_gradient(self, X):
        product, terms = self._components()
        pieces = [product._full_gradient(X)] + [term._full_gradient(X) for term in terms]
        return sum(K for K, _ in pieces), self._chain([dK for _, dK in pieces])

    def _gram_and_input_gradient(self, X1, X2):
        product, terms = self._components()
        K, dK = product._gram_and_input_gradient(X1, X2)
        for term in terms:
            K_term, dK_term = term._gram_and_input_gradient(X1, X2)
            K += K_term
            dK += dK_term
        return K, dK

    def neighbour_gram_batch(self, X0, X, owner, var_index, new_state):
        product, terms = self._components()
        K = product.neighbour_gram_batch(X0, X, owner, var_index, new_state)
        X0, X = self._check_X(X0, "X0"), self._check_X(X)
        owner, var_index = np.asarray(owner, dtype=np.int64), np.asarray(var_index, dtype=np.int64)
        for p, term in enumerate(terms):
            # a neighbour that moved another variable has its base point's row of this term
            rows = term._gram(X0, X)[owner]
            moved = np.flatnonzero(var_index == p)
            if len(moved):
                rows[moved] = term._gram(self.neighbour_points(X0, owner[moved], var_index[moved],
                                                               np.asarray(new_state)[moved]), X)
            K += rows
        return K


def _unconditional(parameter):
    """A copy of ``parameter`` without its condition (its encoding, inactive code included, is unchanged)."""
    clone = copy.copy(parameter)
    clone.active_if = None
    return clone


def _standalone(parameter):
    """``parameter`` as an unconditional variable with the same encoded states and graph: a conditional one
    becomes the ``Graph`` of its ``conditional_spectrum`` (its states plus the "inactive" vertex, index n)."""
    if not parameter.is_conditional:
        return _unconditional(parameter)
    adjacency = parameter.conditional_adjacency()
    rows, cols = np.nonzero(np.triu(adjacency, 1))
    return Graph(parameter.name, len(adjacency), list(zip(rows.tolist(), cols.tolist())),
                 weights=adjacency[rows, cols].tolist(), normalized_laplacian=parameter.normalized_laplacian)
