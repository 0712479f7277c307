"""Typed errors raised by fastfm.

Every error that comes from bad user input names the parameter and the value
that caused it, so that the message alone says what to fix.
"""

__all__ = [
    "FastFMError",
    "SpaceDefinitionError",
    "InvalidConfigError",
    "UnknownParameterError",
    "MissingParameterError",
    "InactiveParameterError",
    "OutOfBoundsError",
    "InvalidValueError",
    "BackendUnavailableError",
    "NumericalError",
    "NotPositiveDefiniteError",
    "FitError",
    "TrialStateError",
    "StorageError",
    "ObjectiveNotPicklableError",
    "NotFittedError",
    "DataConversionWarning",
]


class FastFMError(Exception):
    """Base class of every error fastfm raises on purpose."""


class SpaceDefinitionError(FastFMError, ValueError):
    """A search space or one of its parameters is defined inconsistently
    (duplicate names, empty choices, bad bounds, disconnected graph, ...)."""


class InvalidConfigError(FastFMError, ValueError):
    """A configuration (dict) or an encoded point does not belong to the space."""

    def __init__(self, message, parameter=None, value=None):
        super().__init__(message)
        self.parameter = parameter
        self.value = value


class UnknownParameterError(InvalidConfigError, KeyError):
    """A configuration names a parameter the space does not have."""

    def __str__(self):  # KeyError would otherwise quote the message
        return self.args[0]


class MissingParameterError(InvalidConfigError, KeyError):
    """A configuration lacks a parameter the space requires."""

    def __str__(self):
        return self.args[0]


class InactiveParameterError(InvalidConfigError):
    """A configuration sets a conditional parameter that is inactive in it."""


class OutOfBoundsError(InvalidConfigError):
    """A value lies outside its parameter's bounds."""


class InvalidValueError(InvalidConfigError, TypeError):
    """A value has the wrong type or is not finite (NaN, inf, unknown category,
    non-integer for an Integer parameter)."""


class BackendUnavailableError(FastFMError, RuntimeError):
    """The requested compute backend is not installed or cannot run this call."""


class NumericalError(FastFMError, ArithmeticError):
    """A numerical computation failed (non-finite values, breakdown)."""


class NotPositiveDefiniteError(NumericalError, __import__("numpy").linalg.LinAlgError):
    """A kernel matrix stayed non positive definite after adding jitter."""


class FitError(FastFMError, RuntimeError):
    """Fitting a model failed for every restart; the data are left untouched."""


class TrialStateError(FastFMError, ValueError):
    """A trial was told or abandoned when its state does not allow it (told twice, unknown id, ...)."""

    def __init__(self, message, trial_id=None):
        super().__init__(message)
        self.trial_id = trial_id


class StorageError(FastFMError, OSError):
    """A journal file cannot be read or written, is not a fastfm journal, or does not match the run."""


class ObjectiveNotPicklableError(FastFMError, TypeError):
    """The objective must be sent to another process (a process pool, a cluster) but cannot be pickled."""


class NotFittedError(FastFMError, ValueError, AttributeError):
    """A method that needs a fitted model was called before ``fit``.

    An AttributeError, as the error raised there before it existed was (old ``except AttributeError`` keeps
    working), and a ValueError, as scikit-learn's ``NotFittedError``.  Where scikit-learn is installed the
    error raised is also an instance of ``sklearn.exceptions.NotFittedError`` (:func:`sklearn_compatible`)."""


class DataConversionWarning(UserWarning):
    """Input data was converted to the shape the estimator expects (e.g. a column-vector y raveled).

    Where scikit-learn is installed the warning issued is also a ``sklearn.exceptions.DataConversionWarning``
    (:func:`sklearn_compatible`)."""


# fastfm class -> the scikit-learn class of the same name in sklearn.exceptions; the subclass of both is built
# on first use (importing scikit-learn costs close to a second, and it is not a dependency of fastfm)
_SKLEARN_TWINS = {"NotFittedError": NotFittedError, "DataConversionWarning": DataConversionWarning}
_sklearn_twin_cache = {}


def sklearn_compatible(cls):
    """``cls`` (``NotFittedError`` or ``DataConversionWarning``), or, where scikit-learn is importable, a subclass
    of it and of scikit-learn's class of the same name, so that scikit-learn's ``except``/``pytest.raises`` and
    warning filters recognise it.  The subclass has the same name (``repr`` shows it) and pickles by reference
    (``fastfm.exceptions._SklearnNotFittedError``, ...)."""
    name = cls.__name__
    if name not in _sklearn_twin_cache:
        try:
            import sklearn.exceptions
        except ImportError:
            _sklearn_twin_cache[name] = cls
        else:
            twin = type(name, (cls, getattr(sklearn.exceptions, name)), {"__module__": __name__})
            twin.__qualname__ = f"_Sklearn{name}"
            twin.__doc__ = cls.__doc__
            _sklearn_twin_cache[name] = twin
    return _sklearn_twin_cache[name]


def __getattr__(name):
    # unpickling a twin built by sklearn_compatible looks it up by its qualified name
    if name.startswith("_Sklearn") and name[len("_Sklearn"):] in _SKLEARN_TWINS:
        return sklearn_compatible(_SKLEARN_TWINS[name[len("_Sklearn"):]])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
