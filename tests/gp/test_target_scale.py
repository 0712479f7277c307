"""Targets anywhere in the float64 range fit and predict as the same targets at unit scale (issue 23, §2)."""
import numpy as np
import pytest

import fastfm as ff
from fastfm.kernels import Matern52


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    return X, np.sin(3 * X[:, 0]) + X[:, 1], rng.uniform(size=(6, 2))


@pytest.mark.parametrize("log_transform_y", [False, "shift"])
@pytest.mark.parametrize("scale", [1e300, 1e307, -1e307, 1e-300, -1e-310])
def test_predictions_scale_with_the_targets(log_transform_y, scale):
    X, y, X_test = _data()
    sign = np.sign(scale)

    def fit(targets):
        gp = ff.GaussianProcessRegressor(Matern52(length_scale=1.0), random_state=0, log_transform_y=log_transform_y)
        return gp.fit(X, targets).predict(X_test, return_std=True)

    mean_unit, std_unit = fit(sign * y)
    mean, std = fit(scale * y)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    np.testing.assert_allclose(mean / abs(scale), mean_unit, rtol=1e-6, atol=1e-9)
    if not log_transform_y:          # with "shift" the std is in log units, the same at every scale
        std = std / abs(scale)
    # two L-BFGS-B fits, each stopping at a relative ftol of 1e-5 (fitting._LBFGSB_OPTIONS): their hyperparameters,
    # and so the std, agree to about that (1.3e-5 at 1e-300 with "shift" on an AVX-512 machine); a scale leaking
    # into the model would be off by orders of magnitude
    np.testing.assert_allclose(std, std_unit, rtol=1e-4, atol=1e-9)
