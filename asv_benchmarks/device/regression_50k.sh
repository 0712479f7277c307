# N = 50,000 GP regression with fitted hyperparameters on the GPU machine, PCG log at DEBUG level
# (docs/benchmarks/large-n.md, "On a GPU"):  bash asv_benchmarks/device/regression_50k.sh
source asv_benchmarks/device/common.sh
python3 - time regression --sizes 50000 --subset 1000 --restarts 4 --peers none --cg-tol 1e-2 --n-test 10000 \
  > "${OUT:-/tmp}/regression_50k.log" 2>&1 <<'PY'
import logging, sys
logging.basicConfig(level=logging.DEBUG, format="%(relativeCreated)9.0f ms %(name)s %(message)s")
for name in ("numba", "numba_cuda", "numba.cuda"):
    logging.getLogger(name).setLevel(logging.WARNING)
from fastfm.cli import main
sys.exit(main(sys.argv[1:]))
PY
echo "rc $?"; grep -v "PCG iteration" "${OUT:-/tmp}/regression_50k.log" | grep -vi numba | tail -6
