"""``gp.fantasy.condition_on``: the block update of the Cholesky factor equals an exact refit on the augmented
data at the same hyperparameters, for both fantasy strategies."""
import numpy as np
import pytest
from scipy.linalg import cho_solve

import fastfm as ff
from fastfm.gp import fantasy
from fastfm.kernels import ModLap


def _fitted(seed=0, n=25):
    space = ff.Space([ff.Real("x", -1, 1), ff.Real("y", -1, 1), ff.Categorical("c", list("abcd")),
                      ff.Integer("k", 0, 5)])
    X = space.sample_encoded(n + 6, seed=seed)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * X[:, 2] - 0.1 * X[:, 3]
    gp = ff.GaussianProcessRegressor(ModLap(space), n_restarts=1, random_state=seed).fit(X[:n], y[:n])
    return gp, X[n:]


@pytest.mark.parametrize("strategy", fantasy.FANTASY_STRATEGIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_update_equals_the_exact_posterior_on_the_augmented_data(strategy, seed):
    gp, X_pending = _fitted(seed)
    conditioned = fantasy.condition_on(gp, X_pending, strategy)
    X_all = np.vstack([gp.X_train_, X_pending])
    K = gp.kernel_(X_all) + (gp.noise_ + gp.jitter_) * np.eye(len(X_all))
    assert np.allclose(conditioned.L_ @ conditioned.L_.T, K, atol=1e-10)
    assert np.allclose(conditioned.L_, np.tril(conditioned.L_))
    y_all = conditioned.y_train_
    alpha = cho_solve((np.linalg.cholesky(K), True), y_all)
    assert np.allclose(conditioned.alpha_, alpha, atol=1e-8 * np.abs(alpha).max())
    if strategy == "believer":      # the fantasy values are the posterior means: the mean does not move
        mu_before, _ = gp.predict_standardized(X_pending)
        assert np.allclose(y_all[-len(X_pending):], mu_before)
    else:
        assert np.all(y_all[-len(X_pending):] == np.min(gp.y_train_))
    X_test = np.vstack([X_pending, gp.X_train_[:3]])
    mu, sigma = conditioned.predict_standardized(X_test)
    K_cross = gp.kernel_(X_test, X_all)
    mu_ref = K_cross @ alpha
    var_ref = gp.kernel_.diag(X_test) - np.einsum("ij,ji->i", K_cross, np.linalg.solve(K, K_cross.T))
    assert np.allclose(mu, mu_ref, atol=1e-8)
    assert np.allclose(sigma, np.sqrt(np.maximum(var_ref, 0)), atol=1e-6)
    # at a pending point the variance collapses to about the noise: the next suggestion goes elsewhere
    _, sigma_before = gp.predict_standardized(X_pending)
    assert np.all(sigma[:len(X_pending)] < sigma_before)


def test_the_incumbent_counts_the_fantasy_values():
    """A believer's value below the best seen lowers the incumbent of the acquisition: else expected improvement
    beside the pending point stays what it was, and the next point of a batch lands next to it."""
    gp, X_pending = _fitted(1)
    # the pending point where the posterior mean is lowest: below the best value seen
    X_random = np.random.default_rng(3).random((2000, X_pending.shape[1]))
    X_random[:, 2:] = X_pending[np.arange(2000) % len(X_pending), 2:]
    mu_random, _ = gp.predict_standardized(X_random)
    low = X_random[np.argmin(mu_random)]
    assert mu_random.min() < gp.best_y_standardized_
    believer = fantasy.condition_on(gp, np.vstack([X_pending, low]), "believer")
    assert believer.best_y_standardized_ == pytest.approx(mu_random.min())
    # a fantasy above the best value seen leaves it; the constant liar lies at it
    high = X_random[np.argmax(mu_random)]
    assert fantasy.condition_on(gp, high[None, :], "believer").best_y_standardized_ == gp.best_y_standardized_
    assert fantasy.condition_on(gp, X_pending, "liar_min").best_y_standardized_ == gp.best_y_standardized_


def test_the_fitted_model_is_left_unchanged_and_nothing_to_add_returns_it():
    gp, X_pending = _fitted()
    L, alpha, X = gp.L_.copy(), gp.alpha_.copy(), gp.X_train_.copy()
    fantasy.condition_on(gp, X_pending)
    assert np.array_equal(gp.L_, L) and np.array_equal(gp.alpha_, alpha) and np.array_equal(gp.X_train_, X)
    assert fantasy.condition_on(gp, X_pending[:0]) is gp


def test_an_unknown_strategy_is_a_clear_error():
    gp, X_pending = _fitted()
    with pytest.raises(ValueError, match="strategy must be one of"):
        fantasy.condition_on(gp, X_pending, "optimist")


def test_a_conditioned_model_predicts_from_its_own_training_points():
    """The posterior keeps X_train_ checked beside the model (``ExactPosterior._training_inputs``); a fantasy is a
    copy of a model that has already predicted, and its predictions must read the augmented points."""
    gp, X_pending = _fitted(2)
    X_test = np.vstack([X_pending, gp.X_train_[:3]])
    gp.predict_standardized(X_test)
    gp.predict_standardized_with_input_gradient(X_test)      # both paths have read the unconditioned points
    conditioned = fantasy.condition_on(gp, X_pending, "believer")
    X_all = np.vstack([gp.X_train_, X_pending])
    K = gp.kernel_(X_all) + (gp.noise_ + gp.jitter_) * np.eye(len(X_all))
    K_cross = gp.kernel_(X_test, X_all)
    mu_ref = K_cross @ cho_solve((np.linalg.cholesky(K), True), conditioned.y_train_)
    var_ref = gp.kernel_.diag(X_test) - np.einsum("ij,ji->i", K_cross, np.linalg.solve(K, K_cross.T))
    for mu, sigma in (conditioned.predict_standardized(X_test),
                      conditioned.predict_standardized_with_input_gradient(X_test)[:2]):
        assert np.allclose(mu, mu_ref, atol=1e-8)
        assert np.allclose(sigma, np.sqrt(np.maximum(var_ref, 0)), atol=1e-6)
    # and the unconditioned model still predicts from its own points, and after a refit from the new ones
    mu_before, _ = gp.predict_standardized(X_test)
    assert np.allclose(mu_before, gp.kernel_(X_test, gp.X_train_) @ gp.alpha_, atol=1e-10)
    gp.fit(X_all[:-2], np.sin(3 * X_all[:-2, 0]))
    for mu in (gp.predict_standardized(X_test)[0], gp.predict_standardized_with_input_gradient(X_test)[0]):
        assert np.allclose(mu, gp.kernel_(X_test, X_all[:-2]) @ gp.alpha_, atol=1e-10)
