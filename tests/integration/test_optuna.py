"""``fastfm.integration.optuna.FMSampler`` on real Optuna studies: the distributions' round trip, search quality
against random search, maximisation, define-by-run conditional parameters, pending trials, threads, an SQLite
storage, a journal shared by two processes, reproducibility, and its typed errors."""
import functools
import importlib
import json
import logging
import math
import multiprocessing
import pickle
import sys
import textwrap
import warnings

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

import fastfm as ff  # noqa: E402
from fastfm.integration.optuna import RELATIVE_PARAMS_KEY, FMSampler, SearchSpaceCodec  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

# two marginal-likelihood restarts instead of ten: the tests check the plumbing, and stay fast
FAST = {"n_restarts": 2}


def _mixed_objective(trial):
    """Minimum 0 at x = 0.3, c = "b", k = 7."""
    x = trial.suggest_float("x", -1.0, 1.0)
    c = trial.suggest_categorical("c", ["a", "b", "c"])
    k = trial.suggest_int("k", 0, 10)
    return (x - 0.3) ** 2 + {"a": 0.5, "b": 0.0, "c": 1.0}[c] + (k - 7) ** 2 / 20


def _proposed(trial):
    """The values FMSampler proposed to a trial ({} when the independent sampler chose them all), as Optuna values
    (read with the trial's distributions, so the trial must have suggested them)."""
    chunks, i = [], 0
    while f"{RELATIVE_PARAMS_KEY}:{i}" in trial.system_attrs:
        chunks.append(trial.system_attrs[f"{RELATIVE_PARAMS_KEY}:{i}"])
        i += 1
    internal = json.loads("".join(chunks)) if chunks else {}
    return {name: trial.distributions[name].to_external_repr(value) for name, value in internal.items()
            if name in trial.distributions}


def _suggest(trial, name, distribution):
    if isinstance(distribution, FloatDistribution):
        return trial.suggest_float(name, distribution.low, distribution.high, log=distribution.log,
                                   step=distribution.step)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(name, distribution.low, distribution.high, log=distribution.log,
                                 step=distribution.step)
    return trial.suggest_categorical(name, distribution.choices)


# ------------------------------------------------------------------------------------------- import
def test_importing_without_optuna_says_how_to_install_it(monkeypatch):
    for name in [m for m in sys.modules if m == "optuna" or m.startswith("optuna.")]:
        monkeypatch.setitem(sys.modules, name, None)            # as if Optuna were not installed
    monkeypatch.delitem(sys.modules, "fastfm.integration.optuna")
    importlib.import_module("fastfm.integration")               # the package itself needs no Optuna
    with pytest.raises(ImportError, match=r"pip install fastfm\[optuna\]"):
        importlib.import_module("fastfm.integration.optuna")


# ------------------------------------------------------------------------------------------- mapping
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)    # Optuna's notice that it lowers an uneven high onto the grid
    ROUND_TRIPS = {
        "float": (FloatDistribution(-2.5, 3.0), [-2.5, 0.1, 3.0]),
        "log float": (FloatDistribution(1e-4, 10.0, log=True), [1e-4, 0.0123, 10.0]),
        "stepped float": (FloatDistribution(0.0, 1.0, step=0.1), [0.0, 0.3, 0.7, 1.0]),
        "stepped float, uneven high": (FloatDistribution(-1.0, 1.1, step=0.25), [-1.0, 0.25, 1.0]),
        "int": (IntDistribution(-3, 7), [-3, 0, 7]),
        "log int": (IntDistribution(1, 1000, log=True), [1, 37, 1000]),
        "stepped int": (IntDistribution(0, 20, step=4), [0, 8, 20]),
        "stepped int, uneven high": (IntDistribution(1, 11, step=3), [1, 7, 10]),
        "many-valued stepped float": (FloatDistribution(0.0, 100.0, step=0.5), [0.0, 33.5, 100.0]),
        "categorical": (CategoricalDistribution([None, True, False, 0.5, "a", 2]), [None, True, False, 0.5, "a", 2]),
    }


@pytest.mark.parametrize("case", sorted(ROUND_TRIPS))
def test_values_round_trip_through_the_fastfm_space(case):
    distribution, values = ROUND_TRIPS[case]
    codec = SearchSpaceCodec({"p": distribution})
    for value in values:
        back = codec.to_params(codec.to_config({"p": value}))["p"]
        assert type(back) is type(value)                        # True stays a bool, 2 an int, 0.5 a float
        if isinstance(value, float):
            assert back == pytest.approx(value, rel=1e-12, abs=1e-12)
        else:
            assert back is value or back == value
        assert distribution._contains(distribution.to_internal_repr(back))
    # every point of the fastfm space is a value Optuna accepts for the distribution
    for config in codec.space.sample(50, seed=0):
        value = codec.to_params(config)["p"]
        assert distribution._contains(distribution.to_internal_repr(value)), (case, value)
        if isinstance(distribution, IntDistribution):
            assert type(value) is int
        elif isinstance(distribution, FloatDistribution):
            assert type(value) is float


def test_a_stepped_distribution_is_an_integer_over_its_grid():
    codec = SearchSpaceCodec({"f": FloatDistribution(0.0, 1.0, step=0.1), "i": IntDistribution(0, 20, step=4),
                              "many": FloatDistribution(0.0, 100.0, step=0.5)})
    grid = {p.name: p for p in codec.space.parameters}
    assert isinstance(grid["f"], ff.Integer) and (grid["f"].low, grid["f"].high) == (0, 10)
    assert isinstance(grid["i"], ff.Integer) and (grid["i"].low, grid["i"].high) == (0, 5)
    assert not grid["f"].is_continuous                           # a path graph: the kernel sees the order
    assert grid["many"].is_continuous                            # 201 points: a rounded continuous variable


def test_every_distribution_kind_in_one_study_gets_model_proposals_optuna_accepts():
    def objective(trial):
        values = [_suggest(trial, name, distribution) for name, (distribution, _) in ROUND_TRIPS.items()]
        return sum(float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))

    study = optuna.create_study(sampler=FMSampler(seed=0, n_startup_trials=4, optimizer_options=FAST))
    study.optimize(objective, n_trials=7)
    model_trials = [t for t in study.trials if t.number >= 4]
    for trial in model_trials:
        proposed = _proposed(trial)
        assert set(proposed) == set(trial.params)               # the model chose every parameter ...
        for name, value in proposed.items():                    # ... and Optuna took each value as it was
            assert trial.params[name] is value or trial.params[name] == value
            assert type(trial.params[name]) is type(value)


# ------------------------------------------------------------------------------------------- search
def test_finds_the_optimum_of_a_mixed_problem_better_than_random_search():
    fm_best, random_best = [], []
    for seed in range(3):
        study = optuna.create_study(sampler=FMSampler(seed=seed, n_startup_trials=8, optimizer_options=FAST))
        study.optimize(_mixed_objective, n_trials=20)
        fm_best.append(study.best_value)
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        study.optimize(_mixed_objective, n_trials=20)
        random_best.append(study.best_value)
    # measured: FM ≤ 1e-4 on each seed, random search 0.12–0.34; 0.1 is one step of k or x off by 0.3
    assert max(fm_best) < 0.1, fm_best
    assert np.mean(fm_best) < np.mean(random_best), (fm_best, random_best)


def test_maximize_direction_searches_near_the_maximum():
    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        c = trial.suggest_categorical("c", ["p", "q"])
        return -((x - 0.5) ** 2) - (0.0 if c == "q" else 0.5)

    study = optuna.create_study(direction="maximize",
                                sampler=FMSampler(seed=1, n_startup_trials=5, optimizer_options=FAST))
    study.optimize(objective, n_trials=13)
    model_trials = [t for t in study.trials if t.number >= 5]
    # a sign error would send the model to the minimum (x = -1, c = "p")
    assert np.median([abs(t.params["x"] - 0.5) for t in model_trials]) < 0.2
    assert sum(t.params["c"] == "q" for t in model_trials) > len(model_trials) / 2
    assert study.best_value > -0.01


def test_the_same_seed_gives_the_same_study():
    def run():
        study = optuna.create_study(sampler=FMSampler(seed=3, n_startup_trials=5, optimizer_options=FAST))
        study.optimize(_mixed_objective, n_trials=10)
        return [t.params for t in study.trials]

    first, second = run(), run()
    assert first == second
    assert len({tuple(sorted(p.items())) for p in first}) == len(first)


# ------------------------------------------------------------------------------------------- define-by-run
class RecordingRandomSampler(optuna.samplers.RandomSampler):
    """A RandomSampler that remembers which parameter of which trial it was asked for."""

    def __init__(self, seed):
        super().__init__(seed=seed)
        self.calls = []

    def sample_independent(self, study, trial, param_name, param_distribution):
        self.calls.append((trial.number, param_name))
        return super().sample_independent(study, trial, param_name, param_distribution)


@pytest.fixture
def sampler_log():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("fastfm.integration.optuna")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def _conditional_objective(trial):
    model = trial.suggest_categorical("model", ["linear", "tree"])
    x = trial.suggest_float("x", -1.0, 1.0)
    if model == "linear":
        alpha = trial.suggest_float("alpha", 1e-3, 1.0, log=True)
        return x ** 2 + math.log10(alpha) ** 2 / 10
    depth = trial.suggest_int("depth", 1, 8)
    return (x - 0.2) ** 2 + abs(depth - 4) / 10


def test_conditional_parameters_go_to_the_independent_sampler_with_one_warning_each(sampler_log):
    independent = RecordingRandomSampler(seed=0)
    sampler = FMSampler(seed=0, n_startup_trials=5, independent_sampler=independent, optimizer_options=FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_conditional_objective, n_trials=14)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    after_startup = [(number, name) for number, name in independent.calls if number >= 5]
    # the shared parameters come from the model, the conditional ones from the independent sampler
    assert {name for _, name in after_startup} <= {"alpha", "depth"}
    assert after_startup
    for trial in study.trials[5:]:
        assert set(_proposed(trial)) == {"model", "x"}
    warned = [r.getMessage() for r in sampler_log if r.levelno == logging.WARNING]
    warned_names = sorted(name for name in ("alpha", "depth") if any(f"parameter {name!r}" in m for m in warned))
    assert warned_names == sorted({name for _, name in after_startup})
    assert len(warned) == len(warned_names)                       # once per parameter, not once per trial


def test_no_warning_when_independent_sampling_is_expected(sampler_log):
    sampler = FMSampler(seed=0, n_startup_trials=5, optimizer_options=FAST, warn_independent_sampling=False)
    optuna.create_study(sampler=sampler).optimize(_conditional_objective, n_trials=8)
    assert not sampler_log


def test_a_continuous_search_space_uses_matern52_without_a_warning():
    def objective(trial):
        return (trial.suggest_float("u", 0.0, 1.0) - 0.4) ** 2 + trial.suggest_float("v", 1e-2, 1.0, log=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study = optuna.create_study(sampler=FMSampler(seed=0, n_startup_trials=4, optimizer_options=FAST))
        study.optimize(objective, n_trials=6)
    assert not [w for w in caught if "needs discrete variables" in str(w.message)]
    assert _proposed(study.trials[-1])


# ------------------------------------------------------------------------------------------- pending trials
def _small_discrete_objective(trial):
    k = trial.suggest_int("k", 0, 4)
    c = trial.suggest_categorical("c", ["a", "b", "c"])
    return (k - 2) ** 2 + (0.0 if c == "b" else 1.0)


@pytest.mark.parametrize("consider_pending", [True, False])
def test_a_running_trial_is_pending_even_before_it_suggested_all_its_parameters(consider_pending):
    sampler = FMSampler(seed=0, n_startup_trials=9, optimizer_options=FAST, consider_pending=consider_pending)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_small_discrete_objective, n_trials=9)
    first = study.ask()
    first.suggest_int("k", 0, 4)                 # the model proposes k and c; only k is suggested so far
    second = study.ask()
    second.suggest_int("k", 0, 4)
    second.suggest_categorical("c", ["a", "b", "c"])
    first.suggest_categorical("c", ["a", "b", "c"])
    assert _proposed(study.trials[first.number]) == first.params
    assert _proposed(study.trials[second.number]) == second.params
    if consider_pending:
        # the second proposal was told the first (read from the trial's system attributes) and avoids it
        assert first.params != second.params
    else:
        # without it the model, told the same trials, proposes the same point twice (measured: (2, "b"), the
        # optimum): the comparison above is not true by chance
        assert first.params == second.params


def test_threads_share_the_sampler():
    study = optuna.create_study(sampler=FMSampler(seed=0, n_startup_trials=4, optimizer_options=FAST))
    study.optimize(_mixed_objective, n_trials=12, n_jobs=2)
    trials = study.trials
    assert len(trials) == 12 and all(t.state == TrialState.COMPLETE for t in trials)
    assert sum(bool(_proposed(t)) for t in trials) >= 6
    # a thread's proposal is recorded before the other thread reads the trials: it is pending there, so
    # the two never propose the same configuration
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 12
    assert study.best_value < 0.6


# ------------------------------------------------------------------------------------------- storages
def test_sqlite_storage_and_a_resumed_study(tmp_path):
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=storage,
                                sampler=FMSampler(seed=0, n_startup_trials=4, optimizer_options=FAST))
    study.optimize(_mixed_objective, n_trials=7)
    resumed = optuna.load_study(study_name="s", storage=storage,
                                sampler=FMSampler(seed=1, n_startup_trials=4, optimizer_options=FAST))
    resumed.optimize(_mixed_objective, n_trials=2)
    trials = resumed.trials
    assert len(trials) == 9 and all(t.state == TrialState.COMPLETE for t in trials)
    assert all(_proposed(t) == t.params for t in trials[4:])   # proposals survive the database round trip


_JOURNAL_WORKER = textwrap.dedent('''
    import optuna
    from optuna.storages import JournalStorage
    try:
        from optuna.storages.journal import JournalFileBackend
    except ImportError:                                       # Optuna < 4.0
        from optuna.storages import JournalFileStorage as JournalFileBackend
    from fastfm.integration.optuna import FMSampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        c = trial.suggest_categorical("c", ["a", "b", "c"])
        k = trial.suggest_int("k", 0, 10)
        return (x - 0.3) ** 2 + {"a": 0.5, "b": 0.0, "c": 1.0}[c] + (k - 7) ** 2 / 20

    storage = JournalStorage(JournalFileBackend(JOURNAL_PATH))
    sampler = FMSampler(seed=SEED, n_startup_trials=4, optimizer_options={"n_restarts": 2})
    optuna.load_study(study_name="shared", storage=storage, sampler=sampler).optimize(objective, n_trials=8)
''')


def _journal_storage(path):
    from optuna.storages import JournalStorage
    try:
        from optuna.storages.journal import JournalFileBackend
    except ImportError:                                       # Optuna < 4.0
        from optuna.storages import JournalFileStorage as JournalFileBackend
    return JournalStorage(JournalFileBackend(str(path)))


def _journal_worker(script, journal, context, **init_globals):
    """A spawned process running the script (runpy.run_path pickles by reference: the test module need not)."""
    import runpy
    return context.Process(target=runpy.run_path, args=(str(script),),
                           kwargs={"init_globals": {"JOURNAL_PATH": str(journal), **init_globals}})


def test_a_journal_storage_shared_by_two_processes(tmp_path):
    script, journal = tmp_path / "worker.py", tmp_path / "journal.log"
    script.write_text(_JOURNAL_WORKER)
    context = multiprocessing.get_context("spawn")
    optuna.create_study(study_name="shared", storage=_journal_storage(journal))
    workers = [_journal_worker(script, journal, context, SEED=seed) for seed in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    study = optuna.load_study(study_name="shared", storage=_journal_storage(journal))
    trials = study.trials
    assert len(trials) == 16 and all(t.state == TrialState.COMPLETE for t in trials)
    # (no check that the 16 configurations differ: two processes proposing at the same moment may not see
    # each other's proposal, and then both take the corner the model prefers, as with Optuna's GPSampler)
    assert sum(bool(_proposed(t)) for t in trials) >= 8


# ------------------------------------------------------------------------------------------- errors
def test_a_multi_objective_study_is_refused():
    study = optuna.create_study(directions=["minimize", "maximize"], sampler=FMSampler(seed=0))
    with pytest.raises(ValueError, match="single-objective"):
        study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=1)


@pytest.mark.parametrize("kwargs, parameter", [
    ({"n_startup_trials": -1}, "n_startup_trials"),
    ({"n_startup_trials": 2.5}, "n_startup_trials"),
    ({"independent_sampler": "random"}, "independent_sampler"),
    ({"kernel": 3}, "kernel"),
    ({"kernel": ff.kernels.ModLap(ff.Space([ff.Categorical("c", [0, 1])]))}, "kernel"),
    ({"optimizer_options": {"seed": 1}}, "optimizer_options"),
    ({"optimizer_options": {"n_restart": 2}}, "optimizer_options"),
    ({"optimizer_options": [("n_restarts", 2)]}, "optimizer_options"),
])
def test_bad_arguments_raise_typed_errors_naming_them(kwargs, parameter):
    with pytest.raises(ff.InvalidValueError, match=parameter) as info:
        FMSampler(**kwargs)
    assert info.value.parameter == parameter


def test_bad_kernel_names_and_optimizer_values_fail_when_the_sampler_is_made():
    with pytest.raises(ValueError, match="unknown kernel"):
        FMSampler(kernel="no-such-kernel")
    with pytest.raises(ValueError, match="acquisition"):
        FMSampler(optimizer_options={"acquisition": "nope"})


def test_a_kernel_can_be_built_per_search_space():
    sampler = FMSampler(seed=0, n_startup_trials=3, optimizer_options=FAST,
                        kernel=functools.partial(ff.kernels.make_kernel, "prodlap"))
    study = optuna.create_study(sampler=sampler)
    study.optimize(_mixed_objective, n_trials=5)
    assert _proposed(study.trials[-1]) == study.trials[-1].params


def test_the_sampler_pickles():
    sampler = pickle.loads(pickle.dumps(FMSampler(seed=0, n_startup_trials=3, optimizer_options=FAST)))
    study = optuna.create_study(sampler=sampler)
    study.optimize(_mixed_objective, n_trials=4)
    assert _proposed(study.trials[-1])
