"""Compile CUDA kernels to PTX and assemble them with ptxas, without a GPU (a development check).

Numba's simulator runs kernels as Python and accepts code that the CUDA
compiler refuses, so ``tests/test_cuda_ptx.py`` compiles every kernel for the
argument types it is launched with, and ``asv_benchmarks/peers/ptx_resources.py``
prints the registers, shared memory and spills ``ptxas -v`` reports.  Both
need the CUDA toolkit (NVVM and ptxas), not a driver: :func:`compile_kernel`
tells Numba the compute capability that it would otherwise ask the device for.
Must not run in a process where the simulator is on.
"""
import glob
import os
import re
import subprocess
import tempfile
from types import SimpleNamespace

__all__ = ["find_toolkit", "compile_kernel"]

DEFAULT_COMPUTE_CAPABILITY = (9, 0)   # H100


def find_toolkit():
    """Root of a CUDA toolkit holding libnvvm and ptxas (``CUDA_HOME``, ``CUDA_PATH``, /usr/local/cuda*), or None."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
                  *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    for root in candidates:
        if not root:
            continue
        libraries = [path for folder in ("nvvm/lib64", "lib64", "lib")
                     for path in glob.glob(os.path.join(root, folder, "libnvvm.so*"))]
        if libraries and os.path.exists(os.path.join(root, "bin", "ptxas")):
            return root
    return None


def compile_kernel(kernel, argument_types, toolkit, cc=DEFAULT_COMPUTE_CAPABILITY):
    """Compile a ``@cuda.jit`` kernel for ``argument_types`` and assemble it for sm_<cc>.

    ``toolkit`` must also be in ``CUDA_HOME`` before numba.cuda is first imported (Numba reads it then).

    Returns
    -------
    dict with "registers", "shared_bytes", "spill_stores", "spill_loads", "stack_bytes" (ptxas -v).

    Raises
    ------
    numba's TypingError / LoweringError, or subprocess.CalledProcessError (ptxas), naming the problem.
    """
    from numba import cuda
    import numba.cuda.dispatcher as dispatcher

    # device functions are compiled for the current device's compute capability: without a GPU, say it
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)
    function = getattr(kernel, "py_func", kernel)
    ptx, _ = cuda.compile_ptx(function, tuple(argument_types), cc=cc)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "w") as handle:
            handle.write(ptx)
        report = subprocess.run([os.path.join(toolkit, "bin", "ptxas"), f"-arch=sm_{cc[0]}{cc[1]}", "-v", path,
                                 "-o", os.devnull], capture_output=True, text=True, check=True).stderr

    def number(pattern):
        match = re.search(pattern, report)
        return int(match.group(1)) if match else 0

    return {"registers": number(r"Used (\d+) registers"), "shared_bytes": number(r"(\d+) bytes smem"),
            "spill_stores": number(r"(\d+) bytes spill stores"), "spill_loads": number(r"(\d+) bytes spill loads"),
            "stack_bytes": number(r"(\d+) bytes stack frame")}
