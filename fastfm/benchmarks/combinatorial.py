"""Combinatorial and mixed problems of 20–60 variables from the BO literature (issue 24).

* :class:`Contamination` — contamination control in a 25-stage food supply chain (Hu et al. 2010),
  as in BOCS (Baptista & Poloczek 2018) and COMBO (Oh et al. 2019): 25 binary variables.
* :class:`LABS` — low-autocorrelation binary sequences (Golay 1977; Packebusch & Mertens 2016):
  n = 30 spins by default.
* :class:`IsingSparsification` — Ising model sparsification (BOCS; COMBO): 24 binary edge variables
  of a 4×4 grid Ising model.
* :class:`MaxSATWeighted` — weighted MaxSAT on a random 3-CNF formula with a planted ("2-hidden")
  satisfying assignment (Achlioptas, Jia & Moore 2005), 60 binary variables by default; COMBO
  uses weighted MaxSAT instances of 28, 43 and 60 variables from the MaxSAT 2018 evaluation.
* :class:`Mixed10C20N` — synthetic, 10 continuous and 20 nominal variables: a shifted, rotated
  Ackley function plus a Potts-type energy with a planted zero.
* :class:`PestControl` — pest control over 25 stages (COMBO; CASMOPOLITAN, Wan et al. 2021; BODi): 25
  nominal variables of 5 values each.

Every objective is deterministic: the random instances (Monte-Carlo draws, couplings, clauses,
shifts) are drawn once from a fixed seed when the problem is built.  The optimum of each default
instance is known: planted (MaxSATWeighted, Mixed10C20N, exactly, for every seed), tabulated
(LABS), or found by exhaustive enumeration of every configuration (Contamination, IsingSparsification;
the enumeration is described in each class's docstring), except PestControl's (5^25 configs), whose
``best_known`` is the best value a long local search found.  ``best_known`` and ``best_known_source``
say where each value comes from.

References
----------
* Y. Hu, J. Hu, Y. Xu, F. Wang, R. Z. Cao, "Contamination control in food supply chain",
  Proc. Winter Simulation Conference, 2010.
* R. Baptista, M. Poloczek, "Bayesian optimization of combinatorial structures", ICML 2018
  (BOCS; code: github.com/baptistar/BOCS).
* C. Oh, J. Tomczak, E. Gavves, M. Welling, "Combinatorial Bayesian optimization using the graph
  Cartesian product", NeurIPS 2019 (COMBO; code: github.com/QUVA-Lab/COMBO).
* M. J. E. Golay, "Sieves for low autocorrelation binary sequences", IEEE Trans. Inf. Theory 23, 1977.
* T. Packebusch, S. Mertens, "Low autocorrelation binary sequences", J. Phys. A 49, 165001, 2016.
* D. Achlioptas, H. Jia, C. Moore, "Hiding satisfying assignments: two are better than one",
  AAAI 2004 / J. Artif. Intell. Res. 24, 2005.
* D. H. Ackley, "A connectionist machine for genetic hillclimbing", Kluwer, 1987.
* X. Wan, V. Nguyen, H. Ha, B. Ru, C. Lu, M. A. Osborne, "Think global and act local: Bayesian
  optimisation over high-dimensional categorical and mixed search spaces", ICML 2021 (CASMOPOLITAN).
* A. Deshwal, S. Ament, M. Balandat, E. Bakshy, J. R. Doppa, D. Eriksson, "Bayesian optimization over
  high-dimensional combinatorial spaces via dictionary-based embeddings", AISTATS 2023 (BODi).
"""
import numpy as np

from ..space import Categorical, Real, Space
from .base import Problem

__all__ = ["Contamination", "LABS", "IsingSparsification", "MaxSATWeighted", "Mixed10C20N", "PestControl"]


def _binary_space(names):
    """A space of binary variables, each a Categorical with choices [0, 1] (state index = value)."""
    return Space([Categorical(name, [0, 1]) for name in names])


def _config_from_bits(names, bits):
    """The config {name: bit} of a 0/1 sequence (a string of '0'/'1' or a sequence of ints)."""
    return {name: int(bit) for name, bit in zip(names, bits)}


class _LiteratureProblem(Problem):
    """A problem with a documented reference value.

    Attributes
    ----------
    best_known : float or None
        The best value known for this instance: equal to :attr:`optimum` where that is known,
        None where nothing is recorded (an instance other than the documented default).
    best_known_source : str
        Where :attr:`best_known` comes from (a paper, a planted solution, an enumeration).
    best_known_config : dict or None
        A config attaining :attr:`best_known` (:attr:`optimal_config` where the optimum is known).
    """

    best_known = None
    best_known_source = ""
    best_known_config = None

    def _set_reference(self, optimum, optimal_config, source):
        """Record a known optimum (or None) on the instance."""
        self.optimum = None if optimum is None else float(optimum)
        self.optimal_config = None if optimal_config is None else dict(optimal_config)
        self.best_known = self.optimum
        self.best_known_config = self.optimal_config
        self.best_known_source = source

    def _set_best_known(self, value, config, source):
        """Record a best-known value and a config attaining it where no optimum is known (``optimum`` None)."""
        self._set_reference(None, None, source)
        self.best_known = float(value)
        self.best_known_config = dict(config)


# --------------------------------------------------------------------------
# Contamination control
# --------------------------------------------------------------------------
class Contamination(_LiteratureProblem):
    """Contamination control of a food supply chain (Hu et al. 2010; BOCS; COMBO), 25 binary variables.

    Stage i = 1..25 of the chain either takes a prevention measure (``stage<i>`` = 1, cost 1) or not.
    The contaminated fraction Z_i evolves, for each of T = 100 Monte-Carlo samples, as

        Z_i = Λ_i (1 − x_i) (1 − Z_{i−1}) + (1 − Γ_i x_i) Z_{i−1},   Z_0 ~ Beta(1, 30),
        Λ_i ~ Beta(1, 17/3) (contamination rate),  Γ_i ~ Beta(1, 3/7) (restoration rate),

    and the objective (COMBO's ``_contamination`` plus its L1 term) is

        f(x) = Σ_i x_i − ρ Σ_i [ P̂(Z_i < U) − (1 − ε) ] + λ ‖x‖_1,

    with U = 0.1, ε = 0.05, ρ = 1 and P̂ the fraction of the T samples.  The draws are COMBO's
    ``generate_contamination_dynamics(seed)``: ``np.random.RandomState(seed).beta(...)`` for Z_0, Λ and
    Γ, each from a freshly seeded generator (COMBO's quirk, kept so that the instances agree with
    COMBO's and with the implementations copied from it); ``RandomState`` streams are frozen by
    NumPy, so the instance is the same on every NumPy version.  BOCS uses the same model with
    Z_i ≤ U (the same almost surely) and its own Matlab streams.

    Parameters
    ----------
    l1_penalty : float, default 1e-2
        λ; BOCS and COMBO report λ = 0, 1e-4 and 1e-2 (BOCS also 1).
    seed : int, default 0
        Seed of the Monte-Carlo draws.

    Notes
    -----
    Optimum of the default instance (seed 0), exact: found by enumerating all 2^25 configs (the
    chain's states for every prefix of decisions, stage by stage, in NumPy; about a minute), which
    gives for each number k of prevention stages the largest total count m of samples below U;
    then f* = min_k (1 + λ) k − m_k / T + 25 (1 − ε): k = 16, m = 1859 for λ < 1, k = 0, m = 49 for λ = 1.

    ======  ========  ==================================
    λ       optimum   recorded here
    ======  ========  ==================================
    0       21.16     yes (``l1_penalty=0``)
    1e-4    21.1616   yes
    1e-2    21.32     yes (the default)
    1       23.26     yes (k = 0: no prevention at all)
    ======  ========  ==================================

    The k = 16 minimiser (stages 1, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 23, 24) is
    recorded; others may tie.  Other seeds and penalties have ``optimum = None``.  COMBO's table
    reports means over random instances (different seeds), which are not comparable to one instance.
    """

    name = "Contamination"
    n_stages = 25
    n_samples = 100         # T, COMBO's n_simulations
    upper_limit = 0.1       # U
    epsilon = 0.05
    rho = 1.0
    initial_beta = (1.0, 30.0)
    contamination_beta = (1.0, 17.0 / 3.0)
    restoration_beta = (1.0, 3.0 / 7.0)

    # seed 0: the exhaustive enumeration's minimiser and its optimum per λ (class docstring)
    _OPTIMAL_BITS = "1010110110110110110110110"
    _OPTIMA_SEED0 = {0.0: 21.16, 1e-4: 21.1616, 1e-2: 21.32, 1.0: 23.26}
    _OPTIMAL_BITS_BY_PENALTY = {0.0: _OPTIMAL_BITS, 1e-4: _OPTIMAL_BITS, 1e-2: _OPTIMAL_BITS, 1.0: "0" * 25}

    def __init__(self, l1_penalty=1e-2, seed=0):
        self.l1_penalty = float(l1_penalty)
        self.seed = int(seed)
        self.names = [f"stage{i}" for i in range(1, self.n_stages + 1)]
        self.space = _binary_space(self.names)
        # COMBO draws each array from a freshly seeded RandomState (see the class docstring)
        self.initial_fraction = np.random.RandomState(self.seed).beta(*self.initial_beta, size=(self.n_samples,))
        self.contamination_rates = np.random.RandomState(self.seed).beta(
            *self.contamination_beta, size=(self.n_stages, self.n_samples))
        self.restoration_rates = np.random.RandomState(self.seed).beta(
            *self.restoration_beta, size=(self.n_stages, self.n_samples))
        if self.seed == 0 and self.l1_penalty in self._OPTIMA_SEED0:
            self._set_reference(
                self._OPTIMA_SEED0[self.l1_penalty],
                _config_from_bits(self.names, self._OPTIMAL_BITS_BY_PENALTY[self.l1_penalty]),
                "exact: exhaustive enumeration of all 2^25 configs of the seed-0 instance (class docstring)")
        else:
            self._set_reference(None, None, "not established: only seed 0 with λ ∈ {0, 1e-4, 1e-2, 1} is recorded")

    def fractions_below_limit(self, X):
        """P̂(Z_i < U) for each stage: shape (n_points, n_stages), for 0/1 decisions X (n_points, n_stages)."""
        x = np.asarray(X, dtype=np.float64)
        Z = np.broadcast_to(self.initial_fraction, (x.shape[0], self.n_samples))
        counts = np.empty((x.shape[0], self.n_stages), dtype=np.int64)
        for i in range(self.n_stages):
            xi = x[:, i:i + 1]
            # same operations, in the same order, as COMBO's _contamination
            Z = self.contamination_rates[i] * (1.0 - xi) * (1.0 - Z) + (1.0 - self.restoration_rates[i] * xi) * Z
            counts[:, i] = np.count_nonzero(Z < self.upper_limit, axis=1)
        return counts / self.n_samples

    def _evaluate(self, X):
        # Categorical choices are [0, 1], so a state index is the decision itself
        constraints = self.fractions_below_limit(X) - (1.0 - self.epsilon)
        n_prevented = X.sum(axis=1)
        return n_prevented - self.rho * constraints.sum(axis=1) + self.l1_penalty * n_prevented


# --------------------------------------------------------------------------
# LABS
# --------------------------------------------------------------------------
# Optimal energies E_n and one optimal sequence ('+' = +1) for n = 3..30.  The energies are those of
# Packebusch & Mertens (2016, Table 1, which lists n ≤ 66); every entry here was re-derived by
# exhaustively enumerating all 2^(n−1) sequences with s_1 = +1 (a small C program, Gray-code order),
# which also gave the sequences.
_LABS_OPTIMA = {
    3: (1, "+--"), 4: (2, "+-++"), 5: (2, "+-+++"), 6: (7, "+-++++"), 7: (3, "+-++---"), 8: (8, "+-+--+++"),
    9: (12, "+-+--++++"), 10: (13, "+-+--+++++"), 11: (5, "+-++-+++---"), 12: (10, "+-+-++--++++"),
    13: (6, "+-+-++--+++++"), 14: (19, "+-+-++--++++++"), 15: (15, "+-+-++--++-----"),
    16: (24, "+-+--++---++++++"), 17: (32, "+--+-+--++-----++"), 18: (25, "++--+++-+--+-+++++"),
    19: (29, "++++-+-+----++--+--"), 20: (26, "+-+-++++-++++--+--++"), 21: (26, "+--+-+-+--++-------++"),
    22: (39, "+++---++-+-+--++-+++++"), 23: (47, "+-++--+-+-++---++++++++"),
    24: (36, "+--+--+-+-+------+++--++"), 25: (36, "+-++-++-+-+-++++++---++--"),
    26: (45, "+-+-+--+--++-+++++++---+++"), 27: (37, "+-++-+--+---+---+---++++---"),
    28: (50, "+-++-+--+---+---+---++++---+"), 29: (62, "+-++--+--+-+-+-------+++--+++"),
    30: (59, "+---++---+-+-+--+--+-----+++++"),
}


def labs_energy(spins):
    """E = Σ_{k=1}^{n−1} C_k², C_k = Σ_{i=1}^{n−k} s_i s_{i+k}, of ±1 sequences.

    Parameters
    ----------
    spins : array-like of shape (..., n), entries ±1

    Returns
    -------
    ndarray of shape (...), float64 (integer-valued)
    """
    s = np.asarray(spins, dtype=np.float64)
    n = s.shape[-1]
    energy = np.zeros(s.shape[:-1])
    for k in range(1, n):
        energy += np.sum(s[..., :-k] * s[..., k:], axis=-1) ** 2
    return energy


class LABS(_LiteratureProblem):
    """Low-autocorrelation binary sequences (Golay 1977; Packebusch & Mertens 2016).

    ``s1..sn`` ∈ {−1, +1} (Categorical, state 0 = −1, state 1 = +1); the objective is the energy

        E(s) = Σ_{k=1}^{n−1} C_k²,   C_k = Σ_{i=1}^{n−k} s_i s_{i+k},

    whose minimum maximises the merit factor F = n² / (2E).  E is invariant under reversing the
    sequence, negating it and negating every other spin, so each optimum comes with its images.

    Parameters
    ----------
    n : int, default 30
        Sequence length.  The optimum is recorded for 3 ≤ n ≤ 30; for n = 30 it is E = 59
        (F = 900/118 ≈ 7.627), as in Packebusch & Mertens (2016, Table 1).
    """

    name = "LABS"

    def __init__(self, n=30):
        self.n = int(n)
        if self.n < 2:
            raise ValueError(f"LABS needs n >= 2, got n={n!r}")
        self.names = [f"s{i}" for i in range(1, self.n + 1)]
        self.space = Space([Categorical(name, [-1, 1]) for name in self.names])
        if self.n in _LABS_OPTIMA:
            energy, sequence = _LABS_OPTIMA[self.n]
            self._set_reference(
                energy, {name: 1 if c == "+" else -1 for name, c in zip(self.names, sequence)},
                "Packebusch & Mertens (2016), Table 1; re-derived here by exhaustive enumeration (n <= 30)")
        else:
            self._set_reference(None, None, "not recorded here for n > 30: see Packebusch & Mertens (2016), Table 1")

    @property
    def merit_factor(self):
        """F = n² / (2 E*) of the recorded optimum, or None."""
        return None if self.optimum is None else self.n ** 2 / (2.0 * self.optimum)

    def _evaluate(self, X):
        return labs_energy(2.0 * X - 1.0)  # state index 0 → −1, 1 → +1


# --------------------------------------------------------------------------
# Ising sparsification
# --------------------------------------------------------------------------
def _grid_edges(n_side):
    """Edges (i, j) of the n_side × n_side grid, nodes numbered row-major: horizontal edges row by
    row, then vertical edges row by row."""
    horizontal = [(r * n_side + c, r * n_side + c + 1) for r in range(n_side) for c in range(n_side - 1)]
    vertical = [(r * n_side + c, (r + 1) * n_side + c) for r in range(n_side - 1) for c in range(n_side)]
    return np.array(horizontal + vertical, dtype=np.int64)


def _log_sum_exp(a, axis=0):
    """log Σ exp(a) along ``axis``, shifted by the maximum so that nothing overflows."""
    peak = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(peak, axis=axis) + np.log(np.sum(np.exp(a - peak), axis=axis))


class IsingSparsification(_LiteratureProblem):
    """Ising model sparsification (BOCS; COMBO), 24 binary edge variables of a 4×4 grid.

    The target p(z) ∝ exp(Σ_{ij} Θ_ij z_i z_j) = exp(2 Σ_{edges e=(i,j)} J_e z_i z_j) on spins
    z ∈ {−1, +1}^16 (BOCS's ``exp(z' Θ z)`` with a symmetric Θ); ``edge<e>`` = 1 keeps edge e in the
    approximation q_x (couplings x_e J_e), 0 removes it.  The objective is

        f(x) = KL(p ‖ q_x) + λ ‖x‖_1
             = 2 Σ_e (1 − x_e) J_e E_p[z_i z_j] + log Z_q(x) − log Z_p + λ ‖x‖_1,

    computed exactly by summing over all 2^16 spin states (BOCS's ``KL_divergence_ising``).
    The couplings are drawn as in BOCS's ``rand_ising_grid`` and COMBO's
    ``generate_ising_interaction``: ``|J_e|`` ~ U(0.05, 5) with a random sign, here from
    ``np.random.default_rng(seed)`` (signs first, then magnitudes).  Edge order: the 12 horizontal
    edges row by row, then the 12 vertical ones (COMBO maps BOCS's order to its own with
    ``_bocs_consistency_mapping``; the order does not change the problem).

    Parameters
    ----------
    l1_penalty : float, default 1e-2
        λ; BOCS and COMBO report λ = 0, 1e-4 and 1e-2.
    seed : int, default 0
        Seed of the couplings.

    Notes
    -----
    Optima of the seed-0 instance, exact: all 2^24 configs enumerated, with Z_q(x) from transfer
    matrices over the grid's rows (rows 1–2 with their edges, rows 2–3, and rows 3–4 each
    precomputed for every setting of their edges: 128 × 1024 × 128 products of 16-vectors and
    16 × 16 matrices, a few seconds); ``tests/benchmarks/test_large_problems.py`` repeats it.

    ======  ====================  ===================================================
    λ       optimum               minimiser (``edge1..edge24``)
    ======  ====================  ===================================================
    0       0                     every edge kept (KL = 0)
    1e-4    0.0024                every edge kept
    1e-2    0.209995402129245     100110100111111111111101 (next best 0.2102919)
    ======  ====================  ===================================================

    At λ ≤ 1e-4 the full model is optimal on this instance, so λ = 1e-2 (the default) is the
    interesting case.  Other seeds and penalties have ``optimum = None``.
    """

    name = "IsingSparsification"
    grid_side = 4
    coupling_range = (0.05, 5.0)
    # seed 0: the enumeration's minimiser (edge order of the class docstring) and its value, per λ
    _OPTIMA_SEED0 = {
        0.0: (0.0, "1" * 24),
        1e-4: (0.0024, "1" * 24),
        1e-2: (0.209995402129245, "100110100111111111111101"),
    }

    def __init__(self, l1_penalty=1e-2, seed=0):
        self.l1_penalty = float(l1_penalty)
        self.seed = int(seed)
        self.edges = _grid_edges(self.grid_side)
        n_edges, n_spins = len(self.edges), self.grid_side ** 2
        rng = np.random.default_rng(self.seed)
        signs = rng.choice([-1.0, 1.0], size=n_edges)
        self.couplings = signs * rng.uniform(*self.coupling_range, size=n_edges)
        self.names = [f"edge{e}" for e in range(1, n_edges + 1)]
        self.space = _binary_space(self.names)
        # z_i z_j of every edge in every spin state: shape (2^16, 24), bit i of the state index is z_i = +1
        states = np.arange(2 ** n_spins)[:, None]
        spins = 2.0 * ((states >> np.arange(n_spins)) & 1) - 1.0
        self._edge_products = spins[:, self.edges[:, 0]] * spins[:, self.edges[:, 1]]
        log_weights = 2.0 * self._edge_products @ self.couplings
        self.log_partition = float(_log_sum_exp(log_weights))
        # E_p[z_i z_j] of every edge
        self.edge_moments = self._edge_products.T @ np.exp(log_weights - self.log_partition)
        if self.seed == 0 and self.l1_penalty in self._OPTIMA_SEED0:
            optimum, bits = self._OPTIMA_SEED0[self.l1_penalty]
            self._set_reference(optimum, _config_from_bits(self.names, bits),
                                "exact: exhaustive enumeration of all 2^24 configs of the seed-0 instance "
                                "(class docstring)")
        else:
            self._set_reference(None, None, "not established: only seed 0 with λ ∈ {0, 1e-4, 1e-2} is recorded")

    def log_partition_sparsified(self, X, chunk=64):
        """log Z_q(x) for 0/1 edge masks X of shape (n_points, 24), exactly (2^16 states)."""
        X = np.asarray(X, dtype=np.float64)
        out = np.empty(X.shape[0])
        for start in range(0, X.shape[0], chunk):  # chunks keep the (2^16, chunk) table small
            masked = X[start:start + chunk] * self.couplings            # (chunk, 24)
            out[start:start + chunk] = _log_sum_exp(2.0 * self._edge_products @ masked.T, axis=0)
        return out

    def _evaluate(self, X):
        # Categorical choices are [0, 1], so a state index is the edge's bit itself
        removed = 2.0 * ((1.0 - X) * self.couplings) @ self.edge_moments
        kl = removed + self.log_partition_sparsified(X) - self.log_partition
        return kl + self.l1_penalty * X.sum(axis=1)


# --------------------------------------------------------------------------
# Weighted MaxSAT with a planted solution
# --------------------------------------------------------------------------
class MaxSATWeighted(_LiteratureProblem):
    """Weighted MaxSAT on a random 3-CNF formula with a planted ("2-hidden") solution.

    COMBO (Oh et al. 2019) benchmarks weighted MaxSAT instances of 28, 43 and 60 binary variables
    from the MaxSAT 2018 evaluation, whose optima are not all known.  This generator makes an
    instance of the same kind with a known optimum: draw a hidden assignment σ ∈ {0, 1}^n, then
    clauses of three distinct variables (uniform) and signs (uniform), keeping a clause only if it
    has one or two true literals under σ — it is then satisfied by σ and by its complement 1 − σ
    (the "2-hidden" construction of Achlioptas, Jia & Moore 2005, which, unlike keeping every
    clause σ satisfies, does not bias the literals towards σ).  Clause weights are integers drawn
    uniformly from 1..``max_weight``.  With W the total weight,

        f(x) = −Σ_c w_c [x satisfies clause c] / W  ∈ [−1, 0],

    so the optimum is exactly −1, attained by σ (``optimal_config``) and 1 − σ, for every seed.
    COMBO standardises the weights instead ((w − mean)/std), which shifts and scales f but keeps
    its minimisers; here the integer weights make every value an exact ratio of integers.

    Parameters
    ----------
    n_variables : int, default 60
    clause_ratio : float, default 4.26
        Clauses per variable: round(clause_ratio · n_variables) clauses (256 by default).  4.26 is
        the satisfiability threshold of uniform random 3-SAT, where instances are hardest.
    max_weight : int, default 10
    seed : int, default 0
        Seed of σ, the clauses and the weights (``np.random.default_rng``).
    """

    name = "MaxSATWeighted"

    def __init__(self, n_variables=60, clause_ratio=4.26, max_weight=10, seed=0):
        self.n_variables = int(n_variables)
        if self.n_variables < 3:
            raise ValueError(f"MaxSATWeighted needs at least 3 variables, got n_variables={n_variables!r}")
        self.n_clauses = int(round(clause_ratio * self.n_variables))
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        self.hidden_assignment = rng.integers(0, 2, size=self.n_variables)
        variables, signs = [], []
        while len(variables) < self.n_clauses:
            clause_variables = rng.choice(self.n_variables, size=3, replace=False)
            clause_signs = rng.integers(0, 2, size=3)          # 1: the literal is x_v, 0: it is ¬x_v
            n_true = np.count_nonzero(self.hidden_assignment[clause_variables] == clause_signs)
            if n_true in (1, 2):                                # satisfied by σ and by 1 − σ
                variables.append(clause_variables)
                signs.append(clause_signs)
        self.clause_variables = np.array(variables, dtype=np.int64)   # (n_clauses, 3)
        self.clause_signs = np.array(signs, dtype=np.int64)           # value of x_v making each literal true
        self.weights = rng.integers(1, int(max_weight) + 1, size=self.n_clauses).astype(np.float64)
        self.total_weight = float(np.sum(self.weights))
        self.names = [f"x{i}" for i in range(1, self.n_variables + 1)]
        self.space = _binary_space(self.names)
        self._set_reference(-1.0, _config_from_bits(self.names, self.hidden_assignment),
                            "exact: planted assignment satisfies every clause (class docstring)")

    def satisfied(self, X):
        """Which clauses each row of 0/1 assignments X (n_points, n_variables) satisfies: bool (n_points, n_clauses)."""
        X = np.asarray(X)
        return np.any(X[:, self.clause_variables] == self.clause_signs, axis=2)

    def _evaluate(self, X):
        # integer weights: the satisfied weight and W are exact in float64, so the optimum is exactly −1
        return -(self.satisfied(X.astype(np.int64)).astype(np.float64) @ self.weights) / self.total_weight


# --------------------------------------------------------------------------
# Mixed10C20N
# --------------------------------------------------------------------------
class Mixed10C20N(_LiteratureProblem):
    """A synthetic mixed problem: 10 continuous and 20 nominal variables, planted optimum 0.

    Continuous u ∈ [−1, 1]^10 (``x1..x10``), nominal h ∈ {0..4}^20 (``h1..h20``, Categorical);

        f(u, h) = A(4 R (u − u*(h))) + P(h),

    * A(z) = 20 (1 − exp(−0.2 sqrt(mean z²))) + e (1 − exp(mean cos 2πz − 1)), the Ackley
      function (Ackley 1987; as in the FM-kernel paper's Ackley5C) written so that A(0) = 0 exactly;
      A ≥ 0 with equality only at z = 0.  R is a random rotation (QR of a Gaussian matrix, signs
      fixed), so the continuous part is not separable.
    * u*(h) = c + Σ_{p=1}^{4} D_p[h_p]: the continuous optimum moves with the first four nominal
      variables (c and D on the grid of multiples of 1/16: ``|c|`` ≤ 1/2, ``|D|`` ≤ 1/16, so u* ∈ [−3/4, 3/4]).
    * P(h) = ¼ [Σ_p a_p[h_p] + Σ_{(p,q)∈G} B_pq[h_p, h_q]], a Potts-type energy on a graph G (a ring
      of the 20 variables plus 20 random chords): a, B ≥ 0 are uniform on [0, 1] except zeros at a
      planted h* (a_p[h*_p] = 0, B_pq[h*_p, h*_q] = 0) and, on the pairwise terms only, at a decoy
      h° that differs from h* in every variable (B_pq[h°_p, h°_q] = 0, a_p[h°_p] = 0.05): P(h°) = 0.25,
      a decoy as far from h* as can be (for seed 0 every one-variable change of h° raises P, to
      0.305 at least: a local minimum).

    Hence f ≥ 0, and f = 0 exactly at h = h*, u = u*(h*) (``optimal_config``; values on the 1/16 grid
    encode and decode without rounding), for every seed; it is the only zero, since the random
    entries of a and B are positive (almost surely) and A vanishes only at z = 0.

    Parameters
    ----------
    seed : int, default 0
        Seed of R, c, D, h*, h°, G, a and B (``np.random.default_rng``).
    """

    name = "Mixed10C20N"
    n_continuous = 10
    n_nominal = 20
    n_states = 5
    n_shifting = 4          # nominal variables that move the continuous optimum
    n_chords = 20
    scale = 4.0             # z = scale · R (u − u*): a few Ackley ripples per unit of u
    potts_weight = 0.25
    decoy_unary = 0.05

    def __init__(self, seed=0):
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        orthogonal, triangular = np.linalg.qr(rng.standard_normal((self.n_continuous, self.n_continuous)))
        self.rotation = orthogonal * np.sign(np.diag(triangular))  # uniform on the orthogonal group (Mezzadri 2007)
        # multiples of 1/16: exact in binary, so u* encodes and decodes without rounding
        self.centre = rng.integers(-8, 9, size=self.n_continuous) / 16.0
        self.shifts = rng.integers(-1, 2, size=(self.n_shifting, self.n_states, self.n_continuous)) / 16.0
        self.planted = rng.integers(0, self.n_states, size=self.n_nominal)
        self.decoy = (self.planted + rng.integers(1, self.n_states, size=self.n_nominal)) % self.n_states
        ring = [(p, (p + 1) % self.n_nominal) for p in range(self.n_nominal)]
        taken = {tuple(sorted(e)) for e in ring}
        chords = []
        while len(chords) < self.n_chords:
            chord = tuple(sorted(int(v) for v in rng.choice(self.n_nominal, size=2, replace=False)))
            if chord not in taken:
                taken.add(chord)
                chords.append(chord)
        self.potts_edges = np.array(ring + chords, dtype=np.int64)
        nodes = np.arange(self.n_nominal)
        self.unary = rng.random((self.n_nominal, self.n_states))
        self.unary[nodes, self.decoy] = self.decoy_unary
        self.unary[nodes, self.planted] = 0.0
        self.pairwise = rng.random((len(self.potts_edges), self.n_states, self.n_states))
        edge_index = np.arange(len(self.potts_edges))
        first, second = self.potts_edges[:, 0], self.potts_edges[:, 1]
        self.pairwise[edge_index, self.decoy[first], self.decoy[second]] = 0.0
        self.pairwise[edge_index, self.planted[first], self.planted[second]] = 0.0

        self.continuous_names = [f"x{i}" for i in range(1, self.n_continuous + 1)]
        self.nominal_names = [f"h{i}" for i in range(1, self.n_nominal + 1)]
        self.space = Space([Real(name, -1.0, 1.0) for name in self.continuous_names]
                           + [Categorical(name, list(range(self.n_states))) for name in self.nominal_names])
        u_star = self.continuous_optimum(self.planted[None, :])[0]
        self._set_reference(
            0.0, {**{name: float(v) for name, v in zip(self.continuous_names, u_star)},
                  **{name: int(v) for name, v in zip(self.nominal_names, self.planted)}},
            "exact: planted zero of two non-negative terms (class docstring)")

    def continuous_optimum(self, H):
        """u*(h) for nominal states H of shape (n_points, 20): shape (n_points, 10)."""
        H = np.asarray(H, dtype=np.int64)
        u_star = np.broadcast_to(self.centre, (H.shape[0], self.n_continuous)).copy()
        for p in range(self.n_shifting):
            u_star += self.shifts[p, H[:, p]]
        return u_star

    def potts_energy(self, H):
        """P(h) for nominal states H of shape (n_points, 20)."""
        H = np.asarray(H, dtype=np.int64)
        unary = self.unary[np.arange(self.n_nominal), H].sum(axis=1)
        edge_index = np.arange(len(self.potts_edges))
        pairwise = self.pairwise[edge_index, H[:, self.potts_edges[:, 0]], H[:, self.potts_edges[:, 1]]].sum(axis=1)
        return self.potts_weight * (unary + pairwise)

    @staticmethod
    def ackley(z):
        """A(z) of the class docstring for points z of shape (n_points, d); exactly 0 at z = 0."""
        return (20.0 * (1.0 - np.exp(-0.2 * np.sqrt(np.mean(z ** 2, axis=1))))
                + np.e * (1.0 - np.exp(np.mean(np.cos(2.0 * np.pi * z), axis=1) - 1.0)))

    def _evaluate(self, X):
        u = -1.0 + 2.0 * np.clip(X[:, :self.n_continuous], 0.0, 1.0)   # Real.decode_value for [−1, 1]
        H = X[:, self.n_continuous:].astype(np.int64)                   # Categorical 0..4: index = value
        z = self.scale * (u - self.continuous_optimum(H)) @ self.rotation.T
        return self.ackley(z) + self.potts_energy(H)


# --------------------------------------------------------------------------
# Pest control
# --------------------------------------------------------------------------
class PestControl(_LiteratureProblem):
    """Pest control over 25 stages, 5 nominal choices each (COMBO; CASMOPOLITAN; BODi).

    At stage i = 1..25 one of four pesticides is applied (``stage<i>`` = 1..4) or none (0).  For each of
    T = 100 Monte-Carlo samples the infested fraction Z_i evolves as

        Z_i = (1 − C_i) Z_{i−1}               with pesticide t (C_i ~ Beta(1, b_t)),
        Z_i = Λ_i (1 − Z_{i−1}) + Z_{i−1}       without (Λ_i ~ Beta(1, 17/3)),   Z_0 ~ Beta(1, 30),

    the pests growing tolerant of pesticide t with every use (b_t grows by r_t / 25 after each), and the
    cost is

        f(x) = Σ_{i: x_i > 0} p_t (1 − δ_t n_t / 25)  +  Σ_i P̂(Z_{i−1} > U),

    the prices p_t with a bulk discount δ_t by the number n_t of stages that use t, U = 0.1, P̂ the
    fraction of the T samples (COMBO's ``_pest_control_score``, Oh et al. 2019; its constants below).
    The draws follow the seeded form of CASMOPOLITAN (Wan et al. 2021) and BODi (Deshwal et al. 2023):
    each ``np.random.RandomState(seed).beta(...)`` from a freshly seeded generator, so the objective is
    deterministic and every stage sees the same Λ (COMBO's own draws were unseeded, a noisy objective).
    Pesticide t's control rates after k uses are drawn once per (t, k) when the problem is built.

    Parameters
    ----------
    seed : int, default 0
        Seed of the Monte-Carlo draws.

    Notes
    -----
    No optimum is proven (5^25 configs): ``optimum`` is None.  ``best_known`` of the default instance
    (seed 0) is 12.0316, pesticide 3 at stages 1-24 and none at stage 25 (``best_known_config``): the best
    value of three iterated local searches (steepest descent over the 100 one-stage changes, perturbed by
    redrawing 2-5 stages, a random restart at 2 % of the steps; 3 × 6 minutes), each of which reached it
    within 20 s and found nothing lower.  COMBO's table reports its noisy form (other draws at every
    evaluation), which is not comparable to one seeded instance.  Other seeds record nothing.
    """

    name = "PestControl"
    n_stages = 25
    n_choices = 5           # 0: no control, 1-4: pesticides
    n_samples = 100         # T
    upper_limit = 0.1       # U
    initial_beta = (1.0, 30.0)
    spread_beta = (1.0, 17.0 / 3.0)
    # per pesticide 1-4 (COMBO's constants)
    control_price = (1.0, 0.8, 0.7, 0.5)
    max_discount = (0.2, 0.3, 0.3, 0.0)
    control_beta = (2.0 / 7.0, 3.0 / 7.0, 3.0 / 7.0, 5.0 / 7.0)
    tolerance_rate = (1.0 / 7.0, 2.5 / 7.0, 2.0 / 7.0, 0.5 / 7.0)

    _BEST_KNOWN_SEED0 = (12.0316, "3" * 24 + "0",
                         "best found, not proven: iterated local searches of the seed-0 instance (class docstring)")

    def __init__(self, seed=0):
        self.seed = int(seed)
        self.names = [f"stage{i}" for i in range(1, self.n_stages + 1)]
        self.space = Space([Categorical(name, list(range(self.n_choices))) for name in self.names])
        self.initial_fraction = np.random.RandomState(self.seed).beta(*self.initial_beta, size=(self.n_samples,))
        self.spread_rates = np.random.RandomState(self.seed).beta(*self.spread_beta, size=(self.n_samples,))
        # control_rates[t - 1, k]: pesticide t's rates after k earlier uses; b_t grows by repeated addition, as
        # COMBO's loop adds it, so that each b is the reference's to the bit
        self.control_rates = np.empty((4, self.n_stages, self.n_samples))
        for t in range(4):
            beta = self.control_beta[t]
            for k in range(self.n_stages):
                self.control_rates[t, k] = np.random.RandomState(self.seed).beta(1.0, beta, size=(self.n_samples,))
                beta += self.tolerance_rate[t] / float(self.n_stages)
        if self.seed == 0:
            value, choices, source = self._BEST_KNOWN_SEED0
            self._set_best_known(value, zip(self.names, (int(c) for c in choices)), source)
        else:
            self._set_reference(None, None, "not established: only seed 0 has a recorded best-known value")

    def _evaluate(self, X):
        # Categorical choices are 0..4, so a state index is the action itself
        x = np.asarray(X).astype(np.int64)
        n = x.shape[0]
        rows = np.arange(n)
        totals = np.stack([np.count_nonzero(x == t, axis=1) for t in range(1, 5)], axis=1)    # n_t
        prices, discounts = np.asarray(self.control_price), np.asarray(self.max_discount) / float(self.n_stages)
        uses = np.zeros((n, 4), dtype=np.int64)
        price = np.zeros(n)
        above = np.zeros(n)
        Z = np.broadcast_to(self.initial_fraction, (n, self.n_samples))
        for i in range(self.n_stages):
            action = x[:, i]
            controlled = action > 0
            t = np.maximum(action - 1, 0)
            rates = self.control_rates[t, uses[rows, t]]
            grown = self.spread_rates * (1.0 - Z) + Z
            treated = (1.0 - rates) * Z
            stage_price = prices[t] * (1.0 - discounts[t] * totals[rows, t].astype(float))
            price += np.where(controlled, stage_price, 0.0)
            above += np.mean(Z > self.upper_limit, axis=1)
            Z = np.where(controlled[:, None], treated, grown)
            uses[rows[controlled], t[controlled]] += 1
        return price + above
