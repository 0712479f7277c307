"""Type stub of the compiled backend ``fastfm._cpp`` (csrc/module.cpp, csrc/py/*.cpp).

Private: use the kernels (``fastfm.kernels``) or ``fastfm._backends.cpp``,
whose wrappers take the same arguments as ``fastfm._backends.numpy_backend``.
Every function raises ``ValueError`` naming the argument when a shape, dtype
or state index is wrong.  ``kind``/``coefficients``/``exponent`` describe the
modulation (``fastfm._backends.modulation.Modulation``); ``num_threads`` = 0
means OpenMP's default (all cores).
"""
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

class _BuildInfo(TypedDict):
    openmp: bool
    max_threads: int
    compiler: str
    simd: str

class SpectralTables:
    """β-independent tables of a ``PackedSpectra``, prepared once per spectra object."""

    def __init__(self, n_states: ArrayLike, eigvec_offsets: ArrayLike, eigenvectors: ArrayLike,
                 group_offsets: ArrayLike, group_values: ArrayLike, group_sizes: ArrayLike,
                 is_complete: ArrayLike) -> None: ...
    @property
    def n_variables(self) -> int: ...
    @property
    def paths(self) -> list[str]:
        """Per variable: 'complete', 'tridiagonal' or 'general'."""

def fm_gram(C1: ArrayLike, D1: ArrayLike, C2: ArrayLike | None, D2: ArrayLike | None, tables: SpectralTables,
            alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int, coefficients: ArrayLike,
            exponent: float, num_threads: int = 0) -> NDArray[np.float64]: ...
class _RationalForms(TypedDict):
    factors: list[str]
    rational: bool

def fm_gram_rational_forms(tables: SpectralTables, alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int,
                           coefficients: ArrayLike, exponent: float) -> _RationalForms:
    """Per variable 'complete', 'tridiagonal' or 'general' (no rational form), and whether the Gram and
    K·V paths use the rational form (one division per pair) at these hyperparameters."""
def fm_gram_from_argument(R: ArrayLike, D1: ArrayLike, D2: ArrayLike | None, tables: SpectralTables,
                          alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int, coefficients: ArrayLike,
                          exponent: float, num_threads: int = 0) -> NDArray[np.float64]: ...
def fm_grad_reduction(C: ArrayLike, D: ArrayLike, W: ArrayLike, tables: SpectralTables, alphas: ArrayLike,
                      betas: ArrayLike, variance: float, kind: int, coefficients: ArrayLike, exponent: float,
                      num_threads: int = 0
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]: ...
def fm_gram_sum(C: ArrayLike, lengthscales: ArrayLike, states: list[ArrayLike], tables: list[SpectralTables],
                alphas: ArrayLike, betas: ArrayLike, variances: ArrayLike, kind: int, coefficients: ArrayLike,
                exponent: float, num_threads: int = 0, out: NDArray[np.float64] | None = None,
                weights: list[ArrayLike | None] | None = None, keep_grams: bool = True,
                grams_out: list[NDArray[np.float64] | None] | None = None,
                workspace: NDArray[np.float64] | None = None
                ) -> (tuple[NDArray[np.float64], NDArray[np.float64]]
                      | tuple[NDArray[np.float64], NDArray[np.float64], list[NDArray[np.float64] | None]]):
    """(K, diagonals (n_parts, N)): the FM Grams of parts on the same points (part k on C / lengthscales[k] and
    states[k] with tables[k]), added in order into ``out`` (in place) or a new array; with ``weights`` (per part
    None or unit-diagonal row weights w), a weighted part is w_a K_ab w_b and the result is (K, diagonals,
    part_grams), each weighted part's scaled Gram or None (None for every part with ``keep_grams=False``), written
    into ``grams_out[k]`` where given (not ``out``); ``workspace`` (N, N) is a scratch, overwritten."""
def fm_unit_diagonal_reduction(C: ArrayLike, D: ArrayLike, W: ArrayLike, w: ArrayLike, tables: SpectralTables,
                               alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int,
                               coefficients: ArrayLike, exponent: float, num_threads: int = 0,
                               symmetric_weights: bool = False
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float,
                                          NDArray[np.float64]]:
    """``fm_grad_reduction`` with the weights W_ab w_a w_b, and r_a = Σ_b (W_ab + W_ba) w_a w_b K_ab (the Gram
    recomputed a chunk at a time): a unit-diagonal kernel's reduction without an N × N copy of W or K."""
def fm_grad_reduction_sum(C: ArrayLike, lengthscales: ArrayLike, states: list[ArrayLike], W: ArrayLike,
                          tables: list[SpectralTables], alphas: ArrayLike, betas: ArrayLike, variances: ArrayLike,
                          kind: int, coefficients: ArrayLike, exponent: float, num_threads: int = 0,
                          symmetric_weights: bool = False,
                          scalings: list[tuple[ArrayLike, ArrayLike, ArrayLike | None] | None] | None = None,
                          workspace: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Per part of ``fm_gram_sum``, [g_lengthscale | g_alpha | g_beta | g_variance], concatenated; a part with a
    scaling (w, G = ∂log w/∂log β, its scaled Gram or None: recomputed) is differentiated as w_a K_ab w_b;
    ``workspace`` (N, N, not W) is the scratch of the weights W ∘ wwᵀ, overwritten."""
def fm_cross_gram_sum(C1: ArrayLike, states1: list[ArrayLike], C2: ArrayLike, states2: list[ArrayLike],
                      lengthscales: ArrayLike, tables: list[SpectralTables], alphas: ArrayLike, betas: ArrayLike,
                      variances: ArrayLike, kind: int, coefficients: ArrayLike, exponent: float,
                      num_threads: int = 0, weights1: list[ArrayLike | None] | None = None,
                      weights2: list[ArrayLike | None] | None = None) -> NDArray[np.float64]:
    """K (M, N): the parts' FM Grams between the rows and the columns, each as ``fm_gram`` gives it on the points
    divided by its lengthscales, scaled by its weights where given, added in order."""
def fm_cross_gradient_sum(C1: ArrayLike, states1: list[ArrayLike], C2: ArrayLike, states2: list[ArrayLike],
                          lengthscales: ArrayLike, tables: list[SpectralTables], alphas: ArrayLike, betas: ArrayLike,
                          variances: ArrayLike, kind: int, coefficients: ArrayLike, exponent: float,
                          num_threads: int = 0, out_K: NDArray[np.float64] | None = None,
                          out_dK: NDArray[np.float64] | None = None,
                          weights1: list[ArrayLike | None] | None = None,
                          weights2: list[ArrayLike | None] | None = None
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(K (M, N), dK (M, N, Dc)): fm_cross_gradient of the parts of ``fm_gram_sum``, dK in C1's units, a part with
    weights (weights1[k] on the rows, weights2[k] on the columns) scaled by them, added in order into out_K and
    out_dK (in place) or new arrays."""
def fm_reduction_from_argument(R: ArrayLike, D: ArrayLike, W: ArrayLike, tables: SpectralTables, alphas: ArrayLike,
                               betas: ArrayLike, variance: float, kind: int, coefficients: ArrayLike,
                               exponent: float, num_threads: int = 0
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64], float, NDArray[np.float64]]: ...
def fm_neighbour_gram(c: ArrayLike, v: ArrayLike, C: ArrayLike, D: ArrayLike, var_index: ArrayLike,
                      new_state: ArrayLike, tables: SpectralTables, alphas: ArrayLike, betas: ArrayLike,
                      variance: float, kind: int, coefficients: ArrayLike, exponent: float,
                      num_threads: int = 0) -> NDArray[np.float64]: ...
def fm_cross_gradient(C1: ArrayLike, D1: ArrayLike, C2: ArrayLike, D2: ArrayLike, tables: SpectralTables,
                      alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int, coefficients: ArrayLike,
                      exponent: float, num_threads: int = 0
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def build_info() -> _BuildInfo: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...

# ---- set kernels (SPEC §4) ----
def set_gram(A: ArrayLike, B: ArrayLike | None, length_scale: ArrayLike, nu: float = 2.5,
             num_threads: int = 0) -> NDArray[np.float64]: ...
def set_grad_reduction(A: ArrayLike, W: ArrayLike, length_scale: ArrayLike, nu: float = 2.5,
                       num_threads: int = 0) -> NDArray[np.float64]: ...
def set_grad_reduction_and_weighted_gram(A: ArrayLike, W: ArrayLike, length_scale: ArrayLike, nu: float = 2.5,
                                         num_threads: int = 0) -> tuple[NDArray[np.float64], float]: ...
def set_cross_gradient(A: ArrayLike, B: ArrayLike, length_scale: ArrayLike, nu: float = 2.5,
                       num_threads: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def set_diag(A: ArrayLike, length_scale: ArrayLike, nu: float = 2.5, num_threads: int = 0) -> NDArray[np.float64]: ...
def set_diag_gradient(A: ArrayLike, length_scale: ArrayLike, nu: float = 2.5, num_threads: int = 0
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]: ...

# hierarchical (conditional-space) kernel, SPEC §3
def hier_gram(V1: ArrayLike, M1: ArrayLike, V2: ArrayLike | None, M2: ArrayLike | None, is_real: ArrayLike,
              omega: ArrayLike, rho_pi: ArrayLike, lengthscale: float, variance: float, profile: int,
              num_threads: int = 0) -> NDArray[np.float64]: ...
def hier_grad_reduction(V: ArrayLike, M: ArrayLike, W: ArrayLike, is_real: ArrayLike, omega: ArrayLike,
                        rho_pi: ArrayLike, lengthscale: float, variance: float, profile: int, num_threads: int = 0
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]: ...

# Large-N GP regression (fastfm/gp_large.py)
def fm_gram_matvec(C1: ArrayLike, D1: ArrayLike, C2: ArrayLike | None, D2: ArrayLike | None, V: ArrayLike,
                   tables: SpectralTables, alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int,
                   coefficients: ArrayLike, exponent: float, num_threads: int = 0) -> NDArray[np.float64]: ...
def fm_grad_reduction_low_rank(C: ArrayLike, D: ArrayLike, U: ArrayLike, Z: ArrayLike, tables: SpectralTables,
                               alphas: ArrayLike, betas: ArrayLike, variance: float, kind: int,
                               coefficients: ArrayLike, exponent: float, num_threads: int = 0
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]: ...

# The exact GP likelihood's gradient weights (fastfm/gp/_linalg.py, csrc/include/fastfm/linalg.hpp)
def likelihood_weights(factor_rows: NDArray[np.float64], alpha: ArrayLike) -> float:
    """W = ½(ααᵀ − K⁻¹) written over ``factor_rows`` (the C-ordered view of dpotrf's lower factor of K);
    returns tr(W)."""


# The acquisition search's batched quasi-Newton bookkeeping (fastfm/optim/batched_lbfgs.py,
# csrc/include/fastfm/batched_lbfgs.hpp): the same runs as the NumPy loop, bit for bit
class BatchedLBFGS:
    """Independent projected L-BFGS runs from the rows of X, evaluated by the caller in rounds."""

    def __init__(self, X: ArrayLike, F: ArrayLike, G: ArrayLike, lower: ArrayLike, upper: ArrayLike,
                 maxiter: int) -> None: ...
    def next_trials(self) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """(starts, points) to evaluate next, or None once every run has stopped."""
    def tell(self, values: ArrayLike, gradients: ArrayLike) -> None: ...
    @property
    def X(self) -> NDArray[np.float64]: ...
    @property
    def F(self) -> NDArray[np.float64]: ...
