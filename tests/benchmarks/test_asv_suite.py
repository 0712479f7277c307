"""The asv suite runs: each benchmark's setup and every timed method once, with the first value of each parameter
(what ``asv run --quick`` does with one parameter set), so that a renamed internal or a parameter list that no longer
fits its methods fails here rather than in a user's asv run.  A benchmark that asv would skip (``setup`` raises
NotImplementedError: the cuda backend without a GPU, the NumPy reference where it takes minutes) is skipped."""
import importlib
import inspect
import os
import sys

import pytest

ASV_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "asv_benchmarks")
MODULES = ["bench_bo", "bench_cuda", "bench_gp", "bench_hierarchical", "bench_kernels", "bench_sets"]
TIMED_PREFIXES = ("time_", "peakmem_", "mem_", "track_")


def _benchmarks():
    if ASV_DIR not in sys.path:
        sys.path.insert(0, ASV_DIR)
    found = []
    for module_name in MODULES:
        module = importlib.import_module(f"benchmarks.{module_name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not name.startswith("_") and \
                    any(attr.startswith(TIMED_PREFIXES) for attr in dir(cls)):
                found.append(pytest.param(cls, id=f"{module_name}.{name}"))
    return found


def _first_parameters(cls):
    params = getattr(cls, "params", None)
    if params is None:
        return ()
    if params and isinstance(params[0], (list, tuple)):      # several parameters: a list of values each
        return tuple(values[0] for values in params)
    return (params[0],)                                        # one parameter: its list of values


def test_the_suite_lists_every_benchmark_module():
    listed = sorted(f[:-3] for f in os.listdir(os.path.join(ASV_DIR, "benchmarks")) if f.startswith("bench_"))
    assert listed == sorted(MODULES)


@pytest.mark.parametrize("cls", _benchmarks())
def test_each_benchmark_runs_once_with_its_first_parameters(cls):
    args = _first_parameters(cls)
    names = getattr(cls, "param_names", None)
    if names is not None:
        assert len(names) == len(args), f"{cls.__name__}: {len(names)} param_names for {len(args)} parameters"
    benchmark = cls()
    try:
        if hasattr(benchmark, "setup"):
            benchmark.setup(*args)
    except NotImplementedError as skip:
        pytest.skip(f"asv skips it here: {skip}")
    timed = [attr for attr in dir(cls) if attr.startswith(TIMED_PREFIXES)]
    for attr in timed:
        method = getattr(benchmark, attr)
        n_args = len(inspect.signature(method).parameters)
        assert n_args == len(args), f"{cls.__name__}.{attr} takes {n_args} parameters, asv passes {len(args)}"
        method(*args)
    if hasattr(benchmark, "teardown"):
        benchmark.teardown(*args)
