"""The regressor's data: encoded inputs (from arrays or config dicts) and the transform of the targets
(an optional log, then standardisation).  Functions of the data and of the regressor's parameters only.
"""
import math

import numpy as np
import scipy.sparse

from ..exceptions import DataConversionWarning, InvalidConfigError, InvalidValueError, sklearn_compatible
from . import _warnings

__all__ = ["as_array", "transform_y", "check_n_features", "same_data"]

_ESTIMATOR = "GaussianProcessRegressor"


def _dense(values, name):
    """``values`` as a NumPy array, refusing what scikit-learn's ``check_array`` refuses before conversion:
    None, sparse matrices and complex numbers (a float64 cast would drop the imaginary part)."""
    if values is None:
        if name == "y":
            raise InvalidConfigError(f"{_ESTIMATOR} requires y to be passed, but the target y is None", "y")
        raise InvalidConfigError(f"Expected array-like (array or non-string sequence), got None for {name}", name)
    if scipy.sparse.issparse(values):
        raise InvalidValueError(f"{name} is a sparse {type(values).__name__}, but sparse input is not supported by "
                                f"{_ESTIMATOR}: pass a dense array ({name}.toarray())", name)
    values = np.asarray(values)
    if np.iscomplexobj(values):
        raise InvalidValueError(f"Complex data not supported: {name} has dtype {values.dtype}", name)
    return values


def as_array(X, space, kernel, name="X", validate=True):
    """Encoded float64 array (N, n_dims) from an array or config dicts.

    ``space`` is the regressor's: it encodes config dicts and validates encoded arrays; without it, the
    kernel's space (if any) encodes config dicts and an array is checked for shape and finite values."""
    encoder = space if space is not None else getattr(kernel, "space", None)
    if scipy.sparse.issparse(X):   # before the dicts: a dok_matrix is a dict
        _dense(X, name)
    if isinstance(X, dict) or (isinstance(X, (list, tuple)) and len(X) and isinstance(X[0], dict)):
        if encoder is None:
            raise InvalidConfigError(f"{name} holds config dicts but the regressor has no space to encode "
                                     "them; pass space=... or encoded arrays", name)
        X = encoder.encode(X)
        if X.ndim == 1:
            X = X[None, :]
        return X
    if validate:
        X = _dense(X, name)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        if validate and encoder is None:
            # a plain array (no space to say how many dimensions a point has): scikit-learn's rule
            raise InvalidConfigError(f"Expected 2D array, got 1D array instead:\n{name}={X!r}.\nReshape your data "
                                     "either using array.reshape(-1, 1) if your data has a single feature or "
                                     "array.reshape(1, -1) if it contains a single sample.", name)
        X = X[None, :]
    if validate and space is not None:
        return space.validate_encoded(X, name)
    if X.ndim != 2:
        raise InvalidConfigError(f"{name} must be a 2-d array (n_points, n_dims), got shape {X.shape}", name)
    if validate and X.shape[1] == 0:
        raise InvalidConfigError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                                 f"required by {_ESTIMATOR}.", name)
    if validate and not np.all(np.isfinite(X)):
        row, col = np.argwhere(~np.isfinite(X))[0]
        raise InvalidValueError(f"{name}[{row}, {col}] is {float(X[row, col])!r}; inputs must be finite (no NaN or inf)",
                                name, float(X[row, col]))
    return np.ascontiguousarray(X)


# The transforms of y ``log_transform_y`` takes (the name is the option's first, log, values).
Y_TRANSFORMS = (False, True, "shift", "copula", "auto")
# The shift transform's scale is at least SHIFT_SCALE_FLOOR times the std of y clipped at its
# SHIFT_SCALE_CLIP_PERCENTILE-th percentile (``shift_scale``).
SHIFT_SCALE_FLOOR = 0.1
SHIFT_SCALE_CLIP_PERCENTILE = 90
# "auto" models the ranks (copula) once the largest value lies this many interquartile ranges above the median:
# a failure penalty (1e10 among values near 1) or a heavy upper tail.  On the paper's problems, random designs
# and BO histories stay below 100 (docs/benchmarks/robustness.md, "Objective values").
AUTO_COPULA_SPAN = 1000.0


def is_y_transform(value):
    """Whether ``value`` is one of ``Y_TRANSFORMS`` (False and True themselves, not 0 and 1)."""
    return any(value is v or (isinstance(v, str) and value == v) for v in Y_TRANSFORMS)


def resolve_y_transform(y, log_transform_y):
    """The transform ``log_transform_y`` means for these y: "auto" becomes "copula" or "shift"."""
    if log_transform_y != "auto":
        return log_transform_y
    if y.size < 4:
        return "shift"
    low, median, high = np.percentile(y, [25, 50, 75])
    spread = high - low
    top = float(np.max(y)) - median
    return "copula" if (top > AUTO_COPULA_SPAN * spread if spread > 0 else top > 0) else "shift"


def shift_scale(y, low):
    """s of the "shift" transform log(1 + (y − low)/s), low = min y: the smaller of std y and median y − min y
    (std y where the median is the minimum; 1 where both are 0).

    Below s the log is nearly linear and above it compresses, so s decides which differences the GP sees at
    their size.  An upper tail inflates the std and not the median: with s = std y (the scale until issue 24)
    Func2C's values of 5-50 in the corners made s ≈ 3 and left the differences among its best values (−0.2 to
    −0.1) at the level of the fitted noise, and the search stalled near the optimum on a quarter of the seeds.
    Where instead a few good values lie far below the bulk (Ackley5C, MaxSAT), median − min is the larger scale
    and the std stays (docs/benchmarks/bo-efficiency.md, "The scale of the log transform").

    The scale is at least ``SHIFT_SCALE_FLOOR`` times the std of y with its top decile clipped (so that an upper
    tail moves the floor no more than the median).  Where a search re-evaluates a plateau, median − min collapses
    (SetCoverage, a run stuck on two of its four bumps: 0.0019 after 100 evaluations against std 0.37), and the log
    then puts the incumbent so far below every other value that a set with a point moved to an unexplored region,
    predicted one standard deviation off the bulk, scored log-EI −6.6 against −3.7 for a move beside the incumbent:
    that run re-evaluated its plateau for 140 evaluations.  The floor leaves the runs whose scale does not collapse
    as they were (Func2C and SetCoverage up to 60 evaluations, value for value on most seeds) and took SetCoverage
    at 200 from −2.50 to −2.76 (docs/benchmarks/bo-efficiency.md, "SetCoverage's late stalls")."""
    if y.size == 0:
        return 1.0
    std = _mean_std(y)[1]
    above_minimum = float(np.median(y)) - low
    if not (above_minimum > 0 and math.isfinite(above_minimum)):   # half or more of y at its minimum, or overflow
        above_minimum = std
    scale = min(std, above_minimum)
    if y.size > 1:
        with np.errstate(over="ignore", invalid="ignore"):     # values near the float limits: no floor
            clipped_std = float(np.std(np.minimum(y, np.percentile(y, SHIFT_SCALE_CLIP_PERCENTILE))))
        if math.isfinite(clipped_std):
            scale = max(scale, SHIFT_SCALE_FLOOR * clipped_std)
    return scale if scale > 0 else 1.0


def copula_scores(y):
    """Φ⁻¹((rank(y) − ½)/n), ties given their average rank: the normal scores of y's order (Salinas et al. 2020)."""
    from scipy import special, stats
    return special.ndtri((stats.rankdata(y) - 0.5) / len(y))


def transform_y(y, log_transform_y, normalize_y):
    """(y_train_, y_mean_, y_std_, y_shift_, y_log_scale_, y_transform_, y_copula_): t(y) standardised, with the
    checks of ``fit``.

    t is log(1 + (y − min y)/s) for ``log_transform_y="shift"`` (s = min(std y, median y − min y),
    ``shift_scale``), log y for True (InvalidValueError naming the first y ≤ 0), the normal scores of y's ranks
    for "copula" (``y_copula_`` = (sorted scores, sorted y), its inverse by interpolation), "shift" or "copula"
    for "auto" (``resolve_y_transform``), the identity for False.  ``y_transform_`` is the transform used."""
    y = np.asarray(_dense(y, "y"), dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        _warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                       "to (n_samples,), for example using ravel().", sklearn_compatible(DataConversionWarning))
        y = y[:, 0]
    if y.ndim != 1:
        raise InvalidConfigError(f"y must have shape (n_samples,), got y.shape={y.shape}", "y")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise InvalidValueError(f"y[{bad[0]}] is {float(y[bad[0]])!r}; every target must be finite "
                                f"({bad.size} non-finite value(s); drop failed evaluations before fit)",
                                "y", float(y[bad[0]]))
    shift, scale, copula = 0.0, 1.0, None
    transform = resolve_y_transform(y, log_transform_y)
    if transform == "shift":
        # t(y) = log(1 + (y − min y)/s): defined for any finite y, scale-free (s: shift_scale)
        shift = float(np.min(y)) if y.size else 0.0
        scale = shift_scale(y, shift)
        y = np.log1p(_standardised(y, shift, scale))
    elif transform == "copula":
        scores = copula_scores(y) if y.size > 1 else np.zeros_like(y)
        order = np.argsort(y, kind="stable")
        copula = (scores[order], y[order])
        y = scores
    elif transform:
        bad = np.flatnonzero(y <= 0)
        if bad.size:
            raise InvalidValueError(
                f"log_transform_y=True needs y > 0, but y[{bad[0]}] = {float(y[bad[0]])!r}; use "
                "log_transform_y='shift' (models log(1 + (y − min y)/s)) or log_transform_y=False",
                "y", float(y[bad[0]]))
        y = np.log(y)
    if normalize_y and y.size:
        mean, std = _mean_std(y)
        if not std > 0:  # a constant y or a single observation: keep unit scale
            std = 1.0
    else:
        mean, std = 0.0, 1.0
    return _standardised(y, mean, std), mean, std, shift, scale, transform, copula


# Outside these magnitudes y² (in the std) or y − mean may overflow, or y² underflow to 0, in float64: such y are
# divided by max |y| first.  Within them the plain formulas run, so that ordinary targets give the same bits as
# always.
_SAFE_PEAK = (1e-150, 1e150)


def _mean_std(y):
    """(mean, std) of y, right for every finite y in the float64 range (y ≈ 1e300 overflowed y², 1e-300 underflowed)."""
    peak = float(np.max(np.abs(y)))
    if peak == 0 or _SAFE_PEAK[0] < peak < _SAFE_PEAK[1]:
        return float(np.mean(y)), float(np.std(y))
    z = y / peak
    return peak * float(np.mean(z)), peak * float(np.std(z))


def _standardised(y, center, scale):
    """(y − center)/scale without overflowing the difference where y and center are near the float64 limit."""
    peak = float(np.max(np.abs(y))) if y.size else 0.0
    if peak == 0 or _SAFE_PEAK[0] < peak < _SAFE_PEAK[1]:
        return (y - center) / scale
    return (y / peak - center / peak) / (scale / peak)


def check_n_features(X, n_features, name="X"):
    """InvalidConfigError unless X has the ``n_features`` columns of the training data (None: not fitted, or
    fitted before ``n_features_in_`` existed: no check)."""
    if n_features is not None and X.shape[1] != n_features:
        raise InvalidConfigError(f"{name} has {X.shape[1]} features, but {_ESTIMATOR} is expecting {n_features} "
                                 "features as input.", name)


def same_data(X, y, X_previous, y_previous):
    """Whether a refit is on the data of the previous fit (then it starts as that fit did: ``fit`` is idempotent)."""
    return (X_previous is not None and y_previous is not None and X.shape == X_previous.shape
            and y.shape == y_previous.shape and np.array_equal(X, X_previous) and np.array_equal(y, y_previous))
