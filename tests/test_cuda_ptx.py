"""Every CUDA kernel compiles for a real GPU, not only under Numba's simulator.

The simulator runs the kernels as Python, so it accepts code that the CUDA
compiler refuses (a shared-memory shape written ``(PANEL, PANEL + 1)`` runs
there and fails to type on a GPU).  This test records the argument types of
every kernel launch while the parity check runs under the simulator, then, in
a fresh process without the simulator, compiles each kernel for those types
to PTX (Numba's NVVM, sm_90, as on an H100) and assembles it with ``ptxas``
(``fastfm._backends.cuda_ptx``), which needs the CUDA toolkit but no GPU or
driver.  It also fails when a
kernel of the three kernel modules was not launched at all, so a new kernel
cannot escape it.  Without a toolkit (no libnvvm) it is skipped, naming what
is missing.
"""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_cuda_backend import cuda_backend  # noqa: F401  (the fixture: GPU, else the simulator)

numba = pytest.importorskip("numba", reason="numba is not installed (it is in the 'test' extra)")

KERNEL_MODULES = ("fastfm._backends._cuda_kernels", "fastfm._backends._cuda_matvec_kernels",
                  "fastfm._backends._cuda_linalg_kernels")


def _numba_type(value):
    return numba.typeof(getattr(value, "_ary", value))   # the simulator's device array wraps a NumPy array


def _is_kernel(value):
    """A ``@cuda.jit`` kernel (not a device function), under the simulator or not."""
    if type(value).__name__ == "FakeCUDAKernel":
        return not value._device
    if type(value).__name__ == "CUDADispatcher":
        return not value.targetoptions.get("device", False)
    return False


def _kernels_of(module_name):
    import importlib
    module = importlib.import_module(module_name)
    return sorted(name for name, value in vars(module).items() if _is_kernel(value))


_COMPILE_SCRIPT = textwrap.dedent("""
    import importlib, pickle, sys
    from fastfm._backends.cuda_ptx import compile_kernel
    signatures, toolkit = pickle.load(open(sys.argv[1], "rb")), sys.argv[2]
    problems = []
    for (module_name, name), argument_types in sorted(signatures.items()):
        kernel = getattr(importlib.import_module(module_name), name)
        for types in argument_types:
            try:
                compile_kernel(kernel, types, toolkit)
            except Exception as error:   # report every kernel, not only the first
                detail = getattr(error, "stderr", None) or str(error)
                problems.append(f"{name}{types}: {type(error).__name__}: {detail.strip().splitlines()[0]}")
    print(f"compiled {sum(map(len, signatures.values()))} kernel signatures")
    print("\\n".join(problems))
    sys.exit(1 if problems else 0)
""")


def test_every_kernel_compiles_to_ptx_for_the_types_it_is_launched_with(cuda_backend, monkeypatch, tmp_path):
    from fastfm._backends.cuda_ptx import find_toolkit
    toolkit = find_toolkit()
    if toolkit is None:
        pytest.skip("no CUDA toolkit with libnvvm and ptxas (CUDA_HOME, /usr/local/cuda*): PTX compilation "
                    "cannot be checked on this machine")
    from numba import cuda

    from fastfm._backends import cuda_linalg
    from fastfm._backends import cuda as cuda_module
    from fastfm.cli import gpu
    from fastfm.exceptions import NotPositiveDefiniteError

    signatures = {}
    launch = cuda_module._launch

    def recording_launch(kernel, grid, block, *args):
        function = getattr(kernel, "fn", None) or kernel.py_func
        key = (function.__module__, function.__name__)
        signatures.setdefault(key, set()).add(tuple(_numba_type(arg) for arg in args))
        return launch(kernel, grid, block, *args)

    monkeypatch.setattr(cuda_module, "_launch", recording_launch)
    # one space and one modulation launch every kernel with the types of them all (tests/test_cuda_backend.py
    # checks the values on each): under the simulator the whole check took ~80 s, this part of it ~20 s
    assert gpu.check_parity(cuda_backend, n_points=9, spaces=("Func3C",), modulations=("modlap",)) == []
    singular = np.ones((3, 3))
    singular[0, 2] = singular[2, 0] = np.nan
    with pytest.raises(NotPositiveDefiniteError):
        cuda_linalg.DeviceCholesky(cuda.to_device(singular), 0.0)

    launched = {key[1] for key in signatures}
    missing = [f"{module}.{name}" for module in KERNEL_MODULES for name in _kernels_of(module) if name not in launched]
    assert not missing, f"kernels never launched by the parity check (so never compile-checked): {missing}"

    path = tmp_path / "signatures.pickle"
    path.write_bytes(pickle.dumps(signatures))
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    environment["CUDA_HOME"] = toolkit
    result = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT, str(path), toolkit], capture_output=True,
                            text=True, env=environment, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "compiled" in result.stdout
