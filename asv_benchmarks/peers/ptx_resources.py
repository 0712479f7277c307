"""Registers, shared memory and spills of the device-likelihood kernels (``_cuda_linalg_kernels.py``)
as ptxas reports them for sm_90, without a GPU: Numba compiles each kernel to PTX with the CUDA
toolkit's NVVM, ``ptxas -v`` assembles it.  (``tests/test_cuda_ptx.py`` checks that every kernel
compiles; this prints the resources.)

    CUDA_HOME=/usr/local/cuda-13.0 python asv_benchmarks/peers/ptx_resources.py
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from numba import boolean, cuda, float64, int64  # noqa: E402

from fastfm._backends import _cuda_linalg_kernels as kernels  # noqa: E402

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
    ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    print(f"PANEL {kernels.PANEL}, TILE {kernels.TILE} ({kernels.TILE_THREADS}² threads), sm_90")
    print("| kernel | registers | shared memory (bytes) | spills |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for name, signature in SIGNATURES.items():
            ptx, _ = cuda.compile_ptx(getattr(kernels, name).py_func, signature, cc=(9, 0))
            path = os.path.join(folder, name + ".ptx")
            with open(path, "w") as handle:
                handle.write(ptx)
            report = subprocess.run([ptxas, "-arch=sm_90", "-v", path, "-o", os.devnull], capture_output=True,
                                    text=True, check=True).stderr
            used = next(line for line in report.splitlines() if "Used" in line).split("Used ")[1]
            registers = used.split(" registers")[0]
            shared = used.split(", ")[-1].split(" bytes smem")[0] if "smem" in used else "0"
            spills = next(line for line in report.splitlines() if "spill" in line).split("frame, ")[1]
            print(f"| {name} | {registers} | {shared} | {spills} |")


if __name__ == "__main__":
    main()
