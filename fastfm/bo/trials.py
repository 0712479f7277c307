"""Trials: what ``Optimizer.ask`` hands out and ``tell`` records."""
from dataclasses import dataclass

__all__ = ["Trial", "Suggestion", "PendingTrial", "trials_dataframe"]


@dataclass(frozen=True)
class Trial:
    """One evaluation: the config, its value (NaN if it failed) and timings in seconds.

    ``trial_id`` is the id its ask got (or a new one for a config told without an ask); ``error`` is the
    text of the exception or timeout that made it fail."""

    config: dict
    value: float
    failed: bool
    eval_time: float = float("nan")
    suggest_time: float = float("nan")
    error: str = None
    trial_id: int = None


class Suggestion(dict):
    """A config dict returned by ``ask``, which also carries its ``trial_id``.

    It is a plain ``dict`` in every other way (equality, JSON, ``**config``); ``tell`` reads the id to
    know which pending trial finished, so the same config told twice is caught."""

    __slots__ = ("trial_id",)

    def __init__(self, config, trial_id):
        super().__init__(config)
        self.trial_id = trial_id

    def __reduce__(self):                 # pickles (process pools, clusters) keep the id
        return (Suggestion, (dict(self), self.trial_id))

    def __repr__(self):
        return f"Suggestion({dict.__repr__(self)}, trial_id={self.trial_id})"


@dataclass
class PendingTrial:
    """An ask not yet told or abandoned."""

    trial_id: int
    config: dict
    x: object                 # the encoded point
    suggest_time: float
    worker: dict = None       # host and pid of the asking process (journal runs)


def trials_dataframe(trials, names, owner):
    """One row per trial: ``trial_id``, each parameter in ``names`` (NaN where a conditional one is inactive),
    ``value`` (NaN if failed), ``failed``, ``error``, ``suggest_time`` and ``eval_time``.  Needs pandas (``owner``
    names the method in the error that says so)."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(f"{owner} needs pandas: pip install pandas") from exc
    fields = ["value", "failed", "error", "suggest_time", "eval_time"]
    rows = [{"trial_id": t.trial_id, **t.config, **{f: getattr(t, f) for f in fields}} for t in trials]
    return pd.DataFrame(rows, columns=["trial_id", *names, *fields])
