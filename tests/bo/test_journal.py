"""The crash-safe journal: a run killed with SIGKILL is continued with nothing lost, ``Optimizer.load`` gives
the next suggestion of the uninterrupted run, a torn last line is tolerated, several processes share one
journal, and misuse raises ``StorageError``."""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import _bo_objectives as objectives
import fastfm as ff

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASTFM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ff.__file__)))


def _child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([FASTFM_ROOT, TESTS_DIR] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH")
                                                                     else []))
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    env.update(extra)
    return env


def _records(path):
    """The complete, valid records of a journal file (a torn line skipped)."""
    out = []
    with open(path, "rb") as fh:
        data = fh.read()
    for line in data.split(b"\n")[:-1]:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _tells(path):
    return [r for r in _records(path) if r["type"] == "tell"]


def _same_value(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


# ------------------------------------------------------------------------------------------------ (a) SIGKILL
KILLED_RUN = textwrap.dedent("""
    import sys
    import _bo_objectives as objectives
    import fastfm as ff
    ff.minimize(objectives.slow_quadratic, objectives.SPACE, n_iter=60, n_init=4, seed=11, progress=False,
                storage=sys.argv[1], n_restarts=2)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_run_killed_with_sigkill_is_continued_with_nothing_lost(tmp_path):
    path = tmp_path / "run.jsonl"
    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN)
    k = 6                                          # past n_init: the GP is in use when it dies
    # the child hangs in the evaluation of trial k, so that it surely dies with that ask pending
    child = subprocess.Popen([sys.executable, str(script), str(path)],
                             env=_child_env(FASTFM_TEST_SLEEP="0.05", FASTFM_TEST_HANG_ID=str(k)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            if path.exists() and len(_tells(path)) >= k and any(r["type"] == "ask" and r["id"] == k
                                                                for r in _records(path)):
                break
            assert child.poll() is None, f"the child ended early: {child.stderr.read().decode()[-2000:]}"
            assert time.monotonic() < deadline, "the child made no progress"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()                               # reaped: its pid is no longer alive
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    before = _tells(path)
    told_before = {r["id"]: r["value"] for r in before}
    assert len(told_before) == len(before) >= k
    dead = ff.Optimizer.load(path)
    orphan_ids = [p.trial_id for p in dead.pending]      # asks the killed process was evaluating
    assert orphan_ids == [k]
    n_iter = max(12, len(told_before) + 4)

    result = ff.minimize(objectives.slow_quadratic, objectives.SPACE, n_iter=n_iter, seed=11, progress=False,
                         storage=path, n_restarts=2)
    assert result.status == "completed", result.message
    assert result.n_evals == n_iter
    ids = [t.trial_id for t in result.trials]
    assert len(set(ids)) == len(ids)
    by_id = {t.trial_id: t for t in result.trials}
    for trial_id, value in told_before.items():        # every value told before the kill, unchanged
        assert not by_id[trial_id].failed
        assert by_id[trial_id].value == value
    # the orphaned asks were evaluated first, under their own ids
    new_tells = [r["id"] for r in _tells(path)][len(before):]
    assert sorted(new_tells[:len(orphan_ids)]) == sorted(orphan_ids)
    for trial_id in orphan_ids:
        assert by_id[trial_id].value == pytest.approx(objectives.value_of(by_id[trial_id].config), rel=1e-12)
    assert result.optimizer.pending == []
    # and the journal agrees with the result
    reloaded = ff.Optimizer.load(path)
    assert [(t.trial_id, t.value) for t in reloaded.trials] == [(t.trial_id, t.value) for t in result.trials]


# -------------------------------------------------------------------------------------- (b) reproducibility
def _copy_and_load(path, tmp_path, name):
    copy = tmp_path / name
    shutil.copyfile(path, copy)
    return ff.Optimizer.load(copy)


@pytest.mark.parametrize("pending", ["believer", "liar_min"])
def test_a_loaded_optimizer_suggests_what_the_uninterrupted_one_does(tmp_path, pending):
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(objectives.SPACE, n_init=4, seed=3, n_restarts=2, pending=pending, storage=path)
    for _ in range(10):                            # 6 model suggestions after the random ones
        x = opt.ask()
        opt.tell(x, objectives.value_of(x))
    assert opt.last_suggestion_info["source"] == "model"

    # right after a tell (the next ask refits)
    loaded = _copy_and_load(path, tmp_path, "copy1.jsonl")
    a, b = opt.ask(), loaded.ask()
    assert a == b and a.trial_id == b.trial_id

    # with that ask still pending (the next one reuses the fit and conditions on the pending point)
    loaded = _copy_and_load(path, tmp_path, "copy2.jsonl")
    assert loaded.pending == opt.pending
    a2, b2 = opt.ask(), loaded.ask()
    assert a2 == b2 and a2.trial_id == b2.trial_id

    # a batch, with two asks pending
    loaded = _copy_and_load(path, tmp_path, "copy3.jsonl")
    batch_a, batch_b = opt.ask(n=3), loaded.ask(n=3)
    assert batch_a == batch_b
    assert [s.trial_id for s in batch_a] == [s.trial_id for s in batch_b]

    # tell some of them, abandon one, and ask again
    opt.tell(a, objectives.value_of(a))
    opt.abandon(batch_a[0])
    opt.tell(batch_a[2].trial_id, objectives.value_of(batch_a[2]))
    loaded = _copy_and_load(path, tmp_path, "copy4.jsonl")
    assert [(t.trial_id, t.config, t.value) for t in loaded.trials] == \
        [(t.trial_id, t.config, t.value) for t in opt.trials]
    assert loaded.pending == opt.pending
    assert [p.trial_id for p in loaded.pending] == [p.trial_id for p in opt.pending]
    assert opt.ask(n=2) == loaded.ask(n=2)


def test_a_run_over_sets_is_journaled_and_loaded_with_its_points(tmp_path):
    # a Set parameter's config value is an (m, dim) array: the journal writes it as nested lists
    space = ff.Space([ff.Set("points", n_points=3, dim=2, low=0.0, high=1.0), ff.Real("w", 0.0, 1.0)])

    def objective(config):
        return float(np.abs(config["points"] - 0.25).sum() + config["w"])

    path = tmp_path / "sets.jsonl"
    opt = ff.Optimizer(space, n_init=3, seed=0, storage=path)
    for _ in range(5):
        x = opt.ask()
        opt.tell(x, objective(x))
    pending = opt.ask()
    ask_records = [json.loads(line) for line in open(path) if '"type":"ask"' in line]
    assert len(ask_records) == 6
    assert np.asarray(ask_records[-1]["config"]["points"]).shape == (3, 2)
    loaded = _copy_and_load(path, tmp_path, "copy.jsonl")
    for got, expected in zip(loaded.trials, opt.trials):
        assert (got.trial_id, got.value) == (expected.trial_id, expected.value)
        np.testing.assert_array_equal(got.config["points"], expected.config["points"])
    np.testing.assert_array_equal(loaded.pending[0]["points"], pending["points"])
    opt.tell(pending, objective(pending))
    loaded.tell(pending.trial_id, objective(pending))
    np.testing.assert_array_equal(space.encode(loaded.ask()), space.encode(opt.ask()))


# -------------------------------------------------------------------------------------------- (c) torn line
def test_a_torn_last_line_is_tolerated_and_later_appends_stay_readable(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(objectives.SPACE, kernel="random", n_init=2, seed=0, storage=path)
    told = []
    for _ in range(3):
        x = opt.ask()
        told.append((opt.tell(x, objectives.value_of(x)).trial_id, objectives.value_of(x)))
    pending = opt.ask()
    del opt
    with open(path, "ab") as fh:                  # a writer killed in the middle of a record
        fh.write(b'{"type":"tell","id":3,"value":0.25,"fai')

    with warnings.catch_warnings():
        warnings.simplefilter("error")             # a torn *last* line is not even worth a warning
        loaded = ff.Optimizer.load(path)
    assert [(t.trial_id, t.value) for t in loaded.trials] == told
    assert loaded.pending == [pending] and loaded.pending[0].trial_id == pending.trial_id

    # the next writer ends the torn line (and then reads it back as a skipped torn line); the records after
    # it are whole
    with pytest.warns(RuntimeWarning, match="torn"):
        loaded.tell(pending, 1.5)
    x = loaded.ask()
    with pytest.warns(RuntimeWarning, match="torn"):
        again = ff.Optimizer.load(path)
    assert [(t.trial_id, t.value) for t in again.trials] == told + [(pending.trial_id, 1.5)]
    assert again.pending == [x] and again.pending[0].trial_id == x.trial_id
    with open(path, "rb") as fh:
        assert fh.read().endswith(b"\n")
    # and it can go on from there
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        again.tell(x, 2.0)
        third = ff.Optimizer.load(path)
    assert [t.trial_id for t in third.trials] == [t for t, _ in told] + [pending.trial_id, x.trial_id]
    assert third.pending == []


# ------------------------------------------------------------------------------- (d) processes sharing it
SHARED_WORKER = textwrap.dedent("""
    import json, sys
    import _bo_objectives as objectives
    import fastfm as ff
    path, n_steps = sys.argv[1], int(sys.argv[2])
    opt = ff.Optimizer.load(path)
    told = []
    for _ in range(n_steps):
        x = opt.ask()
        y = objectives.value_of(x)
        trial = opt.tell(x, y)
        assert trial.trial_id == x.trial_id, (trial, x)
        told.append([x.trial_id, y, dict(x)])
    print(json.dumps(told))
""")


def test_four_processes_share_one_journal(tmp_path):
    path = tmp_path / "shared.jsonl"
    ff.Optimizer(objectives.SPACE, n_init=4, seed=0, n_restarts=2, storage=path)   # the header only
    script = tmp_path / "worker.py"
    script.write_text(SHARED_WORKER)
    n_procs, n_steps = 4, 5
    children = [subprocess.Popen([sys.executable, str(script), str(path), str(n_steps)], env=_child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n_procs)]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err.decode()[-3000:]
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))

    told = [tuple(item[:2]) for output in outputs for item in output]
    assert len(told) == n_procs * n_steps
    ids = [trial_id for trial_id, _ in told]
    assert len(set(ids)) == len(ids)                       # no id handed out twice
    final = ff.Optimizer.load(path)
    assert len(final.trials) == n_procs * n_steps           # one tell per evaluation, none lost or doubled
    assert final.pending == []
    by_id = {t.trial_id: t for t in final.trials}
    assert len(by_id) == len(final.trials)
    for trial_id, value in told:
        assert by_id[trial_id].value == value
    for output in outputs:
        for trial_id, _, config in output:
            assert by_id[trial_id].config == config
    # no config evaluated twice: each process saw the others' trials and pending asks
    configs = [tuple(sorted(t.config.items())) for t in final.trials]
    assert len(set(configs)) == len(configs)
    assert sorted(ids) == list(range(n_procs * n_steps))   # ids are dense: no ask was lost either
    assert len([r for r in _records(path) if r["type"] == "tell"]) == n_procs * n_steps


SHARED_MINIMIZE = textwrap.dedent("""
    import sys
    import _bo_objectives as objectives
    import fastfm as ff
    result = ff.minimize(objectives.slow_quadratic, objectives.SPACE, n_iter=int(sys.argv[2]), n_init=4, seed=0,
                         progress=False, storage=sys.argv[1], n_restarts=2)
    print(result.status, result.n_evals)
""")


def test_minimize_in_three_processes_on_one_journal_stops_at_n_iter(tmp_path):
    path, n_iter = tmp_path / "shared.jsonl", 16
    ff.Optimizer(objectives.SPACE, n_init=4, seed=0, n_restarts=2, storage=path)   # the header only
    script = tmp_path / "run.py"
    script.write_text(SHARED_MINIMIZE)
    children = [subprocess.Popen([sys.executable, str(script), str(path), str(n_iter)], env=_child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err.decode()[-3000:]
        assert out.decode().split()[0] == "completed"
    final = ff.Optimizer.load(path)
    # each process's budget counts the others' pending asks, decided under the journal's lock
    assert len(final.trials) == n_iter and final.pending == []
    assert sorted(t.trial_id for t in final.trials) == list(range(n_iter))


def test_processes_that_join_with_their_own_seed_draw_their_own_random_points(tmp_path):
    path = tmp_path / "run.jsonl"
    ff.Optimizer(objectives.SPACE, kernel="random", n_init=2, seed=0, storage=path)
    shutil.copy(path, tmp_path / "copy.jsonl")
    restored = [ff.Optimizer.load(p) for p in (path, tmp_path / "copy.jsonl")]
    assert dict(restored[0].ask()) == dict(restored[1].ask())          # "restore": the run's own generator
    joined = [ff.Optimizer.load(p, seed=i) for i, p in enumerate((tmp_path / "a.jsonl", tmp_path / "b.jsonl"))
              if shutil.copy(tmp_path / "copy.jsonl", p)]
    assert dict(joined[0].ask()) != dict(joined[1].ask())


# ---------------------------------------------------------------------------------------------- (e) errors
def test_storage_errors(tmp_path):
    path = tmp_path / "run.jsonl"
    ff.Optimizer(objectives.SPACE, kernel="random", n_init=2, seed=0, storage=path)
    size = os.path.getsize(path)
    with pytest.raises(ff.StorageError, match="already holds a journal"):
        ff.Optimizer(objectives.SPACE, kernel="random", n_init=2, seed=0, storage=path)
    assert os.path.getsize(path) == size                    # the existing journal is untouched

    other = tmp_path / "notes.txt"
    other.write_text('{"hello": "world", "type": "note"}\n')
    with pytest.raises(ff.StorageError):
        ff.Optimizer.load(other)
    text = tmp_path / "plain.txt"
    text.write_text("just some text\nand more\n")
    with pytest.raises(ff.StorageError), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ff.Optimizer.load(text)
    with pytest.raises(ff.StorageError):
        ff.Optimizer.load(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(ff.StorageError):
        ff.Optimizer.load(empty)
    with pytest.raises(ff.StorageError):
        ff.Optimizer(objectives.SPACE, storage=tmp_path / "no_such_dir" / "run.jsonl")
    # minimize refuses to continue a journal of another space
    space2 = ff.Space([ff.Real("x", -1.0, 1.0)])
    with pytest.raises(ff.StorageError, match="another space"):
        ff.minimize(lambda c: c["x"] ** 2, space2, n_iter=3, progress=False, storage=path)
    # an objective a process pool cannot take is refused before anything is written
    fresh = tmp_path / "fresh.jsonl"
    with pytest.raises(ff.ObjectiveNotPicklableError):
        ff.minimize(lambda c: 0.0, objectives.SPACE, n_iter=3, n_workers=2, progress=False, storage=fresh)
    assert not fresh.exists()


def test_the_exploration_margin_is_journaled_and_validated(tmp_path):
    from fastfm.bo.optimizer import DEFAULT_XI
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", ["a", "b"])])
    path = tmp_path / "xi.jsonl"
    opt = ff.Optimizer(space, seed=0, xi=0.05, storage=path)
    opt.tell(opt.ask(), 1.0)
    assert ff.Optimizer.load(path).xi == 0.05
    assert ff.Optimizer(space).xi == DEFAULT_XI
    for bad in (-0.1, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match="xi must be a finite number >= 0") as info:
            ff.Optimizer(space, xi=bad)
        assert info.value.parameter == "xi"
