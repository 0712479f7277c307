"""One set of contract checks run over every kernel and every space of the shared fixture
(the scikit-learn ``test_kernels.py`` pattern)."""
import numpy as np
import pytest

import fastfm as ff
from fastfm import kernels as fk

KERNELS = {
    "ModLap": fk.ModLap,
    "ModDif": fk.ModDif,
    "FMKernel(a=(.3,1,.5),t=1.3)": lambda s, **kw: fk.FMKernel(s, coefficients=(0.3, 1.0, 0.5), exponent=1.3, **kw),
    "ModNN": fk.ModNN,
    "ProdLap": fk.ProdLap,
    "AddLap": fk.AddLap,
    "ProdDif": fk.ProdDif,
    "AddDif": fk.AddDif,
    "RBF": fk.RBF,
    "Matern52": fk.Matern52,
    "Hierarchical": fk.Hierarchical,
    "Hierarchical(rbf)": lambda s, **kw: fk.Hierarchical(s, base="rbf", **kw),
    "AdditiveFM": fk.AdditiveFM,
    "AdditiveFM(moddif, paper's diagonal)": lambda s, **kw: fk.AdditiveFM(s, base="moddif", unit_diagonal=False, **kw),
}


@pytest.fixture(params=sorted(KERNELS), ids=sorted(KERNELS))
def kernel_factory(request):
    return KERNELS[request.param]


def random_kernel(factory, space, rng, backend="numpy"):
    """A kernel with hyperparameters drawn inside the middle of their log bounds."""
    kernel = factory(space, backend=backend) if not isinstance(factory, type) or factory not in (
        fk.RBF, fk.Matern52) else factory(space, backend=backend)
    bounds = kernel.bounds
    lo = bounds[:, 0] + 0.3 * (bounds[:, 1] - bounds[:, 0])
    hi = bounds[:, 0] + 0.6 * (bounds[:, 1] - bounds[:, 0])
    kernel.theta = rng.uniform(lo, hi)
    return kernel


def test_gram_is_symmetric_and_psd(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X = space.sample_encoded(300, seed=rng.integers(1 << 30))
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14 * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)


def test_call_without_y_equals_call_with_x(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X = space.sample_encoded(40, seed=1)
    np.testing.assert_allclose(kernel(X), kernel(X, X), rtol=1e-13, atol=1e-15)


def test_diag_equals_gram_diagonal(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X = space.sample_encoded(40, seed=2)
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12, atol=1e-15)


def test_cross_gram_shape_and_consistency(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X, Y = space.sample_encoded(7, seed=3), space.sample_encoded(5, seed=4)
    K = kernel(X, Y)
    assert K.shape == (7, 5)
    np.testing.assert_allclose(K, kernel(np.vstack([X, Y]))[:7, 7:], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(K, kernel(Y, X).T, rtol=1e-12, atol=1e-15)


def test_theta_round_trip_and_clone(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    theta = kernel.theta.copy()
    assert theta.shape == (kernel.bounds.shape[0],)
    clone = kernel.clone_with_theta(theta + 0.1)
    np.testing.assert_allclose(clone.theta, theta + 0.1)
    np.testing.assert_allclose(kernel.theta, theta)     # the original is untouched
    kernel.theta = kernel.theta
    np.testing.assert_allclose(kernel.theta, theta, rtol=1e-14)
    names = [h.name for h in kernel.hyperparameters]
    assert len(names) == len(set(names))
    assert sum(h.n_elements for h in kernel.hyperparameters if not h.fixed) == theta.size


def _finite_difference_of_weighted_sum(kernel, X, W, eps=1e-6):
    theta = kernel.theta
    out = np.empty(theta.size)
    for j in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[j] += eps
        down[j] -= eps
        out[j] = (np.sum(W * kernel.clone_with_theta(up)(X)) - np.sum(W * kernel.clone_with_theta(down)(X))) / (2 * eps)
    return out


def test_gradient_and_fused_reduction_match_finite_differences(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X = space.sample_encoded(25, seed=5)
    X = np.vstack([X, X[:3]])                       # duplicate points: d = 0 pairs
    W = rng.normal(size=(X.shape[0],) * 2)
    W = W + W.T
    reduction = kernel.gradient_reduction(X, W)
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(reduction, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    np.testing.assert_allclose(kernel.gradient_reduction(X, W, symmetric=True), reduction, rtol=1e-12,
                               atol=1e-13 * np.abs(fd).max())
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(K, kernel(X), rtol=1e-13)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), reduction, rtol=1e-10, atol=1e-12 * np.abs(fd).max())


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_likelihood_terms_equal_the_public_gram_and_reduction(kernel_factory, space, rng, backend):
    """The GP fit's fast path (``_likelihood_terms``) is the public Gram and reduction at every θ."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    kernel = random_kernel(kernel_factory, space, rng, backend=backend)
    if kernel.n_theta > 2 and hasattr(kernel, "variance_bounds"):
        kernel.variance_bounds = "fixed"             # a masked hyperparameter in the middle of the layout
    X = space.sample_encoded(30, seed=9)
    W = rng.normal(size=(30, 30))
    W = W + W.T
    original = kernel.theta.copy()
    terms = kernel._likelihood_terms(X)
    for _ in range(2):
        bounds = kernel.bounds
        theta = rng.uniform(bounds[:, 0] + 0.2 * np.ptp(bounds, axis=1), bounds[:, 1] - 0.2 * np.ptp(bounds, axis=1))
        reference = kernel.clone_with_theta(theta)
        np.testing.assert_allclose(terms.gram(theta), reference(X), rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(terms.reduction(W), reference.gradient_reduction(X, W), rtol=1e-12,
                                   atol=1e-13 * np.abs(reference.gradient_reduction(X, W)).max())
    np.testing.assert_array_equal(kernel.theta, original)       # the kernel itself is untouched


def test_input_gradient_matches_finite_differences(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X1 = space.sample_encoded(4, seed=6)
    X1[:, space.continuous_dims] = np.clip(X1[:, space.continuous_dims], 0.01, 0.99)
    X2 = space.sample_encoded(9, seed=7)
    K, dK = kernel.gram_and_input_gradient(X1, X2)
    np.testing.assert_allclose(K, kernel(X1, X2), rtol=1e-13)
    eps = 1e-6
    for d in space.continuous_dims:
        up, down = X1.copy(), X1.copy()
        up[:, d] += eps
        down[:, d] -= eps
        fd = (kernel(up, X2) - kernel(down, X2)) / (2 * eps)
        np.testing.assert_allclose(dK[:, :, d], fd, rtol=1e-5, atol=1e-8 * max(1.0, np.abs(K).max()))


def test_neighbour_gram_equals_explicit_neighbours(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    if space.n_discrete == 0:
        pytest.skip("no discrete variables")
    x = space.sample_encoded(1, seed=8)[0]
    X = space.sample_encoded(12, seed=9)
    var_index, new_state = [], []
    for p, adjacency in enumerate(space.neighbours):
        v = int(x[space.n_continuous + p])
        for u in adjacency[v]:
            var_index.append(p)
            new_state.append(u)
    K = kernel.neighbour_gram(x, X, np.array(var_index), np.array(new_state))
    points = np.repeat(x[None, :], len(var_index), axis=0)
    points[np.arange(len(var_index)), space.n_continuous + np.array(var_index)] = new_state
    np.testing.assert_allclose(K, kernel(points, X), rtol=1e-12, atol=1e-15)


def test_bad_input_shape_names_the_argument(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    with pytest.raises(ff.InvalidConfigError, match="X must have shape"):
        kernel(np.zeros((3, space.n_dims + 1)))
    if space.n_discrete:
        X = space.sample_encoded(3, seed=1)
        X[1, space.n_continuous] = space.n_states[0] + 2
        with pytest.raises(ff.InvalidConfigError, match=repr(space.discrete_params[0].name)):
            kernel(X)


def test_make_kernel_by_name():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", "abc")])
    assert isinstance(fk.make_kernel("modlap", space), fk.ModLap)
    assert isinstance(fk.make_kernel("ProdLap", space), fk.ProdLap)
    with pytest.raises(ValueError, match="unknown kernel 'nope'"):
        fk.make_kernel("nope", space)


def test_fm_kernel_needs_a_discrete_variable():
    space = ff.Space([ff.Real("x", 0, 1)])
    with pytest.raises(ff.SpaceDefinitionError, match="discrete"):
        fk.ModLap(space)


def test_bad_hyperparameters_are_rejected():
    space = ff.Space([ff.Real("x", 0, 1), ff.Categorical("c", "ab")])
    with pytest.raises(ValueError, match="alpha"):
        fk.ModLap(space, alpha=-1.0)(space.sample_encoded(2, seed=0))
    with pytest.raises(ValueError, match="exponent"):
        fk.FMKernel(space, exponent=3.0)(space.sample_encoded(2, seed=0))


def test_neighbour_gram_batch_equals_explicit_neighbours(kernel_factory, space, rng):
    kernel = random_kernel(kernel_factory, space, rng)
    X0 = space.sample_encoded(3, seed=10)
    X = space.sample_encoded(11, seed=11)
    owner, var_index, new_state = [], [], []
    for s, x in enumerate(X0):
        for p, adjacency in enumerate(space.neighbours):
            for u in adjacency[int(x[space.n_continuous + p])]:
                owner.append(s)
                var_index.append(p)
                new_state.append(u)
    owner, var_index, new_state = map(np.array, (owner, var_index, new_state))
    K = kernel.neighbour_gram_batch(X0, X, owner, var_index, new_state)
    points = kernel.neighbour_points(X0, owner, var_index, new_state)
    assert np.all(np.sum(points != X0[owner], axis=1) == 1)       # each neighbour moves one variable
    np.testing.assert_allclose(K, kernel(points, X), rtol=1e-12, atol=1e-15)
