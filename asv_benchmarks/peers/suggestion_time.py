#!/usr/bin/env python
"""Wall time of one BO suggestion at n observations: fastfm vs BoTorch (issue 3).

One *suggestion* = fit the surrogate's hyperparameters on all observations and
optimise the acquisition function once, i.e. what a BO loop pays between two
evaluations of the objective.

* fastfm: ``Optimizer(space, kernel="modlap", n_init=10, seed=s)`` (``--kernel``:
  "auto", the library's default, also fits AdditiveFM on this space since
  2026-12-06), ``tell`` the n observations (untimed), then time ``ask()``: exact GP on ModLap, marginal
  likelihood maximised with 10 restarts (L-BFGS-B), log-EI optimised from
  10,000 random + 50 spray points (100,000 before issue 24 §3), best 40 as
  starts, discrete hill-climbing alternated with L-BFGS-B steps (SPEC §5).
* BoTorch (peer, installed only for this comparison, never a fastfm
  dependency): ``MixedSingleTaskGP`` + ``fit_gpytorch_mll`` then
  ``optimize_acqf_mixed_alternating`` on ``LogExpectedImprovement`` with the
  library defaults (num_restarts=20, raw_samples=1024, default options).
  Nominal variables are ``cat_dims`` (categorical kernel, discrete moves
  between all values); ordinal variables are ``discrete_dims`` (integer-valued
  dimensions of the continuous kernel, neighbour moves), BoTorch's
  mixed-alternating convention.  Time = fit + optimise.

Both libraries see exactly the same observations in every repeat (repeat r
draws its data with seed ``--seed + r`` and seeds both libraries with it).

The synthetic objective (minimised; deterministic, cheap) on the encoded point
(u: continuous columns in [0, 1]; c: nominal state indices; o: ordinal state
indices, r(o) = o / (n_states - 1) in [0, 1]) is ::

    f = sum_i (u_i - (0.1 + 0.8 r(o_{i mod n_ord})))^2          # continuous optimum set by ordinals
      + sum_j W_j[c_j] * (0.5 + u_{j mod n_cont})                # nominal effects scaled by continuous
      + 0.5 * sum_k (r(o_k) - 0.3)^2                             # ordinal main effects
      + 0.3 * sum_j [c_j == o_j mod n_states(c_j)]               # nominal x ordinal interaction
      + 0.3 * sin(2 pi u_0 (1 + c_0))                            # continuous x nominal frequency
      + 0.1 * cos(pi (u_1 + u_2)) * W_0[c_0]                     # three-way term

with the value tables W_j ~ U(0, 1) drawn once from numpy default_rng(20240601)
(independent of --seed).  Observations are uniform random points of the space.

Usage::

    PYTHONPATH=. python asv_benchmarks/peers/suggestion_time.py --n-obs 200 --repeats 3 --json out.json
"""
import argparse
import io
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections import Counter

import numpy as np

OBJECTIVE_TABLE_SEED = 20240601


# --------------------------------------------------------------------------- space
def nas_like_space():
    """The NAS-like space of the kernel benchmark (``fastfm.benchmarks.workloads.benchmark_spaces``; on
    checkouts older than that suite, ``fastfm.bench``'s, the same space).

    Returns (space, source) where source says where the definition came from.
    """
    try:
        from fastfm.benchmarks.workloads import benchmark_spaces
        source = "fastfm.benchmarks.workloads"
    except ImportError:   # a checkout older than the suite
        from fastfm.bench import benchmark_spaces
        source = "fastfm.bench"
    return benchmark_spaces()["NAS-like"], f"{source}.benchmark_spaces()['NAS-like']"


def space_layout(space):
    """Encoded columns: continuous, nominal (Categorical) and ordinal (every other discrete kind)."""
    import fastfm

    n_cont = space.n_continuous
    nominal, ordinal = [], []
    for k, p in enumerate(space.discrete_params):
        (nominal if isinstance(p, fastfm.Categorical) else ordinal).append(n_cont + k)
    n_states = {n_cont + k: int(n) for k, n in enumerate(space.n_states)}
    return n_cont, nominal, ordinal, n_states


# ----------------------------------------------------------------------- objective
class Objective:
    """The synthetic mixed objective of the module docstring, on encoded rows."""

    def __init__(self, space):
        self.n_cont, self.nominal, self.ordinal, self.n_states = space_layout(space)
        rng = np.random.default_rng(OBJECTIVE_TABLE_SEED)
        self.tables = [rng.uniform(0.0, 1.0, self.n_states[c]) for c in self.nominal]

    def _r(self, X, col):
        return X[:, col] / max(self.n_states[col] - 1, 1)

    def __call__(self, X):
        X = np.atleast_2d(np.asarray(X, dtype=float))
        nc, nom, ordi = self.n_cont, self.nominal, self.ordinal
        u = X[:, :nc]
        f = np.zeros(len(X))
        for i in range(nc):
            target = 0.1 + 0.8 * self._r(X, ordi[i % len(ordi)]) if ordi else 0.5
            f += (u[:, i] - target) ** 2
        for j, col in enumerate(nom):
            c = X[:, col].astype(int)
            f += self.tables[j][c] * (0.5 + (u[:, j % nc] if nc else 0.5))
        for col in ordi:
            f += 0.5 * (self._r(X, col) - 0.3) ** 2
        for j, col in enumerate(nom[: len(ordi)]):
            c = X[:, col].astype(int)
            o = X[:, ordi[j]].astype(int)
            f += 0.3 * (c == o % self.n_states[col])
        if nom and nc:
            c0 = X[:, nom[0]]
            f += 0.3 * np.sin(2 * np.pi * u[:, 0] * (1 + c0))
            if nc >= 3:
                f += 0.1 * np.cos(np.pi * (u[:, 1] + u[:, 2])) * self.tables[0][c0.astype(int)]
        return f


# --------------------------------------------------------------------- machine info
def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def git_state():
    """Commit of the fastfm tree measured, and whether fastfm/ or csrc/ had uncommitted changes."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fastfm", "csrc"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.splitlines()
        return {"commit": head or None, "uncommitted_fastfm_or_csrc_files": len(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}


def machine_info():
    import scipy

    info = {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "fastfm": package_version("fastfm"),
        "torch": package_version("torch"),
        "botorch": package_version("botorch"),
        "gpytorch": package_version("gpytorch"),
        "linear_operator": package_version("linear_operator"),
        "git": git_state(),
        "thread_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                  "FASTFM_NUM_THREADS") if k in os.environ},
    }
    try:
        import fastfm
        info["fastfm"] = fastfm.__version__
        buf = io.StringIO()
        fastfm.show_config(file=buf)
        info["fastfm_show_config"] = buf.getvalue().rstrip()
    except Exception as exc:  # pragma: no cover - reporting only
        info["fastfm_show_config"] = f"unavailable: {exc!r}"
    return info


# ---------------------------------------------------------------------------- data
def draw_observations(space, objective, n_obs, seed):
    X = space.sample_encoded(n_obs, seed=seed)
    return X, objective(X)


# -------------------------------------------------------------------------- fastfm
def time_fastfm(space, objective, X, y, seed, kernel="modlap"):
    import fastfm
    import fastfm.gp as ffgp

    opt = fastfm.Optimizer(space, kernel=kernel, n_init=10, seed=seed)
    t0 = time.perf_counter()
    for config, value in zip(space.decode(X), y):
        opt.tell(config, float(value))
    tell_s = time.perf_counter() - t0

    # fit time, measured by wrapping the GP's fit for the duration of this ask()
    fit_seconds = []
    original_fit = ffgp.GaussianProcessRegressor.fit

    def timed_fit(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original_fit(self, *args, **kwargs)
        finally:
            fit_seconds.append(time.perf_counter() - start)

    ffgp.GaussianProcessRegressor.fit = timed_fit
    load_before = os.getloadavg()[0]
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        config = opt.ask()
        total = time.perf_counter() - t0
        cpu = time.process_time() - c0
    finally:
        ffgp.GaussianProcessRegressor.fit = original_fit
    fit = sum(fit_seconds)
    x = space.encode(config)
    info = {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in opt.last_suggestion_info.items()}
    return {"seconds": total, "cpu_s": cpu, "loadavg_1min_before": load_before, "fit_s": fit if fit_seconds else None,
            "acq_s": total - fit if fit_seconds else None, "tell_s": tell_s,
            "suggestion_objective": float(objective(x)[0]), "last_suggestion_info": info}


# ------------------------------------------------------------------------- BoTorch
def botorch_settings(args):
    return {"torch_threads": args.torch_threads or "torch default",
            "fit_maxiter": args.botorch_fit_maxiter or "default",
            "model": "MixedSingleTaskGP (cat_dims = nominal columns)",
            "input_transform": "Normalize(d, indices=continuous+ordinal columns, bounds=space bounds)",
            "outcome_transform": "Standardize(m=1)",
            "fit": "fit_gpytorch_mll(ExactMarginalLogLikelihood) defaults: fit_gpytorch_mll_scipy (L-BFGS-B), "
                   "one run, retried (max 5) only on failure; the scipy call is wrapped to record its steps",
            "acquisition": "LogExpectedImprovement(best_f=max(train_Y)) on -f (BoTorch maximises)",
            "optimizer": "optimize_acqf_mixed_alternating(q=1, num_restarts=20, raw_samples=1024, options=None)",
            "discrete_dims": "ordinal columns -> list(range(n_states))",
            "cat_dims": "nominal columns -> list(range(n_states))",
            "dtype": "float64"}


def time_botorch(space, objective, X, y, seed, fit_maxiter=None):
    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MixedSingleTaskGP
    from botorch.models.transforms.input import Normalize
    from botorch.models.transforms.outcome import Standardize
    from botorch.optim import optimize_acqf_mixed_alternating
    from botorch.optim.fit import fit_gpytorch_mll_scipy
    from gpytorch.mlls import ExactMarginalLogLikelihood

    n_cont, nominal, ordinal, n_states = space_layout(space)
    d = space.n_dims
    torch.manual_seed(seed)
    dtype = torch.float64
    train_X = torch.tensor(X, dtype=dtype)
    train_Y = torch.tensor(-y, dtype=dtype).unsqueeze(-1)   # BoTorch maximises
    lower = torch.zeros(d, dtype=dtype)
    upper = torch.ones(d, dtype=dtype)
    for col, n in n_states.items():
        upper[col] = n - 1
    bounds = torch.stack([lower, upper])
    numeric = list(range(n_cont)) + list(ordinal)

    fit_runs = []

    def recorded_scipy_fit(*args, **kwargs):   # the default optimizer of fit_gpytorch_mll, recorded
        result = fit_gpytorch_mll_scipy(*args, **kwargs)
        fit_runs.append({"status": str(result.status), "steps": result.step, "message": result.message})
        return result

    caught = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_before = os.getloadavg()[0]
        c0 = time.process_time()
        t0 = time.perf_counter()
        model = MixedSingleTaskGP(train_X, train_Y, cat_dims=list(nominal),
                                  input_transform=Normalize(d=d, indices=numeric, bounds=bounds),
                                  outcome_transform=Standardize(m=1))
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        fit_gpytorch_mll(mll, optimizer=recorded_scipy_fit,
                         optimizer_kwargs={"options": {"maxiter": fit_maxiter}} if fit_maxiter else None)
        t1 = time.perf_counter()
        acq = LogExpectedImprovement(model, best_f=train_Y.max())
        candidate, acq_value = optimize_acqf_mixed_alternating(
            acq_function=acq, bounds=bounds,
            discrete_dims={col: [float(v) for v in range(n_states[col])] for col in ordinal},
            cat_dims={col: [float(v) for v in range(n_states[col])] for col in nominal},
            q=1, num_restarts=20, raw_samples=1024)
        t2 = time.perf_counter()
        cpu = time.process_time() - c0
    x = candidate.detach().cpu().numpy().reshape(-1)
    x[n_cont:] = np.round(x[n_cont:])
    return {"seconds": t2 - t0, "cpu_s": cpu, "loadavg_1min_before": load_before, "fit_s": t1 - t0, "acq_s": t2 - t1,
            "suggestion_objective": float(objective(x)[0]),
            "acq_value": float(acq_value.reshape(-1)[0]), "fit_runs": fit_runs,
            "warnings": dict(Counter(f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught))}


# --------------------------------------------------------------------------- main
def summarise(times):
    return {"mean": statistics.fmean(times), "median": statistics.median(times), "min": min(times),
            "max": max(times), "n": len(times)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-obs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="repeat r uses seed + r for data and both libraries")
    parser.add_argument("--skip-botorch", action="store_true")
    parser.add_argument("--skip-fastfm", action="store_true")
    parser.add_argument("--kernel", default="modlap",
                        help="fastfm's Optimizer(kernel=...): 'modlap' (the comparison's, default) or 'auto' (the "
                             "library's default, which fits ModLap and AdditiveFM on this space)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads(N) before the BoTorch part (default: torch's default, untouched)")
    parser.add_argument("--botorch-fit-maxiter", type=int, default=None,
                        help="cap on L-BFGS-B iterations of BoTorch's fit (default: BoTorch's default, no cap)")
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the "NumPy backend" import notice; reported below
        import fastfm  # noqa: F401
    space, space_source = nas_like_space()
    objective = Objective(space)
    n_cont, nominal, ordinal, n_states = space_layout(space)
    info = machine_info()

    print(f"space: {space_source}")
    print(f"  {n_cont} continuous, {len(nominal)} nominal {[n_states[c] for c in nominal]}, "
          f"{len(ordinal)} ordinal {[n_states[c] for c in ordinal]}")
    print(f"n_obs={args.n_obs} repeats={args.repeats} seed={args.seed}; fastfm tree: {info['git']}")
    print(info["fastfm_show_config"])
    sys.stdout.flush()

    datasets = [draw_observations(space, objective, args.n_obs, args.seed + r) for r in range(args.repeats)]
    results = {"fastfm": [], "botorch": []}

    if not args.skip_fastfm:
        for r, (X, y) in enumerate(datasets):
            res = time_fastfm(space, objective, X, y, args.seed + r, args.kernel)
            results["fastfm"].append(res)
            print(f"fastfm  repeat {r}: {res['seconds']:.3f} s (fit {res['fit_s']:.3f} s, "
                  f"acq {res['acq_s']:.3f} s; tell {res['tell_s']:.3f} s untimed; cpu {res['cpu_s']:.2f} s, "
                  f"load {res['loadavg_1min_before']:.2f}) "
                  f"f(x*)={res['suggestion_objective']:.4f} info={res['last_suggestion_info']}", flush=True)

    if not args.skip_botorch:
        import torch
        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        info["torch_num_threads"] = torch.get_num_threads()
        info["torch_num_interop_threads"] = torch.get_num_interop_threads()
        print(f"torch {torch.__version__}: get_num_threads()={info['torch_num_threads']}"
              + (" (set by --torch-threads)" if args.torch_threads else " (default, untouched)"))
        for r, (X, y) in enumerate(datasets):
            res = time_botorch(space, objective, X, y, args.seed + r, fit_maxiter=args.botorch_fit_maxiter)
            results["botorch"].append(res)
            print(f"botorch repeat {r}: {res['seconds']:.3f} s (fit {res['fit_s']:.3f} s, "
                  f"optimize {res['acq_s']:.3f} s; cpu {res['cpu_s']:.2f} s, load {res['loadavg_1min_before']:.2f}) "
                  f"f(x*)={res['suggestion_objective']:.4f} fit runs={res['fit_runs']}"
                  + (f" warnings={res['warnings']}" if res["warnings"] else ""), flush=True)

    summary = {lib: summarise([r["seconds"] for r in rs]) for lib, rs in results.items() if rs}
    for lib, rs in results.items():
        if rs:
            summary[lib]["mean_cpu_s"] = statistics.fmean(r["cpu_s"] for r in rs)
    ratio = (summary["botorch"]["mean"] / summary["fastfm"]["mean"]
             if "botorch" in summary and "fastfm" in summary else None)

    print()
    print(f"machine: nproc={info['nproc']} cpu={info['cpu_model']!r} python {info['python']}, numpy {info['numpy']}, "
          f"scipy {info['scipy']}, fastfm {info['fastfm']}, torch {info['torch']}, botorch {info['botorch']}, "
          f"gpytorch {info['gpytorch']}")
    print(f"one suggestion at n_obs={args.n_obs} on the NAS-like space (fit + acquisition optimisation)")
    header = (f"{'library':10s} {'mean s':>9s} {'median s':>9s} {'min s':>9s} {'max s':>9s} {'mean cpu s':>10s} "
              f"{'BoTorch/fastfm':>15s}")
    print(header)
    print("-" * len(header))
    for lib, s in summary.items():
        r = "-" if ratio is None else (f"{ratio:.2f}" if lib == "botorch" else "(reference)")
        print(f"{lib:10s} {s['mean']:9.3f} {s['median']:9.3f} {s['min']:9.3f} {s['max']:9.3f} "
              f"{s['mean_cpu_s']:10.2f} {r:>15s}")
    if "fastfm" in summary:
        verdict = "PASS" if summary["fastfm"]["mean"] <= 2.0 else "FAIL"
        print(f"requirement (issue 3): fastfm mean <= 2 s: {verdict} ({summary['fastfm']['mean']:.3f} s)")
    print(f"1-min load average now: {os.getloadavg()[0]:.2f} on {info['nproc']} cores "
          "(other processes on the machine inflate wall times; see cpu s)")

    if args.json:
        out = {"args": vars(args), "space_source": space_source,
               "space": {"n_continuous": n_cont, "nominal_n_states": [n_states[c] for c in nominal],
                         "ordinal_n_states": [n_states[c] for c in ordinal]},
               "machine": info, "botorch_settings": botorch_settings(args),
               "fastfm_settings": {"kernel": args.kernel, "n_init": 10, "n_restarts": 10,
                                   "acquisition": "logei", "acq": "100000 random + 50 spray, 40 starts"},
               "results": results, "summary": summary, "ratio_botorch_over_fastfm": ratio}
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=lambda o: o.item() if hasattr(o, "item") else str(o))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
