#!/usr/bin/env python
"""Same-minutes A/B of asv benchmark methods on two source trees.

    python asv_benchmarks/ab.py /path/to/A /path/to/B -b "KernelGram.time_gram$" -p backend=cpp -p N=2000

Every ``time_`` method whose asv name (module.Class.method) matches the regular expression ``-b``, at
every parameter combination that passes the ``-p NAME=VALUE`` filters, is timed in fresh subprocesses
with A, then B, first on PYTHONPATH, for ``--rounds`` rounds; the order flips every round, so that a
change in the machine's load hits both trees alike.  A child runs ``setup``, one warm-up call, then ``--repeat``
timed calls, and reports its best; the table shows each tree's best over the rounds and the ratio B/A.
The benchmark code is this checkout's (``benchmarks/`` falls back to older trees' names); only fastfm
comes from A or B, so each tree needs its extension built in place (``fastfm/_cpp*.so``).
"""
import argparse
import ast
import importlib
import itertools
import json
import os
import pkgutil
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def find_benchmarks(pattern, filters):
    """[(module, class, method, parameters)] of the matching time_ methods (imports fastfm: a tree on sys.path)."""
    sys.path.insert(0, HERE)
    import benchmarks
    found = []
    for info in pkgutil.iter_modules(benchmarks.__path__):
        module = importlib.import_module(f"benchmarks.{info.name}")
        for class_name, cls in sorted(vars(module).items()):
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            names, params = list(getattr(cls, "param_names", [])), list(getattr(cls, "params", []))
            if params and not isinstance(params[0], (list, tuple)):
                params = [params]                     # asv: a single parameter may be given as one list
            for method in sorted(m for m in dir(cls) if m.startswith("time_")):
                if re.search(pattern, f"{info.name}.{class_name}.{method}"):
                    found += [(info.name, class_name, method, combo) for combo in itertools.product(*params)
                              if all(str(combo[names.index(k)]) == v for k, v in filters if k in names)]
    return found


def child(module, class_name, method, combo, repeat, clock):
    """Runs in the subprocess: prints {"best": seconds, "fastfm": path} or {"skipped": reason} as JSON."""
    combo = ast.literal_eval(combo)
    bench = getattr(importlib.import_module(f"benchmarks.{module}"), class_name)()
    try:
        getattr(bench, "setup", lambda *args: None)(*combo)
    except NotImplementedError as reason:     # asv's "skipped": e.g. a backend not available here
        print(json.dumps({"skipped": str(reason)}))
        return
    call, now = getattr(bench, method), CLOCKS[clock]
    call(*combo)                                # warm-up: compiles, fills caches
    times = []
    for _ in range(repeat):
        start = now()
        call(*combo)
        times.append(now() - start)
    import fastfm
    print(json.dumps({"best": min(times), "fastfm": fastfm.__file__}))


def run_in(tree, job, repeat, clock):
    # the tree first (its fastfm wins; checked below), then what the caller had (e.g. a sitecustomize shim)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *job[:3], repr(job[3]),
                          str(repeat), clock], env=env, cwd=HERE, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{job} failed with PYTHONPATH={tree}:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if "fastfm" in result and not result["fastfm"].startswith(tree + os.sep):
        raise RuntimeError(f"the child imported {result['fastfm']}, not fastfm from {tree}")
    return result


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:6], int(sys.argv[6]), sys.argv[7])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("A", help="source tree (a checkout with fastfm/_cpp*.so built in place)")
    parser.add_argument("B", help="the other source tree")
    parser.add_argument("-b", "--bench", required=True, help="regular expression on module.Class.method")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="keep the parameter combinations with this value (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per subprocess (its best is kept)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args(argv)
    trees = [os.path.abspath(args.A), os.path.abspath(args.B)]
    sys.path.insert(0, trees[0])
    jobs = find_benchmarks(args.bench, [p.split("=", 1) for p in args.param])
    if not jobs:
        parser.error(f"no time_ method matches {args.bench!r} with {args.param}")
    print(f"A = {trees[0]}\nB = {trees[1]}\n{args.rounds} rounds x {args.repeat} calls, {args.clock} clock")
    print(f"{'benchmark':<52} {'parameters':<34} {'A (ms)':>10} {'B (ms)':>10} {'B/A':>6}")
    for job in jobs:
        best, skipped = [float("inf"), float("inf")], None
        for k in range(2 * args.rounds):
            tree = (k + k // 2) % 2                  # A B, B A, A B, ...
            result = run_in(trees[tree], job, args.repeat, args.clock)
            if "skipped" in result:
                skipped = result["skipped"]
                break
            best[tree] = min(best[tree], result["best"])
        figures = (f"skipped: {skipped}" if skipped is not None else
                   f"{1e3 * best[0]:>10.3f} {1e3 * best[1]:>10.3f} {best[1] / best[0]:>6.3f}")
        print(f"{'.'.join(job[:3]):<52} {str(job[3]):<34} {figures}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
