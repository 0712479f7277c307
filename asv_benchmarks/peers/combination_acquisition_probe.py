"""Why a stalled run never evaluates the optimum's combination of nominal values: the model, or the search? (issue 24
§1; docs/benchmarks/bo-efficiency.md, "The default on 80 fresh seeds").

    PYTHONPATH=. python asv_benchmarks/peers/combination_acquisition_probe.py --problem func2c --seed 1008 \
        --at 15,20,25,30,40,50

A default ``fastfm.Optimizer`` run (one thread) of the problem, whose real parameters are "x1" and "x2" (Func2C,
Func3C).  At each told count of ``--at`` the fitted model's acquisition (log-EI, the suggestion's own) is evaluated on
a ``--grid`` × ``--grid`` grid of (x1, x2) for every combination of the nominal values, before the run's own
suggestion, which is then told as in the run.  One line per count: the suggestion's combination and acquisition,
the grid maximum of the optimum's combination, and the four combinations of highest grid maximum.  A combination
whose grid maximum is above the suggestion's value would mean the acquisition search missed it; the optimum's
combination far below the suggestion means the model rates it poorly.
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", default="func2c", choices=["func2c", "func3c"])
    parser.add_argument("--seed", type=int, default=1008)
    parser.add_argument("--at", default="15,20,25,30,40,50", help="told counts, comma-separated")
    parser.add_argument("--grid", type=int, default=81)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    probe(args.problem, args.seed, sorted({int(a) for a in args.at.split(",")}), args.grid)


if __name__ == "__main__":
    main()
