"""Python-level parallelism over independent work items (threads; the backends release the GIL), and the
machine's resources that bound it (cores, memory).

Used where one call is too small to parallelise inside the backend but many
calls are independent: the L-BFGS-B restarts of a GP fit, and the batches of
the acquisition scoring.  Each item then runs its kernel calls and its BLAS
calls on one thread (``config_context(num_threads=1)``, threadpoolctl), so the
cores are not oversubscribed.
"""
import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import threadpoolctl
from threadpoolctl import ThreadpoolController

from ._config import config_context, get_config

__all__ = ["thread_map", "single_threaded_blas", "available_cores", "available_memory"]

# Where Linux reports the memory a container may use (cgroup v2, then v1): (limit, usage) files.
_CGROUP_MEMORY_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
                         "/sys/fs/cgroup/memory.stat"),
                        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                         "/sys/fs/cgroup/memory/memory.stat"))
_MEMINFO = "/proc/meminfo"


# How many single_threaded_blas contexts each thread has open: a context inside another of the same thread has
# nothing to change (the limit is already on), so it skips the rescan of the loaded libraries.
_open_blas_limits = threading.local()


class _ProcessWideLimit:
    """The one-thread limit of the BLAS libraries whose thread pool is shared by the whole process, first in, last out.

    OpenBLAS built with pthreads (numpy's and scipy's wheels) has one pool for the process.  Threads that each
    saved and restored its size in turn would restore in the wrong order: the last to leave puts back the value
    the first had set, 1, for good.  Here the first thread in saves the sizes and the last one out restores
    them, whichever threads those are.  Each set follows threadpoolctl's protocol for such pools (>= 3.8: one
    controlling thread at a time, released when its count of open limits returns to zero), so a limit the
    user holds with ``threadpool_limits`` in another thread is left alone, as threadpoolctl leaves it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = []                  # [(library controller, its pool size before the first holder)]

    def enter(self, libraries):
        with self._lock:
            if self._holders == 0:
                self._saved = [(library, library.get_num_threads()) for library in libraries]
                _set_num_threads((library, 1) for library, _ in self._saved)
            self._holders += 1

    def leave(self):
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                _set_num_threads(self._saved)
                self._saved = []

    def after_fork_in_child(self):
        """A forked child has only the thread that forked (its lock, which another thread may have held at the fork,
        starts free).  That thread, if it was inside, is the one holder left and restores on leaving; if only other
        threads were inside, none is left to leave, so the sizes go back now."""
        self._lock = threading.Lock()
        forking_thread_inside = getattr(_open_blas_limits, "depth", 0) > 0
        if self._holders > 0 and not forking_thread_inside:
            _set_num_threads(self._saved)
            self._saved = []
        self._holders = 1 if forking_thread_inside else 0


def _set_num_threads(sizes):
    ownership = getattr(threadpoolctl, "CONTROLLING_THREAD_OWNERSHIP", None)   # threadpoolctl >= 3.8
    if ownership is not None:
        ownership.increment()
    try:
        for library, num_threads in sizes:
            if num_threads is not None:
                library.set_num_threads(num_threads)
    finally:
        if ownership is not None:
            ownership.decrement()


_process_wide_limit = _ProcessWideLimit()
if hasattr(os, "register_at_fork"):     # POSIX
    os.register_at_fork(after_in_child=_process_wide_limit.after_fork_in_child)


def _has_process_wide_pool(library):
    # threadpoolctl's own split (OpenBLASController): only OpenBLAS's OpenMP layer limits the calling thread;
    # its pthreads (and "disabled"/unknown) layers share one pool.  Other libraries it limits per thread.
    return library.internal_api == "openblas" and getattr(library, "threading_layer", None) != "openmp"


@contextlib.contextmanager
def single_threaded_blas():
    """Context with BLAS on one thread (threadpoolctl), for work on small matrices or inside a thread pool.

    The outermost context of a thread rescans the loaded libraries (1-2 ms; with one controller cached per
    process, one of two clean-clone CI runs failed the bit-for-bit golden GP numbers, cause not found); the
    contexts nested in it (a suggestion opened three, 7-10 % of a Func2C suggestion at 50 observations) cost
    nothing.  Libraries with a pool per calling thread (OpenMP builds) are limited in that thread and restored
    when it leaves; a pool shared by the process is limited while any thread is inside and restored by the last
    one out, so contexts of concurrent threads (asks of different optimizers) leave it as they found it."""
    depth = getattr(_open_blas_limits, "depth", 0)
    if depth > 0:
        _open_blas_limits.depth = depth + 1
        try:
            yield
        finally:
            _open_blas_limits.depth = depth
        return
    libraries = ThreadpoolController().select(user_api="blas").lib_controllers
    shared = [library for library in libraries if _has_process_wide_pool(library)]
    own = [(library, library.get_num_threads()) for library in libraries if not _has_process_wide_pool(library)]
    _process_wide_limit.enter(shared)
    try:
        _set_num_threads((library, 1) for library, _ in own)
        _open_blas_limits.depth = 1
        try:
            yield
        finally:
            _open_blas_limits.depth = 0
            _set_num_threads(own)
    finally:
        _process_wide_limit.leave()


def available_cores():
    """The configured thread count (``fastfm.set_config(num_threads=...)``), else the machine's cores."""
    return get_config()["num_threads"] or os.cpu_count() or 1


def _read(path):
    with open(path) as file:
        return file.read()


def _cgroup_room():
    """Bytes left under this process's cgroup memory limit, or None without one.

    The usage counts the page cache; its inactive part is reclaimed before the limit bites, so it is
    subtracted (as ``docker stats`` does)."""
    for limit_path, usage_path, stat_path in _CGROUP_MEMORY_FILES:
        try:
            limit, usage = _read(limit_path).strip(), int(_read(usage_path))
        except (OSError, ValueError):
            continue
        if limit == "max" or int(limit) >= 1 << 60:     # no limit (v1 writes a huge number)
            return None
        try:
            stats = dict(line.split() for line in _read(stat_path).splitlines() if line.count(" ") == 1)
            usage -= int(stats.get("inactive_file", stats.get("total_inactive_file", 0)))
        except (OSError, ValueError):
            pass
        return max(int(limit) - usage, 0)
    return None


def available_memory():
    """Bytes this process can still allocate without swapping, or None where the system does not say.

    Linux: MemAvailable of /proc/meminfo, lowered to the room under a cgroup (container) limit;
    elsewhere the free physical pages (``os.sysconf``) where they are reported."""
    available = None
    try:
        for line in _read(_MEMINFO).splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    room = _cgroup_room()
    if room is not None:
        available = room if available is None else min(available, room)
    return available


@contextlib.contextmanager
def thread_map(n_items, parallel=True, max_workers=None):
    """Yield ``run_all(function, items) -> list`` (results in item order).

    With ``parallel`` true, ≥ 2 cores and ≥ 2 items, the items run in a thread
    pool of min(cores, n_items, ``max_workers``) workers with every backend and
    BLAS call single-threaded; otherwise they run one after another in the
    calling thread.
    """
    workers = min(available_cores(), n_items, max_workers or n_items)
    if not parallel or workers < 2:
        yield lambda function, items: [function(item) for item in items]
        return
    with config_context(num_threads=1), single_threaded_blas(), \
            ThreadPoolExecutor(workers) as pool:
        yield lambda function, items: list(pool.map(function, items))
