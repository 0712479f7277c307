"""BO runs of the default optimizer with chosen acquisition options, for a paired A/B of two settings or two trees.

    PYTHONPATH=. python asv_benchmarks/sets/acq_options_runs.py setperiodic,setdensity 0 30 60 '{"set_point_reuse": 8}' out.jsonl

Arguments: comma-separated problem names, first seed, number of seeds, budget (10 initial points included), the
``acq_options`` of ``fastfm.Optimizer`` as JSON ('{}' for the defaults), the JSON-lines file the rows are appended
to (problem, seed, every value, seconds per ask, how many model-based sets had two points closer than 10⁻³), and
optionally the number of runs at a time (default 2; one thread each).  A key "set_kernel" in the JSON is not an
acquisition option: its dict goes to ``set_space_kernel("modlap", space, **options)`` for the run's kernel, e.g.

    PYTHONPATH=. python asv_benchmarks/sets/acq_options_runs.py setchamfer 0 10 60 '{"set_kernel": {"crowding": true}}' out.jsonl
"""
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def run(problem_name, seed, budget, acq_options):
    os.environ["OMP_NUM_THREADS"] = "1"
    from threadpoolctl import threadpool_limits

    import fastfm
    from fastfm.benchmarks import get_problem

    fastfm.set_config(num_threads=1)
    problem = get_problem(problem_name)
    options = dict(acq_options)
    set_kernel = options.pop("set_kernel", None)
    kernel = "auto" if set_kernel is None else fastfm.kernels.set_space_kernel("modlap", problem.space, **set_kernel)
    optimizer = fastfm.Optimizer(problem.space, kernel=kernel, seed=seed, acq_options=options or None)
    values, seconds, crowded = [], [], 0
    with threadpool_limits(1):
        for i in range(budget):
            start = time.perf_counter()
            config = optimizer.ask()
            seconds.append(time.perf_counter() - start)
            value = float(problem(config))
            values.append(value)
            optimizer.tell(config, value)
            points = np.asarray(config[problem.set_name])
            distances = np.linalg.norm(points[:, None] - points[None], axis=2) + np.eye(len(points))
            crowded += i >= optimizer.n_init and distances.min() < 1e-3
    return {"problem": problem.name, "seed": seed, "values": values, "suggest": seconds, "acq_options": acq_options,
            "crowded_sets": int(crowded)}


def main(argv):
    problems, seed0, n_seeds, budget = argv[0].split(","), int(argv[1]), int(argv[2]), int(argv[3])
    acq_options, out = json.loads(argv[4]), argv[5]
    jobs = int(argv[6]) if len(argv) > 6 else 2
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got jobs={jobs!r}")
    with ProcessPoolExecutor(jobs) as pool, open(out, "a") as file:
        futures = [pool.submit(run, name, seed, budget, acq_options)
                   for name in problems for seed in range(seed0, seed0 + n_seeds)]
        for future in futures:
            file.write(json.dumps(future.result()) + "\n")
            file.flush()


if __name__ == "__main__":
    if len(sys.argv) not in (7, 8) or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)
    main(sys.argv[1:])
