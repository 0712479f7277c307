"""Bridges from fastfm to other libraries.

Each bridge is a submodule that imports its library only when it is imported itself, so that
``import fastfm`` never needs them:

* ``fastfm.integration.optuna``: ``FMSampler``, an Optuna sampler that runs fastfm's Bayesian
  optimisation on a study's search space (``pip install fastfm[optuna]``).
"""
