"""The ``fastfm`` command line run for real on the smallest sizes: ``fastfm.cli.main([...])`` in process,
and ``python -m fastfm`` / ``python -m fastfm.bench`` (the deprecated alias) in a subprocess."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fastfm
import fastfm.benchmarks
from fastfm._backends import available_backends, cpp
from fastfm.cli import gpu, main
from fastfm.cli.timing import describe_machine, time_call
from fastfm.exceptions import BackendUnavailableError


def _table_rows(text, first_word):
    return [line.split() for line in text.splitlines() if line.split()[:1] == [first_word]]


def test_time_kernels_prints_the_machine_then_one_row_per_size_and_the_cross_gram(capsys):
    backend = "cpp" if "cpp" in available_backends() else "numpy"
    assert main(["time", "kernels", "--sizes", "20", "30", "--repeat", "1", "--spaces", "Func3C",
                 "--backend", backend, "--cross", "50"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("python ")
    rows = _table_rows(out, "Func3C")
    assert [row[1] for row in rows] == ["20", "30"]
    assert all(row[2].endswith("ms") and float(row[2][:-2]) > 0 for row in rows)
    assert f"cross Gram NAS-like 50 × 200: {backend}" in out


@pytest.mark.parametrize("argv", [["kernels", "--backend", "cpp"], ["sets", "--backend", "cpp"], ["hierarchical"]])
def test_time_commands_refuse_a_backend_that_is_not_here_with_a_usage_error(argv, monkeypatch, capsys):
    from fastfm.cli import kernels
    monkeypatch.setattr(kernels, "available_backends", lambda: ["numpy"])
    with pytest.raises(SystemExit) as exit_info:
        main(["time", *argv, "--repeat", "1"])
    assert exit_info.value.code == 2
    assert "backend 'cpp' is not available here (available: ['numpy'])" in capsys.readouterr().err


def test_time_sets_and_hierarchical_print_their_tables(capsys):
    assert main(["time", "sets", "--shape", "6", "4", "2", "--subsample", "2", "--repeat", "1",
                 "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("(6, 4, 2)")]
    assert [row.split()[3] for row in rows] == ["4", "2"]          # exact (L = m), then K̂ with L = 2
    assert main(["time", "hierarchical", "--sizes", "20", "--repeat", "1"]) == 0
    rows = _table_rows(capsys.readouterr().out, "20")
    assert len(rows) == 1 and float(rows[0][1][:-2]) > 0


def test_time_regression_prints_the_command_and_a_row_per_size(capsys):
    argv = ["time", "regression", "--sizes", "40,50", "--n-test", "10", "--subset", "30", "--restarts", "0",
            "--peers", "none"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "command: fastfm " + " ".join(argv) in out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| fastfm ModLap")]
    assert [int(row[2]) for row in rows] == [40, 50]
    assert all(0 < float(row[7]) < 5 for row in rows)


def test_time_gpu_without_a_gpu_says_so_and_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "available_backends", lambda: ["cpp", "numpy"])
    monkeypatch.setattr(gpu, "backend_status", lambda: {"cuda": "no CUDA GPU (test double)"})
    assert main(["time", "gpu", "--parity-only"]) == 2
    assert "the cuda backend is not available here: no CUDA GPU (test double)" in capsys.readouterr().err


def test_bench_runs_bo_and_writes_the_table_and_json(tmp_path, capsys):
    path = tmp_path / "runs.json"
    assert main(["bench", "func2c", "--budget", "12", "--seeds", "1", "--quiet", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "fastfm bench: Func2C, kernels ['auto'], budget 12 (10 initial), seeds 0..0" in out
    assert "(known optimum: -0.206326)" in out
    saved = json.loads(path.read_text())
    (run,) = saved["runs"]
    assert (saved["problem"], saved["budget"], run["kernel"], run["seed"]) == ("Func2C", 12, "auto", 0)
    assert len(run["curve"]) == 12 and run["best"] == min(run["curve"])


def test_bench_names_the_best_known_value_where_no_optimum_is_known(capsys):
    assert main(["bench", "pestcontrol", "--budget", "11", "--seeds", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "(best known, not proven optimal: +12.031600)" in out and "known optimum" not in out


def test_bench_writes_a_set_problems_best_points_as_numbers(tmp_path):
    path = tmp_path / "runs.json"
    assert main(["bench", "pmedian", "--budget", "11", "--seeds", "1", "--quiet", "--json", str(path)]) == 0
    (run,) = json.loads(path.read_text())["runs"]
    points = np.array(run["best_x"]["points"], dtype=float)      # not the array's printed text
    assert points.shape == (6, 2) and run["best"] == pytest.approx(fastfm.benchmarks.PMedian()({"points": points}))


@pytest.mark.parametrize("problem", ["func2c", "pmedian"])      # pmedian: a Set parameter, configs of arrays
def test_bench_with_workers_records_a_journal_and_continues_it(tmp_path, capsys, problem):
    journal = tmp_path / "run.jsonl"
    args = ["bench", problem, "--seeds", "1", "--quiet", "--workers", "2", "--storage", str(journal)]
    assert main(args + ["--budget", "12"]) == 0
    first = fastfm.Optimizer.load(journal).trials
    assert len(first) == 12
    assert main(args + ["--budget", "14"]) == 0           # the same journal, a larger budget: 2 more
    again = fastfm.Optimizer.load(journal).trials
    assert len(again) == 14 and [t.trial_id for t in again[:12]] == [t.trial_id for t in first]
    assert [t.value for t in again[:12]] == [t.value for t in first]
    with pytest.raises(SystemExit, match="one kernel, --seeds 1"):
        main(["bench", problem, "--seeds", "2", "--storage", str(journal)])
    if problem == "pmedian":          # the set baselines that are not one BO run take no journal
        with pytest.raises(SystemExit, match="--kernel split is not one BO run"):
            main(["bench", problem, "--kernel", "split", "--seeds", "1", "--storage", str(journal)])


def test_bench_rejects_an_unknown_problem():
    with pytest.raises(Exception, match="nope"):
        main(["bench", "nope", "--budget", "3", "--seeds", "1"])


def test_info_prints_the_configuration(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"fastfm {fastfm.__version__}\n")
    assert "backend setting:" in out and "numpy : available" in out


def test_build_info_is_the_extensions_and_feeds_the_machine_line(monkeypatch):
    if "cpp" in available_backends():
        import fastfm._cpp as extension
        info = cpp.build_info()
        assert info == dict(extension.build_info())
        assert f"fastfm._cpp: OpenMP {'on' if info['openmp'] else 'off'} ({info['max_threads']} threads)" \
            in describe_machine()
    monkeypatch.setattr(cpp, "_cpp", None)
    with pytest.raises(BackendUnavailableError, match="fastfm._cpp"):
        cpp.build_info()


def test_time_call_takes_the_statistic_of_the_repeats_after_the_warmup(monkeypatch):
    from fastfm.cli import timing
    calls = []
    ticks = iter([0, 1, 10, 12, 20, 25])            # three runs of 1, 2 and 5 ticks
    monkeypatch.setitem(timing.CLOCKS, "test", lambda: next(ticks))
    assert time_call(lambda: calls.append(1), 3, warmup=1, clock="test", statistic="min") == 1
    assert len(calls) == 4                          # the warm-up call is not timed
    ticks = iter([0, 1, 10, 12, 20, 25])
    monkeypatch.setitem(timing.CLOCKS, "test", lambda: next(ticks))
    assert time_call(lambda: None, 3, warmup=0, clock="test") == 2    # the median


def _run_module(args, tmp_path):
    # from a scratch directory, so that the fastfm imported is the one on PYTHONPATH or installed,
    # never a source folder in the working directory
    return subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "default"})


def test_python_m_fastfm_runs_the_cli(tmp_path):
    result = _run_module(["-m", "fastfm", "info"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("fastfm ")


def test_python_m_fastfm_bench_is_a_deprecated_alias_of_fastfm_time(tmp_path):
    argv = ["sets", "--shape", "4", "3", "2", "--subsample", "2", "--repeat", "1", "--backend", "numpy"]
    result = _run_module(["-m", "fastfm.bench", *argv], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "FutureWarning" in result.stderr
    assert f"use `fastfm time {' '.join(argv)}` instead" in result.stderr
    assert len([line for line in result.stdout.splitlines() if line.startswith("(4, 3, 2)")]) == 2
