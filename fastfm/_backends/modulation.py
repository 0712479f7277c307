"""Frequency modulating functions f(λ, s | β) of SPEC §2, and their derivatives.

``s`` is the continuous modulation argument: α_p·r, with r = d^t the ARD
distance raised to the exponent t (d² when t = 2), or, for FM-NN, the
precomputed 1 − k_NN(c, c') with α_p fixed at 1.
"""
from dataclasses import dataclass

import numpy as np

__all__ = ["Modulation", "LAP_FAMILY", "DIFFUSION"]

LAP_FAMILY = 0   # f = Σ_n a_n (1 + βλ + s)^(-n)       (paper Prop. 1; ModLap is a = (1,))
DIFFUSION = 1    # f = exp(-(1 + s) βλ)                 (ModDif, violates FM-P3 on purpose)


@dataclass(frozen=True)
class Modulation:
    """Which f to use.

    Attributes
    ----------
    kind : int
        ``LAP_FAMILY`` or ``DIFFUSION``.
    coefficients : tuple of float
        a_1..a_N ≥ 0 of the Laplacian family (ignored for DIFFUSION).
    exponent : float
        t in (0, 2]: the continuous argument is α·d^t.
    """

    kind: int = LAP_FAMILY
    coefficients: tuple = (1.0,)
    exponent: float = 2.0

    def __post_init__(self):
        if self.kind not in (LAP_FAMILY, DIFFUSION):
            raise ValueError(f"unknown modulation kind {self.kind!r}")
        coeffs = tuple(float(a) for a in self.coefficients)
        if self.kind == LAP_FAMILY and (not coeffs or any(not np.isfinite(a) or a < 0 for a in coeffs) or sum(coeffs) <= 0):
            raise ValueError(f"coefficients must be non-negative, finite and not all zero, got {self.coefficients!r}")
        object.__setattr__(self, "coefficients", coeffs)
        if not 0.0 < float(self.exponent) <= 2.0:
            raise ValueError(f"exponent must lie in (0, 2], got exponent={self.exponent!r}")
        object.__setattr__(self, "exponent", float(self.exponent))

    @property
    def coefficient_array(self):
        return np.asarray(self.coefficients, dtype=np.float64)

    # --- reference formulas (NumPy, broadcasting) ---
    def value(self, lam, s, beta):
        """f(λ, s | β)."""
        if self.kind == DIFFUSION:
            return np.exp(-(1.0 + s) * beta * lam)
        inv_u = 1.0 / (1.0 + beta * lam + s)
        total = 0.0
        power = inv_u
        for a in self.coefficients:
            total = total + a * power
            power = power * inv_u
        return total

    def derivatives(self, lam, s, beta):
        """(f, ∂f/∂s, β·∂f/∂β) at (λ, s | β)."""
        if self.kind == DIFFUSION:
            f = np.exp(-(1.0 + s) * beta * lam)
            return f, -beta * lam * f, -(1.0 + s) * beta * lam * f
        inv_u = 1.0 / (1.0 + beta * lam + s)
        f = 0.0
        df_du = 0.0
        power = inv_u
        for n, a in enumerate(self.coefficients, start=1):
            f = f + a * power
            power = power * inv_u
            df_du = df_du - n * a * power          # d/du u^-n = -n u^-(n+1)
        return f, df_du, df_du * beta * lam
