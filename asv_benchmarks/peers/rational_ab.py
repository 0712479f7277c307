"""Same-run A/B of two fastfm checkouts on the mixed regression set's kernel (ModLap, 5 continuous,
5 nominal, 5 ordinal inputs): symmetric K·v (the PCG product), cross K(X*, X)·v (the predictive mean)
and the Gram K(X, X) (the exact solver).  Each measurement runs in a fresh subprocess with
PYTHONPATH set to one checkout, alternating A and B, and the minimum over rounds is reported.

    python asv_benchmarks/peers/rational_ab.py /path/to/A /path/to/B [n_matvec] [n_gram] [rounds]
"""
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
import numpy as np
import fastfm
from fastfm._backends import available_backends
from fastfm.benchmarks.regression import make_mixed_regression
from fastfm.gp_large import kernel_matvec
from fastfm.kernels import ModLap
assert "cpp" in available_backends(), "the compiled backend is not built in " + fastfm.__file__
n_matvec, n_gram = int(sys.argv[1]), int(sys.argv[2])
space, X, y, X_test, _ = make_mixed_regression(n_matvec, 10_000, seed=0)
kernel = ModLap(space)
v = np.random.default_rng(0).standard_normal(n_matvec)
kernel_matvec(kernel, X[:1000], v[:1000])
def timed(f):
    start = time.perf_counter(); f(); return time.perf_counter() - start
out = {"matvec": timed(lambda: kernel_matvec(kernel, X, v)),
       "cross_matvec": timed(lambda: kernel_matvec(kernel, X_test, v, X)),
       "gram": timed(lambda: kernel(X[:n_gram]))}
out["module"] = fastfm.__file__
print(json.dumps(out))
"""


def main(argv):
    a, b = argv[1], argv[2]
    n_matvec = int(argv[3]) if len(argv) > 3 else 20_000
    n_gram = int(argv[4]) if len(argv) > 4 else 10_000
    rounds = int(argv[5]) if len(argv) > 5 else 3
    best = {a: {}, b: {}}
    for _ in range(rounds):
        for tree in (a, b):
            result = subprocess.run([sys.executable, "-c", CHILD, str(n_matvec), str(n_gram)], check=True,
                                    capture_output=True, text=True, cwd="/",  # not a checkout: PYTHONPATH decides
                                    env={"PYTHONPATH": tree, "PATH": "/usr/bin:/bin"})
            measured = json.loads(result.stdout)
            assert measured.pop("module").startswith(tree), f"{tree} imported another fastfm"
            for key, value in measured.items():
                best[tree][key] = min(best[tree].get(key, float("inf")), value)
    print(f"N = {n_matvec} (K·v), 10,000 × {n_matvec} (cross K·v), Gram N = {n_gram}; min of {rounds} rounds, seconds")
    print("| piece | A | B | A/B |")
    print("|---|---|---|---|")
    for key in ("matvec", "cross_matvec", "gram"):
        print(f"| {key} | {best[a][key]:.3f} | {best[b][key]:.3f} | {best[a][key] / best[b][key]:.2f} |")
    print(f"A = {a}\nB = {b}")


if __name__ == "__main__":
    main(sys.argv)
