"""The seeded inputs of every suite here: fastfm's benchmark suite (``fastfm.benchmarks.workloads``), with the
backend arguments built as ``fastfm time`` builds them (``fastfm.cli.timing``).

asv runs against whichever fastfm is installed ("environment_type": "existing"), and an A/B run installs
older checkouts too: before the suite existed, the same inputs (same seeds, same arrays) lived in
``fastfm.bench`` and the GPU likelihood call in ``fastfm._backends.cuda_bench``.
"""
try:
    from fastfm.benchmarks.workloads import (DEFAULT_SET_SHAPE, DEFAULT_SET_SUBSAMPLE, LENGTHSCALE, SET_LENGTHSCALE,
                                             benchmark_spaces, set_inputs)
    from fastfm.cli.gpu import likelihood_call
    from fastfm.cli.timing import hierarchical_arguments as hierarchical_inputs
    from fastfm.cli.timing import kernel_arguments as kernel_inputs
except ImportError:   # a checkout older than fastfm.benchmarks.workloads
    from fastfm.bench import (DEFAULT_SET_SHAPE, DEFAULT_SET_SUBSAMPLE, LENGTHSCALE, SET_LENGTHSCALE,
                              benchmark_spaces, hierarchical_inputs, kernel_inputs, set_inputs)

    def likelihood_call(*args, **kwargs):
        # imported when called: checkouts older still have no cuda_bench, and only bench_cuda needs it
        from fastfm._backends.cuda_bench import likelihood_call as call
        return call(*args, **kwargs)

__all__ = ["DEFAULT_SET_SHAPE", "DEFAULT_SET_SUBSAMPLE", "LENGTHSCALE", "SET_LENGTHSCALE", "benchmark_spaces",
           "set_inputs", "kernel_inputs", "hierarchical_inputs", "likelihood_call"]
