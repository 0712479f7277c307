"""Objective values with outliers and heavy tails: which transform of y the GP should model (issue 23 §2).

Each BO run fits its GP to t(y) standardised, for the candidate transforms t:

* ``shift``     log(1 + (y − min y)/std y)  (the default before issue 23),
* ``iqr-shift`` log(1 + (y − min y)/s) with s the interquartile range of y (a scale one outlier cannot move),
* ``copula``    Φ⁻¹((rank(y) − ½)/n): only the order of the values is kept (Salinas et al., ICML 2020),
* ``yeo-johnson`` standardise, then the Yeo–Johnson power transform with its maximum-likelihood λ (HEBO),
* ``auto``      the library's default since issue 23: ``shift``, or ``copula`` once the largest value lies more
                than ``AUTO_COPULA_SPAN`` interquartile ranges above the median,

on the paper's problems in three variants: ``clean``; ``outlier``: a deterministic 5 % of configs (by a hash of
the config) return 1e10, as a crashed run with a penalty value would; ``heavy``: exp(c·(f − min f)), c set so
that the problem's 90th percentile is 10⁶ times its minimum.  Reports the best *clean* objective value found
(mean ± s.e. over seeds).  Run from the repository root:

    python asv_benchmarks/robustness/output_transforms.py --seeds 5 --budget 60 --json out.json

Results and their reading: docs/benchmarks/robustness.md, "Objective values".
"""
import argparse
import hashlib
import json

import os
import sys
import time

import numpy as np

# the shared measurement helpers (machine, commit, load average, JSON output) of the parallel measurements
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402

TRANSFORMS = ("shift", "iqr-shift", "copula", "yeo-johnson", "auto")
VARIANTS = ("clean", "outlier", "heavy")
OUTLIER_VALUE = 1e10
OUTLIER_SHARE = 20            # one config in 20


def _scaled(y, shift, scale):
    from fastfm.gp import _data
    return _data._standardised(y, shift, scale)


def transform_values(y, name):
    """t(y) for the candidate ``name`` (before the standardisation the GP applies to every transform)."""
    from scipy import special, stats
    from fastfm.gp import _data
    y = np.asarray(y, dtype=float)
    if name == "shift":
        scale = _data._mean_std(y)[1]
        return np.log1p(_scaled(y, float(np.min(y)), scale if scale > 0 else 1.0))
    if name == "iqr-shift":
        q25, q75 = np.percentile(y, [25, 75])
        scale = float(q75 - q25)
        if not scale > 0:
            scale = _data._mean_std(y)[1]
        return np.log1p(_scaled(y, float(np.min(y)), scale if scale > 0 else 1.0))
    if name == "copula":
        ranks = stats.rankdata(y)
        return special.ndtri((ranks - 0.5) / len(y))
    if name == "yeo-johnson":
        mean, std = _data._mean_std(y)
        z = _scaled(y, mean, std if std > 0 else 1.0)
        return stats.yeojohnson(z)[0] if np.ptp(z) > 0 else z
    raise ValueError(name)


def _use_transform(name):
    """Make every GP fit in this process model ``name``(y), standardised (as log_transform_y=False does)."""
    from fastfm.gp import _data
    original = _data.transform_y

    def transform_y(y, log_transform_y, normalize_y):
        y = np.asarray(y, dtype=float)
        return original(transform_values(y, name) if y.ndim == 1 and y.size > 1 else y, False, normalize_y)

    _data.transform_y = transform_y


def _heavy_scale(problem):
    sample = np.array([problem(c) for c in problem.space.sample(300, seed=12345)])
    low, q90 = np.min(sample), np.percentile(sample, 90)
    return float(np.log(1e6) / (q90 - low)), float(low)


class Objective:
    """The problem in one variant; ``clean(config)`` is the value the run is judged on."""

    def __init__(self, problem_name, variant):
        from fastfm.benchmarks import get_problem
        self.problem = get_problem(problem_name)
        self.variant = variant
        self.c, self.low = _heavy_scale(self.problem) if variant == "heavy" else (1.0, 0.0)

    def clean(self, config):
        return float(self.problem(config))

    def __call__(self, config):
        value = self.clean(config)
        if self.variant == "outlier":
            key = json.dumps({k: (round(v, 9) if isinstance(v, float) else str(v)) for k, v in sorted(config.items())})
            if int(hashlib.sha1(key.encode()).hexdigest(), 16) % OUTLIER_SHARE == 0:
                return OUTLIER_VALUE
        if self.variant == "heavy":
            return float(np.exp(min(self.c * (value - self.low), 700.0)))
        return value


def run_one(task):
    problem, variant, transform, seed, budget, n_init = task
    import fastfm as ff
    ff.set_config(num_threads=1)
    if transform != "auto":   # "auto": the library as it is
        _use_transform(transform)
    objective = Objective(problem, variant)
    start = time.perf_counter()
    result = ff.minimize(objective, objective.problem.space, n_iter=budget, n_init=n_init, seed=seed, progress=False)
    clean = [objective.clean(c) for c, _, _ in result.history]
    return {"problem": problem, "variant": variant, "transform": transform, "seed": seed,
            "best": float(np.min(clean)), "curve": np.minimum.accumulate(clean).tolist(),
            "n_outliers": int(sum(v == OUTLIER_VALUE for _, v, _ in result.history)),
            "wall": time.perf_counter() - start}


def _describe(r):
    return (f"{r['problem']:>9} {r['variant']:>8} {r['transform']:>12} seed {r['seed']}: best {r['best']:.4g} "
            f"({r['n_outliers']} outliers, {r['wall']:.0f} s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=["Func2C", "Func3C", "Ackley5C"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--transforms", nargs="+", default=list(TRANSFORMS), choices=TRANSFORMS)
    _common.add_protocol_arguments(parser, seeds=5)
    parser.set_defaults(budget=60)
    args = parser.parse_args(argv)
    meta = _common.header(args)
    tasks = [(p, v, t, s, args.budget, args.n_init) for p in args.problems for v in args.variants
             for t in args.transforms for s in range(args.seeds)]
    # a new process per run: the transforms patch the library
    results, _ = _common.run_pool(run_one, tasks, args.processes, None, _describe, fresh_process=True)
    results = [r for r in results if r is not None]
    print(f"\n{'problem':>9} {'variant':>8} " + " ".join(f"{t:>18}" for t in args.transforms))
    for p in args.problems:
        for v in args.variants:
            row = []
            for t in args.transforms:
                best = [r["best"] for r in results if (r["problem"], r["variant"], r["transform"]) == (p, v, t)]
                row.append(f"{np.mean(best):.4f}±{np.std(best, ddof=1) / np.sqrt(len(best)):.4f}"
                           if len(best) > 1 else "-")
            print(f"{p:>9} {v:>8} " + " ".join(f"{c:>18}" for c in row))
    _common.finish(meta, results, args.json)


if __name__ == "__main__":
    main()
