"""single_threaded_blas: one threadpoolctl limit per thread, nested contexts inside it free."""
import threading

from threadpoolctl import threadpool_info, threadpool_limits

from fastfm import _parallel


def blas_threads():
    return sorted({info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"})


def counting_scans(monkeypatch):
    scans = []
    real = _parallel.threadpool_limits

    def counted(*args, **kwargs):
        scans.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(_parallel, "threadpool_limits", counted)
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
