"""A/B of the pivoted Cholesky: the one-at-a-time loop of commit b4a5c84 against the current blocked one.

    python asv_benchmarks/peers/pivoted_cholesky_ab.py N RANK [OLD_COMMIT]

(OLD_COMMIT defaults to b4a5c84; 0f5b257 is the blocked version before the pool of rejected rows.)

Loads ``fastfm/gp_large.py`` as of b4a5c84 (``git show``) next to the installed/current module and
times both on the same inputs (the mixed regression set, ModLap at lengthscale 0.6, α = β = 0.5),
then compares the pivots, the factors' residual traces and where the first pivot differs (the first
pivots of a stationary kernel are ties: every diagonal entry is equal).
"""
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import fastfm as ff
from fastfm import gp_large
from fastfm.benchmarks.regression import make_mixed_regression

DEFAULT_OLD_COMMIT = "b4a5c84"


def load_old_module(commit):
    """fastfm/gp_large.py as of ``commit``, loaded as a module next to the current one."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(["git", "show", f"{commit}:fastfm/gp_large.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "gp_large_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("fastfm.gp_large_old", path)   # inside the package: relative imports
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    n, rank = int(sys.argv[1]), int(sys.argv[2])
    old_commit = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_OLD_COMMIT
    old = load_old_module(old_commit)
    space, X, _, _, _ = make_mixed_regression(n, 10, seed=0)
    kernel = ff.kernels.ModLap(space, lengthscale=0.6, alpha=0.5, beta=0.5)
    results = {}
    for label, function in ((f"at {old_commit}", old.pivoted_cholesky), ("current", gp_large.pivoted_cholesky)):
        start = time.perf_counter()
        results[label] = function(kernel, X, rank)
        print(f"{label:>14}: {time.perf_counter() - start:6.2f} s, rank {len(results[label][1])}, "
              f"residual trace {np.sum(results[label][2]):.6g}", flush=True)
    (_, p1, _), (_, p2, _) = results.values()
    print(f"same pivot set: {len(set(p1.tolist()) & set(p2.tolist()))} of {len(p1)}")


if __name__ == "__main__":
    main()
