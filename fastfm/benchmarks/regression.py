"""A seeded synthetic mixed-variable regression set for the large-N GP benchmarks.

Inputs: 5 continuous (unit interval), 5 nominal (4 categories each) and 5
ordinal (5 ordered levels each) variables.  The target couples the
continuous and the discrete parts, as the FM kernel assumes:

    f(x) = Σ_d sin(2π c_d + φ_{d, v_{d}}) · w_d           (nominal shifts the phase of c_d)
         + Σ_k a_k · (o_k / 4 − ½) · (1 + c_k)             (ordinal trends scaled by c_k)
         + ½ · Π-free pairwise term cos(π (c_0 − c_1)) · [v_0 == v_1]

and y = f(x) + ε with ε ~ N(0, noise_std²).  All draws (inputs, the phases
φ, weights w and slopes a, the noise) come from one ``numpy`` Generator
seeded by ``seed``, so a (n_train, n_test, seed) triple is reproducible.

The runners that time fastfm and its peers on it are ``fastfm time regression`` (``fastfm.cli.regression``).
"""
import numpy as np

from ..space import Categorical, Ordinal, Real, Space

__all__ = ["regression_space", "make_mixed_regression", "gaussian_nll", "score_predictions", "N_CONTINUOUS",
           "N_NOMINAL", "N_ORDINAL"]

N_CONTINUOUS, N_NOMINAL, N_ORDINAL = 5, 5, 5
_N_CATEGORIES, _N_LEVELS = 4, 5


def regression_space():
    """The benchmark's :class:`~fastfm.Space`: c0..c4 in [0, 1], nominal n0..n4 (4 choices), ordinal o0..o4 (5 levels)."""
    return Space([Real(f"c{d}", 0.0, 1.0) for d in range(N_CONTINUOUS)]
                 + [Categorical(f"n{d}", list(range(_N_CATEGORIES))) for d in range(N_NOMINAL)]
                 + [Ordinal(f"o{d}", list(range(_N_LEVELS))) for d in range(N_ORDINAL)])


def _latent(X, phases, weights, slopes):
    """Noise-free f of encoded inputs X (n, 15), columns [c (5) | nominal (5) | ordinal (5)]."""
    c = X[:, :N_CONTINUOUS]
    nominal = X[:, N_CONTINUOUS:N_CONTINUOUS + N_NOMINAL].astype(np.int64)
    ordinal = X[:, N_CONTINUOUS + N_NOMINAL:]
    phase = phases[np.arange(N_NOMINAL)[None, :], nominal]                          # (n, 5)
    f = np.sum(weights * np.sin(2.0 * np.pi * c + phase), axis=1)
    f += np.sum(slopes * (ordinal / (_N_LEVELS - 1) - 0.5) * (1.0 + c), axis=1)
    f += 0.5 * np.cos(np.pi * (c[:, 0] - c[:, 1])) * (nominal[:, 0] == nominal[:, 1])
    return f


def make_mixed_regression(n_train, n_test, seed=0, noise_std=0.1):
    """Training and test sets of the mixed regression problem.

    Parameters
    ----------
    n_train, n_test : int
        Number of training and test points (≥ 1).
    seed : int
        Seeds the function's random constants, the inputs and the noise.
    noise_std : float
        Standard deviation of the Gaussian noise added to both y_train and y_test.

    Returns
    -------
    space : Space
    X_train : ndarray of shape (n_train, 15)
        Encoded inputs (``space.encode`` layout: continuous first, then state indices).
    y_train : ndarray of shape (n_train,)
    X_test : ndarray of shape (n_test, 15)
    y_test : ndarray of shape (n_test,)
    """
    from ..exceptions import InvalidValueError

    for name, value in (("n_train", n_train), ("n_test", n_test)):
        if int(value) != value or value < 1:
            raise InvalidValueError(f"{name} must be a positive integer, got {name}={value!r}", name, value)
    if not noise_std >= 0:
        raise InvalidValueError(f"noise_std must be >= 0, got noise_std={noise_std!r}", "noise_std", noise_std)
    space = regression_space()
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0.0, 2.0 * np.pi, size=(N_NOMINAL, _N_CATEGORIES))
    weights = rng.uniform(0.5, 1.5, size=N_CONTINUOUS)
    slopes = rng.uniform(-1.5, 1.5, size=N_ORDINAL)
    X = space.sample_encoded(int(n_train) + int(n_test), seed=rng.integers(2 ** 32))
    y = _latent(X, phases, weights, slopes) + noise_std * rng.standard_normal(len(X))
    return space, X[:n_train], y[:n_train], X[n_train:], y[n_train:]


# ------------------------------------------------------------------ scoring
def gaussian_nll(y, mean, var):
    """Mean negative log predictive density of y under N(mean, var), per test point."""
    var = np.maximum(np.asarray(var, dtype=np.float64), 1e-300)
    return float(np.mean(0.5 * np.log(2.0 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


def score_predictions(gp, X_test, y_test):
    """(test RMSE, test NLL) of a fitted fastfm regressor: the NLL of the noisy targets, so the predictive
    variance is the latent one plus the fitted noise (in y units)."""
    mean, std = gp.predict(X_test, return_std=True)
    var = std ** 2 + gp.noise_ * gp.y_std_ ** 2
    return float(np.sqrt(np.mean((mean - y_test) ** 2))), gaussian_nll(y_test, mean, var)


def _one_hot(X):
    """sklearn/BoTorch inputs: continuous as is, nominal one-hot, ordinal levels scaled to [0, 1]."""
    c = X[:, :N_CONTINUOUS]
    nominal = X[:, N_CONTINUOUS:N_CONTINUOUS + N_NOMINAL].astype(np.int64)
    ordinal = X[:, N_CONTINUOUS + N_NOMINAL:] / (_N_LEVELS - 1)
    hot = np.zeros((len(X), N_NOMINAL * _N_CATEGORIES))
    hot[np.arange(len(X))[:, None], np.arange(N_NOMINAL)[None, :] * _N_CATEGORIES + nominal] = 1.0
    return np.hstack([c, ordinal, hot])
