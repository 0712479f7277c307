"""How well the BO model ranks points near the incumbent, with the FM smoothings log β independent or pooled
(issue 24 §2; docs/benchmarks/bo-efficiency.md, "Pooling the smoothings of many discrete variables").

    PYTHONPATH=. python asv_benchmarks/peers/smoothing_prior_probe.py [--problems a,b] [--seeds 0,1] [--n-obs 70]

For each problem and seed: a default ``fastfm.Optimizer`` run of ``--n-obs`` evaluations; then the model of those
observations is fitted under each prior, and its predictive mean is compared (Spearman's ρ) with the true objective
on 300 points one to three variables away from the incumbent (what the acquisition's local search weighs) and on
300 uniformly random points.  Same observations for every prior; higher ρ is better.
"""
import argparse
import functools

import numpy as np
from scipy.stats import spearmanr

import fastfm
from fastfm.benchmarks import get_problem
from fastfm.gp.priors import dimension_scaled_hyperparameter_prior

PRIORS = {
    "independent": lambda n_dims: functools.partial(dimension_scaled_hyperparameter_prior, n_dims=n_dims,
                                                     smoothing_pool_std=None),
    "pooled": lambda n_dims: functools.partial(dimension_scaled_hyperparameter_prior, n_dims=n_dims),
}


def observations(problem, seed, n_obs):
    opt = fastfm.Optimizer(problem.space, seed=seed)
    for _ in range(n_obs):
        x = opt.ask()
        opt.tell(x, float(problem(x)))
    X = problem.space.encode([t.config for t in opt.trials])
    return X, np.array([t.value for t in opt.trials])


def near(space, centre, n, rng):
    """``n`` copies of ``centre`` (encoded) with one to three variables moved to another state or value."""
    points = np.repeat(centre[None, :], n, axis=0)
    for row in points:
        for column in rng.choice(space.n_dims, size=rng.integers(1, 4), replace=False):
            if column < space.n_continuous:
                row[column] = rng.random()
            else:
                n_states = space.n_states[column - space.n_continuous]
                row[column] = rng.choice([v for v in range(n_states) if v != row[column]])
    return points


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", default="maxsatweighted,labs,contamination,isingsparsification,mixed10c20n")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--n-obs", type=int, default=70)
    args = parser.parse_args()
    for name in args.problems.split(","):
        problem = get_problem(name)
        space = problem.space
        for seed in (int(s) for s in args.seeds.split(",")):
            X, y = observations(problem, seed, args.n_obs)
            rng = np.random.default_rng(seed)
            tests = {"near": near(space, X[np.argmin(y)], 300, rng), "random": space.sample_encoded(300, seed=rng)}
            truth = {k: np.array([float(problem(c)) for c in space.decode(T)]) for k, T in tests.items()}
            cells = []
            for label, prior in PRIORS.items():
                opt = fastfm.Optimizer(space, seed=0, hyperparameter_prior=prior(space.n_dims))
                for row, value in zip(X, y):
                    opt.tell(space.decode(row[None, :])[0], float(value))
                gp = opt._fit_model()
                rho = {k: spearmanr(gp.predict(T), truth[k]).correlation for k, T in tests.items()}
                cells.append(f"{label}: near {rho['near']:5.2f} random {rho['random']:5.2f}")
            print(f"{problem.name:20s} seed {seed} n {args.n_obs}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
