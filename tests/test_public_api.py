"""The public surface recorded on commit e3e3b63, before the GP was split into pieces: every name stays
importable, fitted models keep their attributes, pickles made by that code still load and predict the same,
and ``sklearn.base.clone`` works.

``tests/data/gp_e3e3b63.pkl`` was written by that code (``PYTHONPATH=$PWD python tests/test_public_api.py
--record``; re-record only on purpose): an exact and a matrix-free model, the points they were asked to
predict, their predictions then, and the machine fingerprint of ``test_golden``.
"""
import contextlib
import importlib
import pathlib
import pickle
import sys
import warnings

import numpy as np
import pytest

import fastfm as ff
from test_golden import fingerprint

PICKLE = pathlib.Path(__file__).parent / "data" / "gp_e3e3b63.pkl"

# __all__ of each module on e3e3b63, plus public names used from it without being listed there (tests,
# asv_benchmarks and the peers' scripts import them)
PUBLIC = {
    "fastfm": ["__version__", "Space", "Optimizer", "minimize", "OptimizeResult", "Trial", "GaussianProcessRegressor",
               "GaussianLogPrior", "JitterWarning", "benchmarks", "acquisition", "optim", "Real", "Integer", "Ordinal",
               "Categorical", "Graph", "Set", "kernels", "set_config", "get_config", "config_context", "show_config",
               "available_backends", "FastFMError", "SpaceDefinitionError", "InvalidConfigError",
               "UnknownParameterError", "MissingParameterError", "InactiveParameterError", "OutOfBoundsError",
               "InvalidValueError", "FitError", "NotPositiveDefiniteError", "NumericalError"],
    "fastfm.kernels": ["Kernel", "Hyperparameter", "Sum", "Product", "FMKernel", "ModLap", "ModDif", "ModNN",
                       "GraphKernel", "ProdLap", "AddLap", "ProdDif", "AddDif", "RBF", "Matern52", "Hierarchical",
                       "SetKernel", "SubspaceKernel", "SpaceProduct", "set_space_kernel", "make_kernel"],
    "fastfm.gp": ["GaussianProcessRegressor", "GaussianLogPrior", "JitterWarning", "restart_distribution"],
    "fastfm.gp_large": ["kernel_matvec", "pivoted_cholesky", "pivot_blocks", "PivotedCholeskyPreconditioner", "pcg",
                        "CGInfo", "stochastic_lml_gradient", "dtc_variance", "DEFAULT_CG_OPTIONS", "check_cg_options",
                        "default_rank", "default_block_size"],
    "fastfm.bo": ["Optimizer", "minimize", "OptimizeResult", "Trial", "ModelFitWarning",
                  "default_hyperparameter_prior"],
    "fastfm.benchmarks": ["Problem", "PROBLEMS", "get_problem", "Func2C", "Func3C", "Ackley5C", "SVM", "XGBoost",
                          "DeepBranch", "ModelSelection", "SetCoverage", "SetChamfer", "KMeansInit", "GMMInit",
                          "rosenbrock", "six_hump_camel", "beale"],
}
UNLISTED = {
    "fastfm.gp_large": ["solve_system", "low_rank_gradient_reduction", "_single_precision_product"],
    "fastfm.bo": ["DEFAULT_LOG_PRIORS", "UCB_BETA"],
}
CPP = ["SpectralTables", "build_info", "fm_cross_gradient", "fm_cross_gradient_sum", "fm_cross_gram_sum",
       "fm_grad_reduction", "fm_grad_reduction_low_rank", "fm_grad_reduction_sum", "fm_gram", "fm_gram_from_argument",
       "fm_gram_matvec", "fm_gram_matvec_single", "fm_gram_rational_forms", "fm_gram_sum", "fm_neighbour_gram",
       "fm_reduction_from_argument", "get_num_threads", "hier_grad_reduction", "hier_gram", "set_cross_gradient",
       "set_diag", "set_diag_gradient", "set_grad_reduction", "set_grad_reduction_and_weighted_gram", "set_gram",
       "set_num_threads"]
# the instance attributes of a fitted regressor on e3e3b63 (parameters and fitted state), either solver
FITTED_ATTRIBUTES = [
    "L_", "X_train_", "_diag_depends_on_continuous", "_fitted_theta", "_preconditioner", "alpha_",
    "best_y_standardized_", "cg_info_", "cg_options", "copy_X_train", "hyperparameter_subset",
    "hyperparameter_subset_", "jitter_", "kernel", "kernel_", "log_marginal_likelihood_value_", "log_transform_y",
    "max_exact_n", "max_exact_n_", "method", "n_finalists", "n_restarts", "n_restarts_failed_", "noise", "noise_",
    "noise_bounds", "normalize_y", "optimizer", "random_state", "solver_", "space", "theta_prior", "y_log_scale_",
    "y_mean_", "y_shift_", "y_std_", "y_train_"]
# added after e3e3b63 (issue 23, scikit-learn's estimator checks): n_features_in_, the number of columns fit saw;
# a fit sets it, and a pickle from e3e3b63 still has the attributes above only (predict then skips the
# column-count check)
# added since e3e3b63: n_features_in_ (issue 23 §5), the transform of y used and its copula table (§2)
# and the parameter noise_restarts (2026-12-06; a pickle without it refits with none, the class's value)
ADDED_FITTED_ATTRIBUTES = ["n_features_in_", "y_transform_", "y_copula_", "noise_restarts"]


# modules kept as aliases of moved code: every name still imports, with a DeprecationWarning
DEPRECATED = {"fastfm.gp_large"}


def _deprecated(module_name, name):
    if module_name in DEPRECATED:
        return pytest.warns(DeprecationWarning, match=f"fastfm.gp_large is deprecated; import {name} from fastfm")
    return contextlib.nullcontext()


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_every_public_name_stays_importable(module_name):
    module = importlib.import_module(module_name)
    assert set(PUBLIC[module_name]) <= set(module.__all__)
    for name in PUBLIC[module_name] + UNLISTED.get(module_name, []):
        with _deprecated(module_name, name):
            exec(f"from {module_name} import {name}", {})      # the form users write
        with _deprecated(module_name, name):
            assert getattr(module, name) is not None


def test_gp_names_are_the_same_objects_wherever_imported():
    from fastfm import gp, gp_large
    from fastfm.gp.solvers import _pcg, cg
    from fastfm.kernels import matvec
    assert ff.GaussianProcessRegressor is gp.GaussianProcessRegressor
    assert ff.GaussianLogPrior is gp.GaussianLogPrior and ff.JitterWarning is gp.JitterWarning
    assert ff.bo.default_hyperparameter_prior(ff.kernels.ModLap(ff.Space([ff.Categorical("c", [0, 1])]))).__class__ \
        is gp.GaussianLogPrior
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert gp_large.CGInfo is _pcg.CGInfo and gp_large.kernel_matvec is matvec.kernel_matvec
        assert gp_large.solve_system is cg.solve_system


def test_the_gp_large_alias_is_read_only(monkeypatch):
    """A patch on the alias would change nothing the solver reads: it must fail, not pass silently."""
    from fastfm import gp_large
    with pytest.raises(AttributeError, match="read-only alias: set _single_precision_product on fastfm.kernels.matvec"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            monkeypatch.setattr(gp_large, "_single_precision_product", None)
    with pytest.raises(AttributeError, match="read-only alias"):
        monkeypatch.setattr(gp_large, "_PIVOT_BATCH_MIN", 16, raising=False)
    with pytest.raises(AttributeError, match="has no attribute '_PIVOT_BATCH_MIN'"):
        gp_large._PIVOT_BATCH_MIN


def test_the_compiled_extension_keeps_its_functions():
    try:
        from fastfm import _cpp
    except ImportError:
        # the documented fallback of a failed compile: the NumPy backend, and the registry says why
        assert ff._backends.backend_status()["cpp"] != "available"
        return
    assert set(CPP) <= {name for name in dir(_cpp) if not name.startswith("_")}


def _models():
    problem = ff.benchmarks.Func3C()
    X = problem.space.sample_encoded(20, seed=3)
    y = problem.evaluate_encoded(X)
    exact = ff.GaussianProcessRegressor(ff.kernels.ModLap(problem.space), n_restarts=1, random_state=0).fit(X, y)
    cg = ff.GaussianProcessRegressor(ff.kernels.ModLap(problem.space), n_restarts=1, random_state=0, method="cg",
                                     cg_options={"rank": 5, "block_size": 8}).fit(X, y)
    return exact, cg, problem.space.sample_encoded(5, seed=4)


def _predictions(model, X_test):
    mean, std = model.predict(X_test, return_std=True)
    return {"mean": mean, "std": std, "mean_only": model.predict(X_test)}


def test_fitted_models_keep_their_attributes():
    exact, cg, _ = _models()
    for model in (exact, cg):
        assert sorted(vars(model)) == sorted(FITTED_ATTRIBUTES + ADDED_FITTED_ATTRIBUTES)
    assert (exact.solver_, cg.solver_) == ("cholesky", "cg")


def test_a_pickle_made_before_the_split_loads_and_predicts_the_same():
    # the matrix-free model's CGInfo and preconditioner were pickled as fastfm.gp_large's
    with open(PICKLE, "rb") as stream, pytest.warns(DeprecationWarning, match="fastfm.gp_large is deprecated"):
        saved = pickle.load(stream)
    bit_for_bit = saved["fingerprint"] == fingerprint()
    X_test = saved["X_test"]
    for model, expected in zip(saved["models"], saved["predictions"]):
        assert isinstance(model, ff.GaussianProcessRegressor)
        got = _predictions(model, X_test)
        for key, want in expected.items():
            if bit_for_bit:
                np.testing.assert_array_equal(got[key], want, err_msg=f"{model.solver_}: {key}")
            else:   # a matrix-free mean in double where the C++ single-precision product is missing: 1e-5
                np.testing.assert_allclose(got[key], want, rtol=1e-4, atol=0, err_msg=f"{model.solver_}: {key}")
        assert sorted(vars(model)) == FITTED_ATTRIBUTES
        assert model.get_params()["noise_restarts"] == 0     # fitted without: refits without
        # and it goes on working: pickled again by this code, refitted
        again = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(_predictions(again, X_test)["mean"], got["mean"])
        again.fit(again.X_train_, again.y_train_)
    assert [m.solver_ for m in saved["models"]] == ["cholesky", "cg"]


def test_sklearn_clone_copies_parameters_not_the_fit():
    from sklearn.base import clone
    exact, cg, _ = _models()
    for model in (exact, cg):
        copy = clone(model)
        assert type(copy) is ff.GaussianProcessRegressor and not hasattr(copy, "alpha_")
        params, copied = model.get_params(), copy.get_params()
        assert sorted(params) == sorted(copied)
        for name, value in params.items():
            if name == "kernel":
                assert copied[name] is not value and np.array_equal(copied[name].theta, value.theta)
            else:
                assert copied[name] == value, name


def record():
    exact, cg, X_test = _models()
    saved = {"models": [exact, cg], "X_test": X_test, "predictions": [_predictions(m, X_test) for m in (exact, cg)],
             "fingerprint": fingerprint()}
    PICKLE.parent.mkdir(exist_ok=True)
    PICKLE.write_bytes(pickle.dumps(saved, protocol=4))


if __name__ == "__main__" and "--record" in sys.argv[1:]:
    record()
    print(f"wrote {PICKLE}")
