"""Where fastfm loses to Optuna's GPSampler on an all-binary problem (issue 24 §2; docs/benchmarks/bo-efficiency.md,
"MaxSATWeighted's gap to GPSampler: what was ruled out").

    PYTHONPATH=. python asv_benchmarks/peers/maxsat_gap_probe.py acquisition [--problem maxsatweighted] [--seeds 0,1]
        [--n-obs 60,120]
    PYTHONPATH=. python asv_benchmarks/peers/maxsat_gap_probe.py steps [--problem maxsatweighted] [--seeds 0,1]
        [--budget 200]
    PYTHONPATH=. python asv_benchmarks/peers/maxsat_gap_probe.py padded [--seeds 0,...,9] [--budget 100]
        [--pool-std 1|0.1|none] [--n-relevant 20] [--n-columns 60]
    PYTHONPATH=. python asv_benchmarks/peers/maxsat_gap_probe.py model [--problem maxsatweighted] [--seeds 0,...,5]
        [--n-obs 100]

``acquisition``: after a default ``fastfm.Optimizer`` run of each ``--n-obs`` evaluations, the log-EI maximum that
the default acquisition optimiser reaches (three draws) against heavier searches on the same model: 40 starts, 10
or 40 extra starts from the best random points ranked apart from the spray around the incumbent (as GPSampler's
roulette starts), 10,000 random points.  A higher maximum from a heavier search would mean the optimiser falls short.

``steps``: a run of fastfm and one of GPSampler (Optuna, ``suggest_categorical`` per variable, as the head-to-head
runner) per seed, and for each suggestion its Hamming distance to the incumbent of that moment and whether it
improved on it, counted over evaluations 10-50, 50-100 and 100-``--budget``.

``padded``: ``MaxSATWeighted(n_variables=--n-relevant)`` on the first columns of ``--n-columns`` binary variables (the
others have no effect), a default ``fastfm.Optimizer`` loop but for the pool of the FM smoothings
(``smoothing_pool_std``; "none": the independent prior); prints the best value after 30, 60 and ``--budget``
evaluations per seed.  A prior that ties the smoothings together cannot let the model ignore the padding.

``model``: after a default ``fastfm.Optimizer`` run of ``--n-obs`` evaluations (an all-binary problem), how well
each model of those observations ranks points next to the incumbent (Spearman's ρ between its predictive mean and
the objective on the incumbent with 1 variable flipped (60 points), 2 (300) and 3 (300)): fastfm's GP as fitted in
BO, and with ``log_transform_y=False``; Optuna's GPSampler model (``optuna._gp``, Optuna 5.0: Matérn 5/2 of the
weighted Hamming distance, its prior, y standardised), and that model with the ingredients changed one at a time
towards fastfm's: y through fastfm's "shift" transform, an exponential of the distance (the FM kernel's shape on
binary variables), a weak log-normal prior on the inverse squared lengthscales instead of Optuna's.
"""
import argparse
import functools

import numpy as np

import fastfm
from fastfm.benchmarks import get_problem
from fastfm.benchmarks.combinatorial import MaxSATWeighted
from fastfm.bo.optimizer import acquisition_function
from fastfm.gp.priors import dimension_scaled_hyperparameter_prior
from fastfm.optim.mixed import MixedAcquisitionOptimizer

# (label, MixedAcquisitionOptimizer options, extra starts from the best random points)
SEARCHES = [("default", {}, 0), ("40 starts", {"n_starts": 40}, 0), ("+10 random starts", {}, 10),
            ("+40 random starts", {}, 40), ("10,000 random, +40", {"n_random": 10_000}, 40)]
DRAWS = 3


def _run_fastfm(problem, seed, n_evaluations):
    opt = fastfm.Optimizer(problem.space, seed=seed)
    for _ in range(n_evaluations):
        x = opt.ask()
        opt.tell(x, float(problem(x)))
    return opt


def acquisition(problem, seed, n_obs):
    opt = _run_fastfm(problem, seed, n_obs)
    gp = opt._fit_model()
    values = np.array([t.value for t in opt.trials])
    incumbent = opt._X[int(np.argmin(values))]
    acq = acquisition_function(opt.acquisition, gp.best_y_standardized_, opt.xi)
    cells = []
    for label, options, n_extra in SEARCHES:
        found = []
        for draw in range(DRAWS):
            rng = np.random.default_rng(100 + draw)
            search = MixedAcquisitionOptimizer(problem.space, **options)
            if n_extra:
                random_points = search._random(search.n_random, rng)
                candidates = np.vstack([random_points, search._spray(incumbent, rng)])
                result = search._optimize_from(gp, acq, candidates, search.n_starts, opt._X, rng,
                                               random_points.copy(), n_extra)
            else:
                result = search.optimize(gp, acq, incumbent, opt._X, rng)
            found.append(result.value)
        cells.append(f"{label}: mean {np.mean(found):.3f}, best {np.max(found):.3f}")
    print(f"{problem.name} seed {seed}, {n_obs} observations, log-EI reached | " + " | ".join(cells), flush=True)


def _bits(problem, config):
    return [int(config[name]) for name in problem.space.names]


def _trajectory(problem, method, seed, budget):
    """The evaluated points (as 0/1 rows) and values of one run."""
    X, y = [], []
    if method == "fastfm":
        opt = _run_fastfm(problem, seed, budget)
        return np.array([_bits(problem, t.config) for t in opt.trials]), np.array([t.value for t in opt.trials])
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        config = {name: trial.suggest_categorical(name, [0, 1]) for name in problem.space.names}
        value = float(problem(config))
        X.append(_bits(problem, config))
        y.append(value)
        return value
    optuna.create_study(sampler=optuna.samplers.GPSampler(seed=seed)).optimize(objective, n_trials=budget)
    return np.array(X), np.array(y)


def steps(problem, seed, budget):
    for method in ("fastfm", "gpsampler"):
        X, y = _trajectory(problem, method, seed, budget)
        distance, improved = [], []
        for i in range(10, len(y)):
            best = int(np.argmin(y[:i]))
            distance.append(int(np.sum(X[i] != X[best])))
            improved.append(bool(y[i] < y[best]))
        distance, improved = np.array(distance), np.array(improved)
        for low, high in ((10, 50), (50, 100), (100, budget)):
            if low >= budget:
                break
            high = min(high, budget)
            window = slice(low - 10, high - 10)
            counts = np.bincount(np.minimum(distance[window], 5), minlength=6)[1:]
            print(f"{problem.name} seed {seed} {method:9s} evaluations {low}-{high}: {int(improved[window].sum())} "
                  f"improvements; Hamming distance to the incumbent 1, 2, 3, 4, 5+: {counts.tolist()}", flush=True)
        print(f"{problem.name} seed {seed} {method:9s} best {y.min():.4f}", flush=True)


def padded(seed, budget, pool_std, n_relevant, n_columns):
    inner = MaxSATWeighted(n_variables=n_relevant, seed=0)
    space = fastfm.Space([fastfm.Categorical(f"x{i}", [0, 1]) for i in range(1, n_columns + 1)])
    relevant = [f"x{i}" for i in range(1, n_relevant + 1)]
    prior = functools.partial(dimension_scaled_hyperparameter_prior, n_dims=space.n_dims,
                              smoothing_pool_std=None if pool_std == "none" else float(pool_std))
    opt = fastfm.Optimizer(space, seed=seed, hyperparameter_prior=prior)
    best = []
    for _ in range(budget):
        config = opt.ask()
        value = float(inner._evaluate(np.array([[config[name] for name in relevant]]))[0])
        opt.tell(config, value)
        best.append(value if not best else min(best[-1], value))
    print(f"padded MaxSATWeighted({n_relevant}) in {n_columns} columns, pool std {pool_std}, seed {seed}: best "
          f"{best[29]:.4f} at 30, {best[59]:.4f} at 60, {best[-1]:.4f} at {budget}", flush=True)


def _optuna_model(X, y, shape="matern52", prior="optuna"):
    """The predictive mean (as a minimisation score) of Optuna's GP fitted as GPSampler fits it, ingredients
    changed as named."""
    import torch
    from optuna._gp import gp as optuna_gp, prior as optuna_prior

    class Exponential:              # exp(−r²): the product of per-variable factors of an FM kernel on binary data
        apply = staticmethod(lambda squared_distance: torch.exp(-squared_distance))

    def weak_prior(gpr):
        def gamma(x, concentration, rate):
            return (concentration - 1) * torch.log(x) - rate * x
        return (-0.5 * ((torch.log(gpr.inverse_squared_lengthscales) / 2.0) ** 2).sum()
                + gamma(gpr.kernel_scale, 2, 1) + gamma(gpr.noise_var, 1.1, 30))

    score = -(y - y.mean()) / max(y.std(), 1e-10)          # GPSampler maximises the standardised −y
    matern = optuna_gp.Matern52Kernel
    optuna_gp.Matern52Kernel = Exponential if shape == "exponential" else matern
    try:
        gpr = optuna_gp.fit_kernel_params(
            X=X.astype(float), Y=score, is_categorical=np.ones(X.shape[1], bool),
            log_prior=weak_prior if prior == "weak" else optuna_prior.default_log_prior,
            minimum_noise=optuna_prior.DEFAULT_MINIMUM_NOISE_VAR, deterministic_objective=False)

        def predict(points):
            optuna_gp.Matern52Kernel = Exponential if shape == "exponential" else matern
            try:
                with torch.no_grad():
                    return -gpr.posterior(torch.from_numpy(points.astype(float)))[0].numpy()
            finally:
                optuna_gp.Matern52Kernel = matern
        return predict
    finally:
        optuna_gp.Matern52Kernel = matern


def _flipped(centre, n_flips, n, rng):
    points = np.repeat(centre[None, :], n, axis=0)
    for row in points:
        columns = rng.choice(len(centre), size=n_flips, replace=False)
        row[columns] = 1 - row[columns]
    return points


def model(problem, seed, n_obs):
    from scipy.stats import spearmanr
    from fastfm.gp._data import shift_scale

    space = problem.space
    opt = _run_fastfm(problem, seed, n_obs)
    X = space.encode([t.config for t in opt.trials])
    y = np.array([t.value for t in opt.trials])
    rng = np.random.default_rng(100 + seed)
    centre = X[np.argmin(y)]
    points = np.vstack([_flipped(centre, 1, 60, rng), _flipped(centre, 2, 300, rng), _flipped(centre, 3, 300, rng)])
    truth = np.array([float(problem(config)) for config in space.decode(points)])
    untransformed = fastfm.Optimizer(space, seed=0, log_transform_y=False)
    for config, value in zip(space.decode(X), y):
        untransformed.tell(config, float(value))
    shifted = np.log1p((y - y.min()) / shift_scale(y, y.min()))
    models = {"fastfm": opt._fit_model().predict, "fastfm, y untransformed": untransformed._fit_model().predict,
              "Optuna": _optuna_model(X, y), "Optuna, fastfm's y transform": _optuna_model(X, shifted),
              "Optuna, exponential shape": _optuna_model(X, y, shape="exponential"),
              "Optuna, weak prior": _optuna_model(X, y, prior="weak")}
    cells = [f"{label} {spearmanr(predict(points), truth).correlation:.2f}" for label, predict in models.items()]
    print(f"{problem.name} seed {seed}, {n_obs} observations, Spearman ρ near the incumbent | " + " | ".join(cells),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("acquisition", "steps", "padded", "model"))
    parser.add_argument("--problem", default="maxsatweighted")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--n-obs", default="60,120")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--pool-std", default="1")
    parser.add_argument("--n-relevant", type=int, default=20)
    parser.add_argument("--n-columns", type=int, default=60)
    args = parser.parse_args()
    problem = get_problem(args.problem)
    for seed in map(int, args.seeds.split(",")):
        if args.mode == "padded":
            padded(seed, args.budget, args.pool_std, args.n_relevant, args.n_columns)
        elif args.mode in ("acquisition", "model"):
            for n_obs in map(int, args.n_obs.split(",")):
                (acquisition if args.mode == "acquisition" else model)(problem, seed, n_obs)
        else:
            steps(problem, seed, args.budget)


if __name__ == "__main__":
    main()
