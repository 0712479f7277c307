"""Set kernels (SPEC §4; Kim et al., "Bayesian optimization over sets").

    K_set(X, X') = σ² · 1/(m m') Σ_i Σ_j k_ν(‖(x_i − x'_j)/ℓ‖)

with a unit-amplitude Matérn inner kernel k_ν (ν = 5/2 by default).  It is
permutation invariant by construction (a sum over all pairs) and PSD (a sum
of k over the points' feature maps, i.e. the inner product of the sets' mean
embeddings).

The random-projection approximation K̂ (the paper's Algorithm 1) replaces each
set by L of its points: draw w ~ N(0, I_d) and a random permutation π of the m
positions once (from ``seed``), sort every set's points by wᵀx and keep the
points at the sorted positions π(1..L); K̂ is K_set on those subsets.  The
draw is a function of ``seed``, so the training Gram and every cross-covariance
of a GP use the same subsets (a GP needs one fixed kernel); set ``seed`` (or
``clone_with_seed``) to draw again.

On the bias of K̂.  SPEC §4 and the paper's Theorem 1 call K̂ unbiased.  With
the same sorted positions for both sets (which is what makes K̂ symmetric and
PSD) that holds only on average over pairs whose sorted-position-matched
terms look like the others: for a fixed w,
E_π[K̂(X, X')] = K_set(X, X') + (1/L − 1/m)(D − O), where D is the mean of
k(x_(p), x'_(p)) over matched sorted positions p and O the mean over p ≠ q
(the paper's Lemma 2 averages over *independent* subsets of X and X').  On the
diagonal D = k(0) > O, so E[K̂(X, X)] > K_set(X, X).  The tests check this
exact expectation by Monte Carlo.

``SetKernel(subsample="independent")`` removes that bias off the diagonal.
Each set keeps its own L sorted positions, drawn from the seed and a hash of
the set's points (so K̂ is still a fixed, permutation-invariant function).
For X ≠ X' the two subsets are independent uniform L-subsets over the draws,
every pair (i, j) is kept with probability (L/m)², and E[K̂(X, X')] =
K_set(X, X') (the paper's Lemma 2 setting).  K̂ = Φ̂Φ̂ᵀ with Φ̂(X) the mean
embedding of X's subset, so it stays PSD.  The diagonal keeps its upward
bias (1/L − 1/m)(k(0) − O_X), a set-dependent nugget.
"""
import hashlib

import numpy as np
from scipy.sparse import csr_matrix

from .._backends import backend_function, get_backend, numpy_backend
from ..exceptions import InvalidConfigError, InvalidValueError, SpaceDefinitionError
from ._space_kernel import LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS
from .base import Kernel, Product, Sum
from .continuous import Matern52

__all__ = ["SetKernel", "MMDSetKernel", "SubspaceKernel", "SpaceProduct", "SpaceSum", "subsample_sets", "draw_subsample"]

# normalize="learn": the power γ of K(X, X') / (K(X, X) K(X', X'))^(γ/2) is fitted within these bounds
# (γ = 1: the normalised kernel; γ → 0: SPEC §4's plain K_set) from this starting value
NORMALIZATION_BOUNDS = (1e-3, 1.0)
NORMALIZATION_START = 0.5
NORMALIZE_MODES = (False, True, "learn")


def draw_subsample(seed, n_points, dim, n_subsample):
    """The random quantities of K̂ for ``seed``: w ~ N(0, I_dim) and L of the m sorted positions.

    Returns
    -------
    projection : ndarray of shape (dim,)
    positions : ndarray of shape (n_subsample,), distinct integers in [0, n_points)
    """
    rng = np.random.default_rng(seed)
    return rng.standard_normal(dim), rng.permutation(n_points)[:n_subsample]


def set_parameter(space, parameter, owner):
    """The ``Set`` parameter of ``space`` named ``parameter`` (None: the only one) that kernel ``owner`` reads."""
    sets = space.set_params
    if parameter is None and len(sets) != 1:
        raise SpaceDefinitionError(f"{owner}: the space has {len(sets)} Set parameters; name one with parameter=...")
    param = sets[0] if parameter is None else space[parameter]
    if param not in sets:
        raise SpaceDefinitionError(f"{owner}: parameter {param.name!r} is not a Set")
    return param


SUBSAMPLE_MODES = ("shared", "independent")
# The largest (N, N, d) array of per-pair lengthscale derivatives that the likelihood terms keep (64 MiB of float64;
# N = 2,048 sets in the plane): above it the reduction makes its own pass (SetKernel._one_pass_gradient)
ONE_PASS_MAX_ELEMENTS = 1 << 23


# A cross-covariance E(A, B) of many sets A that share points (the acquisition optimiser's random sets, drawn from a
# pool, and its moves of one point of the best sets) goes through A's distinct points u: E(A, B)_ab = (1/m) Σ_i
# H(a_i, B_b), H(u, B_b) = (1/m') Σ_j k(u, b_j) once per u.  Finding them costs ~30 ns a point and a point's direct
# pass ~1 ns per point of B, so it is tried where A has at least SHARED_POINTS_MIN points and B at least
# SHARED_POINTS_MIN_OTHER, and taken where at most SHARED_POINTS_MAX_FRACTION of A's points are distinct.
SHARED_POINTS_MIN = 2048
SHARED_POINTS_MIN_OTHER = 128
SHARED_POINTS_MAX_FRACTION = 0.5


def distinct_points(points):
    """(distinct rows of ``points``, shape (U, d); inverse, shape (n,)) with ``points[i] == distinct[inverse[i]]``
    bit for bit, so that a point and its copy have the same kernel values.

    The rows are sorted by a hash of their bits (one argsort of a 64-bit key, 3x faster than a lexicographic
    sort), and a row equal to the one before it is a copy.  Two different rows with the same key may separate
    copies of one of them; that point is then listed twice, which costs a kernel row, never a wrong value."""
    points = np.ascontiguousarray(points, dtype=np.float64)
    bits = points.view(np.uint64)
    key = bits[:, 0].copy()
    with np.errstate(over="ignore"):
        for column in range(1, points.shape[1]):
            key = (key * np.uint64(0x9E3779B97F4A7C15)) ^ bits[:, column]
    order = np.argsort(key)
    ordered = points[order]
    first = np.ones(len(points), dtype=bool)
    first[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(len(points), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def subsample_sets(X, n_subsample, seed, mode="shared"):
    """The subsets of the approximation K̂ (SPEC §4, paper Algorithm 1).

    Parameters
    ----------
    X : array of shape (N, m, d)
    n_subsample : int
        L; with L ≥ m the sets are returned whole.
    seed : int
        Determines w ~ N(0, I_d) and the permutation π of the m positions.
    mode : {"shared", "independent"}
        "shared" (Algorithm 1, SPEC §4): every set keeps the same sorted positions π(1..L).
        "independent": each set keeps its own L sorted positions, drawn from ``seed`` and the
        set's content (so still a fixed, permutation-invariant function of the set); for two
        different sets the subsets are then independent draws, which makes E[K̂(X, X')] =
        K_set(X, X') exactly (module docstring).

    Returns
    -------
    subsets : ndarray of shape (N, L, d)
    indices : ndarray of shape (N, L)
        ``subsets[a, l] = X[a, indices[a, l]]``.
    """
    N, m, d = X.shape
    if n_subsample is None or n_subsample >= m:
        return X, np.broadcast_to(np.arange(m), (N, m))
    w, positions = draw_subsample(seed, m, d, n_subsample)
    # stable sort by the projection: ties (e.g. duplicated points) are broken by index,
    # and tied points are identical in the kernel anyway when they coincide
    order = np.argsort(X @ w, axis=1, kind="stable")
    if mode == "independent":
        positions = _positions_per_set(np.take_along_axis(X, order[:, :, None], axis=1), n_subsample, seed)
        indices = np.take_along_axis(order, positions, axis=1)
    else:
        indices = order[:, positions]
    return np.take_along_axis(X, indices[:, :, None], axis=1), indices


def _positions_per_set(sorted_sets, n_subsample, seed):
    """(N, L) sorted positions, one uniform L-subset per set, a function of (seed, the set's points).

    Each set's points in projection order are hashed (BLAKE2b) with the seed; position p of set a
    gets the key splitmix64(h_a + p·golden) and the L smallest keys win: a uniformly random L-subset
    per set, the same whenever the same set comes back (in any order), independent across sets.
    """
    N, m, _ = sorted_sets.shape
    seed_bytes = int(seed).to_bytes(8, "little", signed=True)
    hashes = np.array([int.from_bytes(hashlib.blake2b(np.ascontiguousarray(points).tobytes(), digest_size=8,
                                                      key=seed_bytes).digest(), "little")
                       for points in sorted_sets], dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = hashes[:, None] + np.arange(1, m + 1, dtype=np.uint64)[None, :] * np.uint64(0x9E3779B97F4A7C15)
        # splitmix64 finaliser (Steele, Lea & Flood 2014): well-mixed 64-bit keys
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return np.sort(np.argsort(z, axis=1, kind="stable")[:, :n_subsample], axis=1)


def _resolve_inner(inner, lengthscale, nu, variance, lengthscale_bounds, variance_bounds):
    """SetKernel's (lengthscale, nu, variance, bounds) from ``inner`` or the explicit arguments."""
    if inner is None:
        return (0.5 if lengthscale is None else lengthscale, 2.5 if nu is None else nu,
                1.0 if variance is None else variance,
                LENGTHSCALE_BOUNDS if lengthscale_bounds is None else lengthscale_bounds,
                VARIANCE_BOUNDS if variance_bounds is None else variance_bounds)
    if not isinstance(inner, Matern52) or inner.space is not None:
        raise InvalidValueError(
            "inner must be a Matern52 built without a space, e.g. Matern52(length_scale=0.3) (the set sums are "
            f"compiled for Matérn inner kernels), got inner={inner!r}", "inner", inner)
    given = {name: value for name, value in (("lengthscale", lengthscale), ("nu", nu),
                                             ("lengthscale_bounds", lengthscale_bounds)) if value is not None}
    if given:
        first = next(iter(given))
        raise InvalidValueError(f"give the inner kernel's {', '.join(given)} through inner=, not beside it",
                                first, given[first])
    return (np.array(inner.lengthscale, dtype=float) if np.ndim(inner.lengthscale) else float(inner.lengthscale),
            float(inner.nu), float(inner.variance) if variance is None else variance,
            inner.lengthscale_bounds,
            inner.variance_bounds if variance_bounds is None else variance_bounds)


class SetKernel(Kernel):
    """Set kernel with a Matérn inner kernel, exact or randomly subsampled.

    Parameters
    ----------
    inner : Matern52 built without a space, optional
        The inner kernel k, e.g. ``Matern52(length_scale=0.3)``: its lengthscale
        (isotropic or one per coordinate), bounds, variance and Matérn order
        become this kernel's, and its hyperparameters are the ones fitted.
        Instead of ``inner`` the same can be given as ``lengthscale`` and ``nu``
        (default: lengthscale 0.5, ν = 5/2).
    n_subsample : int or None
        L: None (or L ≥ m) gives the exact K_set; L < m the approximation K̂.
    seed : int or None
        Seed of K̂'s projection and positions; None draws one at construction,
        so that the kernel is still one fixed function.
    subsample : {"shared", "independent"}, default "shared"
        "shared" is the paper's Algorithm 1: the same L sorted positions for every set.
        "independent" draws each set's positions from the seed and the set's content:
        K̂ is then unbiased off the diagonal (see the module docstring).
    lengthscale : float or array of shape (dim,)
        ℓ of the inner kernel (one value: isotropic; dim values: ARD).
    nu : {0.5, 1.5, 2.5}, default 2.5
        Matérn order of the inner kernel.
    variance : float
        σ², the amplitude (default: the inner kernel's variance, else 1).
    lengthscale_bounds, variance_bounds : (low, high) or "fixed"
    space, parameter : Space and the name of one of its ``Set`` parameters, optional
        With them the kernel takes encoded arrays (N, space.n_dims) and reads
        that Set's columns (unit-scaled coordinates); without, it takes arrays
        of shape (N, m, dim) (2-d arrays (N, m·dim) are read point after point
        when ``dim`` is known from an ARD lengthscale).
    normalize : {False, True, "learn"}, default False
        True: use K(X, X') / √(K(X, X) K(X', X')) (unit diagonal; still PSD and permutation
        invariant).  The plain K_set gives a set whose points coincide up to m times the
        prior variance of a spread-out one, which expected improvement then chases.
        "learn": use K(X, X') / (K(X, X) K(X', X'))^(γ/2) with the power γ ∈ [10⁻³, 1] a
        hyperparameter ("normalization", fitted with the others).  It is D K D with D a positive
        diagonal, so PSD for every γ; γ = 1 is the normalised kernel, γ → 0 the plain K_set, which
        is the exact prior of a sum-structured objective f(X) = Σ_i g(x_i) with g ~ GP(0, k)
        (the set-BO paper's eq. 11; docs/benchmarks/sets.md, "Issue 24 §4").
    backend : {"auto", "numpy", "cpp", "cuda"}

    Examples
    --------
    >>> import numpy as np
    >>> from fastfm.kernels import SetKernel
    >>> X = np.random.default_rng(0).random((4, 10, 2))           # 4 sets of 10 points in R²
    >>> from fastfm.kernels import Matern52
    >>> K = SetKernel(inner=Matern52(length_scale=0.3))(X)
    >>> K_hat = SetKernel(inner=Matern52(length_scale=0.3), n_subsample=5, seed=1)(X)
    >>> K.shape, K_hat.shape
    ((4, 4), (4, 4))
    """

    def __init__(self, inner=None, n_subsample=None, seed=None, lengthscale=None, nu=None, variance=None,
                 lengthscale_bounds=None, variance_bounds=None, space=None, parameter=None,
                 normalize=False, backend="auto", subsample="shared"):
        lengthscale, nu, variance, lengthscale_bounds, variance_bounds = _resolve_inner(
            inner, lengthscale, nu, variance, lengthscale_bounds, variance_bounds)
        if nu not in numpy_backend.MATERN_ORDERS:
            raise InvalidValueError(f"nu must be one of {numpy_backend.MATERN_ORDERS}, got nu={nu!r}", "nu", nu)
        if n_subsample is not None and (not isinstance(n_subsample, (int, np.integer)) or isinstance(n_subsample, bool)
                                        or n_subsample < 1):
            raise InvalidValueError(f"n_subsample must be None or a positive integer, got n_subsample={n_subsample!r}",
                                    "n_subsample", n_subsample)
        if subsample not in SUBSAMPLE_MODES:
            raise InvalidValueError(f"subsample must be one of {SUBSAMPLE_MODES}, got subsample={subsample!r}",
                                    "subsample", subsample)
        self.subsample = subsample
        self.lengthscale = lengthscale
        self.nu = nu
        self.variance = variance
        self.n_subsample = n_subsample
        if isinstance(normalize, str) and normalize != "learn":
            raise InvalidValueError(f"normalize must be one of {NORMALIZE_MODES}, got normalize={normalize!r}",
                                    "normalize", normalize)
        normalize = normalize if isinstance(normalize, str) else bool(normalize)
        self.normalize = normalize
        # γ, the power of the normalisation (a hyperparameter only with normalize="learn")
        self.normalization = NORMALIZATION_START if normalize == "learn" else float(bool(normalize))
        self.normalization_bounds = NORMALIZATION_BOUNDS if normalize == "learn" else "fixed"
        self.seed = int(np.random.SeedSequence().entropy % (1 << 63)) if seed is None else seed
        self.lengthscale_bounds = lengthscale_bounds
        self.variance_bounds = variance_bounds
        self.space = space
        self.backend = backend
        self._columns = None
        if space is not None:
            param = set_parameter(space, parameter, "SetKernel")
            self.parameter = param.name
            self._columns = space.column(param.name)
            self._set_shape = (param.n_points, param.dim)
        else:
            self.parameter = parameter

    @property
    def inner(self):
        """The inner kernel at the current hyperparameters, unit variance (σ² is this kernel's), or None
        when ν ≠ 5/2 (no kernel class of that order)."""
        if self.nu != 2.5:
            return None
        return Matern52(length_scale=np.array(self.lengthscale, dtype=float) if np.ndim(self.lengthscale)
                        else float(self.lengthscale), lengthscale_bounds=self.lengthscale_bounds)

    # ---- inputs ---------------------------------------------------------------------
    @property
    def n_dims(self):
        return self.space.n_dims if self.space is not None else None

    def _n_discrete(self):
        return self.space.n_discrete if self.space is not None else 0

    def _check_X(self, X, name="X"):
        X = np.asarray(X, dtype=np.float64)
        if self.space is not None:
            if X.ndim != 2 or X.shape[1] != self.space.n_dims:
                raise InvalidConfigError(f"{name} must have shape (n_points, {self.space.n_dims}) for this kernel's "
                                         f"space, got {np.shape(X)}", name)
        elif X.ndim == 2 and np.size(self.lengthscale) > 1 and X.shape[1] % np.size(self.lengthscale) == 0:
            X = X.reshape(X.shape[0], -1, np.size(self.lengthscale))
        elif X.ndim != 3 or X.shape[1] < 1 or X.shape[2] < 1:
            raise InvalidConfigError(f"{name} must be an array of sets of shape (n_sets, n_points, dim), "
                                     f"got shape {np.shape(X)}", name)
        if not np.all(np.isfinite(X)):
            raise InvalidValueError(f"{name} holds non-finite values", name, X[~np.isfinite(X)][0])
        return np.ascontiguousarray(X)

    def _sets(self, X):
        """The sets of X, shape (N, m, d) (X already checked)."""
        if self.space is None:
            return X
        return np.ascontiguousarray(X[:, self._columns].reshape(X.shape[0], *self._set_shape))

    def _dim_of(self, sets):
        d = sets.shape[2]
        n = np.size(self.lengthscale)
        if n not in (1, d):
            raise InvalidConfigError(f"lengthscale has {n} values but the sets' points have dim={d}", "lengthscale")
        return d

    def _lengthscales(self, d):
        """The inner kernel's ℓ per coordinate, shape (d,), read-only (kept per hyperparameter state: a suggestion
        asks for it ~1,000 times)."""
        def compute():
            n = np.size(self.lengthscale)
            ls = np.array(np.broadcast_to(self._values("lengthscale", n), (d,)), dtype=np.float64)
            ls.setflags(write=False)
            return ls
        return self._memo(("lengthscales", d), compute)

    def _subsets(self, sets):
        return subsample_sets(sets, self.n_subsample, self.seed, self.subsample)

    # ---- hyperparameters ------------------------------------------------------------
    def _hyperparameter_specs(self):
        specs = [("lengthscale", int(np.size(self.lengthscale))), ("variance", 1)]
        return specs + [("normalization", 1)] if self._learns_normalization else specs

    @property
    def _learns_normalization(self):
        return self.normalize == "learn"

    def _power(self):
        """γ of K / (K(X, X) K(X', X'))^(γ/2): 0 plain, 1 normalised."""
        return float(self.normalization)

    def _scaling(self, diag_a, diag_b):
        """S_ab = (δ_a δ_b)^(−γ/2), δ the raw diagonal (γ = 1 as 1/√·, as before "learn" existed)."""
        outer = np.outer(diag_a, diag_b)
        power = self._power()
        return 1.0 / np.sqrt(outer) if power == 1.0 else outer ** (-0.5 * power)

    def _static_key(self):
        return (self.nu, self.n_subsample, self.seed, self.normalize, self.subsample)

    def clone_with_seed(self, seed):
        """A copy whose K̂ uses a new draw of the projection and positions."""
        clone = self.clone_with_theta(self.theta)
        clone.seed = seed
        return clone

    # ---- evaluation -----------------------------------------------------------------
    def _backend_call(self, name, *args):
        return backend_function(get_backend(self.backend), name)(*args)

    def _diagonal(self, A, with_gradient=False):
        """K_set(A[a], A[a]) (unit amplitude), with its derivatives when asked (O(N m² d))."""
        ls, nu = self._lengthscales(self._dim_of(A)), float(self.nu)
        return self._backend_call("set_diag_gradient" if with_gradient else "set_diag", A, ls, nu)

    # ---- values kept between the calls of a likelihood evaluation -------------------------
    # L-BFGS-B asks for log p(y|X,θ) and its gradient at each θ: the Gram, then the gradient's reduction, which
    # needs the same plain set Gram E(A, A) and diagonals again (the sum of the normalised and the MMD kernel: 4
    # set Grams and 2 reductions per evaluation, where 2 Grams suffice).  On the inputs that the likelihood terms
    # fixed (``_fix_inputs``) they are kept for the current hyperparameter state (``Kernel._memo``).
    def _fix_inputs(self, X):
        self.__dict__["_fixed_inputs"] = X

    def _kept(self, X, label, compute):
        """compute(), kept for the next call at this hyperparameter state when X is the fixed inputs."""
        if X is not self.__dict__.get("_fixed_inputs"):
            return compute()

        def read_only():
            value = compute()
            for array in (value if isinstance(value, (tuple, list)) else (value,)):
                if array is not None:
                    array.setflags(write=False)     # a caller writing into it would corrupt the next call's value
            return value
        return self._memo(label, read_only)

    def _subsets_of(self, X):
        """The (sub)sets A of X's Set parameter, shape (N, L, d)."""
        return self._kept(X, "subsets", lambda: self._subsets(self._sets(X))[0])

    def _plain_gram(self, X, A, B=None):
        """E(A, B) = K_set(A, B) with unit amplitude (A = ``_subsets_of(X)``; B None: E(A, A), kept)."""
        def compute():
            return self._backend_call("set_gram", A, B, self._lengthscales(self._dim_of(A)), float(self.nu))
        if B is not None:
            return self._cross_plain_gram(A, B)
        if self._one_pass_gradient(X, A):
            return self._plain_gram_and_gradient(X, A)[0]
        return self._kept(X, "plain_gram", compute)

    def _cross_plain_gram(self, A, B):
        """E(A, B), through A's distinct points where A's sets share enough of them (SHARED_POINTS_MIN)."""
        ls, nu = self._lengthscales(self._dim_of(A)), float(self.nu)
        n_sets, m, d = A.shape
        if n_sets * m >= SHARED_POINTS_MIN and B.shape[0] * B.shape[1] >= SHARED_POINTS_MIN_OTHER:
            points, inverse = distinct_points(A.reshape(-1, d))
            if len(points) <= SHARED_POINTS_MAX_FRACTION * n_sets * m:
                per_point = self._backend_call("set_gram", np.ascontiguousarray(points[:, None, :]), B, ls, nu)
                mean_over_set = csr_matrix((np.full(n_sets * m, 1.0 / m), inverse, np.arange(0, n_sets * m + 1, m)),
                                           shape=(n_sets, len(points)))
                return np.asarray(mean_over_set @ per_point)
        return self._backend_call("set_gram", A, B, ls, nu)

    # The likelihood asks at every θ for the Gram and then for Σ W ∘ ∂E/∂log ℓ: two passes over the O(N² m² d) point
    # pairs that share every distance, square root and exponential.  Where the backend gives E with every pair's
    # ∂E_ab/∂log ℓ_k in one pass (an (N, N, d) array, at most ONE_PASS_MAX_ELEMENTS of it), the likelihood terms
    # keep both, and the reduction is a product with W at O(N² d): 0.63 + 0.92 -> 0.91 ms for the Gram and the
    # reduction of (N, m, d) = (100, 10, 2) sets on one core (docs/benchmarks/suggestion.md).
    def _one_pass_gradient(self, X, A):
        return (X is self.__dict__.get("_fixed_inputs") and A.shape[0] ** 2 * A.shape[2] <= ONE_PASS_MAX_ELEMENTS
                and getattr(get_backend(self.backend), "set_gram_gradient", None) is not None)

    def _plain_gram_and_gradient(self, X, A):
        """(E(A, A), ∂E/∂log ℓ (N, N, d)), kept (only where ``_one_pass_gradient``)."""
        return self._kept(X, "plain_gram_and_gradient", lambda: self._backend_call(
            "set_gram_gradient", A, self._lengthscales(self._dim_of(A)), float(self.nu)))

    def _weighted_gradient(self, X, A, W):
        """g_k = Σ_ab W_ab ∂E_ab/∂log ℓ_k, shape (d,)."""
        if self._one_pass_gradient(X, A):
            dE = self._plain_gram_and_gradient(X, A)[1]
            return W.reshape(-1) @ dE.reshape(-1, dE.shape[2])
        return np.asarray(self._backend_call("set_grad_reduction", A, W, self._lengthscales(self._dim_of(A)),
                                             float(self.nu)))

    def _diagonal_of(self, X, A, with_gradient=False):
        """``_diagonal(A, with_gradient)`` (A = ``_subsets_of(X)``); where the likelihood keeps the one-pass Gram,
        its diagonal and the diagonal's lengthscale derivatives, without the derivatives in the points (None),
        which the likelihood does not use: no pass of their own (two per set term and evaluation before)."""
        if self._one_pass_gradient(X, A):
            def from_gram():
                E, dE = self._plain_gram_and_gradient(X, A)
                on_diagonal = np.arange(E.shape[0])
                diag = E[on_diagonal, on_diagonal]
                return (diag, dE[on_diagonal, on_diagonal, :], None) if with_gradient else diag
            return self._kept(X, ("diagonal", with_gradient), from_gram)
        return self._kept(X, ("diagonal", with_gradient), lambda: self._diagonal(A, with_gradient))

    def _gram(self, X, Y):
        A = self._subsets_of(X)
        B = None if Y is None else self._subsets(self._sets(Y))[0]
        K = self._plain_gram(X, A, B)
        if self._power() > 0.0:
            diag_A = self._diagonal_of(X, A)
            K = K * self._scaling(diag_A, diag_A if B is None else self._diagonal(B))
        return float(self.variance) * K

    def _diag(self, X):
        A = self._subsets(self._sets(X))[0]
        if self._power() == 1.0:
            return np.full(len(A), float(self.variance))
        return float(self.variance) * self._diagonal(A) ** (1.0 - self._power())

    def _reduce_lengthscale(self, per_dim):
        """∂/∂log ℓ per coordinate → per hyperparameter element (isotropic: summed)."""
        return per_dim if np.size(self.lengthscale) > 1 else np.array([np.sum(per_dim)])

    def _full_reduction(self, X, W):
        A = self._subsets_of(X)
        d = self._dim_of(A)
        ls = self._lengthscales(d)
        variance = float(self.variance)
        power = self._power()
        g_power = []
        if power > 0.0:
            # K_n = S ∘ K with S_ab = (δ_a δ_b)^(−γ/2), δ the raw diagonal:
            # Σ W ∘ ∂K_n/∂log ℓ = Σ (W ∘ S) ∘ ∂K − γ Σ_a r_a ∂log δ_a, r_a = Σ_b ½(W + Wᵀ)_ab K_n,ab;
            # ∂K_n/∂log γ = −(γ/2) K_n,ab (log δ_a + log δ_b), so Σ W ∘ ∂K_n/∂log γ = −γ Σ_a r_a log δ_a
            diag, d_diag, _ = self._diagonal_of(X, A, with_gradient=True)
            S = self._scaling(diag, diag)
            K_n = S * self._plain_gram(X, A)
            r = np.sum(0.5 * (W + W.T) * K_n, axis=1)
            g_ls = self._weighted_gradient(X, A, W * S) - power * (r @ (d_diag / diag[:, None]))
            weighted_gram = np.sum(W * K_n)
            if self._learns_normalization:
                g_power = [variance * -power * float(r @ np.log(diag))]
        elif self._one_pass_gradient(X, A):
            g_ls = self._weighted_gradient(X, A, W)
            weighted_gram = np.sum(W * self._plain_gram(X, A))
        else:
            fused = getattr(get_backend(self.backend), "set_grad_reduction_and_weighted_gram", None)
            if fused is not None:       # one pass for both (the cpp backend)
                g_ls, weighted_gram = fused(A, W, ls, float(self.nu))
            else:
                g_ls = self._backend_call("set_grad_reduction", A, W, ls, float(self.nu))
                weighted_gram = np.sum(W * self._backend_call("set_gram", A, None, ls, float(self.nu)))
        return np.concatenate([self._reduce_lengthscale(variance * np.asarray(g_ls)), [variance * weighted_gram],
                               g_power])

    def _full_gradient(self, X):
        A = self._subsets(self._sets(X))[0]
        d = self._dim_of(A)
        K, dK_ls = numpy_backend.set_gram_gradient(A, self._lengthscales(d), float(self.nu))
        power = self._power()
        dK_power = np.zeros(K.shape + (0,))
        if power > 0.0:
            diag, d_diag, _ = self._diagonal(A, with_gradient=True)
            S = self._scaling(diag, diag)
            K = K * S
            log_grad = d_diag / diag[:, None]
            dK_ls = (dK_ls * S[:, :, None]
                     - 0.5 * power * K[:, :, None] * (log_grad[:, None, :] + log_grad[None, :, :]))
            if self._learns_normalization:
                log_diag = np.log(diag)
                dK_power = (-0.5 * power * K * (log_diag[:, None] + log_diag[None, :]))[:, :, None]
        variance = float(self.variance)
        if np.size(self.lengthscale) == 1:
            dK_ls = dK_ls.sum(axis=2, keepdims=True)
        return variance * K, np.concatenate([variance * dK_ls, variance * K[:, :, None], variance * dK_power],
                                            axis=2)

    def _gram_and_input_gradient(self, X1, X2):
        sets1 = self._sets(X1)
        A, indices = self._subsets(sets1)
        B = self._subsets(self._sets(X2))[0]
        d = self._dim_of(A)
        K, dK_sub = self._backend_call("set_cross_gradient", A, B, self._lengthscales(d), float(self.nu))
        power = self._power()
        if power > 0.0:
            diag_A, _, d_diag_points = self._diagonal(A, with_gradient=True)
            S = self._scaling(diag_A, self._diagonal(B))
            K = S * K
            dK_sub = (S[:, :, None, None] * dK_sub
                      - 0.5 * power * K[:, :, None, None] * (d_diag_points / diag_A[:, None, None])[:, None, :, :])
        variance = float(self.variance)
        return variance * K, self._input_gradient_in_columns(variance * dK_sub, indices, sets1.shape[1])

    def _input_gradient_in_columns(self, dK_sub, indices, n_points):
        """∂K[a, b]/∂X1[a, c] over X1's continuous columns c, shape (M, N, n_continuous) (with no space: the
        set's m·d coordinates), from the gradient at the subset points dK_sub (M, N, L, d), ``subsets[a, l] =
        sets[a, indices[a, l]]``.  Points left out of the subset do not move K̂ (the sort is piecewise constant)."""
        M, N, n_subset, d = dK_sub.shape
        if n_subset == n_points:
            dK_points = dK_sub       # whole sets (subsample_sets returns them so): indices[a] = 0..m−1
        else:
            dK_points = np.zeros((M, N, n_points, d))
            rows, columns = np.arange(M)[:, None], np.arange(N)[None, :]
            for position in range(n_subset):
                dK_points[rows, columns, indices[:, position, None], :] = dK_sub[:, :, position, :]
        dK_points = dK_points.reshape(M, N, n_points * d)
        if self.space is None or self._fills_continuous_block():
            return dK_points
        dK = np.zeros((M, N, self.space.n_continuous))
        dK[:, :, self._columns] = dK_points
        return dK

    def _fills_continuous_block(self):
        """Whether the Set's columns are the space's whole continuous block, in order (its only continuous
        parameter): then its input gradient needs no scatter into the block."""
        columns = np.arange(self.space.n_continuous)[self._columns]
        return len(columns) == self.space.n_continuous and bool(np.all(columns == np.arange(len(columns))))

    def __repr__(self):
        base = super().__repr__()[:-1]
        extra = f", nu={self.nu}" + ("" if self.n_subsample is None else f", n_subsample={self.n_subsample}, "
                                                                         f"seed={self.seed}")
        return base + extra + ")"


class SubspaceKernel(Kernel):
    """A kernel on some parameters of a space, applied to the full space's encoded arrays.

    ``kernel`` is built on ``Space(sub_parameters)``; this wrapper selects those
    parameters' columns of the full encoding, so it can be multiplied with a
    ``SetKernel`` on the same encoded arrays.  Hyperparameters are the wrapped kernel's.

    ``checked_inputs=True`` promises that every array given to the private methods (``_gram``, ...) was
    already checked against ``space`` (a kernel that owns this one and checks its inputs itself: AdditiveFM),
    so the selected columns are not checked again.
    """

    checked_inputs = False    # class default: also what a kernel pickled before the option had

    def __init__(self, kernel, space, checked_inputs=False):
        self.kernel = kernel
        self.space = space
        self.checked_inputs = bool(checked_inputs)
        sub = kernel.space
        columns = []
        for p in sub.continuous_params + sub.discrete_params:
            c = space.column(p.name)
            columns += list(range(c.start, c.stop)) if isinstance(c, slice) else [c]
        self._columns = np.array(columns, dtype=np.int64)
        # continuous columns of the sub-space, in the full space's continuous block
        self._continuous_columns = self._columns[:sub.n_continuous]

    @property
    def n_dims(self):
        return self.space.n_dims

    def _n_discrete(self):
        return self.space.n_discrete

    def _check_X(self, X, name="X"):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.space.n_dims:
            raise InvalidConfigError(f"{name} must have shape (n_points, {self.space.n_dims}) for this kernel's space, "
                                     f"got {np.shape(X)}", name)
        return np.ascontiguousarray(X)

    def _select(self, X):
        if self.checked_inputs:
            return np.ascontiguousarray(X[:, self._columns], dtype=np.float64)
        return self.kernel._check_X(X[:, self._columns])

    # hyperparameters: delegated
    @property
    def hyperparameters(self):
        return self.kernel.hyperparameters

    def _hyperparameter_specs(self):
        return self.kernel._hyperparameter_specs()

    def _free_mask(self):
        return self.kernel._free_mask()

    def _all_log_values(self):
        return self.kernel._all_log_values()

    @property
    def theta(self):
        return self.kernel.theta

    @theta.setter
    def theta(self, theta):
        self.kernel.theta = theta

    def _theta_leaves(self):
        return self.kernel._theta_leaves()

    @property
    def bounds(self):
        return self.kernel.bounds

    def get_params(self, deep=True):
        return self.kernel.get_params(deep)

    @property
    def diag_varies_with_continuous(self):
        return self.kernel.diag_varies_with_continuous

    def _gram(self, X, Y):
        return self.kernel._gram(self._select(X), None if Y is None else self._select(Y))

    def _diag(self, X):
        return self.kernel._diag(self._select(X))

    def _full_reduction(self, X, W):
        return self.kernel._full_reduction(self._select(X), W)

    def _full_gradient(self, X):
        return self.kernel._full_gradient(self._select(X))

    def _gram_and_input_gradient(self, X1, X2):
        K, dK_sub = self.kernel._gram_and_input_gradient(self._select(X1), self._select(X2))
        if np.array_equal(self._continuous_columns, np.arange(self.space.n_continuous)):
            return K, dK_sub        # every continuous column of the space, in order (AdditiveFM's terms)
        dK = np.zeros(K.shape + (self.space.n_continuous,))
        dK[:, :, self._continuous_columns] = dK_sub
        return K, dK

    def neighbour_gram_batch(self, X0, X, owner, var_index, new_state):
        # every discrete variable lives in the sub-space, in the same order
        return self.kernel.neighbour_gram_batch(self._select(self._check_X(X0, "X0")), self._select(self._check_X(X)),
                                                owner, var_index, new_state)

    def __repr__(self):
        return f"SubspaceKernel({self.kernel!r})"


class SpaceSum(Sum):
    """k1 + k2 on the encoded arrays of ``space``, exposing ``space`` (see ``SpaceProduct``)."""

    def __init__(self, k1, k2, space):
        super().__init__(k1, k2)
        self.space = space


class SpaceProduct(Product):
    """k1 · k2 on the encoded arrays of ``space``, exposing ``space`` like every space kernel does
    (the GP reads it to tell continuous columns from discrete ones)."""

    def __init__(self, k1, k2, space):
        super().__init__(k1, k2)
        self.space = space


MMD_LENGTHSCALE_START = 0.5


class MMDSetKernel(SetKernel):
    """A Gaussian kernel on the distance between the sets' kernel mean embeddings.

        K(X, X') = σ² exp(−MMD²(X, X') / (2ρ²)),   MMD²(X, X') = E(X, X) + E(X', X') − 2 E(X, X'),

    with E(X, X') = (1/(m m')) Σ_ij k(x_i, x'_j) the plain set kernel (K_set of SPEC §4 without σ²): E is
    the inner product of the mean embeddings μ_X = (1/m) Σ_i k(x_i, ·), and MMD is their distance (the
    maximum mean discrepancy).  A Gaussian of a Hilbert-space distance is positive definite, and this one
    is universal on the sets (Christmann & Steinwart 2010; Muandet et al. 2012, "Learning from
    distributions via support measure machines"); it is permutation invariant like E.

    Why (issue 24 §4): E is LINEAR in the embeddings, so a GP with it (or its normalisations) models
    f(X) = Σ_i g(x_i) well — the set-BO paper's synthetic functions — but not an objective whose points
    interact, where one point's worth depends on where the others are: coverage, the p-median, k-means
    initialisation.  On random sets of PMedian the held-out error of the normalised set GP was at or above
    the std of y (it predicts nothing) while this kernel's was 0.70 of it at N = 60
    (docs/benchmarks/sets.md).

    Parameters
    ----------
    mmd_lengthscale : float, default 0.5
        ρ, in units of MMD (MMD² of two sets lies in [0, 2] for the unit-variance inner kernel).
    mmd_lengthscale_bounds : (low, high) or "fixed"
    **kwargs
        ``SetKernel``'s (inner, lengthscale, nu, variance, space, parameter, n_subsample, backend, ...);
        ``normalize`` is not one: the MMD kernel has a unit diagonal already.
    """

    def __init__(self, inner=None, n_subsample=None, seed=None, lengthscale=None, nu=None, variance=None,
                 lengthscale_bounds=None, variance_bounds=None, space=None, parameter=None, backend="auto",
                 subsample="shared", mmd_lengthscale=MMD_LENGTHSCALE_START, mmd_lengthscale_bounds=LENGTHSCALE_BOUNDS):
        super().__init__(inner=inner, n_subsample=n_subsample, seed=seed, lengthscale=lengthscale, nu=nu,
                         variance=variance, lengthscale_bounds=lengthscale_bounds, variance_bounds=variance_bounds,
                         space=space, parameter=parameter, normalize=False, backend=backend, subsample=subsample)
        self.mmd_lengthscale = mmd_lengthscale
        self.mmd_lengthscale_bounds = mmd_lengthscale_bounds

    def _hyperparameter_specs(self):
        return [("lengthscale", int(np.size(self.lengthscale))), ("variance", 1), ("mmd_lengthscale", 1)]

    @staticmethod
    def _mmd2(E, diag_A, diag_B):
        """MMD² from the plain set kernel E(A, B) and the diagonals δ_A, δ_B (clipped at 0 against round-off)."""
        return np.maximum(diag_A[:, None] + diag_B[None, :] - 2.0 * E, 0.0)

    def _rho(self):
        return float(self._values("mmd_lengthscale", 1)[0])

    def _gram(self, X, Y):
        A = self._subsets_of(X)
        B = None if Y is None else self._subsets(self._sets(Y))[0]
        E = self._plain_gram(X, A, B)
        diag_A = self._diagonal_of(X, A)
        distance = self._mmd2(E, diag_A, diag_A if B is None else self._diagonal(B))
        return float(self.variance) * np.exp(-distance / (2.0 * self._rho() ** 2))

    def _diag(self, X):
        return np.full(len(self._sets(X)), float(self.variance))

    def _full_reduction(self, X, W):
        A = self._subsets_of(X)
        rho2 = self._rho() ** 2
        diag, d_diag, _ = self._diagonal_of(X, A, with_gradient=True)
        distance = self._mmd2(self._plain_gram(X, A), diag, diag)
        K = float(self.variance) * np.exp(-distance / (2.0 * rho2))
        V = W * K
        # ∂K_ab/∂log ℓ = −K_ab/(2ρ²) (∂δ_a + ∂δ_b − 2 ∂E_ab): the diagonal terms through r_a = Σ_b V_ab + V_ba,
        # the cross term through the set kernel's own reduction with weights V
        r = V.sum(axis=1) + V.sum(axis=0)
        g_ls = (self._weighted_gradient(X, A, V) - 0.5 * (r @ d_diag)) / rho2
        return np.concatenate([self._reduce_lengthscale(g_ls), [np.sum(V)], [np.sum(V * distance) / rho2]])

    def _full_gradient(self, X):
        A = self._subsets(self._sets(X))[0]
        ls, nu = self._lengthscales(self._dim_of(A)), float(self.nu)
        rho2 = self._rho() ** 2
        E, dE = numpy_backend.set_gram_gradient(A, ls, nu)
        diag, d_diag, _ = self._diagonal(A, with_gradient=True)
        distance = self._mmd2(E, diag, diag)
        K = float(self.variance) * np.exp(-distance / (2.0 * rho2))
        d_distance = d_diag[:, None, :] + d_diag[None, :, :] - 2.0 * dE
        dK_ls = -K[:, :, None] * d_distance / (2.0 * rho2)
        if np.size(self.lengthscale) == 1:
            dK_ls = dK_ls.sum(axis=2, keepdims=True)
        return K, np.concatenate([dK_ls, K[:, :, None], (K * distance / rho2)[:, :, None]], axis=2)

    def _gram_and_input_gradient(self, X1, X2):
        sets1 = self._sets(X1)
        A, indices = self._subsets(sets1)
        B = self._subsets(self._sets(X2))[0]
        ls, nu = self._lengthscales(self._dim_of(A)), float(self.nu)
        rho2 = self._rho() ** 2
        E, dE_sub = self._backend_call("set_cross_gradient", A, B, ls, nu)
        diag_A, _, d_diag_points = self._diagonal(A, with_gradient=True)
        distance = self._mmd2(E, diag_A, self._diagonal(B))
        K = float(self.variance) * np.exp(-distance / (2.0 * rho2))
        # ∂K_ab/∂A_a = −K_ab/(2ρ²) (∂δ_a/∂A_a − 2 ∂E_ab/∂A_a)
        dK_sub = -K[:, :, None, None] / (2.0 * rho2) * (d_diag_points[:, None, :, :] - 2.0 * dE_sub)
        return K, self._input_gradient_in_columns(dK_sub, indices, sets1.shape[1])
