"""fastfm against Optuna's GPSampler from the SAME initial points (issue 24 §1): how much of a gap between the two
is the model-based search, and how much the luck of the initial design.

Each library's runs start from its own initial design (fastfm: a stratified design seeded by the run's seed;
GPSampler: Optuna's RandomSampler with that seed), and on a multimodal objective the basin that the best of the
first ten points lies in decides much of a run: the same seeds end in the same local optima under every fastfm
variant tried on Hartmann6 (docs/benchmarks/bo-efficiency.md, "From the same initial points as GPSampler").  Here
both libraries are told the same ``--n-init`` points, drawn by Optuna's RandomSampler(seed) through the
head-to-head's map of the space, and then each runs its own loop to ``--budget``: ``Optimizer(space, seed=seed)``
told the points (its model is used from the next ask on), and ``GPSampler(seed=seed)`` on a study holding them as
completed trials, which is a GPSampler run of that seed (its startup trials are RandomSampler(seed)'s; of the
y-transform probe's own GPSampler runs of Hartmann6, Levy8I and Branin3C, 42 of 60 gave the same best value here
and the rest parted from them by round-off).
The difference of the best values is then paired seed by seed.

    PYTHONPATH=. python asv_benchmarks/peers/same_start_probe.py run --problems Hartmann6 Levy8I Branin3C \\
        --seeds 0:20 --budget 60 --jobs 2 --out same_start.jsonl
    PYTHONPATH=. python asv_benchmarks/peers/same_start_probe.py summary same_start.jsonl

``designs`` compares the initial designs alone, without BO: the best of fastfm's ``--n-init`` stratified points
(``Space.sample_stratified_encoded``, what ``Optimizer(initial_design="stratified")`` asks first) against the best of
as many uniformly random ones (``Space.sample``), each over many seeds:

    PYTHONPATH=. python asv_benchmarks/peers/same_start_probe.py designs --problems MaxSATWeighted Hartmann6 \\
        --seeds 0:400

A problem is a name of the y-transform probe's ``OUTSIDE`` (Hartmann6, Levy8I, Branin3C, ...) or of
``fastfm.benchmarks``.
"""
import json
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import fastfm as ff

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
from head_to_head import git_state                    # noqa: E402
from y_transform_probe import fastfm_loop, optuna_loop, probe_parser, problem_of  # noqa: E402

BUDGETS = (10, 30, 60, 100, 200)


def _initial_trials(space, objective, n_init, seed):
    """``n_init`` completed Optuna trials from RandomSampler(seed), with their fastfm configs and values."""
    import optuna
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    configs, values, _ = optuna_loop(study, space, objective, n_init)
    return study.trials, list(zip(configs, values))


def run_one(name, seed, budget, n_init):
    """[fastfm row, gpsampler row] from the same initial points."""
    import optuna
    from threadpoolctl import threadpool_limits
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    space, objective = problem_of(name)
    with threadpool_limits(1):
        trials, initial = _initial_trials(space, objective, n_init, seed)
        initial_values = [v for _, v in initial]
        opt = ff.Optimizer(space, seed=seed)
        for config, value in initial:
            opt.tell(config, value)
        values, seconds = fastfm_loop(opt, objective, budget - n_init)
        commit = git_state()
        rows = [_row("fastfm", name, seed, budget, n_init, initial_values + values, seconds, commit)]
        study = optuna.create_study(sampler=optuna.samplers.GPSampler(seed=seed))
        for trial in trials:
            study.add_trial(optuna.trial.create_trial(params=trial.params, distributions=trial.distributions,
                                                      value=trial.value))
        _, values, seconds = optuna_loop(study, space, objective, budget - n_init)
        rows.append(_row("gpsampler", name, seed, budget, n_init, initial_values + values, seconds, commit))
    return rows


def _row(method, name, seed, budget, n_init, values, seconds, commit):
    best = np.minimum.accumulate(values)
    row = {"method": method, "problem": name, "seed": seed, "budget": budget, "n_init": n_init,
           "initial_design": "optuna.samplers.RandomSampler(seed)", "fastfm_git": commit,
           "seconds_per_suggestion": float(np.median(seconds)) if seconds else None}
    row.update({f"best{n}": float(best[n - 1]) for n in BUDGETS if n <= budget})
    return row


def _standard_error(values):
    values = np.asarray(values, dtype=float)
    return values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0


def paired_summary(path, field, first, second, budgets):
    """Print, per problem and budget, the mean best ± s.e. of the rows whose ``field`` is ``first`` and of those
    whose ``field`` is ``second``, and their difference paired by seed (first − second; "better": first lower)."""
    by = {}
    for line in open(path):
        row = json.loads(line)
        by.setdefault((row["problem"], row[field]), {})[row["seed"]] = row
    for problem in sorted({p for p, _ in by}):
        ours, theirs = by.get((problem, first), {}), by.get((problem, second), {})
        for n in budgets:
            seeds = sorted(s for s in ours if s in theirs and f"best{n}" in ours[s] and f"best{n}" in theirs[s])
            if not seeds:
                continue
            a = np.array([ours[s][f"best{n}"] for s in seeds])
            b = np.array([theirs[s][f"best{n}"] for s in seeds])
            d = a - b
            se_a, se_b, se_d = (_standard_error(v) for v in (a, b, d))
            print(f"{problem} @{n} ({len(seeds)} seeds): {first} {a.mean():.4g} ± {se_a:.2g}, {second} "
                  f"{b.mean():.4g} ± {se_b:.2g}; {first} − {second} {d.mean():+.4g} ± {se_d:.2g} "
                  f"({first} better {int(np.sum(d < 0))}, worse {int(np.sum(d > 0))})")


def summary(path):
    paired_summary(path, "method", "fastfm", "gpsampler", BUDGETS[1:])


def compare_designs(name, seeds, n_init):
    """Mean ± s.e. over ``seeds`` of the best of ``n_init`` stratified and of ``n_init`` uniformly random points."""
    space, objective = problem_of(name)
    best = {"stratified": [], "random": []}
    for seed in seeds:
        best["stratified"].append(min(objective(c) for c in
                                      space.decode(space.sample_stratified_encoded(n_init, seed=seed))))
        best["random"].append(min(objective(c) for c in space.sample(n_init, seed=seed)))
    cells = [f"{label} {np.mean(values):.4g} ± {_standard_error(values):.2g}" for label, values in best.items()]
    print(f"{name}, best of {n_init} points over {len(seeds)} seeds: " + ", ".join(cells), flush=True)


def main():
    parser, sub, run = probe_parser(__doc__, "0:20")
    run.add_argument("--n-init", type=int, default=10)
    run.add_argument("--jobs", type=int, default=1, help="runs in parallel processes (one thread each)")
    designs = sub.add_parser("designs")
    designs.add_argument("--problems", nargs="+", required=True)
    designs.add_argument("--seeds", default="0:400", help="first:last (exclusive)")
    designs.add_argument("--n-init", type=int, default=10)
    args = parser.parse_args()
    if args.command == "summary":
        summary(args.path)
        return
    first, last = (int(v) for v in args.seeds.split(":"))
    if args.command == "designs":
        warnings.simplefilter("ignore")
        for name in args.problems:
            compare_designs(name, range(first, last), args.n_init)
        return
    jobs = [(name, seed, args.budget, args.n_init) for name in args.problems for seed in range(first, last)]
    with ProcessPoolExecutor(args.jobs) as pool:
        for rows in pool.map(run_one, *zip(*jobs)):
            with open(args.out, "a") as out:
                for row in rows:
                    out.write(json.dumps(row) + "\n")
            print(json.dumps(rows[0]), flush=True)


if __name__ == "__main__":
    main()
