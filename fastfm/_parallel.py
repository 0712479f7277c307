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

from threadpoolctl import threadpool_limits

from ._config import config_context, get_config

__all__ = ["thread_map", "single_threaded_blas", "available_cores", "available_memory"]

# Where Linux reports the memory a container may use (cgroup v2, then v1): (limit, usage) files.
_CGROUP_MEMORY_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
                         "/sys/fs/cgroup/memory.stat"),
                        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                         "/sys/fs/cgroup/memory/memory.stat"))
_MEMINFO = "/proc/meminfo"


# How many single_threaded_blas contexts each thread has open: a context inside another of the same thread has
# nothing to change (the limit is already on), so it skips threadpool_limits and its rescan of the loaded libraries.
_open_blas_limits = threading.local()


@contextlib.contextmanager
def single_threaded_blas():
    """Context with BLAS on one thread (threadpoolctl), for work on small matrices or inside a thread pool.

    The outermost context of a thread opens a fresh ``threadpool_limits`` (it rescans the loaded libraries, 1-2 ms;
    with one controller cached per process, one of two clean-clone CI runs failed the bit-for-bit golden GP numbers,
    cause not found); the contexts nested in it (a suggestion opened three, 7-10 % of a Func2C suggestion at 50
    observations) cost nothing.  Contexts of different threads are independent, as threadpoolctl's are."""
    depth = getattr(_open_blas_limits, "depth", 0)
    with threadpool_limits(limits=1, user_api="blas") if depth == 0 else contextlib.nullcontext():
        _open_blas_limits.depth = depth + 1
        try:
            yield
        finally:
            _open_blas_limits.depth = depth


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
