"""The regressor passes scikit-learn's estimator checks (issue 23, section 5) on a plain array kernel.

Every check runs: nothing is skipped or marked xfail.  The one tag that switches a check off is
``requires_fit=False`` (``_RegressorMixin.__sklearn_tags__``): before ``fit`` the regressor predicts from the GP
prior, as scikit-learn's own GaussianProcessRegressor does and tags the same way, so ``predict`` must not raise
NotFittedError then (``test_methods_that_need_a_fit_raise_not_fitted_error`` checks the methods that do).
"""
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.exceptions import DataConversionWarning as SklearnDataConversionWarning  # noqa: E402
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from fastfm import GaussianProcessRegressor  # noqa: E402
from fastfm.exceptions import DataConversionWarning, InvalidConfigError, InvalidValueError, NotFittedError  # noqa: E402
from fastfm.kernels import Matern52  # noqa: E402

with warnings.catch_warnings():
    # the regressor implements the estimator protocol without inheriting sklearn.base.BaseEstimator (scikit-learn
    # is not a dependency of fastfm); the checks warn about that once, at collection
    warnings.filterwarnings("ignore", message=".*does not inherit from `sklearn.base.BaseEstimator`")
    # the estimator, and the same seeded: scikit-learn runs its determinism checks (pipeline
    # consistency) only on an estimator whose tags say it is deterministic (random_state set)
    _CHECKS = parametrize_with_checks([GaussianProcessRegressor(Matern52(length_scale=1.0), n_restarts=0),
                                       GaussianProcessRegressor(Matern52(length_scale=1.0), n_restarts=0,
                                                                random_state=0)])


@_CHECKS
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _data(n=12, d=2):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, d))
    return X, np.sin(3 * X[:, 0]) + X[:, 1]


def test_methods_that_need_a_fit_raise_not_fitted_error():
    gp = GaussianProcessRegressor(Matern52(length_scale=1.0), n_restarts=0)
    X, _ = _data()
    for call in (gp.log_marginal_likelihood, lambda: gp.predict_standardized_with_input_gradient(X)):
        with pytest.raises(NotFittedError, match="not fitted yet") as raised:
            call()
        # scikit-learn's error, and still the AttributeError it was before NotFittedError existed
        assert isinstance(raised.value, (SklearnNotFittedError, AttributeError))
        assert isinstance(raised.value, SklearnNotFittedError) and isinstance(raised.value, AttributeError)
        assert type(pickle.loads(pickle.dumps(raised.value))) is type(raised.value)
    # the prior before fit, as before
    assert np.all(gp.predict(X) == 0.0)


def test_fit_leaves_the_kernel_parameter_untouched_and_is_idempotent():
    kernel = Matern52(length_scale=1.0)
    state = pickle.dumps(kernel)
    gp = GaussianProcessRegressor(kernel, n_restarts=1, random_state=0)
    X, y = _data()
    first = gp.fit(X, y).predict(X)
    assert gp.kernel is kernel and pickle.dumps(kernel) == state
    assert gp.n_features_in_ == 2
    np.testing.assert_array_equal(gp.fit(X, y).predict(X), first)


def test_plain_array_inputs_are_checked_as_scikit_learn_does():
    gp = GaussianProcessRegressor(Matern52(length_scale=1.0), n_restarts=0, random_state=0)
    X, y = _data()
    with pytest.raises(InvalidConfigError, match="requires y to be passed"):
        gp.fit(X, None)
    with pytest.raises(InvalidValueError, match="Complex data not supported"):
        gp.fit(X + 1j, y)
    with pytest.raises(InvalidConfigError, match=r"0 feature\(s\)"):
        gp.fit(X[:, :0], y)
    with pytest.raises(InvalidValueError, match="NaN or inf"):
        gp.fit(np.where(X > 0.9, np.inf, X), y)
    import scipy.sparse
    with pytest.raises(InvalidValueError, match="sparse input is not supported"):
        gp.fit(scipy.sparse.dok_matrix(X), y)
    with pytest.warns(DataConversionWarning, match="column-vector y") as record:
        gp.fit(X, y[:, None])
    assert issubclass(record[0].category, SklearnDataConversionWarning)
    with pytest.raises(InvalidConfigError, match="Reshape your data"):
        gp.predict(X[0])
    with pytest.raises(InvalidConfigError, match="X has 3 features, but GaussianProcessRegressor is expecting 2"):
        gp.predict(np.hstack([X, X[:, :1]]))
