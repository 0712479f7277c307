# Sourced by the GPU-machine scripts beside it (run from the repository root on the lent machine).
# The machine's image has numba-cuda, numpy 2.5 and pybind11 but no network: the extension is built
# in place unless a prebuilt fastfm/_cpp*.so for its Python (3.12) was carried along.
export PYTHONUNBUFFERED=1
mkdir -p /tmp/shim
cat > /tmp/shim/sitecustomize.py <<'PY'
# numba-cuda 0.30 still calls np.row_stack, removed in NumPy 2.5 (the image's problem, not fastfm's)
import numpy as _np
if not hasattr(_np, "row_stack"):
    _np.row_stack = _np.vstack
PY
export PYTHONPATH=/tmp/shim:$PWD
if ! python3 -c "import fastfm._cpp" 2>/dev/null; then
  echo "building the extension in place"
  python3 setup.py build_ext --inplace -q > "${OUT:-/tmp}/build.log" 2>&1 || tail -20 "${OUT:-/tmp}/build.log"
fi
python3 -c "from fastfm._backends import backend_status; print(backend_status())"
