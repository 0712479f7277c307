"""Integers with many values: time and memory of a suggestion against the number of values (issue 23 §1).

``Integer("n", 10, 10 + n - 1)`` beside one Real, 20 told points, then one model suggestion, for n from 10² to
10⁶, with the integer as a graph variable (``encoding="graph"``: its kernel graph has 2n vertices and an
eigenbasis of (2n)² numbers) and as a rounded continuous variable (``encoding="continuous"``, what
``"auto"`` picks above ``MAX_GRAPH_INTEGER_STATES`` values).  Memory is the peak of Python-tracked allocations
(tracemalloc: NumPy's arrays included) during space construction, fit and suggestion.  Graph runs stop at
``--max-graph-states`` (their memory grows as n², n = 10⁶ would need 7.3 TB).  Run from the repository root:

    python asv_benchmarks/robustness/huge_integers.py --json out.json

Results: docs/benchmarks/robustness.md, "Integers with many values".
"""
import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

# the shared measurement helpers (machine, commit, load average, JSON output) of the parallel measurements
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402


def measure(n_values, encoding, n_told=20, seed=0):
    import fastfm as ff
    tracemalloc.start()
    start = time.perf_counter()
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Integer("n", 10, 10 + n_values - 1, encoding=encoding)])
    opt = ff.Optimizer(space, n_init=n_told, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(n_told):
        config = opt.ask()
        opt.tell(config, (config["x"] - 0.3) ** 2 + (np.log(config["n"]) - np.log(10 + 0.4 * n_values)) ** 2
                 + 0.01 * rng.standard_normal())
    t_setup = time.perf_counter() - start
    t0 = time.perf_counter()
    opt.ask()
    t_suggest = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"n_values": n_values, "encoding": encoding, "suggest_s": t_suggest, "setup_s": t_setup,
            "peak_mib": peak / 2 ** 20}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000, 10 ** 4, 10 ** 5, 10 ** 6])
    parser.add_argument("--max-graph-states", type=int, default=3000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    meta = _common.header(args)
    import fastfm as ff
    ff.set_config(num_threads=1)
    results = []
    print(f"{'values':>9} {'encoding':>11} {'suggest (s)':>12} {'peak memory (MiB)':>18}")
    for n in args.sizes:
        for encoding in ("graph", "continuous"):
            if encoding == "graph" and n > args.max_graph_states:
                continue
            r = measure(n, encoding)
            results.append(r)
            print(f"{n:>9} {encoding:>11} {r['suggest_s']:>12.3f} {r['peak_mib']:>18.1f}", flush=True)
    _common.finish(meta, results, args.json)


if __name__ == "__main__":
    main()
