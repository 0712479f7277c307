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
