"""The regressor's data: encoded inputs (from arrays or config dicts) and the transform of the targets
(an optional log, then standardisation).  Functions of the data and of the regressor's parameters only.
"""
import numpy as np

from ..exceptions import InvalidConfigError, InvalidValueError

__all__ = ["as_array", "transform_y"]


def as_array(X, space, kernel, name="X", validate=True):
    """Encoded float64 array (N, n_dims) from an array or config dicts.

    ``space`` is the regressor's: it encodes config dicts and validates encoded arrays; without it, the
    kernel's space (if any) encodes config dicts and an array is checked for shape and finite values."""
    encoder = space if space is not None else getattr(kernel, "space", None)
    if isinstance(X, dict) or (isinstance(X, (list, tuple)) and len(X) and isinstance(X[0], dict)):
        if encoder is None:
            raise InvalidConfigError(f"{name} holds config dicts but the regressor has no space to encode "
                                     "them; pass space=... or encoded arrays", name)
        X = encoder.encode(X)
        if X.ndim == 1:
            X = X[None, :]
        return X
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    if validate and space is not None:
        return space.validate_encoded(X, name)
    if X.ndim != 2:
        raise InvalidConfigError(f"{name} must be a 2-d array (n_points, n_dims), got shape {X.shape}", name)
    if validate and not np.all(np.isfinite(X)):
        row, col = np.argwhere(~np.isfinite(X))[0]
        raise InvalidValueError(f"{name}[{row}, {col}] is {float(X[row, col])!r}; inputs must be finite",
                                name, float(X[row, col]))
    return np.ascontiguousarray(X)


def transform_y(y, log_transform_y, normalize_y):
    """(y_train_, y_mean_, y_std_, y_shift_, y_log_scale_): t(y) standardised, with the checks of ``fit``.

    t is log(1 + (y − min y)/std y) for ``log_transform_y="shift"``, log y for True (InvalidValueError
    naming the first y ≤ 0), the identity for False."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise InvalidConfigError(f"y must have shape (n_samples,), got y.shape={y.shape}", "y")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise InvalidValueError(f"y[{bad[0]}] is {float(y[bad[0]])!r}; every target must be finite "
                                f"({bad.size} non-finite value(s); drop failed evaluations before fit)",
                                "y", float(y[bad[0]]))
    shift, scale = 0.0, 1.0
    if log_transform_y == "shift":
        # t(y) = log(1 + (y − min y)/s), s = std(y): defined for any finite y, scale-free
        shift = float(np.min(y)) if y.size else 0.0
        scale = float(np.std(y)) if y.size else 1.0
        if not scale > 0:
            scale = 1.0
        y = np.log1p((y - shift) / scale)
    elif log_transform_y:
        bad = np.flatnonzero(y <= 0)
        if bad.size:
            raise InvalidValueError(
                f"log_transform_y=True needs y > 0, but y[{bad[0]}] = {float(y[bad[0]])!r}; use "
                "log_transform_y='shift' (models log(1 + (y − min y)/std y)) or log_transform_y=False",
                "y", float(y[bad[0]]))
        y = np.log(y)
    if normalize_y and y.size:
        mean = float(np.mean(y))
        std = float(np.std(y))
        if not std > 0:  # a constant y or a single observation: keep unit scale
            std = 1.0
    else:
        mean, std = 0.0, 1.0
    return (y - mean) / std, mean, std, shift, scale
