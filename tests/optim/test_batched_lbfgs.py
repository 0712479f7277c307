"""The batched quasi-Newton runs of the acquisition search (fastfm/optim/batched_lbfgs.py)."""
import numpy as np
import pytest
from scipy.optimize import minimize

from fastfm.optim import batched_lbfgs
from fastfm.optim.batched_lbfgs import MAX_BACKTRACKS, minimize_batched

# every test of minimize_batched runs on the NumPy loop (the definition) and on the compiled bookkeeping
# (fastfm._cpp.BatchedLBFGS) where the extension is built
COMPILED = batched_lbfgs._compiled_state
IMPLEMENTATIONS = ["numpy"] + (["compiled"] if COMPILED is not None else [])


@pytest.fixture(params=IMPLEMENTATIONS, autouse=True)
def implementation(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(batched_lbfgs, "_compiled_state", None)
    return request.param


def _quadratics(n_starts, n, seed):
    """Random convex quadratics ½xᵀH_s x − c_sᵀx, one per start, with their batched value-and-gradient."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n_starts, n, n))
    H = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(n)
    c = 2.0 * rng.standard_normal((n_starts, n))

    def fun(starts, X):
        HX = np.einsum("kij,kj->ki", H[starts], X)
        return 0.5 * np.sum(X * HX, axis=1) - np.sum(c[starts] * X, axis=1), HX - c[starts]
    return fun, H, c


def test_box_constrained_quadratics_reach_scipys_minimum():
    n_starts, n = 25, 7
    fun, H, c = _quadratics(n_starts, n, seed=0)
    X0 = np.random.default_rng(1).random((n_starts, n))
    X, F, _ = minimize_batched(fun, X0, 0.0, 1.0, maxiter=500)
    assert np.all((X >= 0.0) & (X <= 1.0))
    for s in range(n_starts):
        reference = minimize(lambda x: (0.5 * x @ H[s] @ x - c[s] @ x, H[s] @ x - c[s]), X0[s], jac=True,
                             method="L-BFGS-B", bounds=[(0.0, 1.0)] * n, options={"maxiter": 500})
        assert F[s] <= reference.fun + 1e-8 * max(1.0, abs(reference.fun))
        # and it is the value at the returned point
        np.testing.assert_allclose(F[s], fun(np.array([s]), X[s:s + 1])[0][0], rtol=1e-12)
    assert np.any((X == 0.0) | (X == 1.0))      # the box binds somewhere, so the projection was exercised


def test_rosenbrock_in_a_box():
    def fun(_, X):
        x, y = X[:, :-1], X[:, 1:]
        G = np.zeros_like(X)
        G[:, :-1] += -400.0 * x * (y - x ** 2) - 2.0 * (1.0 - x)
        G[:, 1:] += 200.0 * (y - x ** 2)
        return np.sum(100.0 * (y - x ** 2) ** 2 + (1.0 - x) ** 2, axis=1), G

    X0 = np.random.default_rng(2).uniform(-2.0, 2.0, (12, 4))
    X, F, _ = minimize_batched(fun, X0, -2.0, 2.0, maxiter=2000)
    # the global minimum (1, ..., 1), or the known local one of the 4-D function near (−1, 1, 1, 1)
    at_global = np.all(np.abs(X - 1.0) < 1e-3, axis=1)
    assert at_global.sum() >= 8
    assert np.all(F[~at_global] > 3.0) and np.all(F[at_global] < 1e-6)


def test_a_start_does_not_depend_on_the_others():
    fun, _, _ = _quadratics(10, 5, seed=3)
    X0 = np.random.default_rng(4).random((10, 5))
    X_all, F_all, _ = minimize_batched(fun, X0, 0.0, 1.0, maxiter=50)
    for s in (0, 7):
        X_one, F_one, _ = minimize_batched(lambda starts, X: fun(starts + s, X), X0[s:s + 1], 0.0, 1.0, maxiter=50)
        np.testing.assert_array_equal(X_one[0], X_all[s])
        assert F_one[0] == F_all[s]


def test_pinned_coordinates_never_move_and_maxiter_bounds_the_work():
    fun, _, _ = _quadratics(6, 4, seed=5)
    X0 = np.random.default_rng(6).random((6, 4))
    lower, upper = np.zeros((6, 4)), np.ones((6, 4))
    lower[:, 1] = upper[:, 1] = X0[:, 1]
    X, _, n_evaluations = minimize_batched(fun, X0, lower, upper, maxiter=1)
    np.testing.assert_array_equal(X[:, 1], X0[:, 1])
    assert np.any(X != X0)
    # one iteration: the first evaluation and at most one line search
    assert n_evaluations <= 1 + MAX_BACKTRACKS


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_start_whose_value_is_not_finite_stays_put(bad):
    fun, _, _ = _quadratics(3, 2, seed=7)

    def with_bad_start(starts, X):
        F, G = fun(starts, X)
        F = np.where(starts == 1, bad, F)
        return F, G

    X0 = np.random.default_rng(8).random((3, 2))
    X, F, _ = minimize_batched(with_bad_start, X0, 0.0, 1.0, maxiter=100)
    np.testing.assert_array_equal(X[1], X0[1])
    assert np.all(np.isfinite(F[[0, 2]])) and np.any(X[0] != X0[0])


def test_the_two_loop_direction_is_the_bfgs_inverse_hessian_of_the_kept_pairs():
    """``_direction`` against the inverse BFGS update written out (Nocedal & Wright Eq. 6.17,
    H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ from H₀ = γI, γ = sᵀy/yᵀy of the newest pair), oldest pair first,
    on ring buffers with different fill levels and newest slots per start."""
    from fastfm.optim.batched_lbfgs import MEMORY, _direction
    rng = np.random.default_rng(11)
    k, n = 6, 5
    S, Y, rho = np.zeros((k, MEMORY, n)), np.zeros((k, MEMORY, n)), np.zeros((k, MEMORY))
    n_pairs = np.array([0, 1, 3, MEMORY, MEMORY, 7])
    newest = np.array([-1, 4, 12, 9, 23, 2])
    A = [(lambda B: B @ B.T + np.eye(n))(rng.standard_normal((n, n))) for _ in range(k)]
    for start in range(k):
        for back in range(n_pairs[start]):
            slot = (newest[start] - back) % MEMORY
            s = rng.standard_normal(n)
            S[start, slot], Y[start, slot] = s, A[start] @ s       # positive curvature sᵀy > 0
            rho[start, slot] = 1.0 / (s @ Y[start, slot])
        # a stale pair beyond the valid ones must not count
        if n_pairs[start] < MEMORY:
            S[start, (newest[start] - n_pairs[start]) % MEMORY] = rng.standard_normal(n)
    G = rng.standard_normal((k, n))
    free = np.ones((k, n), dtype=bool)
    D = _direction(G, free, S, Y, rho, n_pairs, newest)
    for start in range(k):
        H = np.eye(n)
        if n_pairs[start]:
            s_new, y_new = S[start, newest[start] % MEMORY], Y[start, newest[start] % MEMORY]
            H = (s_new @ y_new) / (y_new @ y_new) * np.eye(n)
        for back in range(n_pairs[start] - 1, -1, -1):         # oldest to newest
            slot = (newest[start] - back) % MEMORY
            s, y, r = S[start, slot], Y[start, slot], rho[start, slot]
            V = np.eye(n) - r * np.outer(y, s)
            H = V.T @ H @ V + r * np.outer(s, s)
        np.testing.assert_allclose(D[start], -H @ G[start], rtol=1e-9, atol=1e-12)


def test_a_start_that_is_not_convex_along_its_free_coordinate_does_not_creep():
    """f = 50(x − 2)² − 0.1y² on the unit square: the first step pins x at its upper bound with a curvature pair
    of x's scale (sᵀy = 25), then y, concave, adds no pair, and a quasi-Newton step of that scale moves it ~1 % of
    its gradient per iteration (200 iterations took y from 0.05 to 0.07; the minimum is the corner (1, 1)).
    Doubling the trial step while the slope along it stays steep gets there as scipy's L-BFGS-B does."""
    def fun(_, X):
        x, y = X[:, 0], X[:, 1]
        return 50.0 * (x - 2.0) ** 2 - 0.1 * y ** 2, np.stack([100.0 * (x - 2.0), -0.2 * y], axis=1)

    X0 = np.array([[0.5, 0.05], [0.2, 0.3]])
    X, F, n_evaluations = minimize_batched(fun, X0, 0.0, 1.0, maxiter=200)
    np.testing.assert_allclose(X, 1.0)
    for s in range(len(X0)):
        reference = minimize(lambda z: (fun(None, z[None])[0][0], fun(None, z[None])[1][0]), X0[s], jac=True,
                             method="L-BFGS-B", bounds=[(0.0, 1.0)] * 2)
        assert F[s] <= reference.fun + 1e-12
    assert n_evaluations < 40


def _recorded(fun, calls):
    """``fun`` that appends each call's (starts, points) to ``calls``."""
    def recording(starts, X):
        calls.append((np.array(starts), np.array(X)))
        return fun(starts, X)
    return recording


def _nonconvex(n_starts, n, seed):
    """Sums of shifted cosines and a weak quadratic, with NaN at points of one start's region: many local minima,
    steps shortened by the quadratic fit and by non-finite values, concave directions (the step doubling)."""
    rng = np.random.default_rng(seed)
    shift, scale = rng.uniform(-1.0, 1.0, (n_starts, n)), rng.uniform(0.5, 6.0, (n_starts, n))

    def fun(starts, X):
        Z = scale[starts] * (X - shift[starts])
        F = np.sum(np.cos(Z), axis=1) + 0.05 * np.sum(X * X, axis=1)
        G = -scale[starts] * np.sin(Z) + 0.1 * X
        F = np.where((starts == 1) & (X[:, 0] > 0.8), np.nan, F)
        return F, G
    return fun


@pytest.mark.skipif(COMPILED is None, reason="needs the extension (the compiled bookkeeping)")
@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 16, 23, 64, 130, 300])
def test_the_compiled_bookkeeping_makes_the_same_runs_bit_for_bit(n, monkeypatch):
    """fastfm._cpp.BatchedLBFGS repeats the NumPy loop's operations in order (NumPy's pairwise row sums, its clip):
    every call asks for the same starts at the same points, and the results are equal bit for bit.  Row lengths
    cover each branch of the pairwise sum (< 8, 8-128, > 128); boxes that bind, pinned coordinates, a start with no
    finite value, non-convex functions and the iteration cap cover the branches of the loop."""
    rng = np.random.default_rng(n)
    n_starts = 12
    problems = [(_quadratics(n_starts, n, seed=n)[0], 0.0, 1.0, 300),
                (_nonconvex(n_starts, n, seed=n), -1.0, 1.0, 200),
                (_nonconvex(n_starts, n, seed=n + 1), -1.0, 1.0, 3)]
    n_calls = 0
    for fun, low, high, maxiter in problems:
        X0 = rng.uniform(low, high, (n_starts, n))
        X0[2, 0] = np.nan                                     # a start with no finite value
        lower, upper = np.full((n_starts, n), low), np.full((n_starts, n), high)
        lower[3, n // 2] = upper[3, n // 2] = X0[3, n // 2]    # a pinned coordinate
        results = {}
        for name, state in (("compiled", COMPILED), ("numpy", None)):
            monkeypatch.setattr(batched_lbfgs, "_compiled_state", state)
            calls = []
            X, F, n_evaluations = minimize_batched(_recorded(fun, calls), X0, lower, upper, maxiter)
            results[name] = (X, F, n_evaluations, calls)
        (X_c, F_c, n_c, calls_c), (X_n, F_n, n_n, calls_n) = results["compiled"], results["numpy"]
        assert n_c == n_n == len(calls_c) == len(calls_n)
        n_calls += n_c
        for (starts_c, points_c), (starts_n, points_n) in zip(calls_c, calls_n):
            np.testing.assert_array_equal(starts_c, starts_n)
            np.testing.assert_array_equal(points_c, points_n)
        np.testing.assert_array_equal(X_c, X_n)
        np.testing.assert_array_equal(F_c, F_n)
    assert n_calls > 10


@pytest.mark.skipif(COMPILED is None, reason="needs the extension (the compiled bookkeeping)")
def test_the_compiled_bookkeeping_names_bad_arguments():
    state_type = COMPILED
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match=r"G must have shape \(3, 2\)"):
        state_type(X, np.zeros(3), np.zeros((3, 3)), X, X + 1.0, 10)
    with pytest.raises(ValueError, match=r"maxiter must be >= 0"):
        state_type(X, np.zeros(3), X, X, X + 1.0, -1)
    state = state_type(X, np.zeros(3), np.ones((3, 2)), X - 1.0, X + 1.0, 10)
    with pytest.raises(ValueError, match=r"no trials are pending"):
        state.tell(np.zeros(3), np.zeros((3, 2)))
    starts, points = state.next_trials()
    with pytest.raises(ValueError, match=r"gradients must have shape \(3, 2\)"):
        state.tell(np.zeros(3), np.zeros((2, 2)))
