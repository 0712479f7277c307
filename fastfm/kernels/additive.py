"""The FM kernel plus one-variable FM terms: a product that also learns main effects (issue 24 §1).

    k(x, x') = σ² k̃(x, x') + Σ_p σ²_p k̃_p((c, v_p), (c', v'_p))

k̃ is the FM kernel of the whole space (Eq. 5 of Oh et al., UAI 2021, with θ, α, β) and k̃_p the same
kernel on the continuous variables and the one discrete variable v_p, with hyperparameters of its own
(θ_p, α_p, β_p; ``additive_*``).  All are built with a unit diagonal (``FMKernel(unit_diagonal=True)``),
so σ² and σ²_p are the prior variances of the parts at every point.

Why: with 10–35 observations the product kernel has to learn each combination of the discrete
variables from the points that share it.  On Func2C (two nominal variables) the marginal likelihood
then either makes one variable irrelevant (β_p at its bound) or makes the kernel nearly white noise
(α large), and BO stays in the wrong combination's basin for the rest of a 60-evaluation run
(docs/benchmarks/bo-efficiency.md, "Small budgets").  A term lets every observation inform the
function of its own category, whatever the others: the main effects a tree-structured sampler (TPE)
learns first, and the structure of sums such as Func2C/Func3C (g1(x; h1) + g2(x; h2) + ...).  Sums of
PSD kernels are PSD, and every term keeps the frequency modulation principle (FM-P3), so k does.

The terms' own hyperparameters are what makes it work: with θ, α and β shared with the product (one
variance more than the FM kernel) BO on Func2C was no better than the FM kernel alone (−0.105 ± 0.026
against −0.134 ± 0.019 at 60 evaluations, 14–20 seeds; docs/benchmarks/bo-efficiency.md).  The terms are
computed by the FM kernel's own backends on the columns of their variables.
"""
import copy
from typing import NamedTuple

import numpy as np

from .._backends import backend_function
from ..exceptions import SpaceDefinitionError
from ..space import Graph, Space
from ._space_kernel import ALPHA_BOUNDS, BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS, SpaceKernel
from .base import _combine_into_first, _KernelLikelihoodTerms
from .fm import (_SHARE_CACHE_ENTRIES, ModDif, ModLap, NormaliserLayout, _diagonal_zeroed_in_place,
                 _part_normaliser, _PartSum, _row_weight_values, _UnitDiagonalRows)
from .sets import SubspaceKernel

__all__ = ["AdditiveFM"]

_BASES = {"modlap": ModLap, "moddif": ModDif}
# Up to this many (neighbour, training point) pairs, AdditiveFM's neighbour rows come from one fused Gram of the
# neighbour points, every component in full, instead of one call per component for the rows of the base points and
# one for the moved rows (2P + 1 calls for P terms, ~0.1 ms of Python each).  A hill-climbing step of one start on the
# NAS-like space at 200 training points (55 neighbours): 5.0 ms by the components, 2.6 ms fused; on one thread the
# components' smaller work wins from about 60,000-70,000 pairs on (NAS-like, Mixed10C20N), on two threads the fused
# call up to 2 million (docs/benchmarks/suggestion.md, "Starts that meet").
FUSED_NEIGHBOUR_MAX_PAIRS = 50_000


class AdditiveFM(SpaceKernel):
    """An FM kernel plus one FM term per discrete variable (module docstring).

    Parameters
    ----------
    space : Space
        Needs at least one discrete variable.  On a conditional space a term's variable keeps its
        "inactive" state as one more vertex of its graph (``Parameter.conditional_adjacency``).
    base : {"modlap", "moddif"}, default "modlap"
        The FM kernel of the product and of every term.
    lengthscale : float or array of shape (n_continuous,)
    alpha, beta : float or array of shape (n_discrete,)
    variance : float
        The product's (``FMKernel``).
    additive_lengthscale : float or array of shape (n_discrete · n_continuous,)
        Term p's lengthscales are entries p·n_continuous ... (p + 1)·n_continuous − 1.
    additive_alpha, additive_beta, additive_variance : float or array of shape (n_discrete,)
        Term p's α, β and prior variance.
    *_bounds : (low, high) or "fixed"
        The terms' θ, α and β take the product's bounds.
    backend : {"auto", "numpy", "cpp", "cuda"}
    unit_diagonal : bool, default True
        ``FMKernel``'s option, for the product and every term.
    """

    def __init__(self, space, base="modlap", lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 additive_lengthscale=0.5, additive_alpha=1.0, additive_beta=1.0, additive_variance=0.3,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, additive_variance_bounds=VARIANCE_BOUNDS, backend="auto",
                 unit_diagonal=True):
        if not isinstance(base, str) or base.lower() not in _BASES:
            raise ValueError(f"base must be one of {sorted(_BASES)}, got base={base!r}")
        if space.n_discrete == 0:
            raise SpaceDefinitionError("AdditiveFM needs at least one discrete variable; the space has none "
                                       "(use RBF or Matern52 for purely continuous spaces)")
        super().__init__(space, backend)
        self.base = base.lower()
        self.unit_diagonal = bool(unit_diagonal)
        self.lengthscale, self.alpha, self.beta, self.variance = lengthscale, alpha, beta, variance
        self.additive_lengthscale, self.additive_alpha, self.additive_beta, self.additive_variance = (
            additive_lengthscale, additive_alpha, additive_beta, additive_variance)
        self.lengthscale_bounds = self.additive_lengthscale_bounds = lengthscale_bounds
        self.alpha_bounds = self.additive_alpha_bounds = alpha_bounds
        self.beta_bounds = self.additive_beta_bounds = beta_bounds
        self.variance_bounds = variance_bounds
        self.additive_variance_bounds = additive_variance_bounds
        kernel_class = _BASES[self.base]
        self._product = kernel_class(space, backend=backend, unit_diagonal=self.unit_diagonal)
        continuous = [_unconditional(p) for p in space.continuous_params]
        # this kernel checks X against the whole space: the terms' columns are not checked again
        self._terms = [SubspaceKernel(kernel_class(Space(continuous + [_standalone(p)]), backend=backend,
                                                   unit_diagonal=self.unit_diagonal), space, checked_inputs=True)
                       for p in space.discrete_params]

    def _hyperparameter_specs(self):
        Dc, P = self.space.n_continuous, self.space.n_discrete
        return [("lengthscale", Dc), ("alpha", P), ("beta", P), ("variance", 1),
                ("additive_lengthscale", P * Dc), ("additive_alpha", P), ("additive_beta", P),
                ("additive_variance", P)]

    def _static_key(self):
        return (self.base, self.unit_diagonal)

    # ---- the components at this kernel's hyperparameters
    def _components(self):
        """(product, terms) holding this kernel's current values (set once per hyperparameter state)."""
        return self._memo("components", self._set_components)

    def _set_components(self):
        log_values = self._all_log_values()
        for component, selection in zip([self._product] + [term.kernel for term in self._terms], self._selections()):
            # every component hyperparameter is free (default bounds); only this kernel sets them
            component._set_theta_pinned(log_values[selection])
        return self._product, self._terms

    def _selections(self):
        """Per component (product first), the indices of its log hyperparameters in this kernel's: the
        product's are the first block; term p's are [its θ | α_p | β_p | σ²_p] from the ``additive_*`` blocks."""
        return self._memo("selections", self._compute_selections)

    def _compute_selections(self):
        Dc, P = self.space.n_continuous, self.space.n_discrete
        n_product = Dc + 2 * P + 1
        alpha = n_product + P * Dc                   # the additive α, β and σ² blocks, P each, after the θ block
        selections = [np.arange(n_product)]
        for p in range(P):
            start = n_product + p * Dc
            selections.append(np.r_[start:start + Dc, alpha + p, alpha + P + p, alpha + 2 * P + p])
        return selections

    def _chain(self, per_component):
        """This kernel's gradients (last axis) from the components' (their hyperparameters are disjoint
        blocks of this kernel's, ``_selections``)."""
        first = per_component[0]
        out = np.zeros(first.shape[:-1] + (sum(n for _, n in self._hyperparameter_specs()),))
        for values, selection in zip(per_component, self._selections()):
            out[..., selection] = values
        return out

    # ---- evaluation
    def _gram(self, X, Y):
        if Y is not None:
            # between two sets of points (the acquisition's screen): the components' Grams summed in order in one
            # backend call where the backend has it, one parallel region instead of one per component
            fused = self._memo("fused_components", self._fused_components)
            if fused.cross_gram_sum is not None:
                return fused.gram(X, Y)
        product, terms = self._components()
        K = product._gram(X, Y)
        for term in terms:
            K = _combine_into_first(np.add, K, term._gram(X, Y))
        return K

    def _diag(self, X):
        if self.unit_diagonal:      # every part's prior variance at every point (the acquisition asks often)
            return np.full(len(X), float(self.variance) + float(np.sum(self._values("additive_variance",
                                                                                  self.space.n_discrete))))
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
        """K(X1, X2) and ∂K/∂X1's continuous columns: the components' summed in order, in one backend call
        (``fm_cross_gradient_sum``), the scaled ones (unit diagonal: an ordinal's or integer's term, the product on a
        space with one) with their row and column weights.  Component by component each call selected its columns,
        scaled them and divided its dK by its lengthscales: ~60-170 µs of Python around ~60-85 µs of compiled work per
        prediction on SVM at 50 training points, and XGBoost's two scaled components kept ~30 % of a prediction in
        their own calls' Python (docs/benchmarks/suggestion.md, "AdditiveFM's parts in one call", "AdditiveFM's scaled
        parts in the same call")."""
        return self._memo("fused_components", self._fused_components).cross_gradient(X1, X2)

    def _fused_components(self):
        """``_FusedComponents`` at this kernel's hyperparameters."""
        product, terms = self._components()
        kernels = [product] + [term.kernel for term in terms]
        Dc = self.space.n_continuous
        args = [kernel._args() for kernel in kernels]       # (spectra, α, β, σ² over the normaliser, modulation)
        # each component's discrete columns of X: the product's all, term p's its variable's
        columns = [np.arange(Dc, self.space.n_dims)] + [term._columns[Dc:] for term in terms]
        lengthscales = np.array([kernel._values("lengthscale", Dc) for kernel in kernels]).reshape(len(kernels), Dc)
        # log w_p(v) of the scaled ones (None: plain), read at the rows' states per call
        tables = [kernel._unit_tables() for kernel in kernels]
        log_weights = [None if table is None else table[0] for table in tables]
        backend = self._backend_module()
        return _FusedComponents(backend_function(backend, "fm_cross_gradient_sum"),
                                getattr(backend, "fm_cross_gram_sum", None), columns,
                                lengthscales, [a[0] for a in args], np.concatenate([a[1] for a in args]),
                                np.concatenate([a[2] for a in args]), np.array([a[3] for a in args]), args[0][4],
                                log_weights, [])

    def _matvec_parts(self):
        """(kernel, column selection) of each component, the product first: K(X, Y) V is the sum of the
        components' products, each computed on the fly by its FM backend (``kernels.matvec.kernel_matvec``), where
        the blocked fallback would build every component's K(X, Y) rows (predictions 20x ModLap's, 2026-12-05)."""
        product, terms = self._components()
        return [(product, lambda X: X)] + [(term.kernel, term._select) for term in terms]

    def neighbour_gram_batch(self, X0, X, owner, var_index, new_state):
        if len(owner) * len(X) <= FUSED_NEIGHBOUR_MAX_PAIRS:
            fused = self._memo("fused_components", self._fused_components)
            if fused.cross_gram_sum is not None:
                # the neighbours' whole rows in one call: the components below to rounding (each term's row of a
                # neighbour that moved another variable is its base point's row; the product's neighbour rows
                # multiply the base point's other factors by the moved one's)
                X0, X = self._check_X(X0, "X0"), self._check_X(X)
                return fused.gram(self.neighbour_points(X0, owner, var_index, new_state), X)
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

    def _likelihood_terms(self, X):
        if not np.all(self._free_mask()):          # a fixed hyperparameter: the generic path
            return _KernelLikelihoodTerms(self, X)
        return _AdditiveLikelihoodTerms(self, X)


class _FusedComponents(NamedTuple):
    """AdditiveFM's components ([product] + terms) at its current hyperparameters, as the backend's part sums take
    them (``fm_cross_gradient_sum``, looked up once): their discrete columns of the encoded X, their lengthscales
    (stacked), spectra, α and β (concatenated), effective variances, and per component its log w_p(v) table where
    it has a unit-diagonal scaling (else None).  ``kept`` holds the last X2 (a copy) with its arguments."""
    cross_gradient_sum: object
    cross_gram_sum: object          # the backend's fm_cross_gram_sum, or None where it has none (components in turn)
    columns: list
    lengthscales: np.ndarray
    spectra: list
    alphas: np.ndarray
    betas: np.ndarray
    variances: np.ndarray
    modulation: object
    log_weights: list
    kept: list

    def cross_gradient(self, X1, X2):
        """K(X1, X2) and ∂K/∂X1 summed over the components in order."""
        C1, states1, weights1 = self._arguments(X1)
        C2, states2, weights2 = self._kept_arguments(X2)
        return self.cross_gradient_sum(C1, states1, C2, states2, self.lengthscales, self.spectra, self.alphas,
                                       self.betas, self.variances, self.modulation, weights1=weights1,
                                       weights2=weights2)

    def gram(self, X1, X2):
        """K(X1, X2) summed over the components in order (``cross_gram_sum``: each component's Gram as its own
        ``_gram`` gives it, to the bit)."""
        C1, states1, weights1 = self._arguments(X1)
        C2, states2, weights2 = self._kept_arguments(X2)
        return self.cross_gram_sum(C1, states1, C2, states2, self.lengthscales, self.spectra, self.alphas,
                                   self.betas, self.variances, self.modulation, weights1, weights2)

    def _kept_arguments(self, X2):
        """``_arguments(X2)``.  X2 is the training points at every prediction of a fit: their arguments (the weights
        at their states: a sixth of a prediction on XGBoost) are kept with a copy of X2 and reused while X2 is equal
        to it (a few µs to compare); one entry read into a local, so that threads never mix two X2s' arguments."""
        X2 = np.asarray(X2, dtype=np.float64)
        entry = self.kept[0] if self.kept else None
        if entry is None or entry[0].shape != X2.shape or not np.array_equal(entry[0], X2):
            entry = (X2.copy(), self._arguments(X2))
            self.kept[:] = [entry]
        return entry[1]

    def _arguments(self, X):
        """X's continuous columns, each component's discrete states and its unit-diagonal weights there
        (FMKernel._unit_weights; None for a plain component, or for all when none is scaled)."""
        X = np.asarray(X, dtype=np.float64)
        states = [np.ascontiguousarray(X[:, columns], dtype=np.int64) for columns in self.columns]
        weights = None
        if any(log_w is not None for log_w in self.log_weights):
            weights = [None if log_w is None else _row_weight_values(log_w, D)
                       for log_w, D in zip(self.log_weights, states)]
        return np.ascontiguousarray(X[:, :self.lengthscales.shape[1]]), states, weights


class _AdditiveLikelihoodTerms:
    """``Kernel._likelihood_terms`` of an AdditiveFM whose hyperparameters are all free: the components' own
    fast paths (``_FMLikelihoodTerms``) on their columns of X, each given its block of θ.  Through the public
    API every component re-keys its memo and re-checks X at each θ: 20 terms made that bookkeeping ten
    times the backends' work in a fit on Mixed10C20N.  Here θ is exponentiated once, the P + 1 variance
    normalisers are one pass (``fm.NormaliserLayout``) and W's diagonal is split off once: at 100 points on
    Func3C a likelihood evaluation with its gradient took 0.87 ms through the components' ``gram`` and
    ``reduction``."""

    device = None                  # the host path (the terms' Grams are summed on the host)

    def __init__(self, kernel, X):
        X = kernel._check_X(X)
        # the components' fast paths read only their structure (every θ is given to ``gram``): nothing is set
        # on the shared components, which the GP's restarts build these from in parallel threads
        self.selections = kernel._selections()
        self.parts = [kernel._product._likelihood_terms(X)] + [
            term.kernel._likelihood_terms(term._select(X)) for term in kernel._terms]
        self._n_theta = kernel.n_theta             # every hyperparameter is free on this path (_likelihood_terms)
        self._normalisers = NormaliserLayout([part.spectra for part in self.parts])
        self._modulation = self.parts[0].modulation
        # per part, where its β sit in the parts' concatenated variables (the product's P, then one per term)
        counts = [part.n_discrete for part in self.parts]
        self._variables = np.split(np.arange(sum(counts)), np.cumsum(counts)[:-1])
        # the parts with every hyperparameter free, plain (no unit-diagonal scaling: mostly the nominal terms) or
        # scaled (an ordinal's or an integer's path, a grouped nominal's weighted graph), in one call of the backend
        # (fm._PartSum), the others part by part; the Gram adds their sum where the first of them stands, so that K
        # is summed in the parts' order wherever they come first.  A scaled part keeps its N × N Gram for the
        # gradient up to _SHARE_CACHE_ENTRIES entries (N ≤ 724); above, the reduction recomputes it a chunk at a time
        # (_PartSum's keep_grams), where the parts' own paths took a fifth of a fit at N = 1,000 (their Grams
        # recomputed in blocks of rows, W ∘ wwᵀ in NumPy: large-n.md, "AdditiveFM's likelihood at large N")
        small = len(X) ** 2 <= _SHARE_CACHE_ENTRIES
        fused = [k for k, part in enumerate(self.parts) if part.plain or (part.scaled and part.all_free)]
        if not fused or not _PartSum.shares_points([self.parts[k] for k in fused]):
            fused = []
        self._fused = (_PartSum([self.parts[k] for k in fused], [self.selections[k] for k in fused],
                                [self._variables[k] for k in fused], keep_grams=small) if fused else None)
        self._fused_parts = fused
        self._fused_selection = (np.concatenate([self.selections[k] for k in fused]) if fused
                                 else np.zeros(0, dtype=np.int64))
        self._other_parts = [k for k in range(len(self.parts)) if k not in fused]
        self._gram_order = sorted(self._other_parts + fused[:1])   # fused[0]: the fused parts' sum
        self._fused_first = fused[0] if fused else None
        self._beta_positions = np.concatenate([part.betas_of(selection)
                                               for part, selection in zip(self.parts, self.selections)])
        # the unit-diagonal scalings of the parts on graphs with unequal degrees (an ordinal's path), in one pass
        spaces, states = [part.kernel.space for part in self.parts], [part.D for part in self.parts]
        scaled = any(part.scaled for part in self.parts)
        self._unit_rows = _UnitDiagonalRows(spaces, states) if scaled else None
        # the normalisers and the scalings evaluate f at the same groups and β (every part's, in the same order)
        self._shared_groups = scaled and self._unit_rows.shares_groups(self._normalisers)

    def gram(self, theta):
        values = np.exp(theta)
        betas = values[self._beta_positions]
        derivatives = self._normalisers.group_derivatives(self._modulation, betas)
        c, dlog_c = self._normalisers.factors(self._modulation, betas, derivatives)
        scalings = ([None] * len(self.parts) if self._unit_rows is None else
                    self._unit_rows.at(self._modulation, betas, derivatives if self._shared_groups else None))
        K = None
        for k in self._gram_order:
            if k == self._fused_first:
                K = self._fused.gram(values, c, dlog_c, K, [scalings[j] for j in self._fused_parts])
                continue
            part, selection, variables = self.parts[k], self.selections[k], self._variables[k]
            K_part = part.gram_at(part.arguments_at(values[selection], _part_normaliser(c, variables),
                                                    dlog_c[variables]), scalings[k])
            K = K_part if K is None else _combine_into_first(np.add, K, K_part)
        return K

    def reduction(self, W):
        with _diagonal_zeroed_in_place(W) as (W_off, w_diag):
            gradient = np.zeros(self._n_theta)
            for k in self._other_parts:
                gradient[self.selections[k]] = self.parts[k].reduction_without_diagonal(W_off, w_diag)
            if self._fused is not None:
                gradient[self._fused_selection] = self._fused.reduction(W_off, w_diag)
            return gradient


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
