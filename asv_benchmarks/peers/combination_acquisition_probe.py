"""Why a stalled run never evaluates the optimum's combination of nominal values: the model, or the search? (issue 24
§1; docs/benchmarks/bo-efficiency.md, "The default on 80 fresh seeds").

    PYTHONPATH=. python asv_benchmarks/peers/combination_acquisition_probe.py grid --problem func2c --seed 1008 \
        --at 15,20,25,30,40,50
    PYTHONPATH=. python asv_benchmarks/peers/combination_acquisition_probe.py merged --seeds 1000:1080 [--original]

``grid``: a default ``fastfm.Optimizer`` run (one thread) of the problem, whose real parameters are "x1" and "x2"
(Func2C, Func3C). At each told count of ``--at`` the fitted model's acquisition (log-EI, the suggestion's own) is
evaluated on a ``--grid`` × ``--grid`` grid of (x1, x2) for every combination of the nominal values, before the
run's own suggestion, which is then told as in the run. One line per count: the suggestion's combination and
acquisition, the grid maximum of the optimum's combination, and the four combinations of highest grid maximum. A
combination whose grid maximum is above the suggestion's value would mean the acquisition search missed it; the
optimum's combination far below the suggestion means the model rates it poorly.

``merged``: the oracle of that diagnosis.  Func2C with h2's three Beale values merged into one (h2 selects R, S or
B; the same optimum), the default ``fastfm.Optimizer`` loop for 60 evaluations per seed (``--original``: Func2C
itself too); prints each problem's best value at 30 and 60 (mean ± s.e.) and its runs above −0.15 at 60.
"""
import argparse
import itertools
import warnings

import numpy as np


def probe(problem_name, seed, at, grid):
    import fastfm
    from fastfm.acquisition import acquisition_function
    from fastfm.benchmarks import get_problem
    from fastfm.gp import fantasy
    from threadpoolctl import threadpool_limits

    problem = get_problem(problem_name)
    nominal = [p for p in problem.space.parameters if p.name not in ("x1", "x2")]
    target = tuple(problem.optimal_config[p.name] for p in nominal)
    axis = np.linspace(-1.0, 1.0, grid)
    x1, x2 = (u.ravel() for u in np.meshgrid(axis, axis, indexing="ij"))
    with threadpool_limits(1), fastfm.config_context(num_threads=1):
        optimizer = fastfm.Optimizer(problem.space, seed=seed)
        for told in range(max(at) + 1):
            if told in at:
                gp = optimizer._fit_model()
                model = fantasy.condition_on(gp, optimizer._pending_points(), optimizer.pending_strategy)
                acquisition = acquisition_function(optimizer.acquisition, model.best_y_standardized_, optimizer.xi)
                best = {}
                for values in itertools.product(*(p.choices for p in nominal)):
                    configs = [{"x1": a, "x2": b, **{p.name: v for p, v in zip(nominal, values)}}
                               for a, b in zip(x1, x2)]
                    mu, sigma = gp.predict_standardized(problem.space.encode(configs))
                    best[values] = float(np.max(acquisition(mu, sigma)[0]))
            config = optimizer.ask()
            if told in at:
                chosen = tuple(config[p.name] for p in nominal)
                top = sorted(best.items(), key=lambda item: -item[1])[:4]
                incumbent = min(t.value for t in optimizer._trials if not t.failed)
                print(f"seed {seed}, {told} told (best {incumbent:.4f}): suggestion {chosen} at "
                      f"{optimizer.last_suggestion_info['acquisition']:.2f}; optimum's {target} grid max "
                      f"{best[target]:.2f}; highest: " + ", ".join(f"{k} {v:.2f}" for k, v in top), flush=True)
            optimizer.tell(config, float(problem(config)))


def merged_oracle(seeds, original, budget=60):
    import fastfm
    from fastfm.benchmarks.synthetic import _B, _R, _S, Func2C
    from threadpoolctl import threadpool_limits

    class Func2CMerged(Func2C):
        """Func2C with h2 in {R, S, B}: the three values that select Beale are one."""
        name = "Func2C, h2's Beale values merged"
        _terms = (((_R, _S, _B), (1.0, 1.0, 1.0)), ((_R, _S, _B), (1.0, 1.0, 1.0)))

    for problem in [Func2CMerged()] + ([Func2C()] if original else []):
        best = []
        with threadpool_limits(1), fastfm.config_context(num_threads=1):
            for seed in seeds:
                optimizer = fastfm.Optimizer(problem.space, seed=seed)
                values = []
                for _ in range(budget):
                    config = optimizer.ask()
                    values.append(float(problem(config)))
                    optimizer.tell(config, values[-1])
                best.append(np.minimum.accumulate(values))
        best = np.array(best)
        cells = [f"{best[:, at - 1].mean():.4f} ± {best[:, at - 1].std(ddof=1) / np.sqrt(len(best)):.4f} at {at}"
                 for at in (30, budget)]
        print(f"{problem.name}, {len(seeds)} seeds: {', '.join(cells)}; runs above -0.15 at {budget}: "
              f"{int(np.sum(best[:, -1] > -0.15))}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grid = commands.add_parser("grid", help="the model's acquisition per combination in a run")
    grid.add_argument("--problem", default="func2c", choices=["func2c", "func3c"])
    grid.add_argument("--seed", type=int, default=1008)
    grid.add_argument("--at", default="15,20,25,30,40,50", help="told counts, comma-separated")
    grid.add_argument("--grid", type=int, default=81)
    merged = commands.add_parser("merged", help="Func2C with h2's Beale values merged")
    merged.add_argument("--seeds", default="1000:1080", help="first:end (end excluded)")
    merged.add_argument("--original", action="store_true", help="run Func2C itself on the same seeds too")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.command == "grid":
        probe(args.problem, args.seed, sorted({int(a) for a in args.at.split(",")}), args.grid)
    else:
        first, end = (int(part) for part in args.seeds.split(":"))
        merged_oracle(list(range(first, end)), args.original)


if __name__ == "__main__":
    main()
