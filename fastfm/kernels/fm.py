"""Frequency modulated kernels (SPEC §2; Oh et al., UAI 2021, Eq. 5).

    k((c,v),(c',v')) = σ² · Π_p Σ_i U_p[v_p,i] f(λ_i^p, α_p·r(c,c') | β_p) U_p[v'_p,i]

with r = d^t the ARD distance d²(c,c') = Σ_d (c_d − c'_d)²/θ_d² raised to t/2.
The continuous distance is shared by every discrete factor: this coupling is
the point of the method, it is not a product kernel.

Variance parameterisation: ``variance`` is the *average prior variance at
zero continuous distance*, σ² = variance / Π_p c_p(β_p) with
c_p = (1/n_p) Σ_i f(λ_i^p, 0 | β_p) (the mean diagonal of factor p).  This is
a reparameterisation of the paper's σ² (same family of functions, same
positive-definiteness and FM principle) that keeps ``variance`` on the scale
of standardised y whatever the β_p: without it a Gram diagonal can be
(1/17)^5 on Ackley5C and σ² would need to span ten decades.

Because σ² moves with β_p, ∂K_ab/∂log β_p = σ² Q_p ∂F_p/∂log β_p −
(∂log c_p/∂log β_p)·K_ab.  On the Gram diagonal (a = b, zero distance) the
two terms cancel exactly for a nominal variable (F_p(v, v, 0) = c_p), and
they are the largest terms of the gradient sums: on a 12-variable space
Σ_ab |W_ab ∂K_ab/∂log β_p| was 4·10⁻⁵ of them, so summing them in floating
point lost ~4 digits.  The gradient reductions therefore sum the a ≠ b pairs in the
backend and add the a = b pairs from ``_zero_distance_tables``, where the
cancellation is done analytically.

Unit diagonal (issue 23 §1).  On a graph whose vertices differ in degree (a path: its two ends; a star;
most user graphs) F_p(v, v, 0) is not the same for every state: on a path the ends' is larger (1.38× per
variable for ModLap at β = 1, so ≈ 48× at the corners of twelve integers), and with it the prior variance
and the acquisition, which drew every suggestion to the bounds.  ``unit_diagonal=True`` (what BO uses:
``fastfm.Optimizer`` builds its FM kernels with it) normalises each factor to a unit diagonal relative to
its mean:

    F̃_p(v, v', s) = F_p(v, v', s) · w_p(v) w_p(v'),   w_p(v) = (c_p / F_p(v, v, 0))^½,

so k̃(x, x') = k(x, x') w(x) w(x') with w(x) = Π_p w_p(v_p): a positive diagonal scaling of a PSD matrix
(PSD; still decreasing in the continuous distance, FM-P3), with k̃(x, x) = ``variance`` everywhere.  The
backends compute k; the scaling and its β derivative (∂log w_p(v)/∂log β_p = −½ e_p(v), with e_p of
``_zero_distance_tables``) are applied here.  For vertex-transitive graphs (complete graphs, cycles) w ≡ 1
and nothing is done, so nominal-only spaces keep their numbers bit for bit.  The kernels' own default stays
the paper's: in GP regression on the mixed regression set (10 ordinals) the scaled kernel fitted slightly
worse (test RMSE +1 to +3 %, 3 seeds; docs/benchmarks/robustness.md).

On a conditional space (SPEC §3) the FM kernels need nothing of their own:
the ``Space`` encoding already gives every inactive value a defined place
(see ``fastfm.space.space``).  An inactive continuous dimension is encoded
as 0, so two configs that both lack it are equal there; an inactive discrete
variable takes an extra "inactive" vertex of its graph, joined to every
state (for a nominal variable the graph stays complete: "inactive" is one
more category).  The graphs are still connected and the same Eq. 5 is used,
so positive definiteness and the frequency modulation principle (FM-P3: every
factor ≥ 0, the kernel decreasing in the continuous distance) carry over
unchanged; ``tests/kernels/test_fm_principle.py`` checks both on one.
"""
import contextlib
import math
import weakref

import numpy as np

from .._backends import backend_function, gpu_module_for
from .._backends._spectra import cached_per_spectra
from .._backends.modulation import DIFFUSION, LAP_FAMILY, Modulation
from ..exceptions import SpaceDefinitionError
from ._space_kernel import ALPHA_BOUNDS, BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS, SpaceKernel

__all__ = ["FMKernel", "ModLap", "ModDif", "ModNN", "GraphKernel"]


class _ModulatedKernel(SpaceKernel):
    """Common machinery: discrete factors modulated by a continuous argument."""

    _modulation = None  # set by subclasses (property)

    def _betas(self):
        return self._values("beta", self.space.n_discrete)

    def _normaliser(self):
        """(Π_p c_p, ∂log Π c_p/∂log β) of the variance parameterisation (module docstring)."""
        return self._memo("normaliser", self._compute_normaliser)

    def _compute_normaliser(self):
        return self._normaliser_at(self._betas())

    def _normaliser_at(self, betas):
        return _normaliser_product(*_normaliser_layout(self.space.packed_spectra).factors(self._modulation, betas))

    def _args(self):
        """Backend arguments after the inputs: (spectra, alphas, betas, σ², modulation), memoised."""
        return self._memo("args", self._compute_args)

    def _effective_variance(self):
        return float(self.variance) / self._normaliser()[0]

    def _diag_factors(self, D):
        """Π_p F_p(v, v, s=0) for each row: the Gram diagonal divided by σ²."""
        return np.prod(_per_row(self._memo("diag_tables", self._compute_diag_tables)[0], D), axis=1)

    def _compute_diag_tables(self):
        return _zero_distance_tables(self.space, self._modulation, self._betas())[:2]

    def _zero_distance_log_derivatives(self, D):
        """e_p(v_a) of ``_zero_distance_tables`` for each row, shape (N, P)."""
        return _per_row(self._memo("diag_tables", self._compute_diag_tables)[1], D)

    def _add_zero_distance_share(self, vector, beta_start, D, w_diag):
        """``_add_zero_distance_share`` at the kernel's own hyperparameters (K_aa from the diagonal tables)."""
        K_diag = self._effective_variance() * self._diag_factors(D)
        return _add_zero_distance_share(vector, beta_start, D, w_diag * K_diag,
                                        self._memo("diag_tables", self._compute_diag_tables)[1])


def _normaliser_product(c, dlog_c):
    """(Π_p c_p, ∂log Π c_p/∂log β) from ``NormaliserLayout.factors``' (c_p, ∂log c_p/∂log β_p)."""
    return float(np.exp(np.sum(np.log(c)))), dlog_c


def _part_normaliser(c, variables):
    """Π_p c_p over a part's variables (indices into the normaliser factors c of ``NormaliserLayout.factors``):
    σ²_part = variance / Π_p c_p.  c_p itself for one variable (AdditiveFM's terms)."""
    return c[variables[0]] if len(variables) == 1 else float(np.exp(np.sum(np.log(c[variables]))))


class _PartSum:
    """The Gram and the gradient reduction of several ``_FMLikelihoodTerms`` that are parts of one sum on the same
    points (AdditiveFM's), every hyperparameter free, through the backend's ``fm_gram_sum`` and
    ``fm_grad_reduction_sum``: one call each for all of them.  A part is ``plain`` (every graph vertex-transitive)
    or ``scaled`` (a unit-diagonal scaling: an ordinal's or an integer's path, a grouped nominal's weighted complete
    graph), whose row weights w and ∂log w/∂log β (``_UnitDiagonalRows``) the calls take: the Gram scales the
    part's K by wwᵀ and keeps it, the reduction reads it for the weights' β share (``_unit_diagonal_reduction``'s
    definition), so a scaled part holds an N × N array; with ``keep_grams=False`` (above _SHARE_CACHE_ENTRIES) the
    reduction recomputes it instead, a chunk at a time, and forms W ∘ wwᵀ pair by pair.

    Part by part, each part's arguments, call and bookkeeping were ~12 µs of Python and call overhead around
    ~20 µs of compiled work at 100 points, four to five parts per likelihood evaluation on the HPO problems
    (docs/benchmarks/suggestion.md, "AdditiveFM's parts in one call"); a scaled part's own path, its scaling and
    W ∘ wwᵀ in NumPy, cost ~50 µs more per part and evaluation at 100 points ("AdditiveFM's scaled parts in the
    likelihood's call").  The parts' Grams are added in their order, each as the part's own path computes it, so
    K is the parts' sum bit for bit; a scaled part's β gradient differs from its own path's in the rounding of the
    share's sums.

    ``selections[k]``: part k's [θ | α | β | σ²] as indices into the composite kernel's hyperparameter values;
    ``variables[k]``: its variables' indices into the normaliser factors c (``NormaliserLayout.factors``)."""

    def __init__(self, parts, selections, variables, keep_grams=True):
        self.parts = list(parts)
        # a scaled part's Gram kept for the reduction's β share (an N × N array each), or recomputed there a chunk at
        # a time (the C++ backend's fastfm::run_weighted_row_sums), for large N
        self.keep_grams = keep_grams
        first = self.parts[0]
        self.C, self.modulation = first.C, first.modulation
        self.states = [part.D for part in self.parts]
        self.spectra = [part.spectra for part in self.parts]
        self.scaled = [part.scaled for part in self.parts]
        self._gram_sum = backend_function(first.backend, "fm_gram_sum")
        self._reduction_sum = backend_function(first.backend, "fm_grad_reduction_sum")
        Dc = first.n_continuous
        counts = [part.n_discrete for part in self.parts]
        self._lengthscale_index = np.array([selection[:Dc] for selection in selections], dtype=np.int64).reshape(
            len(self.parts), Dc)
        self._alpha_index = np.concatenate([s[Dc:Dc + P] for s, P in zip(selections, counts)])
        self._beta_index = np.concatenate([s[Dc + P:Dc + 2 * P] for s, P in zip(selections, counts)])
        self._variance_index = np.array([selection[-1] for selection in selections], dtype=np.int64)
        # σ²_k = variance_k / Π_p c_p over part k's variables (_part_normaliser), gathered at once for the parts of
        # one variable (the terms)
        self._first_variable = np.array([v[0] for v in variables], dtype=np.int64)
        self._several = [(k, v) for k, v in enumerate(variables) if len(v) > 1]
        self._dlog_index = np.concatenate(variables)
        # the reduction's layout: per part [log θ | log α | log β | log σ²]
        sizes = np.array([Dc + 2 * P + 1 for P in counts], dtype=np.int64)
        ends = np.cumsum(sizes)
        self._flat_variance = ends - 1
        self._flat_beta = np.concatenate([np.arange(end - 1 - P, end - 1) for end, P in zip(ends, counts)])
        self._beta_owner = np.repeat(np.arange(len(self.parts)), counts)
        self._at = None
        # With keep_grams, the scaled parts' Grams of the last call and an N × N scratch, reused by the next call
        # instead of new arrays: at 200 points on the NAS-like space (ten ordinals) the pages of eleven new N × N
        # arrays were faulted in at every likelihood evaluation (452 faults), which took 9.4 ms against 8.3 ms with
        # the arrays reused (docs/benchmarks/suggestion.md, "The likelihood's arrays reused").  Not above
        # _SHARE_CACHE_ENTRIES, where a held scratch would be large.
        self._grams_out = None
        self._workspace = np.empty((len(self.C),) * 2) if keep_grams and len(self.parts) > 1 else None

    @staticmethod
    def shares_points(parts):
        """Whether ``parts`` can be summed by one call: the same continuous columns, modulation and backend."""
        first = parts[0]
        return all(part.backend is first.backend and part.modulation == first.modulation
                   and part.device is None and np.array_equal(part.C, first.C) for part in parts)

    def gram(self, values, c, dlog_c, out=None, scalings=None):
        """Σ_k K_k at the composite kernel's hyperparameter ``values``, added into ``out`` when given;
        ``scalings[k]``: the scaled parts' (w, ∂log w/∂log β) (``_UnitDiagonalRows.at``), None for the others."""
        normalisers = c[self._first_variable]
        for k, variables in self._several:
            normalisers[k] = _part_normaliser(c, variables)
        lengthscales = values[self._lengthscale_index]
        alphas, betas = values[self._alpha_index], values[self._beta_index]
        variances = values[self._variance_index] / normalisers
        writable = (out is None or (isinstance(out, np.ndarray) and out.dtype == np.float64
                                    and out.flags.c_contiguous and out.flags.writeable))
        weights = [None if s is None else s[0] for s in scalings] if any(self.scaled) else None
        # with weights the backend also returns each scaled part's Gram, which the reduction reads
        K, diagonals, *grams = self._gram_sum(self.C, lengthscales, self.states, self.spectra, alphas, betas,
                                              variances, self.modulation, out if writable else None, weights,
                                              self.keep_grams, self._grams_out if weights is not None else None,
                                              self._workspace)
        kept = None if weights is None else [None if s is None else (s[0], s[1], K_k)
                                             for s, K_k in zip(scalings, grams[0])]
        if weights is not None and self.keep_grams:
            self._grams_out = grams[0]
        if not writable:
            K = out + K
        self._at = (lengthscales, alphas, betas, variances, dlog_c[self._dlog_index], diagonals, kept)
        return K

    def reduction(self, W_off, w_diag):
        """The parts' vectors [log θ | log α | log β | log σ²], concatenated, at the last ``gram`` (W_off: W with
        a zero diagonal).  Each is the backend's sums (a scaled part's with its weights' β share) with the
        normaliser's share moved from the variance to β (``_fm_reduction_vector``) and the a = b pairs' share
        Σ_a W_aa K_aa added to the variance (``_add_zero_distance_share`` with no tables: a plain part's e_p are 0, a
        scaled part's diagonal is its variance at every β)."""
        lengthscales, alphas, betas, variances, dlog, diagonals, kept = self._at
        flat = self._reduction_sum(self.C, lengthscales, self.states, W_off, self.spectra, alphas, betas, variances,
                                   self.modulation, True, kept, self._workspace)
        flat[self._flat_beta] -= dlog * flat[self._flat_variance][self._beta_owner]
        flat[self._flat_variance] += np.sum(w_diag * diagonals, axis=1)
        return flat


class NormaliserLayout:
    """The eigenvalue groups of the variables of one or more PackedSpectra, concatenated, for the factors of
    the variance parameterisation (module docstring) of all their variables in one pass:

        c_p(β_p) = (1/n_p) Σ_g |g| f(μ_g, 0 | β_p)   and   ∂log c_p/∂log β_p.

    One set of spectra serves an FM kernel (one call per θ in a fit, cached per space: ``_normaliser_layout``);
    several serve a kernel made of FM kernels (AdditiveFM builds one per likelihood), whose P + 1 normalisers
    then cost one pass instead of P + 1."""

    def __init__(self, spectra_list):
        self.group_values = np.concatenate([s.group_values for s in spectra_list])
        self.group_sizes = np.concatenate([s.group_sizes for s in spectra_list])
        self.n_states = np.concatenate([s.n_states for s in spectra_list])
        groups_per_variable = np.concatenate([np.diff(s.group_offsets) for s in spectra_list])
        self.group_variable = np.repeat(np.arange(len(self.n_states)), groups_per_variable)
        self.starts = (np.cumsum(groups_per_variable) - groups_per_variable).astype(np.int64)   # [] for none

    def group_derivatives(self, modulation, betas):
        """(f(μ_g, 0 | β_p), β_p ∂f(μ_g, 0 | β_p)/∂β_p) per group g, in the layout's order."""
        f, _, df_dlogbeta = modulation.derivatives(self.group_values, 0.0, np.asarray(betas)[self.group_variable])
        return f, df_dlogbeta

    def factors(self, modulation, betas, group_derivatives=None):
        """(c_p, ∂log c_p/∂log β_p) for every variable p, given its β_p (arrays of shape (n_variables,)), from
        ``group_derivatives`` at these β when the caller has them."""
        f, df_dlogbeta = group_derivatives or self.group_derivatives(modulation, betas)
        c = np.add.reduceat(self.group_sizes * f, self.starts) / self.n_states
        dc = np.add.reduceat(self.group_sizes * df_dlogbeta, self.starts) / self.n_states
        return c, dc / c


def _normaliser_layout(spectra):
    """The ``NormaliserLayout`` of one space's spectra, cached (``cached_per_spectra``)."""
    return cached_per_spectra(_normaliser_layouts, spectra, lambda: NormaliserLayout([spectra]))


def _per_row(table, D):
    """table[p, D[a, p]] for every row a: a (n_variables, max states) table read at each row's states, (N, P)."""
    return table[np.arange(table.shape[0]), D]


def _add_zero_distance_share(vector, beta_start, D, weighted_diagonal, dlog_table):
    """Adds the a = b pairs' share to a reduction vector whose β block starts at ``beta_start`` and whose
    last entry is log variance: Σ_a W_aa K_aa e_p(v_a) to the β gradients (σ² = variance/Π c_p) and
    Σ_a W_aa K_aa to the variance one, given weighted_diagonal = W_aa K_aa and the e_p(v) table of
    ``_zero_distance_tables`` (None where every e_p is 0).  Returns ``vector``."""
    if dlog_table is not None:
        vector[beta_start:beta_start + dlog_table.shape[0]] += weighted_diagonal @ _per_row(dlog_table, D)
    vector[-1] += float(np.sum(weighted_diagonal))
    return vector


def _zero_distance_tables(space, modulation, betas):
    """``_zero_distance_tables_of`` the space's variables."""
    return _zero_distance_tables_of(_zero_distance_layout(space.packed_spectra, space.graphs), modulation, betas)


def _zero_distance_tables_of(layout, modulation, betas, group_derivatives=None):
    """Per variable p of ``layout`` (``_ZeroDistanceLayout``) and state v: F_p(v, v, 0) and
    e_p(v) = ∂log(F_p(v, v, 0)/c_p)/∂log β_p.

    Both as (n_variables, max states) tables.  A pair at zero continuous distance in the same state
    (every a = b pair of a Gram) has ∂K_ab/∂log β_p = K_ab·e_p(v) once σ² = variance/Π c_p moves with β_p
    (module docstring).  Written as ∂F_p/∂log β_p − (∂log c_p/∂log β_p)·F_p, the two terms are each of
    the size of K_aa (the largest entries of K) and cancel exactly whenever the projector diagonals
    x_g(v) = P_g[v, v] are constant (= |g|/n: complete graphs, cycles, any vertex-transitive graph),
    because then F_p(v, v, 0) = c_p for every v.  So e_p is formed from the deviations
    d_g(v) = x_g(v) − |g|/n alone (they sum to 0 over g since Σ_g P_g = I):

        e_p(v) = (c_p Σ_g d_g h_g − c'_p Σ_g d_g f_g) / (c_p F_p(v, v, 0)),
        f_g = f(μ_g, 0 | β_p),  h_g = β_p ∂f(μ_g, 0 | β_p)/∂β_p,  c_p = Σ_g (|g|/n) f_g,  c'_p = Σ_g (|g|/n) h_g,

    which is exactly 0 for those graphs.  Deviations within the rounding of the eigenvectors
    (|d_g| ≤ 64 n ε; a complete graph's are 0 by construction) are set to 0: F_p evaluated from
    these eigenvectors cannot resolve them either.

    ``group_derivatives``: (f_g, h_g) of the layout's groups in its order at these β when the caller has them
    (``NormaliserLayout.group_derivatives`` of the same groups: a likelihood evaluation's normalisers).
    """
    P, n_groups = layout.shares.shape
    if group_derivatives is None:
        f_packed, _, h_packed = modulation.derivatives(layout.group_values, 0.0,
                                                       np.repeat(betas, layout.groups_per_variable))
    else:
        f_packed, h_packed = group_derivatives
    f, h = np.zeros(P * n_groups), np.zeros(P * n_groups)
    f[layout.scatter], h[layout.scatter] = f_packed, h_packed
    f, h = f.reshape(P, n_groups), h.reshape(P, n_groups)                       # (P, max groups), zero-padded
    c, dc = np.sum(layout.shares * f, axis=1), np.sum(layout.shares * h, axis=1)
    diag_table = np.matmul(layout.projector_diagonals, f[:, :, None])[:, :, 0]
    numerator = np.matmul(layout.deviations, (c[:, None] * h - dc[:, None] * f)[:, :, None])[:, :, 0]
    diag_table[layout.padding] = 1.0                  # states beyond n_p: neutral entries, never indexed
    return diag_table, numerator / (c[:, None] * diag_table), c


def _unit_diagonal_tables(space, modulation, betas):
    """(log w_p(v), ∂log w_p(v)/∂log β_p) as (n_variables, max states) tables, w_p(v) = (c_p/F_p(v, v, 0))^½
    (module docstring, "Unit diagonal"); None when every graph is vertex-transitive (w ≡ 1)."""
    if not _zero_distance_layout(space.packed_spectra, space.graphs).has_deviations:
        return None
    diag_table, dlog_table, c = _zero_distance_tables(space, modulation, betas)
    return 0.5 * (np.log(c)[:, None] - np.log(diag_table)), -0.5 * dlog_table


def _scale_in_place(K, w1, w2):
    """K ∘ w1 w2ᵀ over K's first two axes, in place (K of shape (N, M) or (N, M, ...)); returns K."""
    trailing = (1,) * (K.ndim - 2)
    K *= w1.reshape((-1, 1) + trailing)
    K *= w2.reshape((1, -1) + trailing)
    return K


def _row_weight_values(log_w, D):
    """w(x) = Π_p w_p(v_p) per row of D, shape (N,), from the log w_p(v) table."""
    return np.exp(np.sum(_per_row(log_w, D), axis=1))


def _row_weights(tables, D):
    """(w, ∂log w/∂log β) per row of D: shapes (N,) and (N, P); w(x) = Π_p w_p(v_p)."""
    log_w, g = tables
    return _row_weight_values(log_w, D), _per_row(g, D)


class _UnitDiagonalRows:
    """The unit-diagonal scaling (module docstring, "Unit diagonal") of one or more FM kernels on fixed points, at
    any β: per kernel, the row weights w(x_a) = Π_p w_p(v_ap) and ∂log w(x_a)/∂log β_p (``_row_weights``), or None
    where every graph of its space is vertex-transitive (w ≡ 1).

    A likelihood evaluates it at every θ, so the tables of all the kernels' variables come from one
    ``_zero_distance_tables_of`` of their joint layout and are read at every row's states with one gather
    (the states are fixed, so are the indices).  Kernel by kernel (``_unit_diagonal_tables`` and
    ``_row_weights``), AdditiveFM on XGBoost (an integer variable, so a scaled product and one scaled term) spent
    ~110 µs of each Gram's ~540 µs at 100 points on them (docs/benchmarks/suggestion.md, "The unit-diagonal
    scaling of a likelihood in one pass, and less Python per evaluation")."""

    def __init__(self, spaces, states):
        layouts = [_zero_distance_layout(space.packed_spectra, space.graphs) for space in spaces]
        self.layout = _ZeroDistanceLayout.concatenated(layouts)
        counts = [len(layout.shares) for layout in layouts]
        n_variables, n_max = self.layout.padding.shape
        # where each row's state of each variable sits in a flattened (variables, max states) table
        self._flat_index = np.arange(n_variables) * n_max + np.concatenate(states, axis=1)
        self._membership = np.zeros((n_variables, len(spaces)))
        ends = np.cumsum(counts)
        self._columns = []
        for k, (layout, end, count) in enumerate(zip(layouts, ends, counts)):
            self._membership[end - count:end, k] = 1.0
            self._columns.append(slice(end - count, end) if layout.has_deviations else None)

    def shares_groups(self, normalisers):
        """Whether ``normalisers`` (a ``NormaliserLayout``) holds the same groups in the same order as this
        scaling's layout, so that one ``group_derivatives`` serves both."""
        return np.array_equal(normalisers.group_values, self.layout.group_values) and np.array_equal(
            normalisers.group_variable, np.repeat(np.arange(len(self.layout.groups_per_variable)),
                                                  self.layout.groups_per_variable))

    def at(self, modulation, betas, group_derivatives=None):
        """Per kernel, (w, ∂log w/∂log β) of shapes (N,) and (N, its P), or None; ``betas`` concatenates the
        kernels' β in the order they were given (``group_derivatives``: ``_zero_distance_tables_of``'s)."""
        diag_table, dlog_table, c = _zero_distance_tables_of(self.layout, modulation, betas, group_derivatives)
        log_w = 0.5 * (np.log(c)[:, None] - np.log(diag_table))
        weights = np.exp(log_w.ravel()[self._flat_index] @ self._membership).T
        log_derivatives = (-0.5 * dlog_table).ravel()[self._flat_index]
        return [None if columns is None else (np.ascontiguousarray(weights[k]), log_derivatives[:, columns])
                for k, columns in enumerate(self._columns)]


# Entries of K recomputed at a time for the unit-diagonal β share (at most 8 MB of them).
_SHARE_BLOCK_ENTRIES = 1 << 20

# A GP likelihood evaluation (``_FMLikelihoodTerms``) keeps a copy of the unscaled Gram of up to this many entries
# (4 MB: N ≤ 724) for that share, instead of recomputing it a block of rows at a time after the factorisation has
# overwritten K.  The recomputation was as long as the Gram itself: on the NAS-like space at N = 200 (ten ordinal
# variables, so a unit-diagonal scaling) 3.8 of a likelihood evaluation's ~10 ms, one thread
# (docs/benchmarks/suggestion.md, "Keeping the unscaled Gram for the gradient").  Above it the blocks keep the
# likelihood at one N × N array.
_SHARE_CACHE_ENTRIES = 1 << 19


def _unit_diagonal_reduction(reduce, gram_rows, W_off, w, G, beta_start, symmetric_weights):
    """Σ_ab W_ab ∂k̃_ab/∂θ over a ≠ b for k̃ = w_a K_ab w_b (module docstring, "Unit diagonal").

    Σ W ∂(w_a w_b K_ab) = Σ W'_ab ∂K_ab + Σ_ab W'_ab K_ab (g(a) + g(b)) with W' = W ∘ wwᵀ and g(a) = ∂log w_a/∂log β:
    ``reduce(W')`` is the backend's reduction (β block, normaliser included), ``gram_rows`` the unscaled K for the
    second sum: an array (a copy the caller kept, read in one block) or a function of a slice of rows, which is then
    computed a block of rows at a time so that no second N × N array is held.  W' is a scaled copy of W_off (zero
    diagonal) up to _SHARE_CACHE_ENTRIES entries, as the unscaled K is; above, W_off itself is scaled in place and
    restored (to within rounding: the parts reduced after this one read it)."""
    if isinstance(gram_rows, np.ndarray):
        block, gram_rows = len(w), gram_rows.__getitem__
    else:
        # an eighth of K at most at a time: the GP likelihood holds one N × N array, a composite kernel two
        # (tests/test_gp.py)
        block = max(1, min(_SHARE_BLOCK_ENTRIES // max(1, len(w)), -(-len(w) // 8)))
    in_place = W_off.size > _SHARE_CACHE_ENTRIES
    if in_place:
        W_off *= w[:, None]
        scaled = W_off
    else:
        scaled = W_off * w[:, None]
    scaled *= w[None, :]
    try:
        vector = reduce(scaled)
        per_point = np.empty(len(w))
        for start in range(0, len(w), block):
            rows = slice(start, start + block)
            weights = scaled[rows] if symmetric_weights else scaled[rows] + scaled[:, rows].T
            per_point[rows] = np.einsum("ab,ab->a", weights, gram_rows(rows))
        if symmetric_weights:
            per_point *= 2.0
    finally:
        if in_place:
            W_off /= w[None, :]
            W_off /= w[:, None]
    vector[beta_start:beta_start + G.shape[1]] += per_point @ G
    return vector


class _ZeroDistanceLayout:
    """What ``_zero_distance_tables`` needs of the graphs alone, as (P, max states, max groups) arrays:
    the projector diagonals x_g(v), their deviations d_g(v) from |g|/n, the shares |g|/n (P, max groups),
    and where the packed per-group values go in a (P, max groups) array."""

    def __init__(self, spectra, graphs):
        P = len(graphs)
        n_max = max([g.n_states for g in graphs], default=1)
        g_max = max([g.n_groups for g in graphs], default=1)
        self.projector_diagonals, self.deviations = np.zeros((P, n_max, g_max)), np.zeros((P, n_max, g_max))
        self.shares = np.zeros((P, g_max))
        self.padding = np.ones((P, n_max), dtype=bool)
        for p, spectrum in enumerate(graphs):
            n, G = spectrum.n_states, spectrum.n_groups
            share = np.diff(spectrum.group_starts) / n
            if spectrum.is_complete:   # P_0 = 11ᵀ/n, P_1 = I − 11ᵀ/n: exactly constant diagonals
                x = np.tile(share, (n, 1))
            else:
                x = np.add.reduceat(spectrum.eigenvectors ** 2, spectrum.group_starts[:-1], axis=1)   # (n, G)
            deviation = x - share
            deviation[np.abs(deviation) <= 64.0 * n * np.finfo(float).eps] = 0.0
            self.projector_diagonals[p, :n, :G], self.deviations[p, :n, :G] = x, deviation
            self.shares[p, :G] = share
            self.padding[p, :n] = False
        self._set_groups(spectra.group_values, np.diff(spectra.group_offsets))

    def _set_groups(self, group_values, groups_per_variable):
        # False when every graph has constant projector diagonals (nominal-only spaces): every e_p is 0
        self.has_deviations = bool(np.any(self.deviations))
        self.group_values = group_values
        self.groups_per_variable = groups_per_variable
        first_groups = np.cumsum(groups_per_variable) - groups_per_variable
        self.scatter = (np.repeat(np.arange(len(groups_per_variable)) * self.shares.shape[1] - first_groups,
                                  groups_per_variable) + np.arange(len(group_values)))

    @classmethod
    def concatenated(cls, layouts):
        """One layout of the variables of ``layouts`` one after the other (their arrays padded to a common size)."""
        P = sum(len(layout.shares) for layout in layouts)
        n_max = max(layout.padding.shape[1] for layout in layouts)
        g_max = max(layout.shares.shape[1] for layout in layouts)
        joint = cls.__new__(cls)
        joint.projector_diagonals, joint.deviations = np.zeros((P, n_max, g_max)), np.zeros((P, n_max, g_max))
        joint.shares = np.zeros((P, g_max))
        joint.padding = np.ones((P, n_max), dtype=bool)
        start = 0
        for layout in layouts:
            (count, n, G), rows = layout.deviations.shape, slice(start, start + len(layout.shares))
            joint.projector_diagonals[rows, :n, :G] = layout.projector_diagonals
            joint.deviations[rows, :n, :G] = layout.deviations
            joint.shares[rows, :G] = layout.shares
            joint.padding[rows, :n] = layout.padding
            start += count
        joint._set_groups(np.concatenate([layout.group_values for layout in layouts]),
                          np.concatenate([layout.groups_per_variable for layout in layouts]))
        return joint


# PackedSpectra -> _ZeroDistanceLayout, NormaliserLayout (spaces cache their PackedSpectra: built once per space)
_zero_distance_layouts = weakref.WeakKeyDictionary()
_normaliser_layouts = weakref.WeakKeyDictionary()


def _zero_distance_layout(spectra, graphs):
    return cached_per_spectra(_zero_distance_layouts, spectra, lambda: _ZeroDistanceLayout(spectra, graphs))


def _set_zero_distance_beta_derivatives(dK_beta, K, log_derivatives):
    """dK_beta[a, a, p] = K_aa e_p(v_a): the a = b entries of ∂K/∂log β_p without the cancellation of
    ``_zero_distance_tables`` (exactly 0 for nominal variables)."""
    diagonal = np.arange(K.shape[0])
    dK_beta[diagonal, diagonal, :] = K[diagonal, diagonal, None] * log_derivatives


def _weights_without_diagonal(W):
    """(a copy of W with a zero diagonal, diag(W)): the a = b pairs are summed by ``_add_zero_distance_share``."""
    off_diagonal = np.array(W, dtype=np.float64, order="C", copy=True)
    w_diag = off_diagonal.diagonal().copy()
    np.fill_diagonal(off_diagonal, 0.0)
    return off_diagonal, w_diag


@contextlib.contextmanager
def _diagonal_zeroed_in_place(W):
    """W with its diagonal set to 0 inside the block and restored bit for bit after it (for a W the caller
    owns and nobody else reads meanwhile: the GP likelihood's temporary); yields (that W, diag(W)).  A read-only
    W is copied instead."""
    if not W.flags.writeable:
        off_diagonal, w_diag = _weights_without_diagonal(W)
        yield off_diagonal, w_diag
        return
    w_diag = W.diagonal().copy()
    np.fill_diagonal(W, 0.0)
    try:
        yield W, w_diag
    finally:
        np.fill_diagonal(W, w_diag)

class FMKernel(_ModulatedKernel):
    """The generalised FM family of Prop. 1: f(λ, s) = Σ_n a_n (1 + βλ + α·d^t)^(−n).

    Parameters
    ----------
    space : Space
        Must have at least one discrete variable (with none, the FM kernel
        does not depend on the continuous part; use ``RBF``/``Matern52``).
    coefficients : sequence of float, default (1.0,)
        a_1..a_N ≥ 0 (not all zero).  ``(1.0,)`` gives ModLap.
    exponent : float in (0, 2], default 2
        t, the power of the ARD distance.
    lengthscale : float or array of shape (n_continuous,)
        θ_d of the ARD distance.
    alpha, beta : float or array of shape (n_discrete,)
        α_p (modulation strength) and β_p (graph smoothing) per discrete variable.
    variance : float
        Average prior variance at zero continuous distance (module docstring); with ``unit_diagonal`` the
        prior variance at every point.
    *_bounds : (low, high) or "fixed"
    backend : {"auto", "numpy", "cpp", "cuda"}
    unit_diagonal : bool, default False
        Normalise every factor to a unit diagonal (module docstring, "Unit diagonal"), so that the prior
        variance does not depend on a state's degree in its graph.  False: the paper's Eq. 5 as it stands.
        BO (``fastfm.Optimizer``, ``minimize``) builds its FM kernels with True.
    """

    # class default: also what a kernel pickled before the option had
    unit_diagonal = False

    def __init__(self, space, coefficients=(1.0,), exponent=2.0, lengthscale=0.5, alpha=1.0, beta=1.0,
                 variance=1.0, lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS,
                 beta_bounds=BETA_BOUNDS, variance_bounds=VARIANCE_BOUNDS, backend="auto", unit_diagonal=False):
        super().__init__(space, backend)
        self.unit_diagonal = bool(unit_diagonal)
        if space.n_discrete == 0:
            raise SpaceDefinitionError(
                f"{type(self).__name__} needs at least one discrete variable; the space has none "
                "(use RBF or Matern52 for purely continuous spaces)")
        self.coefficients = coefficients
        self.exponent = exponent
        self.lengthscale = lengthscale
        self.alpha = alpha
        self.beta = beta
        self.variance = variance
        self.lengthscale_bounds = lengthscale_bounds
        self.alpha_bounds = alpha_bounds
        self.beta_bounds = beta_bounds
        self.variance_bounds = variance_bounds

    @property
    def _modulation(self):
        return Modulation(LAP_FAMILY, tuple(self.coefficients), self.exponent)

    def _hyperparameter_specs(self):
        return [("lengthscale", self.space.n_continuous), ("alpha", self.space.n_discrete),
                ("beta", self.space.n_discrete), ("variance", 1)]

    def _static_key(self):
        return (tuple(np.atleast_1d(np.asarray(self.coefficients, dtype=float))), float(self.exponent),
                bool(self.unit_diagonal))

    def _unit_tables(self):
        """``_unit_diagonal_tables`` at the current β, or None (no scaling: off, or w ≡ 1)."""
        if not self.unit_diagonal:
            return None
        return self._memo("unit_tables", lambda: _unit_diagonal_tables(self.space, self._modulation, self._betas()))

    def _unit_weights(self, D):
        """w(x) per row of D (module docstring, "Unit diagonal"), or None when no scaling applies."""
        tables = self._unit_tables()
        # w alone (the acquisition asks at every batch of candidates and at the training points): not ∂log w/∂log β
        return None if tables is None else _row_weight_values(tables[0], D)

    def _compute_args(self):
        return (self.space.packed_spectra, self._values("alpha", self.space.n_discrete), self._betas(),
                self._effective_variance(), self._modulation)

    def _scaled(self, X):
        C, D = self._split(X)
        return np.ascontiguousarray(C / self._values("lengthscale", self.space.n_continuous)), D

    def _gram(self, X, Y):
        C1, D1 = self._scaled(X)
        C2, D2 = (None, None) if Y is None else self._scaled(Y)
        K = self._backend_call("fm_gram", C1, D1, C2, D2, *self._args())
        return self._scale_by_weights(K, D1, D1 if Y is None else D2)

    def _scale_by_weights(self, K, D1, D2):
        """K ∘ w(D1) w(D2)ᵀ in place (K of shape (N, M) or (N, M, ...)); K as it is without scaling."""
        w1 = self._unit_weights(D1)
        if w1 is None:
            return K
        return _scale_in_place(K, w1, w1 if D2 is D1 else self._unit_weights(D2))

    def _diag(self, X):
        if self.unit_diagonal:      # k̃(x, x) = variance (module docstring; w ≡ 1 gives it up to rounding)
            return np.full(len(X), float(self.variance))
        _, D = self._split(X)
        return self._effective_variance() * self._diag_factors(D)

    def neighbour_gram_batch(self, X0, X, owner, var_index, new_state):
        C0, D0 = self._scaled(self._check_X(X0, "X0"))
        C, D = self._scaled(self._check_X(X))
        owner = np.ascontiguousarray(owner, dtype=np.int64)
        var_index = np.ascontiguousarray(var_index, dtype=np.int64)
        new_state = np.ascontiguousarray(new_state, dtype=np.int64)
        P = self.space.n_discrete
        if np.any(owner < 0) or np.any(owner >= len(C0)):
            raise ValueError(f"owner must index rows of X0 (0..{len(C0) - 1}), got {owner!r}")
        if np.any(var_index < 0) or np.any(var_index >= P):
            raise ValueError(f"var_index must lie in [0, {P - 1}], got {var_index!r}")
        if np.any(new_state < 0) or np.any(new_state >= self.space.n_states[var_index]):
            raise ValueError(f"new_state holds a state index outside its variable's range: {new_state!r}")
        backend = self._backend_module()
        if hasattr(backend, "fm_neighbour_gram_batch"):
            K = backend.fm_neighbour_gram_batch(C0, D0, C, D, owner, var_index, new_state, *self._args())
        else:
            # a backend with only the one-point form: one call per base point
            single = backend_function(backend, "fm_neighbour_gram")
            K = np.empty((len(owner), C.shape[0]))
            for s in np.unique(owner):
                rows = np.flatnonzero(owner == s)
                K[rows] = single(C0[s], D0[s], C, D, var_index[rows], new_state[rows], *self._args())
        if self._unit_tables() is None:
            return K
        D_neighbours = D0[owner].copy()
        D_neighbours[np.arange(len(owner)), var_index] = new_state
        return self._scale_by_weights(K, D_neighbours, D)

    def _gram_and_input_gradient(self, X1, X2):
        C1, D1 = self._scaled(X1)
        C2, D2 = self._scaled(X2)
        K, dK = self._backend_call("fm_cross_gradient", C1, D1, C2, D2, *self._args())
        dK = dK / self._values("lengthscale", self.space.n_continuous)[None, None, :]
        w1 = self._unit_weights(D1)
        if w1 is None:
            return K, dK
        w2 = self._unit_weights(D2)
        return _scale_in_place(K, w1, w2), _scale_in_place(dK, w1, w2)

    def _full_reduction(self, X, W):
        return self._reduction_split_at_the_diagonal(X, W, symmetric_weights=False)

    def _full_reduction_symmetric(self, X, W):
        return self._reduction_split_at_the_diagonal(X, W, symmetric_weights=True)

    def _reduction_split_at_the_diagonal(self, X, W, symmetric_weights):
        """The backend sums the a ≠ b pairs, ``_add_zero_distance_share`` the a = b ones (no cancellation
        in the β gradients there, see ``_zero_distance_tables``); W itself is not modified."""
        W_off, w_diag = _weights_without_diagonal(W)
        _, D = self._split(X)
        beta_start = self.space.n_continuous + self.space.n_discrete   # after [log θ | log α]
        tables = self._unit_tables()
        if tables is None:
            vector = self._reduction("fm_grad_reduction", X, W_off, symmetric_weights=symmetric_weights)
            return self._add_zero_distance_share(vector, beta_start, D, w_diag)
        # unit diagonal: the a ≠ b pairs by _unit_diagonal_reduction; the a = b pairs have k̃_aa = variance,
        # whose only derivative is the log-variance one
        w, G = _row_weights(tables, D)
        C, _ = self._scaled(X)
        vector = _unit_diagonal_reduction(
            lambda scaled: self._reduction("fm_grad_reduction", X, scaled, symmetric_weights=symmetric_weights),
            lambda rows: self._backend_call("fm_gram", C[rows], D[rows], C, D, *self._args()),
            W_off, w, G, beta_start, symmetric_weights)
        vector[-1] += float(self.variance) * float(np.sum(w_diag))
        return vector

    def _low_rank_reduction(self, X, U, Z):
        """``_full_reduction`` with W = U Zᵀ (U, Z of shape (N, r)), never forming W (fastfm.gp.solvers.cg).

        Here the a = b pairs stay in the backend's sums (splitting them off needs W): the nominal β
        gradients then carry rounding of the size of ε Σ_a |W_aa K_aa ∂log c_p/∂log β_p|, far below
        the noise of the stochastic estimator these weights come from."""
        _, D = self._split(X)
        tables = self._unit_tables()
        if tables is None:
            return self._reduction("fm_grad_reduction_low_rank", X, U, Z)
        # unit diagonal (see _reduction_split_at_the_diagonal), every pair in the sums: Σ_ab (UZᵀ)_ab k̃_ab g(a)
        # = Σ_a g(a) U_a·(k̃ Z)_a, and the same with U and Z swapped for g(b)
        from .matvec import kernel_matvec
        w, G = _row_weights(tables, D)
        vector = self._reduction("fm_grad_reduction_low_rank", X, U * w[:, None], Z * w[:, None])
        per_point = np.sum(U * kernel_matvec(self, X, Z), axis=1) + np.sum(Z * kernel_matvec(self, X, U), axis=1)
        beta_start = self.space.n_continuous + self.space.n_discrete
        vector[beta_start:beta_start + G.shape[1]] += per_point @ G
        return vector

    def _reduction(self, function_name, X, *weights, symmetric_weights=False):
        """Full-length Σ W ∂K/∂θ from the backend function ``function_name`` taking (C, D, *weights, ...)."""
        C, D = self._scaled(X)
        extra = (True,) if symmetric_weights else ()
        g_ls, g_alpha, g_beta, g_var = self._backend_call(function_name, C, D, *weights, *self._args(), *extra)
        return _fm_reduction_vector(g_ls, g_alpha, g_beta, g_var, self._normaliser()[1])

    def _likelihood_terms(self, X):
        return _FMLikelihoodTerms(self, X)

    def _device_module(self, X):
        # the device-resident likelihood itself is _FMLikelihoodTerms' (gram_on_device, reduction_on_device);
        # the unit-diagonal scaling is applied on the host (a GPU Gram then comes back to it)
        if self._unit_tables() is not None:
            return None
        _, D = self._split(X)
        return gpu_module_for(self._backend_module(), "fm_gram", (None, D, None, None, self.space.packed_spectra))

    def _full_gradient(self, X):
        from .._backends import numpy_backend
        C, D = self._scaled(X)
        K, dK = numpy_backend.fm_gram_gradient(C, D, *self._args())
        P, Dc = self.space.n_discrete, self.space.n_continuous
        _, dlog_c = self._normaliser()
        dK[:, :, Dc + P:Dc + 2 * P] -= dlog_c[None, None, :] * K[:, :, None]
        _set_zero_distance_beta_derivatives(dK[:, :, Dc + P:Dc + 2 * P], K, self._zero_distance_log_derivatives(D))
        tables = self._unit_tables()
        if tables is None:
            return K, dK
        w, G = _row_weights(tables, D)
        K, dK = _scale_in_place(K, w, w), _scale_in_place(dK, w, w)
        dK[:, :, Dc + P:Dc + 2 * P] += K[:, :, None] * (G[:, None, :] + G[None, :, :])
        diagonal = np.arange(len(D))
        dK[diagonal, diagonal, Dc + P:Dc + 2 * P] = 0.0     # k̃_aa = variance: no β derivative
        return K, dK


def _fm_reduction_vector(g_lengthscale, g_alpha, g_beta, g_variance, dlog_normaliser):
    """[log θ | log α | log β | log variance] gradients from the backend's sums.

    σ² = variance / Π c_p(β_p) (module docstring), so moving β_p also moves σ²: the β gradient gets
    −∂log Π c_p/∂log β_p times the σ² one.
    """
    g_beta = np.asarray(g_beta) - dlog_normaliser * g_variance
    return np.concatenate([g_lengthscale, g_alpha, g_beta, [g_variance]])


class _FMLikelihoodTerms:
    """``Kernel._likelihood_terms`` of an FMKernel: θ ↦ backend arguments directly.

    Setting ``theta`` on a kernel validates it, rebuilds the hyperparameter
    attributes and re-keys the memo; then every call re-checks X and rescales
    C.  In a GP fit at N = 200 on the NAS-like space that bookkeeping was a
    third of each likelihood evaluation, and it holds the GIL the parallel
    restarts share.  Here X is checked and split once, and θ maps to the
    backend's arguments with a few array operations.

    When the backend runs this Gram on the GPU, ``device`` is the ``cuda``
    module and the GP evaluates its likelihood there (``gram_on_device``,
    ``reduction_on_device``: the Gram and the weights never cross the bus).
    """

    splits_diagonal = True   # reduction_on_device takes W with its diagonal zeroed, and that diagonal apart

    def __init__(self, kernel, X):
        X = kernel._check_X(X)
        space = kernel.space
        self.kernel = kernel
        self.C, self.D = kernel._split(X)
        self.n_continuous, self.n_discrete = space.n_continuous, space.n_discrete
        self.log_values = kernel._all_log_values()
        self.mask = kernel._free_mask()
        backend = kernel._backend_module()
        self.backend = backend
        self._gram = backend_function(backend, "fm_gram")
        self._grad_reduction = backend_function(backend, "fm_grad_reduction")
        # a unit-diagonal kernel's reduction with the weights' share in one compiled call, where the backend has it
        # (the C++ one), for large N: no N × N copy of W or the Gram (_unit_diagonal_reduction is the definition)
        self._unit_diagonal_reduction = getattr(backend, "fm_unit_diagonal_reduction", None)
        self.spectra = space.packed_spectra
        self.modulation = kernel._modulation
        self.device = kernel._device_module(X)
        self.unit_diagonal = bool(kernel.unit_diagonal)
        # False when every graph is vertex-transitive (nominal-only spaces): no unit-diagonal scaling, no
        # zero-distance β tables (looked up once here, not at every θ)
        self._has_deviations = _zero_distance_layout(space.packed_spectra, space.graphs).has_deviations
        self.scaled = self.unit_diagonal and self._has_deviations
        # the reduction is the backend's sums alone, assembled (_PartSum does it for several kernels at once)
        self.all_free = bool(np.all(self.mask))
        self.plain = not self._has_deviations and self.all_free
        self._normalisers = _normaliser_layout(space.packed_spectra)
        # its _UnitDiagonalRows and whether they share the normalisers' groups, built when first needed (AdditiveFM
        # scales its parts itself and hands gram_at their scalings)
        self._unit_rows, self._unit_rows_share = None, False
        # (scaled C, backend arguments, ∂log Π c_p/∂log β, β, diag K, scaling, unscaled K) at the last θ
        self._at = None

    def _values(self, theta):
        """The hyperparameter values [θ | α | β | variance] (not their logs) at free θ."""
        log_values = self.log_values.copy()
        log_values[self.mask] = theta
        Dc, P = self.n_continuous, self.n_discrete
        # exponentiated block by block, the variance by math.exp, as the fits were recorded (np.exp over the
        # whole vector can differ in the last bit: tests/test_golden.py)
        return np.concatenate([np.exp(log_values[:Dc]), np.exp(log_values[Dc:Dc + P]),
                               np.exp(log_values[Dc + P:Dc + 2 * P]), [math.exp(log_values[-1])]])

    def _arguments(self, theta):
        """(C / lengthscale, the backend's hyperparameter arguments, ∂log Π c_p/∂log β, β) at free θ."""
        return self._arguments_and_groups(theta)[0]

    def _arguments_and_groups(self, theta):
        """(``_arguments``, the normalisers' f at the groups at these β: ``NormaliserLayout.group_derivatives``)."""
        values = self._values(theta)
        betas = self.betas_of(values)
        derivatives = self._normalisers.group_derivatives(self.modulation, betas)
        normaliser, dlog_c = _normaliser_product(*self._normalisers.factors(self.modulation, betas, derivatives))
        return self.arguments_at(values, normaliser, dlog_c), derivatives

    def betas_of(self, values):
        """The β block of the hyperparameter values [θ | α | β | variance] (this kernel's order)."""
        Dc, P = self.n_continuous, self.n_discrete
        return values[Dc + P:Dc + 2 * P]

    def arguments_at(self, values, normaliser, dlog_c):
        """``_arguments`` from the hyperparameter values themselves (not their logs), with Π c_p and
        ∂log Π c_p/∂log β given (a kernel made of FM kernels computes its parts' normalisers together: AdditiveFM)."""
        Dc, P = self.n_continuous, self.n_discrete
        betas = self.betas_of(values)
        args = (self.spectra, values[Dc:Dc + P], betas, float(values[-1]) / normaliser, self.modulation)
        return np.ascontiguousarray(self.C / values[:Dc]), args, dlog_c, betas

    def gram(self, theta):
        # the normaliser and the unit-diagonal scaling evaluate f at the same groups and β: once for both
        arguments, derivatives = self._arguments_and_groups(theta)
        return self.gram_at(arguments, self._scaling_at(arguments[3], derivatives) if self.scaled else None)

    def _scaling_at(self, betas, group_derivatives=None):
        """Its ``_UnitDiagonalRows`` at ``betas`` (``group_derivatives``: its normalisers' at these β)."""
        if self._unit_rows is None:
            self._unit_rows = _UnitDiagonalRows([self.kernel.space], [self.D])
            self._unit_rows_share = self._unit_rows.shares_groups(self._normalisers)
        shared = group_derivatives if self._unit_rows_share else None
        return self._unit_rows.at(self.modulation, betas, shared)[0]

    def gram_at(self, arguments, scaling=None):
        """The Gram at ``arguments`` (``_arguments``, ``arguments_at``); ``reduction`` then differentiates it.
        ``scaling``: its ``_UnitDiagonalRows`` at these β when the caller has them (AdditiveFM: all its parts' at
        once)."""
        C, args, dlog_c, betas = arguments
        K = self._gram(C, self.D, None, None, *args)
        if scaling is None and self.scaled:
            scaling = self._scaling_at(betas)
        unscaled = None
        if scaling is not None:
            # the reduction's β share reads the unscaled K after the caller has overwritten it
            # (_SHARE_CACHE_ENTRIES): below that size the backend's K is kept and the scaled one is a new array
            if K.size <= _SHARE_CACHE_ENTRIES:
                unscaled, K = K, K * scaling[0][:, None]
                K *= scaling[0][None, :]
            else:
                _scale_in_place(K, scaling[0], scaling[0])
        # the caller may add noise to K's diagonal: its diagonal is kept apart
        self._at = (C, args, dlog_c, betas, K.diagonal().copy(), scaling, unscaled)
        return K

    def gram_on_device(self, theta):
        """``gram`` left on the GPU (a device array; ``device`` must be set)."""
        from .._backends import cuda_linalg
        C, args, dlog_c, betas = self._arguments(theta)
        K = self.device.fm_gram_device(C, self.D, *args)
        self._at = (C, args, dlog_c, betas, cuda_linalg.diagonal(K), None, None)
        return K

    def reduction(self, W):
        # W is the GP's temporary ½(ααᵀ − K⁻¹), so its diagonal is zeroed in place and restored, not copied
        with _diagonal_zeroed_in_place(W) as (W_off, w_diag):
            return self.reduction_without_diagonal(W_off, w_diag)

    def reduction_on_device(self, W_off, w_diag):
        """``reduction`` of W given as a device array with a zero diagonal and its diagonal (host)."""
        return self.reduction_without_diagonal(W_off, w_diag, self.device.fm_grad_reduction)

    def reduction_without_diagonal(self, W_off, w_diag, grad_reduction=None):
        """Σ W ∂K/∂θ at the last ``gram``'s θ from W's off-diagonal part and its diagonal.

        The a = b pairs are summed apart (FMKernel._reduction_split_at_the_diagonal)."""
        C, args, dlog_c, betas, K_diag, scaling, unscaled = self._at
        if scaling is not None:   # unit diagonal (FMKernel._reduction_split_at_the_diagonal)
            w, G = scaling
            beta_start = self.n_continuous + self.n_discrete
            if unscaled is None and grad_reduction is None and self._unit_diagonal_reduction is not None:
                # above _SHARE_CACHE_ENTRIES: the compiled call forms W ∘ wwᵀ pair by pair and recomputes the Gram a
                # tile at a time for the weights' share, where _unit_diagonal_reduction scales W in place and
                # recomputes it in blocks of rows in NumPy (a fifth of an AdditiveFM fit at N = 1,000 went there)
                *sums, per_point = self._unit_diagonal_reduction(C, self.D, W_off, w, *args, True)
                vector = _fm_reduction_vector(*sums, dlog_c)
                vector[beta_start:beta_start + G.shape[1]] += per_point @ G
            else:
                vector = _unit_diagonal_reduction(
                    lambda scaled: _fm_reduction_vector(*self._grad_reduction(C, self.D, scaled, *args, True), dlog_c),
                    (unscaled if unscaled is not None
                     else (lambda rows: self._gram(C[rows], self.D[rows], C, self.D, *args))),
                    W_off, w, G, beta_start, True)
            vector[-1] += float(np.sum(w_diag * K_diag))
            return vector[self.mask]
        # W is symmetric: the C++ backend reads one triangle of it
        g_ls, g_alpha, g_beta, g_var = (grad_reduction or self._grad_reduction)(C, self.D, W_off, *args, True)
        vector = _fm_reduction_vector(g_ls, g_alpha, g_beta, g_var, dlog_c)
        # the tables only where some e_p can be non-zero (they cost ~35 µs per θ)
        dlog_table = (_zero_distance_tables(self.kernel.space, self.modulation, betas)[1]
                      if self._has_deviations else None)
        _add_zero_distance_share(vector, self.n_continuous + self.n_discrete, self.D, w_diag * K_diag, dlog_table)
        return vector[self.mask]


class ModLap(FMKernel):
    """FM kernel with f(λ, s) = 1/(1 + βλ + α d²): the paper's recommended kernel.

    It obeys the frequency modulation principle (FM-P3), so every factor is
    non-negative and the kernel decreases as the continuous distance grows.
    """

    def __init__(self, space, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS,
                 beta_bounds=BETA_BOUNDS, variance_bounds=VARIANCE_BOUNDS, backend="auto", unit_diagonal=False):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds,
                         alpha_bounds, beta_bounds, variance_bounds, backend, unit_diagonal)


class ModDif(FMKernel):
    """FM kernel with f(λ, s) = exp(−(1 + α d²) β λ).

    Positive definite but it VIOLATES the frequency modulation principle: a
    factor can grow with the continuous distance.  Kept as the paper's ablation.
    """

    def __init__(self, space, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS,
                 beta_bounds=BETA_BOUNDS, variance_bounds=VARIANCE_BOUNDS, backend="auto", unit_diagonal=False):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds,
                         alpha_bounds, beta_bounds, variance_bounds, backend, unit_diagonal)

    @property
    def _modulation(self):
        return Modulation(DIFFUSION)


class GraphKernel(_ModulatedKernel):
    """The discrete-only graph kernel of the paper's baselines (Supp. Eq. 62):

        k_Lap(v, v') = σ² Π_p Σ_i U_p[v,i] (1 + β_p λ_i)^(−1) U_p[v',i]     (kind="laplacian")
        k_Dif(v, v') = σ² Π_p Σ_i U_p[v,i] exp(−β_p λ_i) U_p[v',i]          (kind="diffusion")

    It ignores the continuous columns.  ``variance`` follows the FM
    parameterisation (average prior variance).
    """

    def __init__(self, space, kind="laplacian", beta=1.0, variance=1.0, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        super().__init__(space, backend)
        if kind not in ("laplacian", "diffusion"):
            raise ValueError(f"kind must be 'laplacian' or 'diffusion', got kind={kind!r}")
        self.kind = kind
        self.beta = beta
        self.variance = variance
        self.beta_bounds = beta_bounds
        self.variance_bounds = variance_bounds

    @property
    def _modulation(self):
        return Modulation(DIFFUSION) if self.kind == "diffusion" else Modulation(LAP_FAMILY)

    def _hyperparameter_specs(self):
        return [("beta", self.space.n_discrete), ("variance", 1)]

    def _static_key(self):
        return (self.kind,)

    def _compute_args(self):
        P = self.space.n_discrete
        return (self.space.packed_spectra, np.zeros(P), self._betas(), self._effective_variance(), self._modulation)

    def _no_continuous(self, X):
        _, D = self._split(X)
        return np.zeros((X.shape[0], 0)), D

    def _gram(self, X, Y):
        C1, D1 = self._no_continuous(X)
        C2, D2 = (None, None) if Y is None else self._no_continuous(Y)
        return self._backend_call("fm_gram", C1, D1, C2, D2, *self._args())

    def _diag(self, X):
        _, D = self._split(X)
        return self._effective_variance() * self._diag_factors(D)

    def _gram_and_input_gradient(self, X1, X2):
        return self._gram(X1, X2), np.zeros((X1.shape[0], X2.shape[0], self.space.n_continuous))

    def _full_reduction(self, X, W):
        C, D = self._no_continuous(X)
        # the a = b pairs apart, as FMKernel._reduction_split_at_the_diagonal
        W_off, w_diag = _weights_without_diagonal(W)
        _, _, g_beta, g_var = self._backend_call("fm_grad_reduction", C, D, W_off, *self._args())
        _, dlog_c = self._normaliser()
        vector = np.concatenate([np.asarray(g_beta) - dlog_c * g_var, [g_var]])   # [log β | log variance]
        return self._add_zero_distance_share(vector, 0, D, w_diag)

    def _full_gradient(self, X):
        from .._backends import numpy_backend
        C, D = self._no_continuous(X)
        K, dK = numpy_backend.fm_gram_gradient(C, D, *self._args())
        P = self.space.n_discrete
        _, dlog_c = self._normaliser()
        dK = dK[:, :, P:]  # drop the (meaningless) α block: [β (P), variance]
        dK[:, :, :P] -= dlog_c[None, None, :] * K[:, :, None]
        _set_zero_distance_beta_derivatives(dK[:, :, :P], K, self._zero_distance_log_derivatives(D))
        return K, dK


def _augment(C):
    """c̃ = (1, 2c − 1): bias term plus continuous inputs centred on [−1, 1]."""
    return np.hstack([np.ones((C.shape[0], 1)), 2.0 * C - 1.0])


def arcsine_kernel(A1, A2, sigma):
    """k_NN of GPML Eq. 4.29 on augmented inputs with Σ = diag(sigma), and its parts.

    Returns (k, r, dot, n1, n2) with r = 2 ã1ᵀΣã2 / sqrt((1 + 2ã1ᵀΣã1)(1 + 2ã2ᵀΣã2)).
    """
    dot = 2.0 * (A1 * sigma) @ A2.T
    n1 = 1.0 + 2.0 * np.einsum("ij,j,ij->i", A1, sigma, A1)
    n2 = 1.0 + 2.0 * np.einsum("ij,j,ij->i", A2, sigma, A2)
    r = np.clip(dot / np.sqrt(n1[:, None] * n2[None, :]), -1.0, 1.0)
    return (2.0 / np.pi) * np.arcsin(r), r, dot, n1, n2


class ModNN(_ModulatedKernel):
    """Non-stationary FM kernel (paper §3.5): f = 1/(2 + βλ − k_NN(c, c')).

    k_NN is the arcsine ("neural network") kernel of GPML Eq. 4.29 on the
    augmented input c̃ = (1, 2c − 1) with diagonal covariance Σ
    (``nn_variance``, one entry for the bias and one per continuous dim).
    Equivalently, ModLap's factor with α = 1 and the continuous argument
    s = 1 − k_NN ∈ [0, 2], which is how the backends evaluate it.
    """

    def __init__(self, space, nn_variance=1.0, beta=1.0, variance=1.0, nn_variance_bounds=(1e-3, 1e3),
                 beta_bounds=BETA_BOUNDS, variance_bounds=VARIANCE_BOUNDS, backend="auto"):
        super().__init__(space, backend)
        if space.n_discrete == 0:
            raise SpaceDefinitionError("ModNN needs at least one discrete variable; the space has none")
        self.nn_variance = nn_variance
        self.beta = beta
        self.variance = variance
        self.nn_variance_bounds = nn_variance_bounds
        self.beta_bounds = beta_bounds
        self.variance_bounds = variance_bounds

    _modulation = Modulation(LAP_FAMILY)

    def _hyperparameter_specs(self):
        return [("nn_variance", self.space.n_continuous + 1), ("beta", self.space.n_discrete), ("variance", 1)]

    def _compute_args(self):
        P = self.space.n_discrete
        return (self.space.packed_spectra, np.ones(P), self._betas(), self._effective_variance(), self._modulation)

    def _argument(self, X, Y):
        C1, D1 = self._split(X)
        A1 = _augment(C1)
        if Y is None:
            A2, D2 = A1, None
        else:
            C2, D2 = self._split(Y)
            A2 = _augment(C2)
        sigma = self._values("nn_variance", self.space.n_continuous + 1)
        k, r, dot, n1, n2 = arcsine_kernel(A1, A2, sigma)
        return 1.0 - k, D1, D2, (A1, sigma, r, n1)

    def _gram(self, X, Y):
        R, D1, D2, _ = self._argument(X, Y)
        return self._backend_call("fm_gram_from_argument", np.ascontiguousarray(R), D1, D2, *self._args())

    def _diag(self, X):
        C, D = self._split(X)
        A = _augment(C)
        sigma = self._values("nn_variance", self.space.n_continuous + 1)
        q = 2.0 * np.einsum("ij,j,ij->i", A, sigma, A)
        k_self = (2.0 / np.pi) * np.arcsin(np.clip(q / (1.0 + q), -1.0, 1.0))
        # s = 1 − k_NN(c, c) varies per point, so evaluate each factor on the diagonal pair
        out = np.full(X.shape[0], self._effective_variance())
        betas = self._betas()
        for p, spectrum in enumerate(self.space.graphs):
            f = self._modulation.value(spectrum.group_values[None, :], (1.0 - k_self)[:, None], betas[p])
            weights = np.repeat(f, np.diff(spectrum.group_starts), axis=1)       # (N, n)
            U = spectrum.eigenvectors[D[:, p]]                                  # (N, n)
            out *= np.sum(U * U * weights, axis=1)
        return out

    def _dR_dlog_sigma(self, A, sigma, r, n):
        """∂R/∂log Σ_j for R = 1 − k_NN, shape (N, N, Dc+1) built one j at a time by the caller."""
        scale = (2.0 / np.pi) / np.sqrt(np.maximum(1.0 - r * r, 1e-300))
        sq = np.sqrt(n[:, None] * n[None, :])
        for j in range(A.shape[1]):
            a = A[:, j]
            # r = dot/√(n1 n2): ∂r/∂Σ_j = 2 a_j a'_j/√(n1n2) − r(a_j²/n1 + a'_j²/n2)
            dr = 2.0 * np.outer(a, a) / sq - r * (a[:, None] ** 2 / n[:, None] + a[None, :] ** 2 / n[None, :])
            yield -scale * dr * sigma[j]

    def _gram_and_input_gradient(self, X1, X2):
        from .._backends import numpy_backend
        C1, D1 = self._split(X1)
        C2, D2 = self._split(X2)
        A1, A2 = _augment(C1), _augment(C2)
        sigma = self._values("nn_variance", self.space.n_continuous + 1)
        k, r, dot, n1, n2 = arcsine_kernel(A1, A2, sigma)
        R = 1.0 - k
        spectra, alphas, betas, variance, modulation = self._args()
        Fs, dFs = [], []
        for p in range(self.space.n_discrete):
            F, dF, _ = numpy_backend._factor(spectra, p, D1[:, p], D2[:, p], R, betas[p], modulation, True)
            Fs.append(F); dFs.append(dF)
        others = numpy_backend._products_of_others(Fs)
        K = variance * others[0] * Fs[0]
        dK_dR = sum(variance * others[p] * dFs[p] for p in range(len(Fs)))
        # R = 1 − (2/π) arcsin(r), r = 2ã1ᵀΣã2/√(n1 n2), ã = (1, 2c − 1): ∂ã_j/∂c_d = 2 for j = d + 1
        dk_dr = (2.0 / np.pi) / np.sqrt(np.maximum(1.0 - r * r, 1e-300))
        sq = np.sqrt(n1[:, None] * n2[None, :])
        dK = np.empty(K.shape + (self.space.n_continuous,))
        for d in range(self.space.n_continuous):
            j = d + 1
            dr = 2.0 * sigma[j] * A2[None, :, j] / sq - r * 2.0 * sigma[j] * A1[:, None, j] / n1[:, None]
            dK[:, :, d] = -dK_dR * dk_dr * dr * 2.0
        return K, dK

    def _full_reduction(self, X, W):
        R, D, _, (A, sigma, r, n) = self._argument(X, None)
        g_alpha, g_beta, g_var, omega = self._backend_call(
            "fm_reduction_from_argument", np.ascontiguousarray(R), D, W, *self._args())
        g_sigma = np.array([np.sum(omega * dR) for dR in self._dR_dlog_sigma(A, sigma, r, n)])
        _, dlog_c = self._normaliser()
        return np.concatenate([g_sigma, np.asarray(g_beta) - dlog_c * g_var, [g_var]])

    def _full_gradient(self, X):
        from .._backends import numpy_backend
        R, D, _, (A, sigma, r, n) = self._argument(X, None)
        args = self._args()
        N, P = X.shape[0], self.space.n_discrete
        K = numpy_backend.fm_gram_from_argument(R, D, None, *args)
        # dK/dR and dK/dlogβ via the reduction with unit weights on each pair would be
        # O(N⁴); instead use the per-factor derivatives through fm_gram_gradient's logic.
        spectra, alphas, betas, variance, modulation = args
        Fs, dFs, dFbs = [], [], []
        for p in range(P):
            F, dF, dFb = numpy_backend._factor(spectra, p, D[:, p], D[:, p], R, betas[p], modulation, True)
            Fs.append(F); dFs.append(dF); dFbs.append(dFb)
        others = numpy_backend._products_of_others(Fs)
        dK_dR = sum(variance * others[p] * dFs[p] for p in range(P))
        dK = np.empty((N, N, A.shape[1] + P + 1))
        for j, dR in enumerate(self._dR_dlog_sigma(A, sigma, r, n)):
            dK[:, :, j] = dK_dR * dR
        _, dlog_c = self._normaliser()
        for p in range(P):
            dK[:, :, A.shape[1] + p] = variance * others[p] * dFbs[p] - dlog_c[p] * K
        dK[:, :, -1] = K
        return K, dK
