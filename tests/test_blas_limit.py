"""single_threaded_blas: one scan of the libraries per thread, nested contexts inside it free; a pool shared by the
process restored by the last thread out."""
import json
import os
import subprocess
import sys
import threading

import pytest

from threadpoolctl import threadpool_info, threadpool_limits

from fastfm import _parallel


def blas_threads():
    return sorted({info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"})


def counting_scans(monkeypatch):
    scans = []
    real = _parallel.ThreadpoolController

    def counted(*args, **kwargs):
        scans.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(_parallel, "ThreadpoolController", counted)
    return scans


def test_nested_contexts_scan_the_libraries_once(monkeypatch):
    scans = counting_scans(monkeypatch)
    with threadpool_limits(limits=2, user_api="blas"):
        with _parallel.single_threaded_blas():
            with _parallel.single_threaded_blas():
                with _parallel.single_threaded_blas():
                    assert blas_threads() == [1]
                assert blas_threads() == [1]
            assert blas_threads() == [1]        # the inner contexts leave the outer one's limit on
        assert blas_threads() == [2]
        with _parallel.single_threaded_blas():  # a new outermost context scans again
            assert blas_threads() == [1]
        assert blas_threads() == [2]
    assert len(scans) == 2


def test_an_error_inside_restores_the_limit_and_the_depth():
    with threadpool_limits(limits=2, user_api="blas"):
        for raise_inside in ("outer", "inner"):
            try:
                with _parallel.single_threaded_blas():
                    if raise_inside == "outer":
                        raise KeyError(raise_inside)
                    with _parallel.single_threaded_blas():
                        raise KeyError(raise_inside)
            except KeyError:
                pass
            assert blas_threads() == [2]
            assert _parallel._open_blas_limits.depth == 0


def test_each_thread_opens_its_own_limit(monkeypatch):
    # the count is per thread: a worker's context inside the main thread's is that worker's outermost one, so it
    # limits the worker's BLAS where the library is per thread (OpenMP builds), as threadpool_limits did
    scans = counting_scans(monkeypatch)
    worker_scans = []

    def worker():
        with _parallel.single_threaded_blas():
            with _parallel.single_threaded_blas():
                worker_scans.append(threading.get_ident())

    with _parallel.single_threaded_blas():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(30)
    assert scans == [threading.get_ident(), worker_scans[0]]


# Thread A enters, thread B enters, A leaves while B is still inside, B leaves: the order in which concurrent asks of
# different optimizers overlap.  In a fresh process with the library's own thread count: the main thread must not
# hold a threadpoolctl limit (it would own a pthreads pool, and the worker threads' limits would do nothing).
_FIRST_IN_LEAVES_FIRST = """
import json, threading
from threadpoolctl import threadpool_info
from fastfm import _parallel

def blas_threads():
    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

a_inside, a_may_leave, a_left, b_inside, b_may_leave = (threading.Event() for _ in range(5))
seen = {"before": blas_threads()}

def thread_a():
    with _parallel.single_threaded_blas():
        a_inside.set()
        a_may_leave.wait(30)
    a_left.set()

def thread_b():
    a_inside.wait(30)
    with _parallel.single_threaded_blas():
        b_inside.set()
        b_may_leave.wait(30)
        seen["inside_b_after_a_left"] = blas_threads()

threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
for thread in threads:
    thread.start()
b_inside.wait(30)
seen["both_inside"] = blas_threads()
a_may_leave.set()
a_left.wait(30)
b_may_leave.set()
for thread in threads:
    thread.join(30)
seen["after"] = blas_threads()
print(json.dumps(seen))
"""


def run_in_a_fresh_process(script):
    """``python -c script`` without the thread-count variables, so BLAS starts with the library's own count."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    return subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", script], capture_output=True,
                          text=True, timeout=120, env=env)


def test_a_pool_shared_by_the_process_stays_limited_until_the_last_thread_leaves():
    done = run_in_a_fresh_process(_FIRST_IN_LEAVES_FIRST)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if seen["before"] == [1]:
        pytest.skip("BLAS starts with one thread here: a limit left behind would not show")
    assert seen["both_inside"] == [1]
    assert seen["inside_b_after_a_left"] == [1]      # per-thread pools: B's own limit; a shared pool: still held
    assert seen["after"] == seen["before"]


# A fork while threads are inside: the child has only the forking thread.  In a fresh process, as above; each case
# reports what the child saw through its exit status (0: as expected).
_FORK_WHILE_INSIDE = """
import os, sys, threading
from threadpoolctl import threadpool_info
from fastfm import _parallel

def blas_threads():
    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

before = blas_threads()
if before == [1]:
    sys.exit(3)
inside, may_leave = threading.Event(), threading.Event()

def holder():
    with _parallel.single_threaded_blas():
        inside.set()
        may_leave.wait(30)

def fork_while_another_thread_holds():
    pid = os.fork()
    if pid == 0:                        # only the other thread held it: back at once, and free for this one
        ok = blas_threads() == before
        with _parallel.single_threaded_blas():
            ok = ok and blas_threads() == [1]
        os._exit(0 if ok and blas_threads() == before else 1)
    return os.waitpid(pid, 0)[1]

def fork_from_inside():
    with _parallel.single_threaded_blas():
        pid = os.fork()
        held = blas_threads() == [1]    # the child is still inside: held until it leaves
    if pid == 0:
        os._exit(0 if held and blas_threads() == before else 1)
    return os.waitpid(pid, 0)[1]

thread = threading.Thread(target=holder)
thread.start()
inside.wait(30)
status_other = fork_while_another_thread_holds()
status_inside = fork_from_inside()
may_leave.set()
thread.join(30)
print(status_other, status_inside, blas_threads() == before)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX")
def test_a_forked_child_restores_what_only_its_lost_threads_held():
    done = run_in_a_fresh_process(_FORK_WHILE_INSIDE)
    if done.returncode == 3:
        pytest.skip("BLAS starts with one thread here: a limit left behind would not show")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "True"]
