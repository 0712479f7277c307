"""``minimize`` with evaluations in flight on real executors (a process pool, a thread pool, a Dask cluster),
and how a run stops: a late evaluation, a failing callback, an exhausted finite space, KeyboardInterrupt."""
import concurrent.futures as cf
import importlib
import os
import pickle
import threading

import pytest

import _bo_objectives as objectives
import fastfm as ff

FAST = dict(n_restarts=2, progress=False)


def _check_parallel_run(result, log_path, n_iter, n_workers):
    assert result.status == "completed", result.message
    assert result.exception is None
    assert result.n_evals == n_iter
    ids = [t.trial_id for t in result.trials]
    assert len(set(ids)) == n_iter
    assert not any(t.failed for t in result.trials)
    # each result was told to the trial whose config produced it
    for t in result.trials:
        assert t.value == pytest.approx(objectives.value_of(t.config), abs=0, rel=1e-12)
    assert result.optimizer.pending == []
    intervals = objectives.read_intervals(log_path)
    # every evaluation ran exactly once, under the id it was told as
    assert sorted(iv["trial_id"] for iv in intervals) == sorted(ids)
    assert objectives.max_overlap(intervals) <= n_workers
    # the evaluations really ran side by side (two are asked and submitted together at the start)
    assert objectives.max_overlap(intervals) >= 2
    return intervals


def test_default_process_pool_keeps_n_workers_evaluations_in_flight(tmp_path):
    log = tmp_path / "evals.jsonl"
    n_iter, n_workers = 8, 2
    result = ff.minimize(objectives.TimedObjective(log, sleep=0.2), objectives.SPACE, n_iter=n_iter, n_init=4,
                         seed=0, n_workers=n_workers, **FAST)
    intervals = _check_parallel_run(result, log, n_iter, n_workers)
    pids = {iv["pid"] for iv in intervals}
    assert os.getpid() not in pids          # evaluated in the pool's processes
    assert len(pids) <= n_workers


def test_thread_pool_executor(tmp_path):
    log = tmp_path / "evals.jsonl"
    n_iter, n_workers = 10, 3
    with cf.ThreadPoolExecutor(n_workers) as pool:
        result = ff.minimize(objectives.TimedObjective(log, sleep=0.1), objectives.SPACE, n_iter=n_iter, n_init=4,
                             seed=1, n_workers=n_workers, executor=pool, **FAST)
    intervals = _check_parallel_run(result, log, n_iter, n_workers)
    assert {iv["pid"] for iv in intervals} == {os.getpid()}


def test_a_closure_runs_on_a_thread_pool(tmp_path):
    seen = []
    lock = threading.Lock()

    def fun(config):                         # not picklable: fine on threads
        with lock:
            seen.append(config.trial_id)
        return objectives.value_of(config)

    with cf.ThreadPoolExecutor(2) as pool:
        result = ff.minimize(fun, objectives.SPACE, n_iter=8, n_init=3, seed=2, n_workers=2, executor=pool, **FAST)
    assert result.status == "completed"
    assert sorted(seen) == sorted(t.trial_id for t in result.trials)
    assert len(set(seen)) == 8


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_dask_local_cluster_executor(tmp_path, processes):
    distributed = pytest.importorskip("distributed")
    log = tmp_path / "evals.jsonl"
    n_iter, n_workers = 8, 2
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=processes,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        # Both workers registered and warm before the first two tasks go out: on a loaded machine (the suite
        # runs in parallel processes) a process worker can connect late, or spend longer importing the
        # objective's module on its first task than the other spends evaluating, and then no two evaluations
        # overlap although both workers were used.
        client.wait_for_workers(n_workers, timeout=60)
        client.run(importlib.import_module, objectives.__name__)
        result = ff.minimize(objectives.TimedObjective(log, sleep=0.3), objectives.SPACE, n_iter=n_iter, n_init=4,
                             seed=3, n_workers=n_workers, executor=client.get_executor(), **FAST)
    intervals = _check_parallel_run(result, log, n_iter, n_workers)
    pids = {iv["pid"] for iv in intervals}
    assert (os.getpid() in pids) != processes


def test_unpicklable_objective_with_the_default_process_pool_names_the_fix():
    offset = 1.0
    with pytest.raises(ff.ObjectiveNotPicklableError) as info:
        ff.minimize(lambda config: objectives.value_of(config) + offset, objectives.SPACE, n_iter=4, n_init=2,
                    n_workers=2, **FAST)
    message = str(info.value)
    assert "module level" in message
    assert "ThreadPoolExecutor" in message
    assert isinstance(info.value, TypeError)

    def nested(config):
        return offset

    with cf.ProcessPoolExecutor(2) as pool, pytest.raises(ff.ObjectiveNotPicklableError):
        ff.minimize(nested, objectives.SPACE, n_iter=4, n_init=2, n_workers=2, executor=pool, **FAST)


def test_a_late_evaluation_is_recorded_as_failed_and_the_serial_run_completes():
    release = threading.Event()
    late_id = 2

    def fun(config):
        if config.trial_id == late_id:
            release.wait(60)                 # held until the run has recorded the timeout
        return objectives.value_of(config)

    def callback(trial):
        if trial.failed:
            release.set()                    # frees the only worker thread for the next evaluations

    try:
        result = ff.minimize(fun, objectives.SPACE, n_iter=7, n_init=3, seed=4, timeout=1.0, callback=callback,
                             **FAST)
    finally:
        release.set()
    assert result.status == "completed", result.message
    assert result.n_evals == 7
    ids = [t.trial_id for t in result.trials]
    assert len(set(ids)) == 7
    failed = [t for t in result.trials if t.failed]
    assert [t.trial_id for t in failed] == [late_id]
    assert "TimeoutError" in failed[0].error
    assert result.n_failed == 1
    assert result.optimizer.pending == []


def test_a_late_evaluation_on_a_thread_pool_is_not_waited_for():
    release = threading.Event()
    late_id = 1

    def fun(config):
        if config.trial_id == late_id:
            release.wait(60)                 # still running when minimize returns
        return objectives.value_of(config)

    pool = cf.ThreadPoolExecutor(2)
    try:
        result = ff.minimize(fun, objectives.SPACE, n_iter=8, n_init=3, seed=5, timeout=1.0, n_workers=2,
                             executor=pool, **FAST)
    finally:
        release.set()
        pool.shutdown(wait=True)
    assert result.status == "completed", result.message
    assert result.n_evals == 8
    assert len({t.trial_id for t in result.trials}) == 8
    late = [t for t in result.trials if t.trial_id == late_id]
    assert len(late) == 1 and late[0].failed and "TimeoutError" in late[0].error
    assert sum(t.failed for t in result.trials) == 1
    # the late result, which came in after the run, was not told
    assert len(result.optimizer.trials) == 8


def test_a_raising_callback_stops_the_run_and_keeps_every_trial(tmp_path):
    boom = ValueError("callback bug")
    calls = []

    def callback(trial):
        calls.append(trial.trial_id)
        if len(calls) == 3:
            raise boom

    storage = tmp_path / "run.jsonl"
    with pytest.warns(RuntimeWarning, match="callback"):
        result = ff.minimize(objectives.quadratic, objectives.SPACE, n_iter=10, n_init=3, seed=6, callback=callback,
                             storage=storage, **FAST)
    assert result.status == "callback_error"
    assert result.exception is boom
    assert "ValueError" in result.message
    assert result.n_evals == 3
    assert [t.trial_id for t in result.trials] == calls
    assert result.optimizer.pending == []
    reloaded = ff.Optimizer.load(storage)
    assert [t.trial_id for t in reloaded.trials] == calls
    assert reloaded.pending == []


def test_a_raising_callback_with_evaluations_in_flight_keeps_them_all():
    def callback(trial):
        raise RuntimeError("stop here")

    with cf.ThreadPoolExecutor(2) as pool, pytest.warns(RuntimeWarning, match="callback"):
        result = ff.minimize(objectives.TimedObjective(os.devnull, sleep=0.05), objectives.SPACE, n_iter=10,
                             n_init=3, seed=7, callback=callback, n_workers=2, executor=pool, **FAST)
    assert result.status == "callback_error"
    assert isinstance(result.exception, RuntimeError)
    assert 1 <= result.n_evals <= 2            # the first told, and the one running beside it if it finished
    assert len({t.trial_id for t in result.trials}) == result.n_evals
    assert result.optimizer.pending == []      # the other evaluation was told or released


@pytest.mark.parametrize("n_workers", [1, 2])
def test_an_exhausted_finite_space_stops_with_status_exhausted(n_workers):
    space = ff.Space([ff.Categorical("c", ["a", "b"])])
    executor = cf.ThreadPoolExecutor(n_workers) if n_workers > 1 else None
    try:
        result = ff.minimize(lambda config: {"a": 1.0, "b": 2.0}[config["c"]], space, n_iter=10, n_init=3, seed=0,
                             n_workers=n_workers, executor=executor, **FAST)
    finally:
        if executor is not None:
            executor.shutdown()
    assert result.status == "exhausted", result.message
    assert result.n_evals == 2
    assert result.exception is None
    assert sorted(t.config["c"] for t in result.trials) == ["a", "b"]
    assert result.x == {"c": "a"} and result.fun == 1.0


@pytest.fixture
def sigint_raises():
    """SIGINT handled by Python's default handler (KeyboardInterrupt) for the test: a process started in the
    background of a non-interactive shell inherits SIGINT ignored, and then ``_thread.interrupt_main`` does
    nothing."""
    import signal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_keyboard_interrupt_while_evaluations_are_in_flight_keeps_or_releases_each_of_them(tmp_path, sigint_raises):
    import _thread

    def fun(config):
        if config.trial_id == 4:
            _thread.interrupt_main()         # as Ctrl-C would, while the loop waits on the pool
        return objectives.value_of(config)

    storage = tmp_path / "run.jsonl"
    with cf.ThreadPoolExecutor(2) as pool:
        result = ff.minimize(fun, objectives.SPACE, n_iter=12, n_init=3, seed=9, n_workers=2, executor=pool,
                             storage=storage, **FAST)
    assert result.status == "interrupted" and result.interrupted
    assert 3 <= result.n_evals < 12             # trial 4 is asked after three tells
    ids = [t.trial_id for t in result.trials]
    assert len(set(ids)) == len(ids)
    for t in result.trials:
        assert t.value == objectives.value_of(t.config)
    assert result.optimizer.pending == []      # each ask in flight was told or released
    reloaded = ff.Optimizer.load(storage)
    assert [t.trial_id for t in reloaded.trials] == ids
    assert reloaded.pending == []


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("n_workers", [1, 2])
def test_keyboard_interrupt_while_a_result_is_being_told_keeps_that_result(tmp_path, monkeypatch, when, n_workers):
    """Ctrl-C inside the tell of a finished evaluation, before or after its record is written: the result is
    kept (told once) and no ask is left pending."""
    tell = ff.Optimizer.tell
    state = {"armed": True}

    def interrupted_tell(self, x, y, **kwargs):
        if getattr(x, "trial_id", None) == 3 and state["armed"]:
            state["armed"] = False
            if when == "after":
                tell(self, x, y, **kwargs)
            raise KeyboardInterrupt
        return tell(self, x, y, **kwargs)

    monkeypatch.setattr(ff.Optimizer, "tell", interrupted_tell)
    storage = tmp_path / "run.jsonl"
    executor = cf.ThreadPoolExecutor(n_workers) if n_workers > 1 else None
    try:
        result = ff.minimize(objectives.quadratic, objectives.SPACE, n_iter=10, n_init=3, seed=10,
                             n_workers=n_workers, executor=executor, storage=storage, **FAST)
    finally:
        if executor is not None:
            executor.shutdown()
    assert not state["armed"]
    assert result.status == "interrupted"
    ids = [t.trial_id for t in result.trials]
    assert 3 in ids and len(set(ids)) == len(ids)
    trial = next(t for t in result.trials if t.trial_id == 3)
    assert trial.value == objectives.value_of(trial.config)
    assert result.optimizer.pending == []
    reloaded = ff.Optimizer.load(storage)
    assert [(t.trial_id, t.value) for t in reloaded.trials] == [(t.trial_id, t.value) for t in result.trials]
    assert reloaded.pending == []


def test_keyboard_interrupt_in_a_serial_objective_returns_the_trials_so_far(tmp_path):
    def fun(config):
        if config.trial_id == 3:
            raise KeyboardInterrupt
        return objectives.value_of(config)

    storage = tmp_path / "run.jsonl"
    result = ff.minimize(fun, objectives.SPACE, n_iter=10, n_init=3, seed=8, storage=storage, **FAST)
    assert result.status == "interrupted"
    assert result.interrupted
    assert result.exception is None
    assert [t.trial_id for t in result.trials] == [0, 1, 2]
    assert not any(t.failed for t in result.trials)
    assert result.optimizer.pending == []        # the interrupted ask was released
    reloaded = ff.Optimizer.load(storage)
    assert [t.trial_id for t in reloaded.trials] == [0, 1, 2]
    assert reloaded.pending == []


def test_an_ask_interrupted_between_its_record_and_its_submit_is_released(tmp_path, monkeypatch):
    """The window a Ctrl-C can hit: the ask's record is committed (the trial is pending) and the interrupt comes
    before the loop submits it. The run ends "interrupted" with nothing left pending, in memory or in the journal."""
    from fastfm.bo.optimizer import Optimizer

    original_commit = Optimizer._commit

    def commit_then_interrupt(self, record):
        original_commit(self, record)
        if record["type"] == "ask" and record["id"] == 4:
            raise KeyboardInterrupt

    monkeypatch.setattr(Optimizer, "_commit", commit_then_interrupt)
    storage = tmp_path / "run.jsonl"
    with cf.ThreadPoolExecutor(2) as pool:
        result = ff.minimize(objectives.value_of, objectives.SPACE, n_iter=12, n_init=3, seed=9, n_workers=2,
                             executor=pool, storage=storage, **FAST)
    assert result.status == "interrupted"
    assert result.optimizer.pending == []
    assert 4 not in [t.trial_id for t in result.trials]
    monkeypatch.undo()
    reloaded = ff.Optimizer.load(storage)
    assert reloaded.pending == []
    assert [t.trial_id for t in reloaded.trials] == [t.trial_id for t in result.trials]


@pytest.mark.parametrize("journal", [False, True])
def test_threads_asking_one_optimizer_at_once_take_turns(tmp_path, journal):
    # a worker thread per evaluation slot, each asking, evaluating and telling on the same optimizer (Optuna's
    # study.optimize(n_jobs=...) pattern): every ask is its own trial and every tell lands
    optimizer = objectives.told_optimizer(storage=tmp_path / "run.jsonl" if journal else None)
    errors, barrier = [], threading.Barrier(4)

    def worker():
        try:
            barrier.wait(30)
            for _ in range(3):
                config = optimizer.ask()
                optimizer.tell(config, objectives.value_of(config))
        except Exception as error:          # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert optimizer.n_told == 8 + 12 and not optimizer.pending
    assert len({trial.trial_id for trial in optimizer.trials}) == 20


_ASKS_FROM_THREADS = """
import json, sys, threading
import threadpoolctl
import _bo_objectives as objectives

def blas_threads():
    return sorted({i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"})

one_each = sys.argv[1] == "one optimizer per thread"
optimizers = [objectives.told_optimizer() for _ in range(3)] if one_each else [objectives.told_optimizer()] * 3
before, after = blas_threads(), []
for _ in range(5):
    threads = [threading.Thread(target=lambda optimizer=optimizer: [optimizer.abandon(optimizer.ask())
                                                                    for _ in range(2)])
               for optimizer in optimizers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    after.append(blas_threads())
print(json.dumps({"before": before, "after": after}))
"""


@pytest.mark.parametrize("optimizers", ["one optimizer shared", "one optimizer per thread"])
def test_threads_asking_at_once_leave_the_blas_threads_as_they_were(optimizers):
    # ask limits BLAS to one thread; numpy's OpenBLAS has one pool for the process, and when two threads' asks
    # overlapped, the second saved the first one's limit as "the original" and, leaving last, put it back for good
    # (the optimizer's lock orders asks of one optimizer; single_threaded_blas's last-out restore, asks of several).
    # In a fresh process: the BLAS threads it starts with are then the library's own choice, not what another test
    # left
    pytest.importorskip("threadpoolctl")
    import json
    import subprocess
    import sys

    paths = [os.path.dirname(os.path.abspath(objectives.__file__)), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in paths if path))   # for _bo_objectives
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", _ASKS_FROM_THREADS, optimizers], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    threads = json.loads(done.stdout.strip().splitlines()[-1])
    if threads["before"] == [1]:
        pytest.skip("BLAS starts with one thread here: a limit left behind would not show")
    assert threads["after"] == [threads["before"]] * 5


def test_a_pickled_optimizer_continues_as_the_original():
    optimizer = objectives.told_optimizer()
    copy = pickle.loads(pickle.dumps(optimizer))
    assert copy.ask() == optimizer.ask()
    config = copy.ask()                     # the copy's lock is its own
    copy.tell(config, 1.0)
    assert copy.n_told == optimizer.n_told + 1
