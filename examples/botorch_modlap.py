"""fastfm's ModLap in a BoTorch loop
=================================

fastfm's ModLap kernel inside a BoTorch loop: a SingleTaskGP on Func3C's encoded points (two continuous
inputs, three nominal ones), fitted by ``fit_gpytorch_mll``, with log expected improvement optimised by
``optimize_acqf_mixed_alternating`` on the space's encoding.

Needs PyTorch, GPyTorch and BoTorch (pip install fastfm[torch]).  Run: python examples/botorch_modlap.py"""
import warnings

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.exceptions import InputDataWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.optim import optimize_acqf_mixed_alternating
from gpytorch.mlls import ExactMarginalLogLikelihood

import fastfm as ff
from fastfm.integration.gpytorch import ModLap, botorch_search_domain

# the discrete columns hold state indices (0..n-1), not unit-cube values; the kernel needs them as they are
warnings.filterwarnings("ignore", category=InputDataWarning)


def fitted_model(space, X, Y):
    """A SingleTaskGP with the FM kernel (unit diagonal, as fastfm's own BO uses), hyperparameters fitted;
    ``compiled``: the training Gram and its gradient come from fastfm's compiled backend."""
    model = SingleTaskGP(X, Y, covar_module=ModLap(space, unit_diagonal=True, compiled=True))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    problem = ff.benchmarks.Func3C()
    space = problem.space
    domain = botorch_search_domain(space)          # bounds, discrete_dims / cat_dims, options
    X = torch.tensor(space.sample_encoded(10, seed=0))
    Y = -torch.tensor(problem.evaluate_encoded(X.numpy())).unsqueeze(-1)   # BoTorch maximises
    for iteration in range(8):
        model = fitted_model(space, X, Y)
        acquisition = LogExpectedImprovement(model, best_f=Y.max())
        candidate, _ = optimize_acqf_mixed_alternating(acquisition, q=1, num_restarts=4, raw_samples=128, **domain)
        value = -float(problem.evaluate_encoded(candidate.detach().numpy())[0])
        X, Y = torch.cat([X, candidate.detach()]), torch.cat([Y, torch.tensor([[value]], dtype=Y.dtype)])
        print(f"iteration {iteration + 1}: f = {-value:.4f}, best so far {-float(Y.max()):.4f}")
    best = int(Y.argmax())
    best_config = space.decode(X[best:best + 1].numpy())[0]
    print(f"best value {-float(Y[best]):.4f} (optimum {problem.optimum:.4f}) at {best_config}")
