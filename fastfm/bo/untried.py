"""Values of nominal parameters that no evaluation has used, tried at the incumbent when a run stalls.

Why.  On a nominal parameter (a complete graph) every two distinct values are equally similar, so the GP predicts
a value that no evaluation has used from what the others showed: about their average, with the spread the fit
gives the value effects.  Where the incumbent's value is far better than the average, expected improvement there
is negligible next to a refinement of the incumbent, and a run can end without ever evaluating it, however much
budget is left: a parameter with more values than the initial design has points keeps some of them untried.  On
Ackley5C (five nominals of 17 values, 10 initial points) 13 of 30 runs sat at 0.3326 after 100 evaluations, one
parameter one value off the optimum, and seed 10 never evaluated h1 = 7, 8 or 10 in 200 (h1 = 8 is the optimum's).

What.  When ``patience`` told values have passed since the initial design without a clear new best (better by
more than CLEAR_IMPROVEMENT of the range of the told values) and without a point that brought a value not
evaluated before, the next model suggestion is the incumbent with one of its nominal parameters set to a value
that no told or pending point has: the one of highest acquisition among all such single changes.  At most one
such point is pending at a time, and there are at most as many as there are untried values, so the cost is
bounded by the space, not the budget.  Measured in docs/benchmarks/bo-efficiency.md ("Untried values of nominal
parameters").
"""
import numbers

import numpy as np

from ..exceptions import InvalidValueError

__all__ = ["DEFAULT_PATIENCE", "CLEAR_IMPROVEMENT", "patience_setting", "untried_value_point"]

DEFAULT_PATIENCE = 5
CLEAR_IMPROVEMENT = 1e-3   # a new best counts as progress when better by this fraction of the told values' range


def patience_setting(value):
    """``untried_patience`` as given, checked: None (never) or an int >= 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidValueError(f"untried_patience must be None or an integer >= 1, got untried_patience={value!r}",
                                "untried_patience", value)
    return int(value)


def _nominal_columns(space):
    """(encoded column, number of values) of every nominal parameter (its "inactive" state excluded)."""
    return [(space.n_continuous + j, p.n_states) for j, p in enumerate(space.discrete_params)
            if p.is_nominal]


def _values_used(X, columns):
    """For each nominal column, the set of values the rows of X hold."""
    return [set(np.unique(X[:, column]).astype(np.int64).tolist()) for column, _ in columns]


def told_since_progress(X, values, columns, n_init=1):
    """Told values since the latest of the last clear new best, the last point that brought a nominal value no
    earlier point had, and the last of the ``n_init`` initial points (0: the last told value was one of them).

    The initial design counts as progress: a stall is one of the model's search, and right after a design whose
    last points happened to bring nothing new (a conditional parameter's values, drawn only where it is active)
    the model has not searched yet."""
    span = float(np.max(values) - np.min(values))
    tolerance = CLEAR_IMPROVEMENT * span
    seen = [set() for _ in columns]
    best, last = np.inf, min(int(n_init), len(values)) - 1
    for i, value in enumerate(values):
        if value < best - tolerance:
            last = max(last, i)
        best = min(best, value)
        for used, (column, n_values) in zip(seen, columns):
            state = int(X[i, column])
            if state < n_values and state not in used:
                used.add(state)
                last = max(last, i)
    return len(values) - 1 - last


def untried_value_point(space, X_told, X_ok, values_ok, pending, incumbent, score, patience, n_init=1):
    """(the encoded point to suggest instead of the acquisition's maximiser, its acquisition), or None.

    Parameters
    ----------
    space : Space
    X_told : (n, n_dims) every told point, failed ones included (a failed value was tried)
    X_ok, values_ok : the successful told points and their values, in the order told
    pending : (k, n_dims) the pending points
    incumbent : (n_dims,) the best successful point
    score : callable (m, n_dims) -> (m,), the acquisition the suggestion maximises
    patience : int or None
    n_init : int, the optimizer's initial points (the model's search, and a stall, begins after them)
    """
    columns = _nominal_columns(space)
    if patience is None or not columns or len(values_ok) == 0:
        return None
    used = _values_used(X_told, columns)
    if len(pending):
        # a pending point already tries a new value: wait for it rather than spend a batch on untried values
        pending_used = _values_used(pending, columns)
        if any(p - u for p, u in zip(pending_used, used)):
            return None
        used = [u | p for u, p in zip(used, pending_used)]
    active = space.active_columns(incumbent[None, :])[0]
    candidates = [(column, state) for (column, n_values), tried in zip(columns, used) if active[column]
                  for state in range(n_values) if state not in tried]
    # no untried value (every binary problem after its design) before the stall count, a Python pass over the
    # history (~6 ms at 200 told values of 60 nominals)
    if not candidates or told_since_progress(X_ok, values_ok, columns, n_init) < patience:
        return None
    Z = np.repeat(incumbent[None, :], len(candidates), axis=0)
    for row, (column, state) in enumerate(candidates):
        Z[row, column] = state
    # a changed parent activates or clears its children: fixed defaults, so that the same history gives the
    # same point (a loaded journal continues as the run would have)
    space.enforce_conditions(Z, rng=None, previously_active=np.repeat(active[None, :], len(Z), axis=0))
    scores = score(Z)
    best = int(np.argmax(scores))
    return Z[best], float(scores[best])
