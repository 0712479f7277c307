"""Python-level parallelism over independent work items (threads; the backends release the GIL).

Used where one call is too small to parallelise inside the backend but many
calls are independent: the L-BFGS-B restarts of a GP fit, and the batches of
the acquisition scoring.  Each item then runs its kernel calls and its BLAS
calls on one thread (``config_context(num_threads=1)``, threadpoolctl), so the
cores are not oversubscribed.
"""
import contextlib
import os
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import threadpool_limits

from ._config import config_context, get_config

__all__ = ["thread_map"]


def available_cores():
    """The configured thread count (``fastfm.set_config(num_threads=...)``), else the machine's cores."""
    return get_config()["num_threads"] or os.cpu_count() or 1


@contextlib.contextmanager
def thread_map(n_items, parallel=True):
    """Yield ``run_all(function, items) -> list`` (results in item order).

    With ``parallel`` true, ≥ 2 cores and ≥ 2 items, the items run in a thread
    pool of min(cores, n_items) workers with every backend and BLAS call
    single-threaded; otherwise they run one after another in the calling thread.
    """
    workers = min(available_cores(), n_items)
    if not parallel or workers < 2:
        yield lambda function, items: [function(item) for item in items]
        return
    with config_context(num_threads=1), threadpool_limits(limits=1, user_api="blas"), \
            ThreadPoolExecutor(workers) as pool:
        yield lambda function, items: list(pool.map(function, items))
