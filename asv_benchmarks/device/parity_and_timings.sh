# GPU parity tests and `fastfm time gpu` (docs/benchmarks/gpu.md, "Second H100 run"):  bash asv_benchmarks/device/parity_and_timings.sh
source asv_benchmarks/device/common.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -m pip list 2>/dev/null | grep -iE "^(numba|numba-cuda|numpy|scipy) "
NUMBA_ENABLE_CUDASIM=0 timeout 300 python3 -m pytest tests/test_cuda_backend.py tests/test_cuda_matvec.py tests/test_cuda_linalg.py -q -p no:cacheprovider \
  > "${OUT:-/tmp}/pytest_cuda.log" 2>&1; echo "pytest rc $?"; tail -5 "${OUT:-/tmp}/pytest_cuda.log"
timeout 420 python3 -m fastfm time gpu --repeat 3 --json "${OUT:-/tmp}/cuda_bench.json" 2>&1 | grep -v Warning | tee "${OUT:-/tmp}/cuda_bench.log"
