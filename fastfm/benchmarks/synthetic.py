"""The synthetic mixed-variable problems of the paper (SPEC §6): Func2C, Func3C, Ackley5C.

Func2C and Func3C come from CoCaBO (Ru et al. 2020, ``testFunctions/syntheticFunctions.py``
of the authors' code), Ackley5C from the FM-kernel paper (Oh et al. 2021, Sec. 4.1).
The formulas are SPEC §6's; they agree with the authors' code except that the
code adds uniform noise of size 1e-6 to every evaluation, which is left out here
so that the problems are deterministic.
"""
import numpy as np

from ..space import Categorical, Real, Space
from .base import Problem

__all__ = ["Func2C", "Func3C", "Ackley5C", "rosenbrock", "six_hump_camel", "beale"]


# --------------------------------------------------------------------------
# The three scaled 2-d functions of SPEC §6, on x = 2u ∈ [−2, 2]²
# --------------------------------------------------------------------------
def _coordinates(x):
    """x1, x2 of points x of shape (..., 2), as float64."""
    x = np.asarray(x, dtype=np.float64)
    return x[..., 0], x[..., 1]


def rosenbrock(x):
    """R(x) = [100 (x2 − x1²)² + (x1 − 1)²] / 300 (SPEC §6).

    Parameters
    ----------
    x : array-like of shape (..., 2)

    Returns
    -------
    ndarray of shape (...)
    """
    x1, x2 = _coordinates(x)
    return (100.0 * (x2 - x1 ** 2) ** 2 + (x1 - 1.0) ** 2) / 300.0


def six_hump_camel(x):
    """S(x) = [(4 − 2.1 x1² + x1⁴/3) x1² + x1 x2 + (−4 + 4 x2²) x2²] / 10 (SPEC §6).

    Parameters
    ----------
    x : array-like of shape (..., 2)

    Returns
    -------
    ndarray of shape (...)
    """
    x1, x2 = _coordinates(x)
    return ((4.0 - 2.1 * x1 ** 2 + x1 ** 4 / 3.0) * x1 ** 2 + x1 * x2 + (-4.0 + 4.0 * x2 ** 2) * x2 ** 2) / 10.0


def beale(x):
    """B(x) = [(1.5 − x1 + x1 x2)² + (2.25 − x1 + x1 x2²)² + (2.625 − x1 + x1 x2³)²] / 50 (SPEC §6).

    Parameters
    ----------
    x : array-like of shape (..., 2)

    Returns
    -------
    ndarray of shape (...)
    """
    x1, x2 = _coordinates(x)
    return ((1.5 - x1 + x1 * x2) ** 2 + (2.25 - x1 + x1 * x2 ** 2) ** 2 + (2.625 - x1 + x1 * x2 ** 3) ** 2) / 50.0


def _real_values(space, X):
    """The continuous columns of a validated encoded array, decoded (linear Reals only).

    Vectorised form of ``Real.decode_value``: low + clip(code, 0, 1)·(high − low).
    """
    lows = np.array([p.low for p in space.continuous_params])
    highs = np.array([p.high for p in space.continuous_params])
    return lows + np.clip(X[:, : space.n_continuous], 0.0, 1.0) * (highs - lows)


# --------------------------------------------------------------------------
# Func2C / Func3C
# --------------------------------------------------------------------------
_R, _S, _B = 0, 1, 2  # column of each function in the (n_points, 3) table below

# Minimiser of the six-hump camel function nearest (−0.09, 0.71), halved to
# u-space; its mirror −u is a minimiser too.  SPEC §6 rounds it to (−0.04492, 0.35633).
_CAMEL_ARGMIN_U = (-0.044921006550159036, 0.3563282015103698)


class _CoCaBOFunction(Problem):
    """f(u, h) = Σ_p c_p[h_p] · F_{p}[h_p](2u), F ∈ {R, S, B} (SPEC §6; Ru et al. 2020).

    Subclasses declare ``_terms``: for each nominal variable h_p, a pair
    (function per state, coefficient per state).
    """

    _terms = ()

    def __init__(self):
        self.space = Space(
            [Real("x1", -1.0, 1.0), Real("x2", -1.0, 1.0)]
            + [Categorical(f"h{p + 1}", list(range(len(functions))))
               for p, (functions, _) in enumerate(self._terms)])
        # state -> column of the function table, and state -> coefficient
        self._columns = [np.array(functions, dtype=np.int64) for functions, _ in self._terms]
        self._coefficients = [np.array(coefficients, dtype=np.float64) for _, coefficients in self._terms]

    def _evaluate(self, X):
        x = 2.0 * _real_values(self.space, X)  # SPEC §6: x = 2u
        table = np.stack([rosenbrock(x), six_hump_camel(x), beale(x)], axis=1)  # (n_points, 3)
        # Categorical choices are 0..n-1, so a state index is the value h_p itself.
        h = X[:, self.space.n_continuous:].astype(np.int64)
        rows = np.arange(X.shape[0])
        f = np.zeros(X.shape[0])
        for p, (columns, coefficients) in enumerate(zip(self._columns, self._coefficients)):
            f += coefficients[h[:, p]] * table[rows, columns[h[:, p]]]
        return f


class Func2C(_CoCaBOFunction):
    """Func2C of Ru et al. (2020), as stated in SPEC §6.

    u ∈ [−1, 1]² (parameters "x1", "x2"), x = 2u; nominal h1 ∈ {0, 1, 2} selects
    g1 ∈ (R, S, B) and nominal h2 ∈ {0..4} selects g2 ∈ (R, S, B, B, B);
    f = g1(x) + g2(x).

    The minimum is 2·min S = −0.2063257 at h = (1, 1), u ≈ (−0.04492, 0.35633)
    and at its mirror −u (SPEC §6 states −0.206326).

    Examples
    --------
    >>> problem = Func2C()
    >>> round(problem(problem.optimal_config), 6)
    -0.206326
    """

    name = "Func2C"
    _terms = (
        ((_R, _S, _B), (1.0, 1.0, 1.0)),
        ((_R, _S, _B, _B, _B), (1.0, 1.0, 1.0, 1.0, 1.0)),
    )
    # 2 × (six-hump camel minimum / 10), evaluated at _CAMEL_ARGMIN_U; SPEC §6 rounds it to −0.206326
    optimum = -0.2063256906979755
    optimal_config = {"x1": _CAMEL_ARGMIN_U[0], "x2": _CAMEL_ARGMIN_U[1], "h1": 1, "h2": 1}


class Func3C(_CoCaBOFunction):
    """Func3C of Ru et al. (2020), as stated in SPEC §6.

    Func2C plus a third nominal variable h3 ∈ {0..3} selecting
    g3 ∈ (5S, 2R, 2B, 3B); f = g1(x) + g2(x) + g3(x).

    The minimum is 7·min S = −0.7221399 at h = (1, 1, 0), at the same u as
    Func2C (and its mirror); SPEC §6 states −0.722140.
    """

    name = "Func3C"
    _terms = Func2C._terms + (
        ((_S, _R, _B, _B), (5.0, 2.0, 2.0, 3.0)),
    )
    # 7 × (six-hump camel minimum / 10), evaluated at _CAMEL_ARGMIN_U; SPEC §6 rounds it to −0.722140
    optimum = -0.7221399174429142
    optimal_config = {"x1": _CAMEL_ARGMIN_U[0], "x2": _CAMEL_ARGMIN_U[1], "h1": 1, "h2": 1, "h3": 0}


# --------------------------------------------------------------------------
# Ackley5C
# --------------------------------------------------------------------------
class Ackley5C(Problem):
    """Ackley5C of the FM-kernel paper (Oh et al. 2021, Sec. 4.1), as stated in SPEC §6.

    One continuous u ∈ [−1, 1] (parameter "x1") and five nominal h1..h5 ∈ {0..16};
    z = (u, 0.125·h − 1) ∈ [−1, 1]⁶ and

        f = −20·exp(−0.2·sqrt(mean z²)) − exp(mean cos 2πz) + 20 + e.

    The minimum is 0 at u = 0, h = (8, 8, 8, 8, 8).
    """

    name = "Ackley5C"
    optimum = 0.0
    optimal_config = {"x1": 0.0, **{f"h{i}": 8 for i in range(1, 6)}}

    def __init__(self):
        self.space = Space([Real("x1", -1.0, 1.0)] + [Categorical(f"h{i}", list(range(17))) for i in range(1, 6)])

    def _evaluate(self, X):
        u = _real_values(self.space, X)  # (n_points, 1)
        # Categorical choices are 0..16, so a state index is the value h_i itself.
        z = np.concatenate([u, 0.125 * X[:, self.space.n_continuous:] - 1.0], axis=1)
        return (-20.0 * np.exp(-0.2 * np.sqrt(np.mean(z ** 2, axis=1)))
                - np.exp(np.mean(np.cos(2.0 * np.pi * z), axis=1)) + 20.0 + np.e)
