"""Shared helpers of the parallel/batch BO measurements (see docs/benchmarks/parallel.md)."""
import json
import multiprocessing as mp
import os
import platform
import subprocess
import time

import numpy as np


def loadavg():
    """The 1-minute load average (the machine is shared: recorded at the start and end of each run)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "n_cpus": os.cpu_count(), "python": platform.python_version()}


def commit():
    """The commit of the fastfm that the measurements import (PYTHONPATH may name another worktree than this
    script's), marked when its fastfm/ or csrc/ has uncommitted changes; for an installed fastfm, its version."""
    def git(where, *args):
        return subprocess.run(["git", "-C", where, *args], capture_output=True, text=True).stdout.strip()
    try:
        import fastfm
    except ImportError:
        return "?"
    where = os.path.dirname(os.path.abspath(fastfm.__file__))
    try:
        h = git(where, "log", "-1", "--format=%h")
        if not h:
            return f"fastfm {fastfm.__version__} (installed, not a git tree)"
        dirty = bool(git(where, "status", "--porcelain", "--", ".", "../csrc"))
        return h + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "?"


def header(args):
    return {"args": vars(args), "machine": machine(), "commit": commit(), "load_start": loadavg(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S")}


def finish(meta, results, path):
    meta["load_end"] = loadavg()
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"\nload average (1 min): start {meta['load_start']:.2f}, end {meta['load_end']:.2f}; "
          f"commit {meta['commit']}; {meta['machine']['cpu']} x{meta['machine']['n_cpus']}")
    if path:
        with open(path, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1, default=_default)
        print(f"raw results: {path}")


def _default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def mean_se(values):
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))


def run_pool(job, jobs, processes, initializer, describe, fresh_process=False):
    """Run ``job`` over ``jobs`` in ``processes`` forked workers, printing ``describe(result)`` as each ends;
    (results, wall seconds).  ``fresh_process``: a new worker per job (for jobs that patch the library)."""
    results = []
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(processes, initializer=initializer,
                                     maxtasksperchild=1 if fresh_process else None) as pool:
        for r in pool.imap_unordered(job, jobs):
            results.append(r)
            print(f"[{time.perf_counter() - t0:6.0f} s] {describe(r)}", flush=True)
    return results, time.perf_counter() - t0


def add_protocol_arguments(parser, seeds):
    """The options every batch-BO measurement shares: seeds, budget, initial design, worker processes, --json."""
    parser.add_argument("--seeds", type=int, default=seeds, help="seeds 0..S-1")
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--json", default=None, help="write the raw results here")
