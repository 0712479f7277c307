"""Acquisition functions for minimisation (SPEC §5).

Sign convention: **every acquisition here is to be MAXIMISED**, while the
objective f is MINIMISED.  The inputs are the GP's predictive mean ``mu`` and
standard deviation ``sigma`` of the (standardised) latent f at the candidate
points and, for improvement-based functions, the incumbent ``best`` in the
same units (``GaussianProcessRegressor.best_y_standardized_``).

* Expected improvement, improvement I = max(best − xi − f, 0):
  EI = E[I] = σ·h(z),  h(z) = φ(z) + z·Φ(z),  z = (best − xi − μ)/σ.
* log-EI = log h(z) + log σ, evaluated with the stable ``log_h`` of Ament et
  al. (2023, "Unexpected improvements to expected improvement", Eq. 9): it
  is finite, and its gradient non-zero, however far the candidate is from
  the incumbent (EI itself underflows to 0 below z ≈ −38).
* "Upper confidence bound" for minimisation is the lower confidence bound
  μ − √β·σ; to keep "maximise" uniform the function returns its negative,
  UCB = −(μ − √β·σ) = √β·σ − μ.

sigma ≤ ``SIGMA_FLOOR``: σ is raised to ``SIGMA_FLOOR`` (standardised units)
before z is formed.  EI then equals max(best − xi − μ, 0) to within
``SIGMA_FLOOR``·φ(z), and log-EI stays finite (≈ −z²/2, very negative but
ordered, and still decreasing in μ) where EI is exactly 0; its derivative
with respect to σ is 0 below the floor.
"""
import math

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr

__all__ = [
    "SIGMA_FLOOR",
    "UCB_BETA",
    "acquisition_function",
    "expected_improvement",
    "expected_improvement_and_grad",
    "log_expected_improvement",
    "log_expected_improvement_and_grad",
    "upper_confidence_bound",
    "upper_confidence_bound_and_grad",
]

# Smallest σ used to form z, in standardised-y units: far below any posterior std a noise floor of
# 1e-6 (variance) allows away from the data, so it only acts at σ = 0 (or round-off negatives).
SIGMA_FLOOR = 1e-12

# log h switches from the direct formula to the erfcx form below this z (Ament et al. use −1):
# above it φ(z) + zΦ(z) has no cancellation worth speaking of.
_LOG_H_SWITCH = -1.0
# Below −1/√eps, 1 − |z|Φ(z)/φ(z) = 1/z² + O(z⁻⁴) to machine precision; use the asymptote.
_LOG_H_ASYMPTOTE = -1.0 / math.sqrt(np.finfo(float).eps)
# z is clipped here so that z² (in log φ and in the gradient's 1/h ∝ z²/φ) cannot overflow.
_Z_MIN = -1e150

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _log1mexp(w):
    """log(1 − exp(w)) for w < 0, accurate on both sides of −log 2 (Mächler 2012)."""
    w = np.asarray(w, dtype=float)
    out = np.empty_like(w)
    near = w > -math.log(2.0)
    out[near] = np.log(-np.expm1(w[near]))
    out[~near] = np.log1p(-np.exp(w[~near]))
    return out


def _log_h_parts(z):
    """(log h(z), Φ(z)/h(z), φ(z)/h(z)) for h(z) = φ(z) + z·Φ(z), stable for every finite z.

    The ratios are d log h/dz (since h' = Φ) and the σ-derivative factor; below
    the switch they are formed from Φ/φ and 1 − |z|Φ/φ so that log φ(z), huge
    and negative far from the incumbent, cancels analytically.
    """
    z = np.maximum(np.asarray(z, dtype=float), _Z_MIN)
    log_h = np.empty_like(z)
    r_Phi = np.empty_like(z)
    r_phi = np.empty_like(z)
    upper = z > _LOG_H_SWITCH
    zu = z[upper]
    phi, Phi = np.exp(-0.5 * zu * zu - _HALF_LOG_2PI), ndtr(zu)
    h = phi + zu * Phi
    log_h[upper], r_Phi[upper], r_phi[upper] = np.log(h), Phi / h, phi / h
    zl = z[~upper]
    # For z < 0: h = φ(z)(1 − |z|·q), q = Φ(z)/φ(z) = √(π/2)·erfcx(−z/√2)   (Ament et al. 2023, Eq. 9)
    q = _SQRT_HALF_PI * erfcx(-zl * _INV_SQRT2)
    far = zl < _LOG_H_ASYMPTOTE
    tail = np.empty_like(zl)  # log(1 − |z|·q)
    tail[~far] = _log1mexp(np.log(-zl[~far] * q[~far]))
    tail[far] = -2.0 * np.log(-zl[far])  # 1 − |z|q = 1/z² + O(z⁻⁴)
    log_h[~upper] = -0.5 * zl * zl - _HALF_LOG_2PI + tail
    r_phi[~upper] = np.exp(-tail)
    r_Phi[~upper] = q * r_phi[~upper]
    return log_h, r_Phi, r_phi


def log_h(z):
    """log h(z) = log(φ(z) + z·Φ(z)), stable for every finite z (z is clipped below at −1e150).

    Parameters
    ----------
    z : array_like

    Returns
    -------
    ndarray, same shape as z
    """
    return _log_h_parts(z)[0]


def _standardise(mu, sigma, best, xi):
    mu = np.asarray(mu, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    clipped = sigma < SIGMA_FLOOR
    s = np.where(clipped, SIGMA_FLOOR, sigma)
    return mu, s, (best - xi - mu) / s, clipped


def log_expected_improvement(mu, sigma, best, xi=0.0):
    """log EI for minimisation (to be maximised).

    Parameters
    ----------
    mu, sigma : array_like of shape (M,) (or broadcastable)
        Predictive mean and std of f at the candidates.
    best : float
        Incumbent (smallest observed f, same units as ``mu``).
    xi : float, default 0.0
        Exploration margin: improvement counts below ``best − xi`` only.

    Returns
    -------
    ndarray of shape (M,)
        log E[max(best − xi − f, 0)], finite everywhere (see the module docstring for σ = 0).
    """
    _, s, z, _ = _standardise(mu, sigma, best, xi)
    return log_h(z) + np.log(s)


def log_expected_improvement_and_grad(mu, sigma, best, xi=0.0):
    """log EI and its derivatives with respect to mu and sigma.

    Parameters
    ----------
    mu, sigma : array_like of shape (M,)
    best : float
    xi : float, default 0.0

    Returns
    -------
    value, d_mu, d_sigma : ndarrays of shape (M,)
        With z = (best − xi − μ)/σ:  ∂/∂μ = −Φ(z)/(σ h(z)),  ∂/∂σ = φ(z)/(σ h(z))
        (both formed as exponentials of log differences, so finite and
        non-zero far from the incumbent); ∂/∂σ is 0 where σ < SIGMA_FLOOR.
    """
    _, s, z, clipped = _standardise(mu, sigma, best, xi)
    lh, r_Phi, r_phi = _log_h_parts(z)
    value = lh + np.log(s)
    # dz/dμ = −1/σ, d log h/dz = Φ(z)/h(z);  ∂ log(σ h)/∂σ = (1 − zΦ/h)/σ = φ/(σh)
    d_mu = -r_Phi / s
    d_sigma = np.where(clipped, 0.0, r_phi / s)
    return value, d_mu, d_sigma


def expected_improvement(mu, sigma, best, xi=0.0):
    """EI for minimisation (to be maximised): σφ(z) + (best − xi − μ)Φ(z).

    Parameters
    ----------
    mu, sigma : array_like of shape (M,)
    best : float
    xi : float, default 0.0

    Returns
    -------
    ndarray of shape (M,)
        ≥ 0; exp of :func:`log_expected_improvement` (underflows to 0 for z ≲ −38).
    """
    return np.exp(log_expected_improvement(mu, sigma, best, xi))


def expected_improvement_and_grad(mu, sigma, best, xi=0.0):
    """EI and its derivatives: ∂EI/∂μ = −Φ(z), ∂EI/∂σ = φ(z) (0 where σ < SIGMA_FLOOR).

    Returns
    -------
    value, d_mu, d_sigma : ndarrays of shape (M,)
    """
    _, s, z, clipped = _standardise(mu, sigma, best, xi)
    value = np.exp(log_h(z) + np.log(s))
    d_sigma = np.where(clipped, 0.0, np.exp(-0.5 * z * z - _HALF_LOG_2PI))
    return value, -ndtr(z), d_sigma


def _check_beta(beta):
    beta = float(beta)
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite non-negative number, got beta={beta!r}")
    return beta


def upper_confidence_bound(mu, sigma, beta):
    """Confidence bound for minimisation, to be maximised: −(μ − √β·σ).

    Parameters
    ----------
    mu, sigma : array_like of shape (M,)
    beta : float ≥ 0
        Exploration weight (β of GP-UCB); √β standard deviations.

    Returns
    -------
    ndarray of shape (M,)
    """
    beta = _check_beta(beta)
    return math.sqrt(beta) * np.asarray(sigma, dtype=float) - np.asarray(mu, dtype=float)


def upper_confidence_bound_and_grad(mu, sigma, beta):
    """:func:`upper_confidence_bound` with ∂/∂μ = −1 and ∂/∂σ = √β.

    Returns
    -------
    value, d_mu, d_sigma : ndarrays of shape (M,)
    """
    value = upper_confidence_bound(mu, sigma, beta)
    return value, np.full(value.shape, -1.0), np.full(value.shape, math.sqrt(float(beta)))


# UCB exploration weight (√β σ); 2.0 is a common default on standardised y (our choice)
UCB_BETA = 4.0


def acquisition_function(name, best, xi=0.0):
    """The acquisition the BO loop maximises, by name: (mu, sigma) -> (value, d/dmu, d/dsigma).

    Parameters
    ----------
    name : {"logei", "ei", "ucb"}
        log-EI, EI (exp of log-EI, with its chain rule), or UCB with β = ``UCB_BETA``.
    best : float
        Incumbent on the standardised scale (``GaussianProcessRegressor.best_y_standardized_``).
    xi : float, default 0.0
        The improvement-based functions' exploration margin, on the same scale (UCB ignores it).
    """
    if name == "logei":
        return lambda mu, sigma: log_expected_improvement_and_grad(mu, sigma, best, xi)
    if name == "ei":
        def ei(mu, sigma):
            log_value, dmu, dsigma = log_expected_improvement_and_grad(mu, sigma, best, xi)
            value = np.exp(log_value)
            return value, value * dmu, value * dsigma
        return ei
    if name == "ucb":
        return lambda mu, sigma: upper_confidence_bound_and_grad(mu, sigma, UCB_BETA)
    raise ValueError(f"unknown acquisition {name!r}; choose 'logei', 'ei' or 'ucb'")
