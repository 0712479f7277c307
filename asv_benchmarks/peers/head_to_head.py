#!/usr/bin/env python
"""Head-to-head runs of fastfm and peer optimisers on fastfm's benchmark problems (issue 24 §5).

Every (problem, method, seed) is run ONCE, at the largest budget asked for, and appended as one JSON line to
``--out``.  Smaller budgets (30, 60, ...) are read off the same run as prefixes of its evaluation sequence: the
initial design is part of the run, so the first 30 evaluations of a 200-evaluation run are what a 30-evaluation
run would have evaluated -- for every method here except SMAC, whose default initial design size depends on
``n_trials`` (min(10·d, n_trials/4) Sobol points), so a SMAC prefix is a run planned for the larger budget.

Methods (each objective evaluation is ``problem(config)``, fastfm's own objective on a fastfm config dict, so
every method sees the identical function):

* ``fastfm``    ``fastfm.Optimizer(space, seed=seed)``, defaults (kernel "auto", n_init "auto"), ask/tell.
* ``random``    ``fastfm.Optimizer(space, kernel="random", seed=seed)`` (fastfm's random search).
* ``tpe``       Optuna ``TPESampler(multivariate=True, seed=seed)`` (its default 10 startup trials), ask/tell,
                the space written define-by-run (conditional parameters suggested only where active).
* ``gpsampler`` Optuna ``GPSampler(seed=seed)`` (defaults, 10 startup trials), ask/tell.
* ``smac``      SMAC3 ``HyperparameterOptimizationFacade`` on a ConfigSpace of the space (conditions included),
                ``Scenario(deterministic=True, n_trials=budget, seed=seed)``, ask/tell.
* ``hebo``      HEBO's ``hebo.optimizers.hebo.HEBO(DesignSpace, scramble_seed=seed)`` (defaults: GP, MACE,
                1 + d Sobol points first), suggest/observe.
* ``botorch``   BoTorch loop: 10 scrambled-Sobol initial points, then ``MixedSingleTaskGP`` (nominal columns as
                ``cat_dims``; ``SingleTaskGP`` when there are none) + ``LogExpectedImprovement`` optimised with
                ``optimize_acqf_mixed_alternating`` (its defaults: 20 restarts, 1024 raw samples), as
                ``suggestion_time.py`` (its docstring has the full settings).

How each parameter kind is shown to the peers ("ordered index" = an integer 0..n-1 over the choices):

==================  ==============  ==================  ====================  ========  =======================
fastfm              Optuna          ConfigSpace (SMAC)  HEBO                  BoTorch   note
==================  ==============  ==================  ====================  ========  =======================
Real (log)          float (log)     Float (log)         num (pow)             unit col  fastfm's [0, 1] code
Integer (log)       int (log)       Integer (log)       int (pow_int)         discrete  graph-encoded: ordered
Categorical, Graph  categorical     Categorical         cat                   cat_dims  index labels
Ordinal             int index       Ordinal             int index             discrete  ordered index
Set (m points, d)   m·d floats      m·d Floats          m·d num               m·d cols  the "vector" view
==================  ==============  ==================  ====================  ========  =======================

Conditional spaces run only with fastfm, random, tpe (define-by-run) and smac (ConfigSpace conditions); gpsampler
(Optuna samples conditional parameters outside the GP, with its independent random sampler), hebo and botorch (no
conditional spaces) get a ``"status": "skipped"`` line with the reason.  Set problems run with every method, the
peers on the vector view of the set (``fastfm bench``'s "vector" baseline).

Each run is a subprocess (``python head_to_head.py --worker TASK.json``) of the interpreter given for its
method (``--python-for smac=/path/bin/python`` or the environment variable ``FASTFM_H2H_PYTHON_SMAC``; default:
this interpreter), so peers with pinned numpy live in their own virtual environments; the subprocess gets
``PYTHONPATH=<repository root>``.  Runs go one at a time (``--jobs`` runs several, sharing the cores: their
per-suggestion times are then not comparable with single runs).

Recorded per run: values per evaluation in order, best-so-far trace, per-suggestion wall time (time the method
spent choosing the next point, objective excluded: ask / trial creation + suggest calls / suggest, config
conversion included) and per-tell wall time, the method's settings, library versions, machine (platform, CPU,
cpu count, load average), fastfm commit and the thread setting.  Runs already in ``--out`` (status ok, skipped or
timeout, with at least the budget asked for) are not run again: the runner is resumable.

Usage (from the repository root)::

    python asv_benchmarks/peers/head_to_head.py --problems func2c,func3c,ackley5c \\
        --methods fastfm,random,tpe,gpsampler,smac,hebo,botorch --budget 200 --seeds 10 \\
        --python-for smac=/work/peer-venvs/smac/bin/python --python-for hebo=/work/peer-venvs/hebo/bin/python \\
        --out asv_benchmarks/peers/results/head_to_head.jsonl
    python asv_benchmarks/peers/summarise_head_to_head.py asv_benchmarks/peers/results/head_to_head.jsonl

docs/benchmarks/head-to-head.md describes the protocol and how to install the peers.
"""
import argparse
import io
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "parallel"))
import _common  # noqa: E402  (machine(), loadavg(), _default: shared with the other benchmark scripts)

SCHEMA = 1
METHODS = ("fastfm", "random", "tpe", "gpsampler", "smac", "hebo", "botorch")
#: methods that search a conditional space as such (the others get a "skipped" record)
CONDITIONAL_METHODS = ("fastfm", "random", "tpe", "smac")
CONDITIONAL_SKIP_REASON = {
    "gpsampler": "conditional space: Optuna's GPSampler models only the parameters every trial has and samples "
                 "the conditional ones with its independent (random) sampler",
    "hebo": "conditional space: HEBO's DesignSpace has no conditions",
    "botorch": "conditional space: MixedSingleTaskGP / optimize_acqf_mixed_alternating have no conditions",
}
#: problems run by default: the paper's mixed problems, the HPO ones, the conditional and set ones, the large ones
DEFAULT_PROBLEMS = ("func2c", "func3c", "ackley5c", "svm", "xgboost", "deepbranch", "modelselection",
                    "setcoverage", "setchamfer", "kmeansinit", "contamination", "labs", "isingsparsification",
                    "maxsatweighted", "mixed10c20n", "pestcontrol")
#: the libraries whose versions a run records (those importable in the run's interpreter); greenlet: with it
#: Optuna's GPSampler runs the L-BFGS-B of its local search starts as one batch (without it, one start at a time)
VERSION_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "optuna", "greenlet", "torch", "gpytorch", "botorch",
                    "smac", "ConfigSpace", "HEBO", "pymoo", "xgboost")
#: what must import for each method, checked once per invocation before any run of that method
METHOD_IMPORTS = {"fastfm": [], "random": [], "tpe": ["optuna"], "gpsampler": ["optuna", "torch"],
                  "smac": ["smac", "ConfigSpace"], "hebo": ["hebo.optimizers.hebo"],
                  "botorch": ["botorch", "gpytorch", "torch"]}


# =============================================================================================== the space
class Dim:
    """One scalar variable of the peers' view of a fastfm parameter (a Set has n_points·dim of them)."""

    def __init__(self, name, kind, param, low=None, high=None, log=False, n=None, coord=None):
        self.name, self.kind, self.param = name, kind, param   # kind: real, int, cat, ord
        self.low, self.high, self.log, self.n, self.coord = low, high, log, n, coord


def peer_dims(space):
    """The peers' view of ``space``: a list of Dim, parents before children (for define-by-run)."""
    import fastfm

    params = sorted(space.parameters, key=lambda p: len(space.ancestors(p.name)))   # stable: parents first
    dims = []
    for p in params:
        if isinstance(p, fastfm.Real):
            dims.append(Dim(p.name, "real", p, p.low, p.high, p.log))
        elif isinstance(p, fastfm.Integer):
            dims.append(Dim(p.name, "int", p, p.low, p.high, p.log))
        elif isinstance(p, fastfm.Ordinal):
            dims.append(Dim(p.name, "ord", p, n=p.n_states))
        elif type(p).__name__ == "Set":
            for i in range(p.n_points):
                for k in range(p.dim):
                    dims.append(Dim(f"{p.name}__{i}_{k}", "real", p, float(p.low[k]), float(p.high[k]),
                                    coord=(i, k)))
        else:   # Categorical, Graph: nominal
            dims.append(Dim(p.name, "cat", p, n=p.n_states))
    return dims


def from_peer(dims, values):
    """fastfm config from {dim name: peer value} (only the active dims present).

    real: float clipped to the bounds; int: int; cat/ord: a choice index (int or its str) -> the choice."""
    config, sets = {}, {}
    for d in dims:
        if d.name not in values:
            continue
        v = values[d.name]
        if d.kind == "real":
            v = min(max(float(v), d.low), d.high)
            if d.coord is not None:
                sets.setdefault(d.param.name, np.empty((d.param.n_points, d.param.dim)))[d.coord] = v
                continue
            config[d.name] = v
        elif d.kind == "int":
            config[d.name] = int(min(max(int(round(float(v))), d.low), d.high))
        else:
            config[d.name] = d.param.decode_value(float(int(v)))
    config.update(sets)
    return config


def allowed_codes(space, p):
    """{parent name: sorted indices (cat/ord) or values (int) for which ``p`` is active}."""
    import fastfm

    out = {}
    for parent_name, allowed in (p.active_if or {}).items():
        parent = space[parent_name]
        if isinstance(parent, fastfm.Integer):
            out[parent_name] = sorted(int(v) for v in allowed)
        else:
            out[parent_name] = sorted(int(parent.encode_value(v)) for v in allowed)
    return out


def space_info(space):
    """What the runner needs to know of a space before running (conditional, set-valued, size)."""
    return {"n_params": len(space), "n_dims": space.n_dims, "conditional": bool(space.is_conditional),
            "sets": bool(space.set_params)}


# ============================================================================================ the methods
class Recorder:
    """Values and timings of one run; writes the progress file after every evaluation (for --timeout), unless
    ``progress_path`` is None (a run in this process, ``large_kernel_runs.py``)."""

    def __init__(self, problem, budget, progress_path):
        self.problem, self.budget, self.progress_path = problem, budget, progress_path
        self.values, self.suggest_s, self.tell_s = [], [], []
        self.objective_s = 0.0
        self.best_value, self.best_config = math.inf, None
        self.settings = {}
        self._last_write = 0.0

    def evaluate(self, config, suggest_seconds):
        t0 = time.perf_counter()
        y = float(self.problem(config))
        self.objective_s += time.perf_counter() - t0
        self.values.append(y)
        self.suggest_s.append(float(suggest_seconds))
        if y < self.best_value:
            self.best_value, self.best_config = y, dict(config)
        return y

    def told(self, seconds):
        self.tell_s.append(float(seconds))
        now = time.perf_counter()
        if self.progress_path is not None and (now - self._last_write > 2.0 or len(self.values) == self.budget):
            self._last_write = now
            self.write()

    def payload(self):
        values = np.array(self.values, dtype=float)
        return {"n_evals": len(self.values), "values": self.values,
                "best_so_far": np.minimum.accumulate(values).tolist() if len(values) else [],
                "best": float(values.min()) if len(values) else None, "best_config": self.best_config,
                "suggest_seconds": self.suggest_s, "tell_seconds": self.tell_s,
                "objective_seconds_total": self.objective_s, "settings": self.settings}

    def write(self):
        tmp = self.progress_path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.payload(), fh, default=_common._default)
        os.replace(tmp, self.progress_path)


def run_fastfm(problem, budget, seed, rec, random=False, options=None):
    """fastfm's Optimizer, with its defaults (the head-to-head's runs) or ``options`` (``large_kernel_runs.py``)."""
    import fastfm

    kwargs = {"kernel": "random"} if random else dict(options or {})
    opt = fastfm.Optimizer(problem.space, seed=seed, **kwargs)
    call = "fastfm.Optimizer(space, kernel='random', seed=seed)" if random else "fastfm.Optimizer(space, seed=seed)"
    rec.settings = {"call": call,
                    "n_init": getattr(opt, "n_init", 10)}
    _ask_tell_loop(budget, rec, lambda: (opt.ask(),) * 2, opt.tell)


def _ask_tell_loop(budget, rec, ask, tell):
    """``budget`` rounds of ask (returns (handle, fastfm config)), evaluate, tell(handle, value), timed into ``rec``."""
    for _ in range(budget):
        t0 = time.perf_counter()
        handle, config = ask()
        t1 = time.perf_counter()
        y = rec.evaluate(config, t1 - t0)
        t2 = time.perf_counter()
        tell(handle, y)
        rec.told(time.perf_counter() - t2)


def _optuna_suggest(trial, space, dims):
    values = {}
    config_so_far = {}
    for d in dims:
        p = d.param
        if p.active_if and not space.is_active(config_so_far, p.name):
            continue
        if d.kind == "real":
            v = trial.suggest_float(d.name, d.low, d.high, log=d.log)
        elif d.kind == "int":
            v = trial.suggest_int(d.name, d.low, d.high, log=d.log)
        elif d.kind == "ord":
            v = trial.suggest_int(d.name, 0, d.n - 1)
        else:
            v = trial.suggest_categorical(d.name, list(range(d.n)))
        values[d.name] = v
        if d.coord is None:
            config_so_far[d.name] = from_peer([d], {d.name: v})[d.name]
    return from_peer(dims, values)


def optuna_study(which, seed):
    """(study, settings): an Optuna study minimising with the head-to-head's sampler ``which`` ("tpe" or
    "gpsampler"), and the settings a run records."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if which == "tpe":
        sampler = optuna.samplers.TPESampler(multivariate=True, seed=seed)
        settings = {"call": "optuna.samplers.TPESampler(multivariate=True, seed=seed)", "n_init": 10}
    else:
        sampler = optuna.samplers.GPSampler(seed=seed)
        settings = {"call": "optuna.samplers.GPSampler(seed=seed)", "n_init": 10}
    return optuna.create_study(sampler=sampler, direction="minimize"), settings


def run_optuna(problem, budget, seed, rec, which):
    study, rec.settings = optuna_study(which, seed)
    dims = peer_dims(problem.space)

    def ask():
        trial = study.ask()
        return trial, _optuna_suggest(trial, problem.space, dims)

    _ask_tell_loop(budget, rec, ask, study.tell)


def configspace_of(space, dims, seed):
    import ConfigSpace as CS

    cs = CS.ConfigurationSpace(seed=seed)
    hps = {}
    for d in dims:
        if d.kind == "real":
            hp = CS.UniformFloatHyperparameter(d.name, d.low, d.high, log=d.log)
        elif d.kind == "int":
            hp = CS.UniformIntegerHyperparameter(d.name, d.low, d.high, log=d.log)
        elif d.kind == "ord":
            hp = CS.OrdinalHyperparameter(d.name, [str(i) for i in range(d.n)])
        else:
            hp = CS.CategoricalHyperparameter(d.name, [str(i) for i in range(d.n)])
        hps[d.name] = hp
        cs.add(hp)
    for p in space.parameters:
        if not p.active_if:
            continue
        conds = []
        for parent_name, codes in allowed_codes(space, p).items():
            parent = hps[parent_name]
            items = [c if isinstance(parent, CS.UniformIntegerHyperparameter) else str(c) for c in codes]
            conds.append(CS.EqualsCondition(hps[p.name], parent, items[0]) if len(items) == 1
                         else CS.InCondition(hps[p.name], parent, items))
        cs.add(conds[0] if len(conds) == 1 else CS.AndConjunction(*conds))
    return cs


def run_smac(problem, budget, seed, rec, workdir):
    from pathlib import Path

    from smac import HyperparameterOptimizationFacade, Scenario
    from smac.runhistory.dataclasses import TrialValue

    dims = peer_dims(problem.space)
    cs = configspace_of(problem.space, dims, seed)
    scenario = Scenario(cs, deterministic=True, n_trials=budget, seed=seed,
                        output_directory=Path(workdir) / "smac3_output")

    def never_called(config, seed=0):   # ask/tell: SMAC never runs the target itself
        raise RuntimeError("ask/tell only")

    smac = HyperparameterOptimizationFacade(scenario, never_called, overwrite=True, logging_level=40)
    n_init = getattr(smac._initial_design, "_n_configs", None)   # informational (private attribute)
    rec.settings = {"call": "HyperparameterOptimizationFacade(Scenario(cs, deterministic=True, n_trials=budget, "
                            "seed=seed)); tell(save=False)", "n_init": n_init}
    for _ in range(budget):
        t0 = time.perf_counter()
        info = smac.ask()
        config = from_peer(dims, dict(info.config))
        t1 = time.perf_counter()
        y = rec.evaluate(config, t1 - t0)
        t2 = time.perf_counter()
        smac.tell(info, TrialValue(cost=y), save=False)
        rec.told(time.perf_counter() - t2)


def hebo_design(dims):
    specs = []
    for d in dims:
        if d.kind == "real":
            specs.append({"name": d.name, "type": "pow" if d.log else "num", "lb": d.low, "ub": d.high})
        elif d.kind == "int":
            specs.append({"name": d.name, "type": "pow_int" if d.log else "int", "lb": d.low, "ub": d.high})
        elif d.kind == "ord":
            specs.append({"name": d.name, "type": "int", "lb": 0, "ub": d.n - 1})
        else:
            specs.append({"name": d.name, "type": "cat", "categories": [str(i) for i in range(d.n)]})
    return specs


def run_hebo(problem, budget, seed, rec):
    import torch
    from hebo.design_space.design_space import DesignSpace
    from hebo.optimizers.hebo import HEBO

    np.random.seed(seed)
    torch.manual_seed(seed)
    dims = peer_dims(problem.space)
    opt = HEBO(DesignSpace().parse(hebo_design(dims)), scramble_seed=seed)
    rec.settings = {"call": "HEBO(DesignSpace().parse(specs), scramble_seed=seed); np.random.seed(seed), "
                            "torch.manual_seed(seed)", "n_init": opt.rand_sample}
    for _ in range(budget):
        t0 = time.perf_counter()
        suggestion = opt.suggest(n_suggestions=1)
        row = suggestion.iloc[0]
        config = from_peer(dims, {d.name: row[d.name] for d in dims})
        t1 = time.perf_counter()
        y = rec.evaluate(config, t1 - t0)
        t2 = time.perf_counter()
        opt.observe(suggestion, np.array([[y]]))
        rec.told(time.perf_counter() - t2)


def run_botorch(problem, budget, seed, rec, n_init=10):
    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.exceptions import ModelFittingError
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MixedSingleTaskGP, SingleTaskGP
    from botorch.models.transforms.input import Normalize
    from botorch.models.transforms.outcome import Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood
    try:
        from botorch.optim import optimize_acqf_mixed_alternating
    except ImportError as exc:   # older BoTorch: optimize_acqf_mixed enumerates the discrete part, infeasible here
        raise RuntimeError("this BoTorch has no optimize_acqf_mixed_alternating (BoTorch >= 0.12 needed)") from exc
    import fastfm

    space = problem.space
    n_cont, d = space.n_continuous, space.n_dims
    nominal, ordered = [], []
    for k, p in enumerate(space.discrete_params):
        (nominal if isinstance(p, (fastfm.Categorical, fastfm.Graph)) else ordered).append(n_cont + k)
    n_states = {n_cont + k: int(n) for k, n in enumerate(space.n_states)}
    numeric = list(range(n_cont)) + ordered
    dtype = torch.float64
    torch.manual_seed(seed)
    lower = torch.zeros(d, dtype=dtype)
    upper = torch.ones(d, dtype=dtype)
    for col, n in n_states.items():
        upper[col] = n - 1
    bounds = torch.stack([lower, upper])
    sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(n_init).to(dtype).numpy()
    for col, n in n_states.items():
        sobol[:, col] = np.minimum(np.floor(sobol[:, col] * n), n - 1)
    rec.settings = {"call": "MixedSingleTaskGP(cat_dims=nominal) [SingleTaskGP without nominal columns], "
                            "Normalize(numeric columns), Standardize; fit_gpytorch_mll; LogExpectedImprovement; "
                            "optimize_acqf_mixed_alternating(q=1, num_restarts=20, raw_samples=1024) "
                            "[optimize_acqf without discrete columns]; 10 scrambled-Sobol initial points",
                    "n_init": n_init, "cat_dims": nominal, "discrete_dims": ordered, "fit_failures": 0}
    X, Y = [], []
    for i in range(budget):
        t0 = time.perf_counter()
        if i < n_init:
            x = sobol[i]
        else:
            train_X = torch.tensor(np.array(X), dtype=dtype)
            train_Y = -torch.tensor(Y, dtype=dtype).unsqueeze(-1)   # BoTorch maximises
            transform = Normalize(d=d, indices=numeric, bounds=bounds) if numeric else None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if nominal:
                    model = MixedSingleTaskGP(train_X, train_Y, cat_dims=nominal, input_transform=transform,
                                              outcome_transform=Standardize(m=1))
                else:
                    model = SingleTaskGP(train_X, train_Y, input_transform=transform,
                                         outcome_transform=Standardize(m=1))
                try:
                    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
                except ModelFittingError:
                    rec.settings["fit_failures"] += 1   # go on with the model's current hyperparameters
                acq = LogExpectedImprovement(model, best_f=train_Y.max())
                if nominal or ordered:
                    cand, _ = optimize_acqf_mixed_alternating(
                        acq, bounds, discrete_dims={c: [float(v) for v in range(n_states[c])] for c in ordered},
                        cat_dims={c: [float(v) for v in range(n_states[c])] for c in nominal},
                        q=1, num_restarts=20, raw_samples=1024)
                else:
                    cand, _ = optimize_acqf(acq, bounds, q=1, num_restarts=20, raw_samples=1024)
            x = cand.detach().numpy().reshape(-1).astype(float)
            x[n_cont:] = np.clip(np.round(x[n_cont:]), 0, upper.numpy()[n_cont:])
            x[:n_cont] = np.clip(x[:n_cont], 0.0, 1.0)
        config = space.decode(x[None, :])[0]
        x = space.encode(config)    # the point as evaluated (rounded integers, canonical set order)
        t1 = time.perf_counter()
        y = rec.evaluate(config, t1 - t0)
        X.append(x)
        Y.append(y)
        rec.told(0.0)


# ================================================================================================= worker
def package_versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in VERSION_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    try:
        import fastfm
        out["fastfm"] = fastfm.__version__
    except Exception as exc:   # pragma: no cover - reporting only
        out["fastfm"] = f"unavailable: {exc!r}"
    return out


def fastfm_config_text():
    try:
        import fastfm
        buf = io.StringIO()
        fastfm.show_config(file=buf)
        return buf.getvalue().rstrip()
    except Exception as exc:   # pragma: no cover - reporting only
        return f"unavailable: {exc!r}"


def worker(task_path):
    with open(task_path) as fh:
        task = json.load(fh)
    threads = task["threads"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # fastfm's "NumPy backend" notice: shown in fastfm_config
        import fastfm
        from fastfm.benchmarks import get_problem
    if threads:
        fastfm.set_config(num_threads=threads)
    if task["method"] in ("gpsampler", "botorch", "hebo") and threads:
        import torch
        torch.set_num_threads(threads)
    problem = get_problem(task["problem"])
    rec = Recorder(problem, task["budget"], task["progress"])
    seed, budget, method = task["seed"], task["budget"], task["method"]
    t0 = time.perf_counter()
    if method in ("fastfm", "random"):
        run_fastfm(problem, budget, seed, rec, random=method == "random")
    elif method in ("tpe", "gpsampler"):
        run_optuna(problem, budget, seed, rec, method)
    elif method == "smac":
        run_smac(problem, budget, seed, rec, task["workdir"])
    elif method == "hebo":
        run_hebo(problem, budget, seed, rec)
    elif method == "botorch":
        run_botorch(problem, budget, seed, rec)
    else:
        raise ValueError(f"unknown method {method!r}")
    out = rec.payload()
    out.update({"wall_seconds": time.perf_counter() - t0, "versions": package_versions(),
                "fastfm_config": fastfm_config_text(), "python": sys.executable,
                "python_version": platform.python_version()})
    if method in ("gpsampler", "botorch", "hebo"):
        import torch
        out["torch_num_threads"] = torch.get_num_threads()
    rec.write()
    with open(task["result"], "w") as fh:
        json.dump(out, fh, default=_common._default)


def probe(method):
    """Import what ``method`` needs; print the versions as JSON (run in the method's interpreter)."""
    import importlib
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["fastfm", *METHOD_IMPORTS[method]]:
            importlib.import_module(name)
    print(json.dumps(package_versions()))


# ================================================================================================= driver
def git_state():
    def git(*args):
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, timeout=20).stdout.strip()
    try:
        return {"commit": git("rev-parse", "HEAD") or None,
                "uncommitted_fastfm_or_csrc_files": len(git("status", "--porcelain", "--", "fastfm",
                                                            "csrc").splitlines())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}


def machine_info():
    m = _common.machine()
    return {"platform": platform.platform(), "cpu": m["cpu"], "cpu_count": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}


def read_done(path):
    """{(problem, method, seed): record} of the runs in ``path`` that need not run again."""
    done = {}
    if not os.path.exists(path):
        return done
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("status") not in ("ok", "skipped", "timeout"):
                continue
            key = (r["problem_key"], r["method"], r["seed"])
            old = done.get(key)
            if old is None or r.get("budget", 0) > old.get("budget", 0):
                done[key] = r
    return done


def interpreter_for(method, flags):
    if method in flags:
        return flags[method]
    return os.environ.get(f"FASTFM_H2H_PYTHON_{method.upper()}", sys.executable)


def child_env(threads):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "FASTFM_NUM_THREADS"):
            env[var] = str(threads)
    return env


def run_task(task, python, env, timeout):
    """Run one (problem, method, seed) in a subprocess of ``python``; the record to append."""
    workdir = tempfile.mkdtemp(prefix="h2h_")
    task = dict(task, workdir=workdir, progress=os.path.join(workdir, "progress.json"),
                result=os.path.join(workdir, "result.json"))
    task_path = os.path.join(workdir, "task.json")
    with open(task_path, "w") as fh:
        json.dump(task, fh)
    log_path = os.path.join(workdir, "log.txt")
    status, reason = "ok", None
    load_start = _common.loadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker", task_path], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc, status, reason = None, "timeout", f"stopped after --timeout {timeout} s"
        except BaseException:   # Ctrl-C: the worker runs in its own session, so stop it here
            os.killpg(proc.pid, 9)
            proc.wait()
            shutil.rmtree(workdir, ignore_errors=True)
            raise
    with open(log_path, errors="replace") as fh:
        log_tail = fh.read()[-3000:]
    record = {}
    if os.path.exists(task["result"]):
        with open(task["result"]) as fh:
            record = json.load(fh)
    else:
        if os.path.exists(task["progress"]):
            with open(task["progress"]) as fh:
                record = json.load(fh)
        if status == "ok":
            status, reason = "failed", f"worker exit code {rc}"
        record["log_tail"] = log_tail
    shutil.rmtree(workdir, ignore_errors=True)
    record.update({"status": status, "reason": reason, "started": started, "load_start": load_start,
                   "load_end": _common.loadavg()})
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS),
                        help="comma-separated problem names (fastfm.benchmarks.get_problem); default: all of "
                             "the registries")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {','.join(METHODS)}")
    parser.add_argument("--budget", type=int, default=200, help="evaluations per run, initial design included")
    parser.add_argument("--seeds", type=int, default=10, help="number of seeds")
    parser.add_argument("--seed0", type=int, default=0, help="first seed")
    parser.add_argument("--out", default=os.path.join("asv_benchmarks", "peers", "results", "head_to_head.jsonl"),
                        help="JSON-lines file the runs are appended to (and read, to skip runs already there)")
    parser.add_argument("--python-for", action="append", default=[], metavar="METHOD=PYTHON",
                        help="interpreter for a method's runs (repeatable); else $FASTFM_H2H_PYTHON_<METHOD>, "
                             "else this interpreter")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per run (OMP/BLAS/MKL/fastfm/torch); 0 leaves the libraries' defaults")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per run; a run stopped keeps its evaluations so far (status timeout)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at a time (default 1; more share the cores, which inflates suggestion times)")
    parser.add_argument("--dry-run", action="store_true", help="list what would run and exit")
    parser.add_argument("--worker", metavar="TASK_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--probe", metavar="METHOD", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        return worker(args.worker)
    if args.probe:
        return probe(args.probe)

    problems = [p.strip().lower() for p in args.problems.split(",") if p.strip()]
    methods = [m.strip().lower() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    flags = {}
    for item in args.python_for:
        method, _, python = item.partition("=")
        if method not in METHODS or not python:
            parser.error(f"--python-for wants METHOD=PYTHON with METHOD in {list(METHODS)}, got {item!r}")
        flags[method] = python
    seeds = list(range(args.seed0, args.seed0 + args.seeds))
    env = child_env(args.threads)

    # the problems: built here once, to fail early and to know which methods can search them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        from fastfm.benchmarks import get_problem
    infos = {}
    for name in problems:
        try:
            problem = get_problem(name)
        except Exception as exc:
            print(f"problem {name}: not available here, left out ({type(exc).__name__}: {exc})", flush=True)
            continue
        infos[name] = dict(space_info(problem.space), name=problem.name, optimum=problem.optimum)

    # the methods: each interpreter must import what its method needs
    versions = {}
    for method in methods:
        python = interpreter_for(method, flags)
        if args.dry_run:
            versions[method] = {}
            continue
        try:
            res = subprocess.run([python, os.path.abspath(__file__), "--probe", method], cwd=REPO, env=env,
                                 capture_output=True, text=True)
            last = (res.stderr.strip().splitlines() or ["?"])[-1]
        except OSError as exc:
            res, last = None, f"{type(exc).__name__}: {exc}"
        if res is None or res.returncode != 0:
            print(f"method {method}: cannot run with {python} ({last}); left out", flush=True)
            continue
        versions[method] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"method {method}: {python}", flush=True)
    methods = [m for m in methods if m in versions]

    done = read_done(args.out)
    base = {"schema": SCHEMA, "budget": args.budget, "threads": args.threads, "machine": machine_info(),
            "fastfm_git": git_state()}
    tasks, skipped = [], []
    for name, info in infos.items():
        for method in methods:
            for seed in seeds:
                old = done.get((name, method, seed))
                if old is not None and (old["status"] == "skipped" or old.get("budget", 0) >= args.budget):
                    continue
                head = dict(base, problem_key=name, problem=info["name"], method=method, seed=seed,
                            optimum=info["optimum"])
                if info["conditional"] and method not in CONDITIONAL_METHODS:
                    skipped.append(dict(head, status="skipped", reason=CONDITIONAL_SKIP_REASON[method]))
                else:
                    tasks.append(head)
    print(f"{len(tasks)} runs to do, {len(skipped)} skips to record ({len(done)} done already in {args.out}); "
          f"budget {args.budget}, seeds {seeds[0]}..{seeds[-1]}, threads {args.threads or 'library defaults'}",
          flush=True)
    if args.dry_run:
        for t in tasks:
            print(f"  would run {t['problem_key']} {t['method']} seed {t['seed']} "
                  f"with {interpreter_for(t['method'], flags)}")
        for s in skipped:
            print(f"  would skip {s['problem_key']} {s['method']} seed {s['seed']}: {s['reason']}")
        return 0

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    lock = threading.Lock()

    def append(record):
        with lock, open(args.out, "a") as fh:
            fh.write(json.dumps(record, default=_common._default) + "\n")

    for s in skipped:
        append(s)
    t_start = time.perf_counter()

    def one(task):
        record = dict(task)
        record.update(run_task(task, interpreter_for(task["method"], flags), env, args.timeout))
        record.setdefault("versions", versions[task["method"]])   # a stopped run: the versions of the probe
        append(record)
        st = np.array(record.get("suggest_seconds") or [np.nan])
        best = record.get("best")
        with lock:
            print(f"[{time.perf_counter() - t_start:7.0f} s] {task['problem_key']:>20} {task['method']:>9} "
                  f"seed {task['seed']:>2}: {record['status']}"
                  + (f", best {best:.6g} after {record.get('n_evals')}" if best is not None else "")
                  + (f", median {np.nanmedian(st):.3f} s/suggestion" if np.isfinite(st).any() else "")
                  + (f" ({record['reason']})" if record.get("reason") else ""), flush=True)
            if record["status"] == "failed" and record.get("log_tail"):
                print("    " + record["log_tail"].strip().replace("\n", "\n    ")[-1500:], flush=True)
        return record

    if args.jobs > 1:
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, tasks))
    else:
        for task in tasks:
            one(task)
    print(f"done; summary: python {os.path.relpath(os.path.join(HERE, 'summarise_head_to_head.py'))} {args.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        if "--worker" in sys.argv:
            traceback.print_exc()
            sys.exit(1)
        raise
