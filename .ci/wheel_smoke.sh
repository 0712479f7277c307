#!/usr/bin/env bash
# Wheel smoke test: build a wheel from this checkout the way a user's `pip install .` does, install it
# into a fresh virtual environment and use it from outside the source tree (where `import fastfm` would
# pick up the sources, which have no compiled extension).
#
#   .ci/wheel_smoke.sh             build, install, check (exit status non-zero on any failure)
#   .ci/wheel_smoke.sh --installed  only the checks, against the fastfm that `python` imports
#
# The checks: fastfm imports; fastfm._cpp is present (setup.py installs a NumPy-only package with a
# warning when the compiler fails, so a wheel can silently lose it) and reports its build; an FM Gram
# from the cpp backend equals the NumPy reference within 1e-12; a tiny seeded fastfm.minimize on a
# built-in benchmark finishes with a finite result.  Environment: PYTHON (default python3) builds the
# venv; FASTFM_BUILD_JOBS is passed on to setup.py.
set -euo pipefail

checks() {
    "$1" - <<'EOF'
import math
import sys

import numpy as np

import fastfm as ff
from fastfm import _cpp
from fastfm.benchmarks import Func2C
from fastfm.kernels import ModLap

info = _cpp.build_info()
print(f"fastfm {ff.__version__} from {ff.__file__}")
print(f"fastfm._cpp: {info}")

space = Func2C().space
X = space.sample_encoded(40, seed=1)
K_cpp = ModLap(space, backend="cpp")(X)
K_numpy = ModLap(space, backend="numpy")(X)
error = float(np.max(np.abs(K_cpp - K_numpy)))
print(f"FM Gram (40 points of Func2C), max |cpp - numpy| = {error:.3g}")
if not error <= 1e-12:
    sys.exit(f"FAIL: the cpp Gram differs from the NumPy reference by {error:.3g} > 1e-12")

problem = Func2C()
result = ff.minimize(problem, problem.space, n_iter=12, n_init=6, seed=0, progress=False)
print(f"minimize(Func2C, n_iter=12, seed=0): best {result.fun!r} after {result.n_evals} evaluations")
if result.n_evals != 12 or not math.isfinite(result.fun):
    sys.exit(f"FAIL: minimize gave n_evals={result.n_evals}, fun={result.fun!r}")
print("wheel smoke test: OK")
EOF
}

if [ "${1:-}" = "--installed" ]; then
    cd "${TMPDIR:-/tmp}"   # never the source tree
    checks python
    exit
fi

repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/fastfm-wheel-smoke.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

"${PYTHON:-python3}" -m venv "$tmp/venv"
venv_python="$tmp/venv/bin/python"
echo "+ pip wheel --no-deps $repo -w $tmp/wheels"
start=$(date +%s)
(cd "$repo" && "$venv_python" -m pip wheel --no-deps . -w "$tmp/wheels")
echo "wheel built in $(( $(date +%s) - start )) s"
wheels=("$tmp"/wheels/fastfm-*.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "FAIL: expected one fastfm wheel in $tmp/wheels, found: ${wheels[*]}" >&2
    exit 1
fi
case "${wheels[0]}" in
    *-py3-none-any.whl) echo "FAIL: ${wheels[0]} is a pure-Python wheel: the extension did not build" >&2; exit 1 ;;
esac
"$venv_python" -m pip install "${wheels[0]}"
cd "$tmp"
checks "$venv_python"
