"""Module-level objectives and spaces for the BO tests that run evaluations in other processes (process
pools, Dask, subprocesses sharing a journal): a process pool's child imports them by module name, so they
live here, on the tests' pythonpath, not in a test module."""
import json
import os
import threading
import time

import fastfm as ff

# a small mixed space: one real, one integer, one categorical
SPACE = ff.Space([
    ff.Real("x", -1.0, 1.0),
    ff.Integer("k", 0, 4),
    ff.Categorical("c", ["a", "b", "c"]),
])

_OFFSET = {"a": 0.0, "b": 0.5, "c": 1.0}


def value_of(config):
    """A deterministic, cheap objective on SPACE (minimum 0 at x=0.3, k=0, c="a")."""
    return (float(config["x"]) - 0.3) ** 2 + 0.1 * int(config["k"]) + _OFFSET[config["c"]]


def told_optimizer(n_told=8, storage=None):
    """An Optimizer on SPACE (n_init=3, seed 0) with ``n_told`` evaluations of value_of told: its next asks are
    the model's."""
    optimizer = ff.Optimizer(SPACE, seed=0, n_init=3, storage=storage)
    for _ in range(n_told):
        config = optimizer.ask()
        optimizer.tell(config, value_of(config))
    return optimizer


def quadratic(config):
    return value_of(config)


def slow_quadratic(config):
    """``value_of`` after a short sleep, so that a run can be killed while it evaluates (and a long one for
    the trial id in $FASTFM_TEST_HANG_ID, so that it is surely killed while evaluating that one)."""
    hang = os.environ.get("FASTFM_TEST_HANG_ID")
    if hang is not None and getattr(config, "trial_id", None) == int(hang):
        time.sleep(120)
    time.sleep(float(os.environ.get("FASTFM_TEST_SLEEP", "0.1")))
    return value_of(config)


class TimedObjective:
    """Picklable objective that sleeps, then appends its start and end times (wall clock, comparable between
    processes) and its process/thread to ``log_path`` as one JSON line, and returns ``value_of(config)``."""

    def __init__(self, log_path, sleep=0.1):
        self.log_path = os.fspath(log_path)
        self.sleep = sleep

    def __call__(self, config):
        start = time.time()
        time.sleep(self.sleep)
        end = time.time()
        line = json.dumps({"start": start, "end": end, "pid": os.getpid(), "thread": threading.get_ident(),
                           "trial_id": getattr(config, "trial_id", None), "x": float(config["x"])}) + "\n"
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        return value_of(config)


def read_intervals(log_path):
    with open(log_path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def max_overlap(intervals):
    """The largest number of intervals running at one instant (an end at the same time as a start first)."""
    events = sorted([(iv["start"], 1) for iv in intervals] + [(iv["end"], -1) for iv in intervals],
                    key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak
