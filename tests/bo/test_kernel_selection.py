"""kernel="auto": which spaces get the ModLap / AdditiveFM choice, when a run may switch, and that a journal
replays the choice (a loaded optimizer suggests what the uninterrupted one does after a switch)."""
import shutil
import warnings

import numpy as np
import pytest

import fastfm as ff
from fastfm.bo import surrogate
from fastfm.bo.surrogate import ADDITIVE_MAX_DIMS, _is_full_refit
from fastfm.gp import selection
from fastfm.kernels import AdditiveFM, Matern52, ModLap

FAST = {"n_random": 2000, "n_starts": 10}   # a smaller acquisition search keeps the tests quick
SPACE = ff.Space([ff.Real("x", -1.0, 1.0), ff.Real("z", -1.0, 1.0), ff.Categorical("a", list(range(3))),
                  ff.Categorical("b", list(range(5)))])
_EFFECT_A, _EFFECT_B = np.array([0.0, -1.0, 0.6]), np.array([0.4, -0.8, 0.5, 0.5, 0.5])


def _additive_objective(config):
    """Main effects of a and b on a shared bowl: what AdditiveFM models and a product kernel does not carry."""
    return ((config["x"] - 0.3) ** 2 + (config["z"] + 0.2) ** 2 + _EFFECT_A[config["a"]] + _EFFECT_B[config["b"]])


def test_the_candidates_of_each_space():
    assert {name: type(k) for name, k in ff.Optimizer(SPACE)._kernels.items()} == \
        {"modlap": ModLap, "modlap_additive": AdditiveFM}
    wide = ff.Space([ff.Categorical(f"c{i}", [0, 1]) for i in range(ADDITIVE_MAX_DIMS)])
    assert list(ff.Optimizer(wide)._kernels) == ["modlap"]
    # a large space with a continuous variable weighs both (Mixed10C20N, Ackley53: docs/benchmarks/bo-efficiency.md)
    wide_mixed = ff.Space([ff.Real("x", -1.0, 1.0)] + wide.parameters)
    assert {name: type(k) for name, k in ff.Optimizer(wide_mixed)._kernels.items()} == \
        {"modlap": ModLap, "modlap_additive": AdditiveFM}
    # groups of nominal values are learned on the small spaces only (their search was most of a large full refit)
    wide_nominal = ff.Space([ff.Real("x", -1.0, 1.0)] + [ff.Categorical(f"c{i}", [0, 1, 2]) for i in range(20)])
    assert len(ff.Optimizer(wide_nominal)._kernels) == 2 and not ff.Optimizer(wide_nominal)._learns_value_groups()
    assert ff.Optimizer(SPACE)._learns_value_groups()
    with_set = ff.Space([ff.Categorical("a", [0, 1]), ff.Set("s", 3, 2)])
    assert list(ff.Optimizer(with_set)._kernels) == ["modlap"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # "auto" asks for no FM kernel: no fallback warning
        continuous = ff.Optimizer(ff.Space([ff.Real("x", 0.0, 1.0)]))
    assert isinstance(continuous._kernel, Matern52) and len(continuous._kernels) == 1
    assert list(ff.Optimizer(SPACE, kernel="modlap")._kernels) == ["kernel"]
    with pytest.warns(RuntimeWarning, match="needs discrete variables"):
        ff.Optimizer(ff.Space([ff.Real("x", 0.0, 1.0)]), kernel="modlap")


def _run(opt, n):
    kernels = []
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, _additive_objective(x))
        kernels.append((opt.n_told - 1, opt.last_suggestion_info.get("kernel")))
    return kernels


def test_a_run_switches_only_at_full_refits_and_a_journal_replays_the_choice(tmp_path, monkeypatch):
    # the plain leave-one-out choice (no margin for AdditiveFM), under which this run changes its mind
    monkeypatch.setattr(surrogate, "KERNEL_CHOICE_STANDARD_ERRORS", 0.0)
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(SPACE, n_init=6, seed=2, n_restarts=3, storage=path)
    kernels = _run(opt, 30)
    model = [(n, k) for n, k in kernels if k is not None]
    assert {k for _, k in model} == {"modlap", "modlap_additive"}     # this run changes its mind
    for (_, before), (n, after) in zip(model, model[1:]):
        assert before == after or _is_full_refit(n), (n, before, after)

    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    assert loaded._fit_record == opt._fit_record
    a, b = opt.ask(n=2), loaded.ask(n=2)
    assert a == b
    assert opt.last_suggestion_info["kernel"] == loaded.last_suggestion_info["kernel"]
    assert opt.last_suggestion_info["y_transform"] == loaded.last_suggestion_info["y_transform"]
    for x in a:
        opt.tell(x, _additive_objective(x))
        loaded.tell(x.trial_id, _additive_objective(x))
    assert opt.ask() == loaded.ask()


def test_a_journal_of_one_kernel_on_a_space_that_now_weighs_two_replays_and_continues(tmp_path, monkeypatch):
    """A run recorded when kernel="auto" fitted ModLap alone on its space (a large space with a continuous
    variable, before 2026-12-06) loads, suggests what the recorded run would have, and goes on with both kernels."""
    space = ff.Space([ff.Real("x", -1.0, 1.0)] + [ff.Categorical(f"c{i}", [0, 1, 2]) for i in range(ADDITIVE_MAX_DIMS)])

    def objective(config):
        return (config["x"] - 0.3) ** 2 + 0.2 * sum(config[f"c{i}"] == 1 for i in range(ADDITIVE_MAX_DIMS))

    path = tmp_path / "run.jsonl"
    with monkeypatch.context() as patch:       # the rule of the earlier version: ModLap alone from 20 columns on
        patch.setattr(surrogate, "_admits_additive", lambda s: s.n_dims < ADDITIVE_MAX_DIMS)
        opt = ff.Optimizer(space, n_init=4, seed=0, n_restarts=2, storage=path, acq_options=FAST)
        assert list(opt._kernels) == ["modlap"]
        for _ in range(13):                    # 13 told: the next fit is a warm refit (12 and 15 are full ones)
            x = opt.ask()
            opt.tell(x, objective(x))
        expected = opt.ask()
        assert "kernel" not in opt._fit_record and not _is_full_refit(opt._fit_record["n_told"])
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    for journal in (path, copy):               # the recorded run's last ask stays pending in both
        loaded = ff.Optimizer.load(journal)
        assert list(loaded._kernels) == ["modlap", "modlap_additive"]
        loaded._gp = None
        loaded._gp = loaded._fit(loaded._fit_record)   # the recorded fit, rebuilt from its record alone
        np.testing.assert_array_equal(loaded.model.kernel_.theta, opt.model.kernel_.theta)
    loaded.tell(expected.trial_id, objective(expected))
    for _ in range(4):                         # on to the full refit at 15 told values, which weighs both
        x = loaded.ask()
        loaded.tell(x, objective(x))
    assert loaded._fit_record["n_told"] >= 15 and loaded._fit_record["kernel"] in ("modlap", "modlap_additive")


def test_a_large_space_fits_both_kernels_from_fewer_starts_and_a_journal_without_the_keys_from_all(tmp_path,
                                                                                                monkeypatch):
    """LARGE_ADDITIVE_RESTARTS and LARGE_MODLAP_RESTARTS: on a space of ADDITIVE_MAX_DIMS columns or more,
    kernel="auto"'s full fits run AdditiveFM, and from LARGE_MODLAP_FROM_TOLD told values ModLap, from fewer random
    restarts (both kernels on a smaller space from all of them); the record says so, a loaded journal rebuilds the
    fit from it bit for bit, and a record without a kernel's key (written before) rebuilds that kernel's fit with
    every restart."""
    large = ff.Space([ff.Real("x", -1.0, 1.0)] + [ff.Categorical(f"c{i}", [0, 1, 2]) for i in range(ADDITIVE_MAX_DIMS)])

    def objective(config):
        return (config["x"] - 0.3) ** 2 + 0.2 * sum(config[f"c{i}"] == 1 for i in range(ADDITIVE_MAX_DIMS))

    fits = []
    original_fit = surrogate._Surrogate._fit_kernel

    def recording_fit(self, name, record, *args, **options):
        gp = original_fit(self, name, record, *args, **options)
        fits.append((record["n_told"], name, options.get("start") is None and options.get("rival") is None,
                     gp.n_restarts, gp.n_finalists))
        return gp
    monkeypatch.setattr(surrogate._Surrogate, "_fit_kernel", recording_fit)
    modlap_from = 8                # ModLap's full fits at 4, 5 and 6 told values from every restart, then fewer
    monkeypatch.setattr(surrogate, "LARGE_MODLAP_FROM_TOLD", modlap_from)
    restarts = max(surrogate.LARGE_ADDITIVE_RESTARTS, surrogate.LARGE_MODLAP_RESTARTS) + 2
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(large, n_init=4, seed=0, n_restarts=restarts, storage=path, acq_options=FAST)
    for _ in range(12):            # full fits at 4 (the first), 5, 6, ..., 10 and 12 told values
        x = opt.ask()
        opt.tell(x, objective(x))
    opt.ask()                      # the fit at 12, pending in the journal
    full_additive = {(n_told, r, f) for n_told, name, own, r, f in fits if name == "modlap_additive" and own
                     and _is_full_refit(n_told)}
    assert full_additive and all((r, f) == (surrogate.LARGE_ADDITIVE_RESTARTS, surrogate.LARGE_ADDITIVE_FINALISTS)
                                 for _, r, f in full_additive)
    full_modlap = {(n_told, r, f) for n_told, name, own, r, f in fits if name == "modlap" and own
                   and _is_full_refit(n_told)}
    assert {n_told for n_told, _, _ in full_modlap} == {4, 5, 6, 8, 10, 12}
    assert all((r, f) == ((surrogate.LARGE_MODLAP_RESTARTS, surrogate.LARGE_MODLAP_FINALISTS) if n_told >= modlap_from
                          else (restarts, surrogate.FULL_FINALISTS)) for n_told, r, f in full_modlap)
    record = opt._fit_record
    assert _is_full_refit(record["n_told"])
    assert record["additive_starts"]["n_restarts"] == surrogate.LARGE_ADDITIVE_RESTARTS
    assert record["modlap_starts"]["n_restarts"] == surrogate.LARGE_MODLAP_RESTARTS
    loaded = ff.Optimizer.load(path)
    fits.clear()
    loaded._gp = None
    rebuilt = loaded._fit(loaded._fit_record)
    np.testing.assert_array_equal(rebuilt.kernel_.theta, opt.model.kernel_.theta)
    restarts_rebuilt = {name: r for _, name, own, r, _ in fits if own}
    assert restarts_rebuilt == {"modlap_additive": surrogate.LARGE_ADDITIVE_RESTARTS,
                                "modlap": surrogate.LARGE_MODLAP_RESTARTS}
    for key, name in (("additive_starts", "modlap_additive"), ("modlap_starts", "modlap")):
        fits.clear()
        old = {k: v for k, v in loaded._fit_record.items() if k != key}
        loaded._fit(old)
        assert [r for _, fitted, own, r, _ in fits if fitted == name and own] == [restarts]

    fits.clear()                   # below ADDITIVE_MAX_DIMS columns: every restart
    small = ff.Optimizer(SPACE, n_init=4, seed=0, n_restarts=restarts, acq_options=FAST)
    for _ in range(6):
        x = small.ask()
        small.tell(x, _additive_objective(x))
    assert {(name, r) for n_told, name, own, r, _ in fits if own
            and _is_full_refit(n_told)} == {("modlap_additive", restarts), ("modlap", restarts)}


def test_the_additive_kernel_is_kept_where_modlap_is_ahead_within_the_margin(monkeypatch):
    """The run above, with the default margin: its early full refits, where ModLap's held-out density was ahead by
    less than KERNEL_CHOICE_STANDARD_ERRORS standard errors, keep AdditiveFM."""
    scores = []
    original = surrogate.select_by_loo

    def recording(gps, y=None, **options):
        if y is None:
            scores.append({name: selection.loo_log_predictive_density(gp) for name, gp in gps.items()})
        return original(gps, y, **options)
    monkeypatch.setattr(surrogate, "select_by_loo", recording)
    kept = [k for _, k in _run(ff.Optimizer(SPACE, n_init=6, seed=2, n_restarts=3), 30) if k is not None]
    assert set(kept) == {"modlap_additive"}
    assert any(s["modlap"] > s["modlap_additive"] for s in scores)     # the plain choice would have taken ModLap


def test_main_effects_in_a_run_choose_the_additive_kernel():
    """What the BO data show on an objective with main effects: by 30 evaluations every seed's full refit has
    chosen AdditiveFM (a choice by held-out prediction that ignored the structure would not)."""
    final = []
    for seed in range(3):
        opt = ff.Optimizer(SPACE, seed=seed, n_restarts=3)
        final.append(_run(opt, 30)[-1][1])
    assert final == ["modlap_additive"] * 3


def test_a_far_behind_modlap_is_refitted_warm_and_a_journal_replays_it(tmp_path, monkeypatch):
    """RIVAL_WARM_STANDARD_ERRORS: once a full refit keeps AdditiveFM with ModLap behind by more than that many
    standard errors, the next full refit starts ModLap at its recorded optimum with a warm refit's restarts and
    racing (the warm fits between carry the record), and compares it again; a loaded journal does the same."""
    fits, behind = [], {}
    original_fit, original_difference = surrogate._Surrogate._fit_kernel, surrogate.loo_difference

    def recording_fit(self, name, record, *args, rival=None, **options):
        gp = original_fit(self, name, record, *args, rival=rival, **options)
        fits.append((record["n_told"], name, rival, gp.n_restarts, gp.n_finalists))
        return gp

    def recording_difference(gp, other):
        ahead, standard_error = original_difference(gp, other)
        behind[gp.X_train_.shape[0]] = ahead / standard_error
        return ahead, standard_error
    monkeypatch.setattr(surrogate._Surrogate, "_fit_kernel", recording_fit)
    monkeypatch.setattr(surrogate, "loo_difference", recording_difference)
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(SPACE, n_init=6, seed=0, n_restarts=3, storage=path)
    records = {}
    for _ in range(40):
        x = opt.ask()
        if opt._fit_record is not None:
            records[opt.n_told] = dict(opt._fit_record)
        opt.tell(x, _additive_objective(x))
    full = [n for n in records if _is_full_refit(n)]
    assert {n for n in full if "rival" in records[n]} == \
        {n for n in full if behind.get(n, 0.0) > surrogate.RIVAL_WARM_STANDARD_ERRORS}
    assert all(records[n].get("rival") == records[n - 1].get("rival") for n in records if n - 1 in records
               and not _is_full_refit(n))           # carried by the warm fits
    warm_modlap = [(n, rival, restarts, finalists) for n, name, rival, restarts, finalists in fits
                   if name == "modlap" and rival is not None]
    assert warm_modlap, behind                  # the run has such a refit
    for n, rival, restarts, finalists in warm_modlap:
        assert _is_full_refit(n) and records[n - 1]["rival"] == rival == records[n]["rival_start"]
        assert (restarts, finalists) == (surrogate.WARM_RESTARTS, surrogate.WARM_FINALISTS)
    # every other fit of ModLap at a full refit runs all its starts
    assert all(restarts == 3 for n, name, rival, restarts, _ in fits if name == "modlap" and rival is None)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    assert loaded._fit_record == opt._fit_record
    for _ in range(12):                         # through the next full refit
        a, b = opt.ask(), loaded.ask()
        assert a == b and opt._fit_record == loaded._fit_record
        opt.tell(a, _additive_objective(a))
        loaded.tell(b.trial_id, _additive_objective(b))


def _told_optimizer(objective, n_told):
    """An optimizer told ``objective`` at the same ``n_told`` random configurations for every objective."""
    optimizer = ff.Optimizer(SPACE, seed=0, n_init=4)
    for config in SPACE.sample(n_told, seed=np.random.default_rng(5)):
        optimizer.tell(config, objective(config))
    return optimizer


def test_a_fit_continued_from_another_optimizer_is_warm_and_fitted_on_its_own_data():
    # the state FMSampler carries between proposals (Optimizer._fit_state / _continue_fit)
    n_told = 13     # no full refit of the geometric schedule at 13 told values
    assert not _is_full_refit(n_told)
    first = _told_optimizer(_additive_objective, n_told)
    first.ask()
    state = first._fit_state()
    assert state is not None and state["record"]["n_told"] == n_told

    # the same count of told values, other values: the continued fit must not be taken for this data's fit
    def reversed_objective(config):
        return -3.0 * _additive_objective(config)

    second = _told_optimizer(reversed_objective, n_told)
    second._continue_fit(state)
    second.ask()
    record = second._fit_record
    assert record["n_told"] == n_told and record["warm"] is not None
    assert record["n_restarts"] == surrogate.WARM_RESTARTS       # a warm refit, not a first fit's restarts
    assert second._gp is not state["gp"]
    values = np.array([t.value for t in second.trials])
    assert np.allclose(second._gp.predict(second._X), values, atol=0.25 * np.std(values))

    fresh = _told_optimizer(reversed_objective, n_told)
    fresh.ask()
    assert fresh._fit_record["warm"] is None and fresh._fit_record["n_restarts"] == fresh.n_restarts
