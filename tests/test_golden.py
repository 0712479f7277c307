"""Golden numbers of the GP and the BO loop, recorded on commit e3e3b63 before the GP was split into pieces.

``tests/data/golden_gp.json`` holds, as ``float.hex`` strings (exact), what today's code computes for:
fitted ``kernel_.theta``, ``noise_``, ``log_marginal_likelihood_value_`` and its gradient, ``alpha_[:5]`` and
predictions of ``GaussianProcessRegressor`` on Func3C data (exact fit, subset-then-refine, the matrix-free
solver, racing, a warm refit, a sampled prior with a log transform), and the first 15 trials of a seeded
``fastfm.minimize`` on Func2C.  A restructuring that changes any of them changed the numerics.

Bit patterns depend on the CPU (the C++ kernels' ISA clone, OpenBLAS' kernels), the OpenMP thread count and
the numpy/scipy versions (scipy's L-BFGS-B), so the file also records the machine it was made on.  Where the
fingerprint matches, every number must be equal bit for bit; elsewhere the GP numbers are compared within
the tolerances below and ``minimize`` by its initial design only (the later suggestions follow discrete
choices of the acquisition optimiser that a last-bit difference may flip).  Nothing is skipped.

Re-record (only when a change of numbers is intended, and say so in the commit):
``PYTHONPATH=$PWD python tests/test_golden.py --record``.
"""
import contextlib
import json
import math
import pathlib
import platform
import sys

import numpy as np
import pytest

import fastfm as ff
from fastfm.benchmarks import Func2C, Func3C

DATA = pathlib.Path(__file__).parent / "data" / "golden_gp.json"
SEEDS = (0, 1, 2)
# On another machine (fingerprint differs): the log marginal likelihood at the optimum to 1e-7; the rest to
# 1e-3, because L-BFGS-B stops on a relative decrease of 1e-5 (fastfm.gp's _LBFGSB_OPTIONS), so last-bit
# differences of the Gram move where it stops along flat directions.  Measured here with the NumPy backend in
# place of the C++ one: θ moved by up to 4.7e-5, α and the predictions by 3.5e-5 (PCG in double instead of
# mixed precision), the log ML by 2.4e-9, the gradient at the optimum by 7.4e-5 on a scale of 0.27.
LML_RTOL = 1e-7
OTHER_MACHINE_RTOL = 1e-3
GRADIENT_ATOL = 1e-3


# ------------------------------------------------------------------------------------------- the machine
def fingerprint():
    """What the bit patterns depend on, and which backend ran."""
    import numpy
    import scipy
    from threadpoolctl import threadpool_info

    from fastfm._backends import resolve_backend_name

    try:
        from fastfm import _cpp
        build = _cpp.build_info()
        isa = str(build["simd"]).rsplit("running ", 1)[-1]
        openmp_threads = int(build["max_threads"])
    except (ImportError, AttributeError, KeyError):
        isa, openmp_threads = None, None
    blas = sorted(f"{pool['internal_api']} {pool.get('version')} {pool.get('architecture')}"
                  for pool in threadpool_info() if pool["user_api"] == "blas")
    return {"machine": platform.machine(), "backend": resolve_backend_name("auto"), "cpp_isa": isa,
            "openmp_threads": openmp_threads, "blas": blas, "numpy": numpy.__version__, "scipy": scipy.__version__}


# ------------------------------------------------------------------------------------------- the numbers
def _hex(values):
    return [float(v).hex() for v in np.ravel(np.asarray(values, dtype=np.float64))]


@contextlib.contextmanager
def _small_auto_subset():
    """``hyperparameter_subset="auto"`` takes 40 points once N > 80 (the defaults are 2,000 and 4,000)."""
    from fastfm.gp import fitting as module   # where fit reads _AUTO_SUBSET and _AUTO_SUBSET_MIN_N
    saved = module._AUTO_SUBSET, module._AUTO_SUBSET_MIN_N
    module._AUTO_SUBSET, module._AUTO_SUBSET_MIN_N = 40, 80
    try:
        yield
    finally:
        module._AUTO_SUBSET, module._AUTO_SUBSET_MIN_N = saved


def _func3c(n, seed):
    problem = Func3C()
    X = problem.space.sample_encoded(n, seed=seed)
    return problem.space, X, problem.evaluate_encoded(X), problem.space.sample_encoded(4, seed=100 + seed)


def _record_gp(gp, X_test):
    mean, std = gp.predict(X_test, return_std=True)
    record = {"theta": _hex(gp.kernel_.theta), "noise": _hex(gp.noise_),
              "lml": _hex(gp.log_marginal_likelihood_value_), "alpha5": _hex(gp.alpha_[:5]),
              "mean": _hex(mean), "std": _hex(std), "mean_only": _hex(gp.predict(X_test)),
              "solver": gp.solver_, "subset": int(gp.hyperparameter_subset_), "failed": int(gp.n_restarts_failed_)}
    if gp.solver_ == "cholesky":
        _, gradient = gp.log_marginal_likelihood(gp._fitted_theta, eval_gradient=True)
        record["lml_gradient"] = _hex(gradient)
    else:
        record["cg_iterations"] = [int(gp.cg_info_.n_iter), int(gp.cg_info_.n_single_precision_iter)]
    return record


def gp_cases():
    """{name: the fitted model's numbers} for every golden GP fit."""
    cases = {}
    for seed in SEEDS:
        space, X, y, X_test = _func3c(60, seed)
        gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), random_state=seed).fit(X, y)
        cases[f"exact-{seed}"] = _record_gp(gp, X_test)
        # a preconditioner of rank 10 (of 60) with PITC blocks of 20, so that PCG iterates (in mixed precision)
        gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), random_state=seed, method="cg",
                                         cg_options={"rank": 10, "block_size": 20}).fit(X, y)
        cases[f"cg-{seed}"] = _record_gp(gp, X_test)
        space, X, y, X_test = _func3c(100, seed)
        with _small_auto_subset():
            gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), random_state=seed).fit(X, y)
        cases[f"subset-{seed}"] = _record_gp(gp, X_test)

    space, X, y, X_test = _func3c(60, 0)
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), random_state=0, n_finalists=2).fit(X, y)
    cases["racing"] = _record_gp(gp, X_test)
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space), random_state=0, n_restarts=3)
    gp.fit(X[:40], y[:40]).fit(X, y)      # the refit starts from the previous optimum too
    cases["warm-refit"] = _record_gp(gp, X_test)
    from fastfm.bo import default_hyperparameter_prior
    kernel = ff.kernels.ModLap(space)
    gp = ff.GaussianProcessRegressor(kernel, random_state=0, theta_prior=default_hyperparameter_prior(kernel),
                                     log_transform_y="shift").fit(X, y)
    cases["map-shift"] = _record_gp(gp, X_test)
    return cases


def minimize_trials():
    """The first 15 trials (10 random, then 5 suggestions) of a seeded ``minimize`` on Func2C."""
    problem = Func2C()
    result = ff.minimize(problem, problem.space, n_iter=15, seed=0, progress=False)
    return [{"x1": _hex(t.config["x1"])[0], "x2": _hex(t.config["x2"])[0], "h1": int(t.config["h1"]),
             "h2": int(t.config["h2"]), "value": _hex(t.value)[0]} for t in result.trials]


def record():
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=DATA.parent).stdout.strip()
    data = {"recorded_on": commit, "fingerprint": fingerprint(), "gp": gp_cases(), "minimize": minimize_trials()}
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(data, indent=1) + "\n")


# ------------------------------------------------------------------------------------------- the tests
@pytest.fixture(scope="module")
def golden():
    data = json.loads(DATA.read_text())
    return data, data["fingerprint"] == fingerprint()


def _floats(hexes):
    return np.array([float.fromhex(h) for h in hexes])


def compare_gp(expected, computed, bit_for_bit):
    """Every recorded number of every case: equal bits, or within OTHER_MACHINE_TOLERANCE."""
    assert sorted(computed) == sorted(expected)
    for name, want_case in expected.items():
        got_case = computed[name]
        for key, want in want_case.items():
            if not (isinstance(want, list) and want and isinstance(want[0], str)):
                # counts and names; PCG's iteration counts follow the backend's precision (mixed on cpp)
                if bit_for_bit or key != "cg_iterations":
                    assert got_case[key] == want, (name, key)
                continue
            want, got = _floats(want), _floats(got_case[key])
            if bit_for_bit:
                np.testing.assert_array_equal(got, want, err_msg=f"{name}: {key} (bit for bit)")
            elif key == "lml_gradient":   # ≈ 0 at the optimum: relative to the gradient's scale
                np.testing.assert_allclose(got, want, rtol=0, atol=GRADIENT_ATOL * (1.0 + np.max(np.abs(want))),
                                           err_msg=f"{name}: {key}")
            else:
                rtol = LML_RTOL if key == "lml" else OTHER_MACHINE_RTOL
                np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=f"{name}: {key}")


def compare_minimize(expected, computed, bit_for_bit):
    assert len(computed) == len(expected) == 15
    n_init = 10      # minimize's default: these points come from the seeded generator alone
    for i, (got, want) in enumerate(zip(computed, expected)):
        if not bit_for_bit and i >= n_init:
            break
        config = ("x1", "x2", "h1", "h2")
        assert [got[key] for key in config] == [want[key] for key in config], i
        if bit_for_bit:
            assert got["value"] == want["value"], i
        else:
            assert math.isclose(float.fromhex(got["value"]), float.fromhex(want["value"]), rel_tol=1e-12), i


def test_the_golden_data_covers_every_case(golden):
    data, _ = golden
    assert sorted(data["gp"]) == sorted([f"{kind}-{seed}" for kind in ("exact", "cg", "subset") for seed in SEEDS]
                                        + ["racing", "warm-refit", "map-shift"])
    assert {case["solver"] for case in data["gp"].values()} == {"cholesky", "cg"}
    assert {data["gp"][f"subset-{seed}"]["subset"] for seed in SEEDS} == {40}
    assert all(data["gp"][f"cg-{seed}"]["cg_iterations"][0] > 1 for seed in SEEDS)
    assert len(data["minimize"]) == 15


def test_gp_numbers_are_unchanged(golden):
    data, same_machine = golden
    compare_gp(data["gp"], gp_cases(), bit_for_bit=same_machine)


def test_minimize_trials_are_unchanged(golden):
    data, same_machine = golden
    compare_minimize(data["minimize"], minimize_trials(), bit_for_bit=same_machine)


def test_another_machine_is_compared_within_tolerance(golden):
    """The comparison used elsewhere, run here on the NumPy backend (other bits, other PCG precision): it
    passes within the tolerances and would fail bit for bit, so neither branch is dead code."""
    data, _ = golden
    with ff.config_context(backend="numpy"):
        computed, trials = gp_cases(), minimize_trials()
    compare_gp(data["gp"], computed, bit_for_bit=False)
    compare_minimize(data["minimize"], trials, bit_for_bit=False)
    with pytest.raises(AssertionError):
        compare_gp(data["gp"], computed, bit_for_bit=True)


if __name__ == "__main__" and "--record" in sys.argv[1:]:
    record()
    print(f"wrote {DATA}")
