"""The C++ set cross gradient and diagonals against the NumPy reference (issue 24 §4; docs/benchmarks/sets.md,
"The C++ input gradient and diagonals").

    PYTHONPATH=. python asv_benchmarks/sets/cross_gradient.py [micro|ask] [only50]

"micro": set_cross_gradient, set_diag and set_diag_gradient, numpy against cpp (best of N, ms).  "ask": one
``Optimizer.ask()`` at 60 told random sets with the set kernels' cross gradient and diagonals on NumPy (before)
or C++ (after), the same code otherwise, and the time spent in those functions; "only50" runs PMedian with 50
facilities instead of the smaller cases (minutes per ask).
"""
import sys
import time

import numpy as np

import fastfm
from fastfm._backends import cpp, numpy_backend
from fastfm.benchmarks.sets import PMedian, SetChamfer

FUNCS = ("set_cross_gradient", "set_diag", "set_diag_gradient")
ORIG = {f: getattr(cpp, f) for f in FUNCS}
spent = {}
calls = {}

def install(which):
    for f in FUNCS:
        impl = ORIG[f] if which == "cpp" else getattr(numpy_backend, f)
        def timed(*args, _impl=impl, _f=f):
            t = time.perf_counter()
            try:
                return _impl(*args)
            finally:
                spent[_f] = spent.get(_f, 0.0) + time.perf_counter() - t
                calls[_f] = calls.get(_f, 0) + 1
        setattr(cpp, f, timed)

def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return min(times)

part = sys.argv[1] if len(sys.argv) > 1 else "all"
if part in ("all", "micro"):
    print("set_cross_gradient, d=2, nu=2.5 (best of N, ms)")
    print(f"{'NA':>4} {'NB':>4} {'m':>4} {'numpy':>10} {'cpp':>10} {'speed-up':>9}")
    rng = np.random.default_rng(0)
    ls = np.array([0.3, 0.5])
    for NA, NB, m in [(1, 60, 6), (50, 60, 6), (10, 60, 10), (10, 60, 20), (50, 60, 20), (1, 60, 50), (10, 60, 50), (50, 60, 50)]:
        A, B = rng.random((NA, m, 2)), rng.random((NB, m, 2))
        rep = 30 if NA * m <= 200 else 5
        tn = best(lambda: numpy_backend.set_cross_gradient(A, B, ls, 2.5), rep)
        tc = best(lambda: ORIG["set_cross_gradient"](A, B, ls, 2.5), rep * 5)
        print(f"{NA:>4} {NB:>4} {m:>4} {tn*1e3:>10.3f} {tc*1e3:>10.3f} {tn/tc:>8.1f}x")
    print("set_diag_gradient / set_diag, d=2 (best of N, ms)")
    for N, m in [(60, 6), (60, 20), (60, 50), (10, 50)]:
        A = rng.random((N, m, 2))
        for f in ("set_diag", "set_diag_gradient"):
            tn = best(lambda: getattr(numpy_backend, f)(A, ls, 2.5), 30)
            tc = best(lambda: ORIG[f](A, ls, 2.5), 150)
            print(f"{f:>18} N={N:>3} m={m:>3} {tn*1e3:>10.3f} {tc*1e3:>10.3f} {tn/tc:>8.1f}x")

def make(name, m):
    if name == "PMedian":
        return type(f"PMedian{m}", (PMedian,), {"n_facilities": m})()
    return SetChamfer()

if part in ("all", "ask"):
    cases = [("PMedian", 50)] if "only50" in sys.argv else [("SetChamfer", 5), ("PMedian", 6), ("PMedian", 20)]
    for name, m in cases:
        problem = make(name, m)
        configs = problem.space.sample(60, seed=1)
        ys = [problem(c) for c in configs]
        for which in ("numpy", "cpp"):
            install(which)
            spent.clear(); calls.clear()
            opt = fastfm.Optimizer(problem.space, seed=0)
            for c, y in zip(configs, ys):
                opt.tell(c, y)
            t = time.perf_counter(); opt.ask(); total = time.perf_counter() - t
            parts = ", ".join(f"{k} {v:.2f}s/{calls[k]}" for k, v in sorted(spent.items()))
            print(f"ask {name} m={m} cross/diag on {which:>5}: {total:6.2f}s   ({parts})", flush=True)
