"""Optimizer ask/tell runs whose acquisition sees the GP at a posterior sample of its hyperparameters instead of at
their MAP optimum (issue 24 §1; docs/benchmarks/bo-efficiency.md, "A posterior sample of the hyperparameters").

Why: a stalled run's model was traced to a point estimate of its hyperparameters (β of a nominal variable at its
bound, α at 19-41, a fitted noise that makes a near-sure gain of a few hundredths of a standard deviation the best
EI); integrating the hyperparameters out (Snoek et al. 2012; De Ath et al. 2021, "How Bayesian should Bayesian
optimisation be?") widens the posterior where the data do not pin them.  The cheapest form, one draw per suggestion,
is run here: the surrogate fits as it does (its MAP fit stays the warm start of the next fit), then ``SWEEPS``
sweeps of a coordinate-wise slice sampler (Neal 2003, stepping out by 1 in log units) from the MAP optimum, on
−log p(y|θ) − log p(θ) in the fit's own transform of y, give θ; the acquisition's GP is the fit at θ.

    PYTHONPATH=. python asv_benchmarks/peers/hyper_sample_probe.py sweeps=2 func2c 4000:4080 out.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/hyper_sample_probe.py default func2c 4000:4080 out.jsonl
"""
import copy
import math
import sys

import numpy as np

import fastfm
from fastfm.bo.optimizer import Optimizer
from fastfm.gp import fitting
from fastfm.gp.solvers.cholesky import ExactSolver
from full_fit_probe import run_rows     # this script's folder is on the path when it runs

STEP = 1.0          # the slice's initial width in log units
MAX_STEPS = 6       # stepping-out steps on each side


def slice_sweeps(log_density, theta, bounds, sweeps, rng):
    """``sweeps`` sweeps of a coordinate-wise slice sampler (random order each sweep) from ``theta``."""
    theta, current = theta.copy(), log_density(theta)
    for _ in range(sweeps):
        for i in rng.permutation(theta.size):
            level = current + math.log(rng.uniform())
            lo = theta[i] - STEP * rng.uniform()
            hi = lo + STEP
            for _ in range(MAX_STEPS):
                if lo <= bounds[i, 0] or log_density(_moved(theta, i, lo)) < level:
                    break
                lo -= STEP
            for _ in range(MAX_STEPS):
                if hi >= bounds[i, 1] or log_density(_moved(theta, i, hi)) < level:
                    break
                hi += STEP
            lo, hi = max(lo, bounds[i, 0]), min(hi, bounds[i, 1])
            while True:
                value = rng.uniform(lo, hi)
                proposal = _moved(theta, i, value)
                density = log_density(proposal)
                if density >= level:
                    theta, current = proposal, density
                    break
                if value < theta[i]:
                    lo = value
                else:
                    hi = value
                if hi - lo < 1e-9:
                    break
    return theta


def _moved(theta, i, value):
    moved = theta.copy()
    moved[i] = value
    return moved


def sampled_gp(gp, sweeps, rng):
    """A shallow copy of the fitted exact ``gp`` refactorised at a posterior sample of [θ, log noise]."""
    kernel = gp.kernel_.clone_with_theta(gp.kernel_.theta)
    f = fitting.objective(kernel, gp.X_train_, gp.y_train_, gp.theta_prior)
    _, noise_log_bounds = gp._check_params()
    bounds = np.vstack([kernel.bounds, noise_log_bounds])
    theta = slice_sweeps(lambda t: -f(t)[0], np.clip(gp._fitted_theta, bounds[:, 0], bounds[:, 1]), bounds,
                         sweeps, rng)
    kernel.theta = theta[:-1]
    noise = math.exp(theta[-1])
    sample = copy.copy(gp)
    sample.L_, sample.jitter_, sample.log_marginal_likelihood_value_, sample.alpha_ = ExactSolver.fit(
        kernel, gp.X_train_, gp.y_train_, noise)
    sample.kernel_, sample.noise_, sample._fitted_theta = kernel, noise, theta
    return sample


def patch_optimizer(sweeps):
    """Optimizer._fit_model returns the sample; the MAP fit stays the optimizer's (the next fit's warm start)."""
    fit_model = Optimizer._fit_model

    def _fit_model(self):
        gp = fit_model(self)
        if gp is None or gp.solver_ != "cholesky":
            return gp
        cached = self.__dict__.get("_hyper_sample")
        if cached is not None and cached[0] == self.n_told and cached[1] is gp:
            return cached[2]
        rng = np.random.default_rng([self.seed if isinstance(self.seed, int) else 0, self.n_told])
        try:
            sample = sampled_gp(gp, sweeps, rng)
        except (np.linalg.LinAlgError, ValueError, fastfm.exceptions.FastFMError):
            sample = gp
        self._hyper_sample = (self.n_told, gp, sample)
        return sample

    Optimizer._fit_model = _fit_model


def main(argv):
    variant, problems, seeds, out = argv[0], argv[1].split(","), range(*map(int, argv[2].split(":"))), argv[3]
    if variant.startswith("sweeps="):
        patch_optimizer(int(variant.split("=")[1]))
    elif variant != "default":
        raise SystemExit(f"variant must be sweeps=K or default, got {variant!r}")
    run_rows(variant, problems, seeds, out)


if __name__ == "__main__":
    if len(sys.argv) != 5 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
