"""Registers, shared memory and spills of the device-likelihood kernels (``_cuda_linalg_kernels.py``)
as ptxas reports them for sm_90, without a GPU (``fastfm._backends.cuda_ptx``).

    CUDA_HOME=/usr/local/cuda-13.0 python asv_benchmarks/device/ptx_resources.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from numba import boolean, float64, int64  # noqa: E402

from fastfm._backends import _cuda_linalg_kernels as kernels  # noqa: E402
from fastfm._backends.cuda_ptx import compile_kernel, find_toolkit  # noqa: E402

MATRIX = float64[:, ::1]
VECTOR = float64[::1]
INFO = int64[::1]
SIGNATURES = {
    "factor_diagonal_block": (MATRIX, int64, int64, INFO),
    "solve_rows_below": (MATRIX, int64, int64, INFO),
    "subtract_panel_product": (MATRIX, MATRIX, int64, MATRIX, int64, int64, boolean, int64, int64, int64, int64,
                               boolean, INFO),
    "solve_diagonal_rows": (MATRIX, MATRIX, int64, int64, int64, INFO),
    "lower_product_of_columns": (MATRIX, MATRIX, INFO),
    "lower_times_vector": (MATRIX, VECTOR, VECTOR),
    "lower_transpose_times_vector_partials": (MATRIX, VECTOR, MATRIX, int64),
    "sum_partials": (MATRIX, VECTOR),
    "copy_lower_with_diagonal_shift": (MATRIX, MATRIX, float64),
    "set_identity": (MATRIX,),
    "copy_diagonal": (MATRIX, VECTOR),
    "first_non_finite": (MATRIX, INFO),
    "likelihood_weights": (MATRIX, VECTOR, VECTOR, boolean),
}


def main():
    toolkit = find_toolkit()
    if toolkit is None:
        sys.exit("no CUDA toolkit with libnvvm and ptxas: set CUDA_HOME")
    print(f"PANEL {kernels.PANEL}, TILE {kernels.TILE} ({kernels.TILE_THREADS}² threads), sm_90, toolkit {toolkit}")
    print("| kernel | registers | shared memory (bytes) | stack frame (bytes) | spill stores / loads (bytes) |")
    print("| --- | --- | --- | --- | --- |")
    for name, signature in SIGNATURES.items():
        r = compile_kernel(getattr(kernels, name), signature, toolkit)
        print(f"| {name} | {r['registers']} | {r['shared_bytes']} | {r['stack_bytes']} | "
              f"{r['spill_stores']} / {r['spill_loads']} |")


if __name__ == "__main__":
    main()
