"""Bridges from fastfm to other libraries.

Each bridge is a submodule that imports its library only when it is imported itself, so that
``import fastfm`` never needs them:

* ``fastfm.integration.optuna``: ``FMSampler``, an Optuna sampler that runs fastfm's Bayesian
  optimisation on a study's search space (``pip install fastfm[optuna]``);
* ``fastfm.integration.gpytorch``: the FM kernels (ModLap, ModDif, FMKernel) and Hierarchical as
  ``gpytorch.kernels.Kernel`` subclasses, ``to_gpytorch``/``to_fastfm``, for BoTorch's ``SingleTaskGP``
  (``pip install fastfm[torch]``, torch pinned to the CPU build where that matters).
"""
