"""``minimize``: the whole BO run in one call, serial or with ``n_workers`` evaluations in flight.

The loop keeps ``n_workers`` evaluations running on an executor and asks for new points as soon as slots
free up (several at once, jointly, when several finish together), so the suggestion time hides behind
the evaluations.  Whatever happens — a failed or late evaluation, an exception in the callback,
KeyboardInterrupt, an exhausted finite space, every evaluation failing — the run ends with an
``OptimizeResult`` holding every evaluation so far and a ``status`` saying why it stopped; with
``storage`` every ask and result is already in the journal, and calling ``minimize`` again with the same
``storage`` continues the run.
"""
import concurrent.futures as cf
import math
import numbers
import os
import pickle
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._progress import progress_bar
from ..exceptions import InvalidValueError, ObjectiveNotPicklableError, StorageError, TrialStateError
from ..optim import SearchSpaceExhaustedError
from .journal import Journal, worker_identity
from .optimizer import Optimizer
from .trials import Suggestion, trials_dataframe

__all__ = ["minimize", "OptimizeResult", "STATUSES"]

# why a run stopped (OptimizeResult.status)
STATUSES = {
    "completed": "n_iter evaluations were told",
    "callback": "the callback returned True",
    "callback_error": "the callback raised an exception (in result.exception; the results are kept)",
    "interrupted": "KeyboardInterrupt",
    "exhausted": "every point of the finite space is evaluated",
    "all_failed": "every evaluation failed (the errors are in result.trials)",
}
# how often the loop looks at running evaluations for timeouts, at most (seconds)
_POLL_SECONDS = 0.05


@dataclass
class OptimizeResult:
    """What ``minimize`` returns.

    Attributes
    ----------
    x : dict          best config found (None if every evaluation failed)
    fun : float       its value
    history : list of (config, value, eval_time)   every evaluation, in order
    trials : list of Trial                          the same with ids, failure flags, errors and suggestion times
    n_evals, n_failed : int
    interrupted : bool  the run was stopped by KeyboardInterrupt (the history is complete up to it)
    status : str        why the run stopped: one of ``STATUSES`` ("completed", "callback", "callback_error",
                        "interrupted", "exhausted", "all_failed")
    message : str       the same in words
    exception : BaseException or None   the callback's exception (status "callback_error")
    storage : str or None               the journal's path
    optimizer : Optimizer               the optimiser at the end (ask/tell on from there)
    """

    x: dict
    fun: float
    history: list
    trials: list = field(repr=False)
    n_evals: int = 0
    n_failed: int = 0
    interrupted: bool = False
    status: str = "completed"
    message: str = STATUSES["completed"]
    exception: BaseException = field(default=None, repr=False)
    storage: str = None
    optimizer: object = field(default=None, repr=False)

    @property
    def suggest_times(self):
        return np.array([t.suggest_time for t in self.trials])

    @property
    def best_so_far(self):
        """Running minimum of the values (failed evaluations count as +inf)."""
        values = np.array([t.value if not t.failed else np.inf for t in self.trials])
        return np.minimum.accumulate(values) if len(values) else values

    def to_dataframe(self):
        """One row per trial: ``trial_id``, each parameter of the space (NaN where a conditional one is
        inactive), ``value`` (NaN if failed), ``failed``, ``error``, ``suggest_time`` and ``eval_time``.
        Needs pandas."""
        trials = self.trials
        names = (self.optimizer.space.names if self.optimizer is not None
                 else list(dict.fromkeys(name for t in trials for name in t.config)))
        return trials_dataframe(trials, names, "OptimizeResult.to_dataframe")


class _InlineExecutor(cf.Executor):
    """Runs each call at once in the calling thread: the serial loop through the same code path."""

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            future.set_exception(exc)
        return future


def _evaluate(fun, config):
    """Run in the worker: the value and the seconds it took (measured where it ran)."""
    start = time.perf_counter()
    value = fun(config)
    return value, time.perf_counter() - start


@dataclass
class _Flight:
    config: object
    submitted: float
    started: float = None
    timed_out: bool = False


def _check_positive_int(name, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise InvalidValueError(f"{name} must be a positive integer, got {name}={value!r}", name, value)


def _make_executor(fun, n_workers, executor, timeout):
    """(executor, owned): the given one, the inline one for a serial run, or a process pool we own."""
    if executor is not None:
        if not isinstance(executor, cf.Executor) and not hasattr(executor, "submit"):
            raise InvalidValueError(f"executor must be a concurrent.futures.Executor, got executor={executor!r}",
                                    "executor", executor)
        if isinstance(executor, cf.ProcessPoolExecutor):
            _check_picklable(fun)
        return executor, False
    if n_workers == 1:
        # a timeout needs the evaluation off the loop's thread to be noticed while it runs
        return (cf.ThreadPoolExecutor(1) if timeout is not None else _InlineExecutor()), timeout is not None
    _check_picklable(fun)
    return cf.ProcessPoolExecutor(max_workers=n_workers), True


def _check_picklable(fun):
    try:
        pickle.dumps(fun)
    except Exception as exc:
        raise ObjectiveNotPicklableError(
            f"fun={fun!r} cannot be pickled ({type(exc).__name__}: {exc}), so it cannot run in a process pool: "
            "define it at module level (not a lambda or a nested function), or pass "
            "executor=concurrent.futures.ThreadPoolExecutor(n_workers) (for an objective that waits: I/O, a "
            "subprocess, a remote job), or a Dask client's executor (Dask pickles closures)") from exc


def _is_dead_local_process(worker):
    """True when ``worker`` (a journal record's host and pid) was a process of this host that no longer runs."""
    import socket
    if not worker or worker.get("host") != socket.gethostname() or os.name != "posix":
        return False
    pid = worker.get("pid")
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def minimize(fun, space, n_iter=200, n_init="auto", kernel="auto", seed=0, progress=True, callback=None,
             n_workers=1, executor=None, storage=None, timeout=None, **options):
    """Minimise ``fun(config) -> float`` over ``space`` with Bayesian optimisation.

    Parameters
    ----------
    fun : callable
        Takes a config dict, returns a float.  NaN/inf or an exception marks the evaluation as failed;
        the run goes on.
    space : Space
    n_iter : int, default 200
        Total number of evaluations told, the ``n_init`` initial ones (and, when continuing a journal, the
        ones already in it) included.
    n_init : int or "auto", default "auto"
        As ``Optimizer``'s: 10, or one per value of the space's largest nominal parameter when that has more (at
        most 20).
    kernel : str or Kernel, default "auto"
        As ``Optimizer``'s.
    seed : int or None, default 0
    progress : bool, default True
        Show a progress bar (tqdm) with the best value so far.
    callback : callable, optional
        Called as ``callback(trial)`` after each evaluation is recorded (and, with ``storage``, fsynced);
        returning True stops the run.  An exception in it stops the run too: it is not re-raised but
        returned in ``result.exception`` with status "callback_error" (and warned about), so that no result
        is lost.
    n_workers : int, default 1
        Evaluations kept in flight.  A new point is asked as soon as one finishes; points asked while
        others are running are conditioned on them (``Optimizer.ask``).  With more than one worker the run
        depends on which evaluations finish first, so the seed alone does not reproduce it (the journal
        records what happened).
    executor : concurrent.futures.Executor, optional
        Where evaluations run.  Default: in this process for ``n_workers=1``; a ``ProcessPoolExecutor``
        with ``n_workers`` processes otherwise (``fun`` must pickle).  A ``ThreadPoolExecutor`` suits
        objectives that wait (I/O, subprocesses, remote jobs); for a Dask cluster pass
        ``distributed.Client(...).get_executor()``.  A given executor is not shut down.
    storage : str or os.PathLike, optional
        A journal file (JSON lines, ``Optimizer`` docs).  If it already holds a run, that run is continued:
        its settings and trials are loaded (the evaluations already told count toward ``n_iter``) and the
        asks that a dead process of this host left pending are evaluated first.
    timeout : float, optional
        Seconds an evaluation may run (from when the executor starts it); a late one is recorded as failed
        ("TimeoutError") and its result ignored.  The executor cannot stop the call: it keeps its worker
        until it returns.
    **options
        Passed to :class:`Optimizer` (acquisition, n_restarts, acq_options, backend, pending, failures, ...).

    Returns
    -------
    OptimizeResult
    """
    _check_positive_int("n_iter", n_iter)
    _check_positive_int("n_workers", n_workers)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
                                or not timeout > 0):
        raise InvalidValueError(f"timeout must be a positive number of seconds or None, got timeout={timeout!r}",
                                "timeout", timeout)
    if not callable(fun):
        raise InvalidValueError(f"fun must be callable, got fun={fun!r}", "fun", fun)
    if callback is not None and not callable(callback):
        raise InvalidValueError(f"callback must be callable or None, got callback={callback!r}", "callback", callback)
    pool, owned = _make_executor(fun, n_workers, executor, timeout)    # before the journal: a bad fun writes nothing
    try:
        optimizer, orphans = _open(space, storage, n_init=n_init, kernel=kernel, seed=seed, **options)
    except BaseException:
        if owned:
            pool.shutdown(wait=False)
        raise
    label = kernel if isinstance(kernel, str) else type(kernel).__name__
    bar = progress_bar(n_iter, desc=f"fastfm[{label}]", enabled=progress)
    if optimizer.n_told:
        bar.update(min(optimizer.n_told, n_iter))
    loop = _Loop(optimizer, fun, n_iter, n_workers, pool, timeout, callback, bar)
    try:
        loop.run(orphans)
    finally:
        bar.close()
        if owned:
            pool.shutdown(wait=not loop.left_running, cancel_futures=True)
    best_config, best_value = optimizer.best()
    trials = optimizer.trials
    return OptimizeResult(
        x=best_config, fun=best_value, history=[(t.config, t.value, t.eval_time) for t in trials], trials=trials,
        n_evals=len(trials), n_failed=sum(t.failed for t in trials), interrupted=loop.status == "interrupted",
        status=loop.status, message=loop.message, exception=loop.exception, storage=optimizer.storage,
        optimizer=optimizer)


def _open(space, storage, **settings):
    """(Optimizer, orphaned pending asks to evaluate first): a new run, or the journal's run continued."""
    if storage is None or not Journal(storage).exists():
        return Optimizer(space, storage=storage, **settings), []
    optimizer = Optimizer.load(storage)
    if repr(optimizer.space) != repr(space):
        raise StorageError(f"storage={os.fspath(storage)!r} holds a run on another space:\n{optimizer.space!r}\n"
                           f"not the space given:\n{space!r}")
    orphans = [p for p in optimizer._pending.values() if _is_dead_local_process(p.worker)]
    return optimizer, orphans


class _Loop:
    """The asynchronous evaluation loop of one ``minimize`` call."""

    def __init__(self, optimizer, fun, n_iter, n_workers, executor, timeout, callback, bar):
        self.optimizer, self.fun, self.n_iter, self.n_workers = optimizer, fun, n_iter, n_workers
        self.executor, self.timeout, self.callback, self.bar = executor, timeout, callback, bar
        self.flights = {}            # future -> _Flight
        self.status, self.message, self.exception = None, None, None
        self.exhausted = False
        self.queue = []
        self.left_running = 0        # evaluations still running when the loop ended (not waited for)
        self.pending_before = set(optimizer._pending)     # asks pending when the loop began (orphans, others')

    def _live(self):
        return [f for f, flight in self.flights.items() if not flight.timed_out]

    def run(self, orphans=()):
        # the asks a dead process left pending are evaluated first, under their own trial ids
        self.queue = [Suggestion(p.config, p.trial_id) for p in orphans]
        try:
            while self.status is None:
                self._fill()
                live = self._live()
                if not live:
                    if self.exhausted:
                        self._stop("exhausted")
                    elif self.optimizer.n_told >= self.n_iter:
                        self._stop("completed")
                    else:   # the rest of n_iter is pending in other processes sharing the journal
                        self._stop("completed", f"n_iter={self.n_iter} evaluations told or pending: "
                                                f"{len(self.optimizer._pending)} still run in other processes")
                    break
                done, _ = cf.wait(live, timeout=self._wait_seconds(), return_when=cf.FIRST_COMPLETED)
                for future in done:            # every finished evaluation is told, even after a stop
                    self._record(future)
                self._check_timeouts()
        except KeyboardInterrupt:
            self._stop("interrupted")
        finally:
            self._abandon_in_flight()

    def _stop(self, status, message=None):
        if self.status is None:
            self.status = status
            self.message = message or STATUSES[status]

    def _fill(self):
        optimizer = self.optimizer
        live = len(self._live())
        free = self.n_workers - live
        budget = self.n_iter - optimizer.n_told - live
        while self.queue and free > 0 and budget > 0:
            self._submit(self.queue.pop(0))
            free, budget = free - 1, budget - 1
        if self.exhausted or free <= 0 or budget <= 0:
            return
        # told + pending (other processes' asks on a shared journal included) stop at n_iter
        asks = optimizer._asks(min(free, budget), partial=True, total_limit=self.n_iter)
        try:
            if isinstance(self.executor, _InlineExecutor):
                asks = list(asks)   # the evaluation runs inside submit: not while the ask holds the journal's lock
            for config in asks:     # each point starts as soon as it is chosen, while the next one is
                self._submit(config)
        except SearchSpaceExhaustedError:
            self.exhausted = True

    def _submit(self, config):
        flight = _Flight(config, time.perf_counter())
        try:
            future = self.executor.submit(_evaluate, self.fun, config)
        except BaseException:          # KeyboardInterrupt in an inline evaluation, a broken pool: release it
            self.optimizer.abandon(config.trial_id, reason="the evaluation could not be submitted or was interrupted")
            raise
        self.flights[future] = flight

    def _wait_seconds(self):
        return _POLL_SECONDS if self.timeout is not None else None

    def _record(self, future):
        # the flight stays listed until it is told: a KeyboardInterrupt inside the tell leaves it to
        # _abandon_in_flight, which tells it then (a flight popped first was lost, its ask left pending)
        flight = self.flights[future]
        if flight.timed_out:           # already recorded as failed; its late result is ignored
            self.flights.pop(future, None)
            return
        error, elapsed = None, time.perf_counter() - (flight.started or flight.submitted)
        try:
            value, elapsed = future.result()
            value = float(value)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:   # a failed evaluation is data, not a crash
            value, error = float("nan"), f"{type(exc).__name__}: {exc}"
            warnings.warn(f"fastfm: evaluation failed ({error}); recorded as failed", RuntimeWarning, stacklevel=4)
        if error is None and not math.isfinite(value):
            error = f"the objective returned {value!r}"
        self._tell(flight.config, value, error, elapsed)
        self.flights.pop(future, None)

    def _tell(self, config, value, error, elapsed):
        optimizer = self.optimizer
        failed = not math.isfinite(value)
        trial = optimizer.tell(config, None if failed else value, error=error, eval_time=elapsed)
        _, best_value = optimizer.best()
        self.bar.set_postfix_str(f"best={best_value:.6g}")
        self.bar.update(1)
        if optimizer.n_told >= max(optimizer.n_init, 1) and math.isnan(best_value):     # no success yet
            self._stop("all_failed", f"every evaluation failed ({optimizer.n_told} of {optimizer.n_told}); "
                                     f"the last error: {trial.error}")
        if self.callback is not None and self.status is None:
            try:
                if self.callback(trial):
                    self._stop("callback")
            except KeyboardInterrupt:
                raise
            except Exception as exc:
                self.exception = exc
                self._stop("callback_error", f"the callback raised {type(exc).__name__}: {exc}; the run stopped "
                                             "with every result kept")
                warnings.warn(f"fastfm: {self.message}", RuntimeWarning, stacklevel=4)
        if self.status is None and optimizer.n_told >= self.n_iter:
            self._stop("completed")

    def _check_timeouts(self):
        if self.timeout is None:
            return
        now = time.perf_counter()
        for future, flight in list(self.flights.items()):
            if flight.timed_out or future.done():
                continue
            if flight.started is None:
                if not future.running():
                    continue
                flight.started = now
            if now - flight.started > self.timeout:
                flight.timed_out = True
                future.cancel()
                self._tell(flight.config, float("nan"), f"TimeoutError: the evaluation ran over timeout="
                                                        f"{self.timeout}s", now - flight.started)
                if self.status is not None:
                    return

    def _abandon_in_flight(self):
        """Release the asks still running when the run stops early (a later run may ask them again)."""
        for future, flight in list(self.flights.items()):
            if not flight.timed_out and future.done() and not future.cancelled():
                try:
                    self._record(future)         # finished meanwhile: its result is kept
                except TrialStateError:          # its tell was committed when the interrupt came
                    self.flights.pop(future, None)
                continue
            future.cancel()
            self.left_running += not future.done()
            if not flight.timed_out and flight.config.trial_id in self.optimizer._pending:
                try:
                    self.optimizer.abandon(flight.config.trial_id, reason=f"minimize stopped: {self.status}")
                except Exception as exc:         # never let the clean-up hide why the run stopped
                    warnings.warn(f"fastfm: could not abandon trial {flight.config.trial_id}: {exc}",
                                  RuntimeWarning, stacklevel=3)
        self.flights.clear()
        # an ask recorded but never submitted (a KeyboardInterrupt between the ask's journal record and the
        # submit): this process's asks of this loop that no flight holds are released too
        me = worker_identity()
        for trial_id, pending in list(self.optimizer._pending.items()):
            if trial_id not in self.pending_before and pending.worker == me:
                try:
                    self.optimizer.abandon(trial_id, reason=f"minimize stopped before evaluating it: {self.status}")
                except Exception as exc:
                    warnings.warn(f"fastfm: could not abandon trial {trial_id}: {exc}", RuntimeWarning, stacklevel=3)
