"""Tests of the many-variable problems of ``fastfm.benchmarks.combinatorial`` (issue 24): registry, spaces,
determinism, the recorded optima (planted ones exactly, LABS by brute force for small n, the Ising optimum
by a full enumeration), and agreement with straightforward re-implementations of the source papers' code."""
import itertools
import math

import numpy as np
import pytest

from fastfm.benchmarks import (LABS, LARGE_PROBLEMS, PROBLEMS, Contamination, IsingSparsification, MaxSATWeighted,
                               Mixed10C20N, PestControl, Problem, get_problem)
from fastfm.benchmarks.combinatorial import labs_energy
from fastfm.exceptions import InvalidValueError, OutOfBoundsError

LARGE = [Contamination, LABS, IsingSparsification, MaxSATWeighted, Mixed10C20N, PestControl]
# the problems whose default instance has a known optimum (PestControl's is a best-known value)
WITH_OPTIMUM = [cls for cls in LARGE if cls is not PestControl]
SIZES = {Contamination: 25, LABS: 30, IsingSparsification: 24, MaxSATWeighted: 60, Mixed10C20N: 30, PestControl: 25}


def _flip(x, *columns):
    """A copy of the 0/1 encoded point x with the given columns flipped."""
    y = x.copy()
    y[list(columns)] = 1.0 - y[list(columns)]
    return y


# ----------------------------------------------------------------------------- registry and spaces
def test_registry():
    assert LARGE_PROBLEMS == ("contamination", "labs", "isingsparsification", "maxsatweighted", "mixed10c20n",
                              "pestcontrol")
    assert not set(LARGE_PROBLEMS) & set(PROBLEMS)
    for cls in LARGE:
        for name in (cls.name, cls.name.lower(), cls.name.upper()):
            assert type(get_problem(name)) is cls
    assert get_problem("labs", n=20).n == 20
    with pytest.raises(ValueError, match="valid names.*func2c.*contamination.*mixed10c20n"):
        get_problem("maxsat")


@pytest.mark.parametrize("cls", LARGE)
def test_space_sizes_and_types(cls):
    problem = cls()
    assert isinstance(problem, Problem) and problem.minimize
    assert len(problem.space) == SIZES[cls] and 20 <= len(problem.space) <= 60
    discrete = problem.space.discrete_params
    if cls is Mixed10C20N:
        assert problem.space.n_continuous == 10 and len(discrete) == 20
        assert all((p.low, p.high, p.log) == (-1.0, 1.0, False) for p in problem.space.continuous_params)
        assert all(p.graph_kind == "complete" and p.choices == [0, 1, 2, 3, 4] for p in discrete)
    else:
        assert problem.space.n_continuous == 0 and len(discrete) == SIZES[cls]
        choices = {LABS: [-1, 1], PestControl: [0, 1, 2, 3, 4]}.get(cls, [0, 1])
        assert all(p.graph_kind == "complete" and p.choices == choices for p in discrete)


def test_sizes_follow_the_constructor_arguments():
    assert len(LABS(n=45).space) == 45
    problem = MaxSATWeighted(n_variables=28, clause_ratio=3.0)
    assert len(problem.space) == 28 and problem.n_clauses == 84 and len(problem.weights) == 84
    with pytest.raises(ValueError, match="n >= 2"):
        LABS(n=1)


# ----------------------------------------------------------------------------- determinism and the contract
@pytest.mark.parametrize("cls", LARGE)
def test_deterministic_and_encoded_agrees_with_configs(cls):
    problem = cls()
    X = problem.space.sample_encoded(20, seed=3)
    values = problem.evaluate_encoded(X)
    assert values.dtype == np.float64 and values.shape == (20,) and np.all(np.isfinite(values))
    configs = problem.space.decode(X)
    # the same config twice, on this instance and on a new one built with the same arguments
    again = cls()
    for config, value in zip(configs[:5], values[:5]):
        assert problem(config) == problem(config) == again(config)
        assert problem(config) == pytest.approx(value, rel=1e-12, abs=1e-14)
    np.testing.assert_array_equal(problem.evaluate_encoded(X), values)
    one = problem.evaluate_encoded(X[0])
    assert one.shape == (1,) and one[0] == pytest.approx(values[0], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("cls", LARGE)
def test_evaluation_runs_on_a_batch(cls):
    """Evaluation time sanity: a batch of configs runs (no timing threshold on a shared machine)."""
    problem = cls()
    values = problem.evaluate_encoded(problem.space.sample_encoded(64, seed=4))
    assert values.shape == (64,) and np.all(np.isfinite(values))


@pytest.mark.parametrize("cls, kwargs", [
    (Contamination, {"seed": 1}), (IsingSparsification, {"seed": 1}), (MaxSATWeighted, {"seed": 1}),
    (Mixed10C20N, {"seed": 1}), (PestControl, {"seed": 1}),
])
def test_seed_changes_the_instance(cls, kwargs):
    config = cls().space.sample(1, seed=5)[0]
    assert cls(**kwargs)(config) != cls()(config)


@pytest.mark.parametrize("cls, kwargs", [
    (Contamination, {"seed": 1}), (Contamination, {"l1_penalty": 0.5}),
    (IsingSparsification, {"seed": 2}), (IsingSparsification, {"l1_penalty": 1.0}), (LABS, {"n": 31}),
    (PestControl, {"seed": 1}),
])
def test_unrecorded_instances_have_no_optimum(cls, kwargs):
    problem = cls(**kwargs)
    assert problem.optimum is None and problem.optimal_config is None and problem.best_known is None
    assert "not" in problem.best_known_source


def test_bad_configs_raise_typed_errors():
    problem = Contamination()
    config = problem.space.sample(1, seed=0)[0]
    with pytest.raises(InvalidValueError, match="'stage3'"):
        problem({**config, "stage3": 2})
    labs = LABS()
    with pytest.raises(InvalidValueError, match="'s1'"):
        labs({**labs.optimal_config, "s1": 0})
    mixed = Mixed10C20N()
    with pytest.raises(OutOfBoundsError, match="'x1'"):
        mixed({**mixed.optimal_config, "x1": 1.5})


# ----------------------------------------------------------------------------- the recorded optima
@pytest.mark.parametrize("cls", WITH_OPTIMUM)
def test_optimal_config_attains_the_optimum(cls):
    problem = cls()
    assert problem.best_known == problem.optimum and problem.best_known_source
    assert problem.best_known_config == problem.optimal_config
    value = problem(problem.optimal_config)
    if cls in (MaxSATWeighted, Mixed10C20N, LABS):     # planted or integer-valued: exact
        assert value == problem.optimum
    else:                                               # enumerated: to rounding
        assert value == pytest.approx(problem.optimum, abs=1e-12)


@pytest.mark.parametrize("cls", WITH_OPTIMUM)
def test_random_configs_never_beat_the_optimum(cls):
    problem = cls()
    n = 400 if cls is IsingSparsification else 5000
    values = problem.evaluate_encoded(problem.space.sample_encoded(n, seed=6))
    assert values.min() >= problem.optimum - 1e-12
    assert values.min() > problem.optimum       # a random config is not optimal by chance


def test_planted_optima_are_exact_for_every_seed():
    for seed in range(3):
        maxsat, mixed = MaxSATWeighted(seed=seed), Mixed10C20N(seed=seed)
        assert maxsat.optimum == -1.0 and maxsat(maxsat.optimal_config) == -1.0
        assert mixed.optimum == 0.0 and mixed(mixed.optimal_config) == 0.0


@pytest.mark.parametrize("l1_penalty, optimum", [(0.0, 21.16), (1e-4, 21.1616), (1e-2, 21.32), (1.0, 23.26)])
def test_contamination_optimum_is_a_local_minimum(l1_penalty, optimum):
    """The enumerated optimum (class docstring): no change of one or two decisions improves it."""
    problem = Contamination(l1_penalty=l1_penalty)
    assert problem.optimum == optimum
    x = problem.space.encode(problem.optimal_config)
    neighbours = [_flip(x, i) for i in range(25)] + [_flip(x, i, j) for i, j in itertools.combinations(range(25), 2)]
    assert problem.evaluate_encoded(np.array(neighbours)).min() >= optimum - 1e-12
    # f = (1 + λ) k − (count below U)/T + 25 (1 − ε): k = 16 stages and m = 1859 samples for λ < 1
    k = sum(problem.optimal_config.values())
    assert k == (0 if l1_penalty == 1.0 else 16)
    m = round(100 * problem.fractions_below_limit(x[None, :]).sum())
    assert m == (49 if l1_penalty == 1.0 else 1859)
    assert (1 + l1_penalty) * k - m / 100 + 25 * 0.95 == pytest.approx(optimum, abs=1e-12)


def test_contamination_greedy_descent_does_not_beat_the_optimum():
    """Best-improvement bit flipping from random starts (the check behind the recorded value)."""
    problem = Contamination()
    rng = np.random.default_rng(7)
    for _ in range(10):
        x = rng.integers(0, 2, 25).astype(float)
        value = problem.evaluate_encoded(x)[0]
        while True:
            neighbours = np.array([_flip(x, i) for i in range(25)])
            values = problem.evaluate_encoded(neighbours)
            if values.min() >= value:
                break
            x, value = neighbours[np.argmin(values)], values.min()
        assert value >= problem.optimum - 1e-12


@pytest.mark.parametrize("n", range(3, 13))
def test_labs_tabulated_optimum_by_brute_force(n):
    problem = LABS(n=n)
    X = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(float)   # every sequence
    values = problem.evaluate_encoded(X)
    assert values.min() == problem.optimum
    assert problem(problem.optimal_config) == problem.optimum
    # the symmetries of E: reversal, negation, negating every other spin
    s = 2.0 * X - 1.0
    alternate = (-1.0) ** np.arange(n)
    for image in (s[:, ::-1], -s, s * alternate):
        np.testing.assert_array_equal(labs_energy(image), values)


def test_labs_default_optimum_and_merit_factor():
    problem = LABS()
    assert problem.optimum == 59.0 and problem.merit_factor == pytest.approx(7.627, abs=5e-4)
    # known sequence lengths with Barker sequences: E = (n − 1)/2 for n = 11, 13 (all |C_k| ≤ 1)
    assert LABS(n=13).optimum == 6.0 and LABS(n=11).optimum == 5.0


# ----------------------------------------------------------------------------- Ising: a full enumeration
def _ising_enumeration(problem):
    """The objective of all 2^24 edge masks of a 4×4-grid problem, by transfer matrices over the rows.

    Returns an array of shape (8, 16, 8, 16, 8, 8, 16) indexed by the bits of (horizontal edges of row 0,
    vertical edges rows 0–1, horizontal row 1, vertical rows 1–2, horizontal row 2, horizontal row 3,
    vertical rows 2–3)."""
    J, lam = problem.couplings, problem.l1_penalty
    bits3 = (np.arange(8)[:, None] >> np.arange(3)) & 1
    bits4 = (np.arange(16)[:, None] >> np.arange(4)) & 1
    z = 2.0 * bits4 - 1.0                                               # row state -> its four spins
    row = [np.exp(2.0 * (bits3 * J[3 * r:3 * r + 3]) @ (z[:, :-1] * z[:, 1:]).T) for r in range(4)]
    vertical = [np.exp(2.0 * np.einsum("vc,sc,tc->vst", bits4 * J[12 + 4 * r:16 + 4 * r], z, z)) for r in range(3)]
    top = np.einsum("hs,vst->hvt", row[0], vertical[0]).reshape(128, 16)
    bottom = np.einsum("vst,ht->hvs", vertical[2], row[3]).reshape(128, 16)
    middle = np.einsum("as,vst,bt->avbst", row[1], vertical[1], row[2]).reshape(1024, 16, 16)
    Z = top @ (middle @ bottom.T).transpose(1, 0, 2).reshape(16, -1)
    log_z = np.log(Z).reshape(8, 16, 8, 16, 8, 8, 16)
    cost = np.stack([2.0 * problem.couplings * problem.edge_moments, np.full(24, lam)], axis=1)   # (edge, bit)

    def group(first, bits, axis):
        values = sum(cost[first + i, bits[:, i]] for i in range(bits.shape[1]))
        return values.reshape([-1 if a == axis else 1 for a in range(7)])

    linear = (group(0, bits3, 0) + group(12, bits4, 1) + group(3, bits3, 2) + group(16, bits4, 3)
              + group(6, bits3, 4) + group(9, bits3, 5) + group(20, bits4, 6))
    return linear + log_z - problem.log_partition


def _ising_bits(index):
    h0, v0, h1, v1, h2, h3, v2 = np.unravel_index(index, (8, 16, 8, 16, 8, 8, 16))
    return np.array([(int(g) >> i) & 1 for g, n in ((h0, 3), (h1, 3), (h2, 3), (h3, 3), (v0, 4), (v1, 4), (v2, 4))
                     for i in range(n)], dtype=float)


def test_ising_optimum_by_full_enumeration():
    problem = IsingSparsification()
    values = _ising_enumeration(problem).ravel()
    best = int(np.argmin(values))
    np.testing.assert_array_equal(_ising_bits(best), problem.space.encode(problem.optimal_config))
    assert values[best] == pytest.approx(problem.optimum, abs=1e-12)
    # the enumeration agrees with the problem away from the optimum too
    rng = np.random.default_rng(8)
    indices = rng.integers(0, values.size, 10)
    np.testing.assert_allclose(problem.evaluate_encoded(np.array([_ising_bits(i) for i in indices])),
                               values[indices], rtol=1e-11, atol=1e-12)


def test_ising_optimum_is_a_local_minimum():
    problem = IsingSparsification()
    x = problem.space.encode(problem.optimal_config)
    neighbours = [_flip(x, i) for i in range(24)] + [_flip(x, i, j) for i, j in itertools.combinations(range(24), 2)]
    assert problem.evaluate_encoded(np.array(neighbours)).min() > problem.optimum


@pytest.mark.parametrize("l1_penalty", [0.0, 1e-4])
def test_ising_small_penalties_keep_every_edge(l1_penalty):
    problem = IsingSparsification(l1_penalty=l1_penalty)
    assert problem.optimal_config == {f"edge{e}": 1 for e in range(1, 25)}
    assert problem(problem.optimal_config) == pytest.approx(24 * l1_penalty, abs=1e-12)


# ----------------------------------------------------------------------------- independent re-implementations
def test_contamination_matches_combo_code():
    """COMBO's ``_contamination`` and ``generate_contamination_dynamics`` (Oh et al. 2019), line by line."""
    seed, n_simulations = 0, 100
    init_Z = np.random.RandomState(seed).beta(1.0, 30.0, size=(n_simulations,))
    lambdas = np.random.RandomState(seed).beta(1.0, 17.0 / 3.0, size=(25, n_simulations))
    gammas = np.random.RandomState(seed).beta(1.0, 3.0 / 7.0, size=(25, n_simulations))

    def combo(x, lamda, U=0.1, epsilon=0.05, rho=1.0):
        Z = np.zeros((x.size, n_simulations))
        Z[0] = lambdas[0] * (1.0 - x[0]) * (1.0 - init_Z) + (1.0 - gammas[0] * x[0]) * init_Z
        for i in range(1, 25):
            Z[i] = lambdas[i] * (1.0 - x[i]) * (1.0 - Z[i - 1]) + (1.0 - gammas[i] * x[i]) * Z[i - 1]
        constraints = np.mean(Z < U, axis=1) - (1.0 - epsilon)
        return np.sum(x * np.ones(25) - rho * constraints) + lamda * np.sum(x)

    for lamda in (0.0, 1e-2):
        problem = Contamination(l1_penalty=lamda)
        X = problem.space.sample_encoded(5, seed=9)
        np.testing.assert_allclose(problem.evaluate_encoded(X), [combo(x, lamda) for x in X], rtol=1e-13)


def test_ising_matches_bocs_code():
    """BOCS's ``KL_divergence_ising`` and ``ising_model_moments`` (Baptista & Poloczek 2018): Θ matrices over
    all 2^16 spin vectors, KL = Σ (Θ_P − Θ_Q) ∘ E_P[z zᵀ] + log Z_Q − log Z_P."""
    problem = IsingSparsification()
    theta_p = np.zeros((16, 16))
    for (i, j), coupling in zip(problem.edges, problem.couplings):
        theta_p[i, j] = theta_p[j, i] = coupling
    spins = np.array(list(itertools.product([-1.0, 1.0], repeat=16)))

    def log_weights(theta):
        return np.einsum("si,ij,sj->s", spins, theta, spins)

    def log_sum_exp(a):
        return a.max() + math.log(np.sum(np.exp(a - a.max())))

    log_zp = log_sum_exp(log_weights(theta_p))
    p = np.exp(log_weights(theta_p) - log_zp)
    moments = spins.T @ (spins * p[:, None])
    for x in problem.space.sample_encoded(3, seed=10):
        theta_q = theta_p.copy()
        for (i, j), keep in zip(problem.edges, x):
            theta_q[i, j] = theta_q[j, i] = theta_p[i, j] * keep
        kl = np.sum((theta_p - theta_q) * moments) + log_sum_exp(log_weights(theta_q)) - log_zp
        assert problem.evaluate_encoded(x)[0] == pytest.approx(kl + 1e-2 * x.sum(), rel=1e-10, abs=1e-12)


def test_ising_instance_follows_the_generator():
    problem = IsingSparsification()
    magnitudes = np.abs(problem.couplings)
    assert np.all((magnitudes >= 0.05) & (magnitudes <= 5.0))
    assert len({tuple(sorted(e)) for e in problem.edges.tolist()}) == 24
    # every edge joins grid neighbours: same row and adjacent columns, or same column and adjacent rows
    rows, cols = np.divmod(problem.edges, 4)
    assert np.all(np.abs(rows[:, 0] - rows[:, 1]) + np.abs(cols[:, 0] - cols[:, 1]) == 1)


def test_labs_matches_the_definition():
    problem = LABS()
    for config in problem.space.sample(5, seed=11):
        s = [config[f"s{i}"] for i in range(1, 31)]
        energy = sum(sum(s[i] * s[i + k] for i in range(30 - k)) ** 2 for k in range(1, 30))
        assert problem(config) == energy


def test_maxsat_matches_a_clause_loop_and_the_generator():
    problem = MaxSATWeighted()
    assert problem.n_clauses == 256 and len(problem.space) == 60
    sigma = problem.hidden_assignment
    for variables, signs in zip(problem.clause_variables, problem.clause_signs):
        assert len(set(variables.tolist())) == 3
        assert 1 <= np.count_nonzero(sigma[variables] == signs) <= 2     # satisfied by σ and by 1 − σ
    assert np.all((problem.weights >= 1) & (problem.weights <= 10) & (problem.weights == np.round(problem.weights)))
    complement = {name: 1 - value for name, value in problem.optimal_config.items()}
    assert problem(complement) == -1.0
    # literals are balanced with respect to σ (the point of planting two assignments)
    agree = np.mean(sigma[problem.clause_variables] == problem.clause_signs)
    assert 0.4 < agree < 0.6
    for config in problem.space.sample(5, seed=12):
        x = [config[f"x{i}"] for i in range(1, 61)]
        weight = sum(w for w, variables, signs in zip(problem.weights, problem.clause_variables, problem.clause_signs)
                     if any(x[v] == s for v, s in zip(variables, signs)))
        assert problem(config) == pytest.approx(-weight / problem.weights.sum(), rel=1e-15)


def test_mixed_matches_the_formula():
    problem = Mixed10C20N()
    R = problem.rotation
    np.testing.assert_allclose(R @ R.T, np.eye(10), atol=1e-12)
    # u*(h) stays inside [−3/4, 3/4] for every h
    assert np.max(np.abs(problem.centre) + np.abs(problem.shifts).max(axis=1).sum(axis=0)) <= 0.75
    for config in problem.space.sample(5, seed=13):
        u = np.array([config[f"x{i}"] for i in range(1, 11)])
        h = [config[f"h{i}"] for i in range(1, 21)]
        u_star = problem.centre + sum(problem.shifts[p, h[p]] for p in range(4))
        z = 4.0 * R @ (u - u_star)
        ackley = (-20.0 * math.exp(-0.2 * math.sqrt(np.mean(z ** 2)))
                  - math.exp(np.mean(np.cos(2.0 * math.pi * z))) + 20.0 + math.e)
        potts = sum(problem.unary[p, h[p]] for p in range(20))
        potts += sum(problem.pairwise[e, h[p], h[q]] for e, (p, q) in enumerate(problem.potts_edges))
        assert problem(config) == pytest.approx(ackley + 0.25 * potts, rel=1e-12, abs=1e-12)


def test_mixed_decoy_is_a_local_minimum_of_the_nominal_part():
    problem = Mixed10C20N()
    assert np.all(problem.decoy != problem.planted)
    assert problem.potts_energy(problem.decoy[None, :])[0] == pytest.approx(0.25, abs=1e-15)
    neighbours = []
    for p in range(20):
        for state in range(5):
            if state != problem.decoy[p]:
                h = problem.decoy.copy()
                h[p] = state
                neighbours.append(h)
    assert problem.potts_energy(np.array(neighbours)).min() > 0.25
    # and the continuous optimum of any h gives f = P(h): the Ackley part vanishes there
    u_star = problem.continuous_optimum(problem.decoy[None, :])[0]
    config = {**{f"x{i + 1}": float(v) for i, v in enumerate(u_star)},
              **{f"h{i + 1}": int(v) for i, v in enumerate(problem.decoy)}}
    assert problem(config) == pytest.approx(0.25, abs=1e-15)


def test_pest_control_matches_combo_code():
    """COMBO's ``_pest_control_score`` (Oh et al. 2019) in the seeded form of CASMOPOLITAN and BODi, line by line:
    every draw from a freshly seeded RandomState, the tolerance added to the pesticide's beta after each use."""
    def reference(x, seed):
        control_price_max_discount = {1: 0.2, 2: 0.3, 3: 0.3, 4: 0.0}
        tolerance_develop_rate = {1: 1.0 / 7.0, 2: 2.5 / 7.0, 3: 2.0 / 7.0, 4: 0.5 / 7.0}
        control_price = {1: 1.0, 2: 0.8, 3: 0.7, 4: 0.5}
        control_beta = {1: 2.0 / 7.0, 2: 3.0 / 7.0, 3: 3.0 / 7.0, 4: 5.0 / 7.0}
        payed_price_sum, above_threshold = 0, 0
        curr = np.random.RandomState(seed).beta(1.0, 30.0, size=(100,))
        for i in range(x.size):
            spread_rate = np.random.RandomState(seed).beta(1.0, 17.0 / 3.0, size=(100,))
            if x[i] > 0:
                control_rate = np.random.RandomState(seed).beta(1.0, control_beta[x[i]], size=(100,))
                following = (1.0 - control_rate) * curr
                control_beta[x[i]] += tolerance_develop_rate[x[i]] / float(x.size)
                payed_price = control_price[x[i]] * (
                    1.0 - control_price_max_discount[x[i]] / float(x.size) * float(np.sum(x == x[i])))
            else:
                following = spread_rate * (1 - curr) + curr
                payed_price = 0
            payed_price_sum += payed_price
            above_threshold += np.mean(curr > 0.1)
            curr = following
        return payed_price_sum + above_threshold

    for seed in (0, 3):
        problem = PestControl(seed=seed)
        X = problem.space.sample_encoded(40, seed=9)
        X[0] = 0.0                              # no control anywhere
        X[1] = 2.0                              # one pesticide everywhere: its tolerance at every count
        np.testing.assert_array_equal(problem.evaluate_encoded(X), [reference(x.astype(int), seed) for x in X])
        configs = problem.space.decode(X[:3])
        assert [problem(c) for c in configs] == [reference(x.astype(int), seed) for x in X[:3]]


def test_pest_control_best_known_value():
    problem = PestControl()
    assert problem.optimum is None and problem.optimal_config is None
    assert problem(problem.best_known_config) == pytest.approx(problem.best_known, abs=1e-12)
    assert "not proven" in problem.best_known_source
    # no random config and no one-stage change of the best-known config does better
    values = problem.evaluate_encoded(problem.space.sample_encoded(5000, seed=6))
    assert values.min() > problem.best_known
    x = problem.space.encode([problem.best_known_config])[0]
    neighbours = []
    for stage in range(25):
        for action in range(5):
            if action != x[stage]:
                y = x.copy()
                y[stage] = action
                neighbours.append(y)
    assert problem.evaluate_encoded(np.array(neighbours)).min() > problem.best_known
    assert PestControl(seed=1).best_known is None and PestControl(seed=1).best_known_config is None


def test_pest_control_bad_actions_raise_typed_errors():
    problem = PestControl()
    with pytest.raises(InvalidValueError, match="'stage7'"):
        problem({**problem.best_known_config, "stage7": 5})
