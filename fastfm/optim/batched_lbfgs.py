"""Independent box-constrained quasi-Newton runs whose function evaluations are batched.

The acquisition optimiser's local search starts from many points at once.  One scipy L-BFGS-B run on the SUM of
their acquisitions (BoTorch's ``gen_candidates_scipy``) evaluates all starts in one call, but it couples them:
one line search for all, one convergence test for all, so every start is evaluated until the slowest one stops
and a start that needs a short step shortens everyone's.  Independent runs per start (what Optuna's GPSampler
does, batching them through greenlet) need fewer evaluations and reach higher acquisition values, but scipy's
per-run and per-iteration Python overhead (~0.1 ms a run, ~30 µs an evaluation) is paid per start.  This module
runs the independent minimisations in lockstep with NumPy: each iteration asks ``fun`` for the values and
gradients of all starts still running, in one call, and the bookkeeping is vectorised across starts.

The method is projected L-BFGS (Nocedal & Wright 2006, Alg. 7.4, the two-loop recursion, with memory 10 as
scipy's L-BFGS-B), restricted to the variables that are not held at a bound by their gradient, with a projected
backtracking line search (Armijo condition, Nocedal & Wright Alg. 3.1, on the projected path as in Bertsekas
1982, "Projected Newton methods for optimization problems with simple constraints"); where a whole step leaves the
slope along it steep (the curvature condition fails), the start's next trial step is doubled, the extrapolation
that a Moré-Thuente line search (scipy's) makes within one iteration, spread over iterations.  Stopping rules are
L-BFGS-B's defaults: projected gradient ≤ 1e-5 (inf-norm), relative decrease ≤ 2.2e-9, or ``maxiter``.
Each start's path depends only on its own values, so a start's result does not depend on which others run.

This module is the definition; ``fastfm._cpp.BatchedLBFGS`` (csrc/include/fastfm/batched_lbfgs.hpp) repeats its
operations in the same order, so that a run is the same bit for bit, and ``minimize_batched`` drives it when the
extension is built: the NumPy bookkeeping (~70 array operations an iteration) was a quarter of the acquisition
search on the HPO problems (docs/benchmarks/suggestion.md, "The local search's bookkeeping compiled").
"""
import numpy as np

try:
    # the extension itself, not fastfm._backends (optim sits beside the GP, below the kernels' backends); the
    # package's __init__ has loaded it through fastfm._backends.cpp by now, which sets its OpenMP policy first
    import fastfm._cpp as _cpp
except ImportError:          # not built: the NumPy loop below runs
    _cpp = None

__all__ = ["minimize_batched"]

# fastfm._cpp.BatchedLBFGS, or None without the extension (or an older build of it)
_compiled_state = getattr(_cpp, "BatchedLBFGS", None)

MEMORY = 10               # correction pairs kept (scipy's L-BFGS-B maxcor)
PGTOL = 1e-5              # projected-gradient inf-norm that counts as converged (scipy's gtol)
FTOL = 2.220446049250313e-09   # relative decrease that counts as converged (scipy's ftol, factr = 1e7)
ARMIJO = 1e-4             # sufficient-decrease constant c1 (Nocedal & Wright, §3.1)
MAX_BACKTRACKS = 20       # halvings of the step before a start stops (scipy's maxls)
CURVATURE_EPS = 2.2e-16   # a pair (s, y) with sᵀy ≤ eps·yᵀy is skipped (keeps H positive definite)
WOLFE_CURVATURE = 0.9     # c2 of the curvature condition gᵀ(x⁺)s ≥ c2 gᵀ(x)s (Nocedal & Wright Eq. 3.6b)
MAX_STEP_GROWTH = 2.0 ** 40   # cap on the doubled trial step (a box of width 1 binds long before)


def _projected_gradient(X, G, lower, upper):
    """P(x − g) − x: zero where x is at a bound that the gradient pushes against."""
    return np.clip(X - G, lower, upper) - X


def _direction(G, free, S, Y, rho, n_pairs, newest):
    """−H g on the free variables by the two-loop recursion (Nocedal & Wright Alg. 7.4), one start per row.

    S, Y: (k, MEMORY, n) ring buffers, ``newest`` the slot of the latest pair, ``n_pairs`` how many are valid.
    The pairs of every start are gathered newest first in one indexing (k, pairs, n) and a pair that is not valid
    gets ρ = 0, so that it adds nothing: the loops over the pairs then make a few array operations per pair (one
    gather, a mask and a where per pair and vector made this a quarter of the acquisition search's time on the HPO
    problems; docs/benchmarks/suggestion.md, "Less Python per prediction")."""
    n_back = int(n_pairs.max(initial=0))
    backs = np.arange(n_back)
    slots = (newest[:, None] - backs[None, :]) % MEMORY                  # (k, pairs), newest first
    rows = np.arange(len(G))[:, None]
    S_pairs, Y_pairs = S[rows, slots] * free[:, None, :], Y[rows, slots] * free[:, None, :]
    rho_pairs = np.where(backs[None, :] < n_pairs[:, None], rho[rows, slots], 0.0)
    q = G * free
    alphas = np.empty((len(G), n_back))
    for back in range(n_back):                          # newest to oldest
        alpha = rho_pairs[:, back] * (S_pairs[:, back] * q).sum(axis=1)
        alphas[:, back] = alpha
        q -= alpha[:, None] * Y_pairs[:, back]
    s_new, y_new = S[rows[:, 0], newest % MEMORY], Y[rows[:, 0], newest % MEMORY]
    yy = np.sum(y_new * y_new, axis=1)
    gamma = np.where((n_pairs > 0) & (yy > 0), np.sum(s_new * y_new, axis=1) / np.where(yy > 0, yy, 1.0), 1.0)
    r = gamma[:, None] * q
    for back in range(n_back - 1, -1, -1):               # oldest to newest
        beta = rho_pairs[:, back] * (Y_pairs[:, back] * r).sum(axis=1)
        r += S_pairs[:, back] * (alphas[:, back] - beta)[:, None]
    return -r * free


def minimize_batched(fun, X0, lower, upper, maxiter):
    """Minimise each row of ``X0`` within its box, independently, with batched evaluations.

    Parameters
    ----------
    fun : callable
        ``fun(starts, X)``, for the indices ``starts`` (k,) of the starts still running and their points X (k, n),
        returns (values (k,), gradients (k, n)); rows are independent.
    X0 : array of shape (n_starts, n)
    lower, upper : arrays broadcastable to (n_starts, n)
        The box; a coordinate with lower == upper never moves.
    maxiter : int
        Iterations (accepted steps) per start at most.

    Returns
    -------
    X : (n_starts, n) the final points (inside the box)
    values : (n_starts,) ``fun`` at them
    n_evaluations : int, the number of calls of ``fun``
    """
    X0 = np.asarray(X0, dtype=float)
    n_starts, n = X0.shape
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (n_starts, n))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (n_starts, n))
    X = np.clip(X0, lower, upper)
    F, G = fun(np.arange(n_starts), X)
    F, G = np.array(F, dtype=float), np.array(G, dtype=float)
    if _compiled_state is not None and n > 0:
        state = _compiled_state(X, F, G, lower, upper, int(maxiter))
        n_evaluations = 1
        while (trials := state.next_trials()) is not None:
            f_trial, g_trial = fun(*trials)
            state.tell(f_trial, g_trial)
            n_evaluations += 1
        return state.X, state.F, n_evaluations
    return _minimize_numpy(fun, X, F, G, lower, upper, maxiter)


def _minimize_numpy(fun, X, F, G, lower, upper, maxiter):
    """``minimize_batched`` after the first evaluation, in NumPy: the definition the compiled state follows."""
    n_starts, n = X.shape
    n_evaluations = 1
    S = np.zeros((n_starts, MEMORY, n))
    Y = np.zeros((n_starts, MEMORY, n))
    rho = np.zeros((n_starts, MEMORY))
    n_pairs = np.zeros(n_starts, dtype=np.int64)
    newest = np.full(n_starts, -1, dtype=np.int64)
    iterations = np.zeros(n_starts, dtype=np.int64)
    growth = np.ones(n_starts)               # each start's factor on its next trial step (doubled when too short)
    running = np.isfinite(F) & np.all(np.isfinite(G), axis=1)
    running &= np.max(np.abs(_projected_gradient(X, G, lower, upper)), axis=1) > PGTOL
    while running.any():
        idx = np.flatnonzero(running)
        x, g, lo, hi = X[idx], G[idx], lower[idx], upper[idx]
        free = ~(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)) | (lo >= hi))
        d = _direction(g, free, S[idx], Y[idx], rho[idx], n_pairs[idx], newest[idx])
        slope = np.sum(g * d, axis=1)
        not_descent = ~(slope < 0)
        if not_descent.any():               # a stale pair turned the direction: steepest descent, memory cleared
            d[not_descent] = -(g * free)[not_descent]
            n_pairs[idx[not_descent]] = 0
        # first step of a start with no curvature yet: length 1/‖d‖ (as L-BFGS-B), later the quasi-Newton step 1,
        # times the start's growth (below)
        norm = np.linalg.norm(d, axis=1)
        step = np.where(n_pairs[idx] == 0, np.minimum(1.0, 1.0 / np.where(norm > 0, norm, 1.0)), 1.0) * growth[idx]
        # projected backtracking: x(t) = P(x + t d), accepted when f(x(t)) ≤ f(x) + c1 gᵀ(x(t) − x)
        accepted = np.zeros(len(idx), dtype=bool)
        new_x, new_f, new_g = x.copy(), F[idx].copy(), g.copy()
        searching = np.arange(len(idx))
        whole = np.zeros(len(idx), dtype=bool)         # accepted at the first trial step, not shortened
        for backtrack in range(MAX_BACKTRACKS):
            trial = np.clip(x[searching] + step[searching, None] * d[searching], lo[searching], hi[searching])
            f_trial, g_trial = fun(idx[searching], trial)
            f_trial, g_trial = np.asarray(f_trial, dtype=float), np.asarray(g_trial, dtype=float)
            n_evaluations += 1
            decrease = np.sum(g[searching] * (trial - x[searching]), axis=1)
            ok = (np.isfinite(f_trial) & np.all(np.isfinite(g_trial), axis=1)
                  & (f_trial <= F[idx[searching]] + ARMIJO * decrease))
            done = searching[ok]
            accepted[done] = True
            whole[done] = backtrack == 0
            new_x[done], new_f[done], new_g[done] = trial[ok], f_trial[ok], g_trial[ok]
            # the rest shorten their step to the minimiser of the quadratic through f(x), the slope gᵀ(x(t) − x)/t
            # and f(x(t)), kept within [0.1 t, 0.5 t] (Nocedal & Wright §3.5); a non-finite value halves it
            rest = ~ok
            searching, t = searching[rest], step[searching[rest]]
            if not len(searching):
                break
            curvature = f_trial[rest] - F[idx[searching]] - decrease[rest]
            with np.errstate(divide="ignore", invalid="ignore"):
                t_quadratic = -decrease[rest] * t / (2.0 * curvature)
            step[searching] = np.where(np.isfinite(t_quadratic), np.clip(t_quadratic, 0.1 * t, 0.5 * t), 0.5 * t)
        # the curvature pair of every accepted step (skipped when sᵀy is not positive enough)
        s, y = new_x - x, new_g - g
        sy, yy = np.sum(s * y, axis=1), np.sum(y * y, axis=1)
        # A whole step after which the slope along it is still steep (the curvature condition fails, Nocedal &
        # Wright Eq. 3.6b) was too short: where the function is not convex along d no pair is kept, H keeps its
        # old scale and every step would be as short (a run on SVM's acquisition crept 200 iterations along one
        # free coordinate, 0.2 % of the box each).  A line search would extrapolate (Moré & Thuente); here the
        # start's next trial step is doubled instead, at no extra evaluation, and back to 1 after a shortened or
        # a flattening step.
        too_short = whole & (np.sum(new_g * s, axis=1) < WOLFE_CURVATURE * np.sum(g * s, axis=1))
        growth[idx] = np.where(too_short, np.minimum(2.0 * growth[idx], MAX_STEP_GROWTH), 1.0)
        keep = accepted & (sy > CURVATURE_EPS * yy)
        rows = idx[keep]
        slot = (newest[rows] + 1) % MEMORY
        S[rows, slot], Y[rows, slot], rho[rows, slot] = s[keep], y[keep], 1.0 / sy[keep]
        newest[rows] = slot
        n_pairs[rows] = np.minimum(n_pairs[rows] + 1, MEMORY)
        # stopping rules, per start
        previous = F[idx]
        X[idx[accepted]], F[idx[accepted]], G[idx[accepted]] = new_x[accepted], new_f[accepted], new_g[accepted]
        iterations[idx[accepted]] += 1
        small_decrease = (previous - new_f) <= FTOL * np.maximum(np.maximum(np.abs(previous), np.abs(new_f)), 1.0)
        converged = np.max(np.abs(_projected_gradient(new_x, new_g, lo, hi)), axis=1) <= PGTOL
        stop = ~accepted | small_decrease | converged | (iterations[idx] >= maxiter)
        running[idx[stop]] = False
    return X, F, n_evaluations
