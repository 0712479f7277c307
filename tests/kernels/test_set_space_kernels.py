"""Kernels on spaces with Set parameters: the product (kernel on the other parameters) × SetKernel
meets the kernel contract (gradients, input gradients, neighbours, PSD) on encoded arrays."""
import numpy as np
import pytest

import fastfm as ff
from kernels.test_kernel_contract import _finite_difference_of_weighted_sum
from fastfm.kernels import MMDSetKernel, SetKernel, SpaceProduct, make_kernel
from fastfm.kernels.base import Kernel
from fastfm.kernels.sets import SpaceSum

SET_SPACES = {
    "set_only": ff.Space([ff.Set("s", n_points=4, dim=2, low=-1.0, high=1.0)]),
    "set_real_categorical": ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("s", n_points=3, dim=2),
                                      ff.Categorical("c", list("abc")), ff.Integer("i", 0, 3)]),
    "two_sets": ff.Space([ff.Set("s", n_points=2, dim=3), ff.Set("t", n_points=3, dim=1), ff.Ordinal("o", [1, 2, 4])]),
}


@pytest.fixture(params=sorted(SET_SPACES), ids=sorted(SET_SPACES))
def set_space(request):
    return SET_SPACES[request.param]


@pytest.fixture(params=["numpy", "cpp"])
def backend(request):
    if request.param == "cpp":
        pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")
    return request.param


def random_kernel(space, rng, backend, **kwargs):
    kernel = make_kernel("modlap", space, backend=backend, **kwargs)
    bounds = kernel.bounds
    kernel.theta = rng.uniform(bounds[:, 0] + 0.3 * np.ptp(bounds, axis=1), bounds[:, 0] + 0.6 * np.ptp(bounds, axis=1))
    return kernel


def _set_factors(kernel):
    """The factors of a product kernel, left to right."""
    if isinstance(kernel, SpaceProduct):
        return _set_factors(kernel.k1) + _set_factors(kernel.k2)
    return [kernel]


def test_default_kernel_is_a_product_with_one_set_factor_per_set(set_space):
    """Each Set gets the sum of the normalised set kernel and an MMD kernel (issue 24 §4); the product has one
    amplitude, and each sum one more: the MMD term's weight against the normalised one."""
    kernel = make_kernel("modlap", set_space)
    factors = _set_factors(kernel)
    set_factors = [f for f in factors if isinstance(f, SpaceSum)]
    assert len(set_factors) == len(set_space.set_params)
    for factor in set_factors:
        assert isinstance(factor.k1, SetKernel) and factor.k1.normalize is True
        assert isinstance(factor.k2, MMDSetKernel)
    if set_space.names == ["s"]:
        # alone: both amplitudes free, and the diagonal is their sum
        np.testing.assert_allclose(kernel.diag(set_space.sample_encoded(5, seed=0)), np.full(5, 2.0))
        assert [h.name for h in kernel.hyperparameters if h.name.endswith("variance") and not h.fixed] == [
            "k1__variance", "k2__variance"]
        return
    assert isinstance(kernel, SpaceProduct) and kernel.space is set_space
    free_variances = [h for h in kernel.hyperparameters if h.name.endswith("variance") and not h.fixed]
    assert len(free_variances) == 1 + len(set_factors)    # the product's amplitude, and each MMD term's weight
    # normalize=True keeps the normalised set kernel alone, with one amplitude for the whole product
    single = make_kernel("modlap", set_space, normalize=True)
    assert len([h for h in single.hyperparameters if h.name.endswith("variance") and not h.fixed]) == 1


def test_gram_is_symmetric_psd_and_permutation_invariant(set_space, backend, rng):
    kernel = random_kernel(set_space, rng, backend)
    X = set_space.sample_encoded(120, seed=1)
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15 * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    np.testing.assert_allclose(kernel.diag(X[:20]), np.diag(K)[:20], rtol=1e-12)
    shuffled = X.copy()
    for p in set_space.set_params:
        cols = set_space.column(p.name)
        block = shuffled[:, cols].reshape(len(X), p.n_points, p.dim)
        shuffled[:, cols] = block[:, ::-1].reshape(len(X), -1)
    np.testing.assert_allclose(kernel(shuffled, X[:7]), K[:, :7], rtol=1e-12, atol=1e-15)


def test_gradient_reduction_matches_finite_differences(set_space, backend, rng):
    kernel = random_kernel(set_space, rng, backend)
    X = set_space.sample_encoded(15, seed=5)
    W = rng.normal(size=(15, 15))
    reduction = kernel.gradient_reduction(X, W)
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(reduction, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), reduction, rtol=1e-10, atol=1e-12 * np.abs(fd).max())


def test_learned_normalisation_in_the_product_meets_the_contract(set_space, backend, rng):
    """set_space_kernel(..., normalize="learn"): one free power γ per Set, gradients through the product."""
    from fastfm.kernels import set_space_kernel
    kernel = set_space_kernel("modlap", set_space, backend=backend, normalize="learn")
    names = [h.name for h in kernel.hyperparameters if not h.fixed]
    assert sum(name.endswith("normalization") for name in names) == len(set_space.set_params)
    bounds = kernel.bounds
    kernel.theta = rng.uniform(bounds[:, 0] + 0.3 * np.ptp(bounds, axis=1), bounds[:, 0] + 0.6 * np.ptp(bounds, axis=1))
    X = set_space.sample_encoded(15, seed=5)
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15 * np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.trace(K)
    W = rng.normal(size=(15, 15))
    reduction = kernel.gradient_reduction(X, W)
    fd = _finite_difference_of_weighted_sum(kernel, X, W)
    np.testing.assert_allclose(reduction, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())


def test_input_gradient_matches_finite_differences(set_space, backend, rng):
    kernel = random_kernel(set_space, rng, backend)
    X1 = set_space.sample_encoded(3, seed=6)
    X1[:, set_space.continuous_dims] = np.clip(X1[:, set_space.continuous_dims], 0.01, 0.99)
    X2 = set_space.sample_encoded(7, seed=7)
    K, dK = kernel.gram_and_input_gradient(X1, X2)
    assert dK.shape == (3, 7, set_space.n_continuous)
    for d in set_space.continuous_dims:
        up, down = X1.copy(), X1.copy()
        up[:, d] += 1e-6
        down[:, d] -= 1e-6
        fd = (kernel(up, X2) - kernel(down, X2)) / 2e-6
        np.testing.assert_allclose(dK[:, :, d], fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("name", [name for name, space in sorted(SET_SPACES.items()) if space.n_discrete])
def test_neighbour_gram_batch_equals_explicit_neighbours(name, rng):
    set_space = SET_SPACES[name]
    kernel = random_kernel(set_space, rng, "numpy")
    X0, X = set_space.sample_encoded(2, seed=8), set_space.sample_encoded(9, seed=9)
    owner, var_index, new_state = [], [], []
    for s, x in enumerate(X0):
        for p, adjacency in enumerate(set_space.neighbours):
            for u in adjacency[int(x[set_space.n_continuous + p])]:
                owner.append(s), var_index.append(p), new_state.append(u)
    owner, var_index, new_state = map(np.array, (owner, var_index, new_state))
    K = kernel.neighbour_gram_batch(X0, X, owner, var_index, new_state)
    np.testing.assert_allclose(K, kernel(kernel.neighbour_points(X0, owner, var_index, new_state), X), rtol=1e-12)


@pytest.mark.parametrize("normalize", ["norm+mmd", True, False, "learn", "mmd"])
def test_likelihood_terms_keep_nothing_stale(set_space, backend, rng, normalize):
    """The likelihood terms keep the plain set Gram and diagonals between ``gram(θ)`` and ``reduction(W)`` at one
    θ: at every θ, whether or not the caller wrote into the Gram it was given, and with the reduction asked twice,
    they are the public Gram and reduction; the kernel the terms came from keeps nothing."""
    from fastfm.kernels import set_space_kernel
    kernel = set_space_kernel("modlap", set_space, backend=backend, normalize=normalize)
    X = set_space.sample_encoded(12, seed=3)
    W = rng.normal(size=(12, 12))
    W = W + W.T
    terms = kernel._likelihood_terms(X)
    bounds = kernel.bounds
    for step in range(3):
        theta = rng.uniform(bounds[:, 0] + 0.2 * np.ptp(bounds, axis=1), bounds[:, 1] - 0.2 * np.ptp(bounds, axis=1))
        reference = kernel.clone_with_theta(theta)
        K = terms.gram(theta)
        np.testing.assert_allclose(K, reference(X), rtol=1e-13, atol=1e-300)
        K += 1.0      # the caller owns the Gram it is given (the GP adds the noise in place)
        expected = reference.gradient_reduction(X, W)
        for _ in range(2):           # the second reduction at the same θ reads what the first kept
            np.testing.assert_allclose(terms.reduction(W), expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())
        np.testing.assert_allclose(terms.gram(theta), reference(X), rtol=1e-13, atol=1e-300)
    assert not any("_fixed_inputs" in vars(k) for k in _set_kernels(kernel))


@pytest.mark.parametrize("n_subsample", [None, 3])
def test_likelihood_terms_take_the_gram_and_its_derivatives_from_one_pass(monkeypatch, rng, n_subsample):
    """On the likelihood's fixed inputs the default's sum of the normalised and the MMD set kernel takes the Gram and
    every pair's ∂/∂log ℓ from one backend pass (no separate reduction pass), and gives the reduction of two passes
    to round-off; above ONE_PASS_MAX_ELEMENTS it makes the two passes."""
    pytest.importorskip("fastfm._cpp", reason="the compiled extension fastfm._cpp is not built")
    from fastfm._backends import cpp
    from fastfm.kernels import sets as sets_module
    space = SET_SPACES["set_only"]
    kernel = SpaceSum(SetKernel(space=space, normalize=True, n_subsample=n_subsample, seed=2, backend="cpp"),
                      MMDSetKernel(space=space, n_subsample=n_subsample, seed=2, backend="cpp"), space)
    X = space.sample_encoded(15, seed=6)
    W = rng.normal(size=(15, 15))
    calls = []
    for name in ("set_gram_gradient", "set_grad_reduction"):
        original = getattr(cpp, name)
        monkeypatch.setattr(cpp, name, lambda *args, _f=original, _n=name: calls.append(_n) or _f(*args))
    theta = kernel.theta + 0.1
    results = {}
    for limit in (sets_module.ONE_PASS_MAX_ELEMENTS, 0):
        monkeypatch.setattr(sets_module, "ONE_PASS_MAX_ELEMENTS", limit)
        calls.clear()
        terms = kernel._likelihood_terms(X)
        results[limit] = terms.gram(theta).copy(), terms.reduction(W)
        expected = ["set_gram_gradient"] * 2 if limit else ["set_grad_reduction"] * 2
        assert calls == expected
    (K_one, g_one), (K_two, g_two) = results.values()
    np.testing.assert_allclose(K_one, K_two, rtol=1e-13, atol=0)
    np.testing.assert_allclose(g_one, g_two, rtol=1e-11, atol=1e-12 * np.abs(g_two).max())


def _set_kernels(kernel):
    """Every SetKernel (MMDSetKernel included) inside a composite kernel."""
    if isinstance(kernel, SetKernel):
        return [kernel]
    return [k for child in (getattr(kernel, "k1", None), getattr(kernel, "k2", None)) if child is not None
            for k in _set_kernels(child)]


def test_likelihood_terms_set_theta_as_the_public_setter_does(rng):
    """The terms' fast setter (``base._ThetaSetter``) leaves every hyperparameter bitwise where ``kernel.theta = θ``
    leaves it, fixed ones included, and a leaf set by the public setter afterwards drops the memo key it pinned."""
    space = SET_SPACES["set_only"]
    # the default's sum of the normalised and the MMD set kernel, with one amplitude fixed (the fixed path)
    kernel = SpaceSum(SetKernel(space=space, normalize=True, variance=0.7, variance_bounds="fixed"),
                      MMDSetKernel(space=space), space)
    X = space.sample_encoded(10, seed=4)
    terms = kernel._likelihood_terms(X)
    assert terms.setter is not None                      # a sum of two set kernels: the fast path
    leaves = terms.kernel._theta_leaves()
    assert any(h.fixed for leaf in leaves for h in leaf.hyperparameters)
    public = kernel.clone_with_theta(kernel.theta)
    bounds = kernel.bounds
    for _ in range(3):
        theta = rng.uniform(bounds[:, 0], bounds[:, 1])
        terms.gram(theta)
        public.theta = theta
        for mine, theirs in zip(leaves, public._theta_leaves()):
            for name, _ in mine._hyperparameter_specs():
                assert np.array_equal(np.asarray(getattr(mine, name)), np.asarray(getattr(theirs, name)))
                assert type(getattr(mine, name)) is type(getattr(theirs, name))
    leaf = leaves[0]
    assert "_pinned_state_key" in vars(leaf)
    other = np.clip(leaf.theta + 0.3, leaf.bounds[:, 0], leaf.bounds[:, 1])
    leaf.theta = other
    assert "_pinned_state_key" not in vars(leaf)
    # (to round-off: on its fixed inputs the leaf computes the Gram in the pass that gives its derivatives too)
    np.testing.assert_allclose(leaf(X), leaf.clone_with_theta(other)(X), rtol=1e-14, atol=0)
    with pytest.raises(ValueError, match="finite"):
        terms.gram(np.full(kernel.n_theta, np.nan))


def test_likelihood_terms_fall_back_where_a_part_sets_theta_its_own_way():
    """A kernel with a theta setter of its own (here a user's) keeps the public setter; a SubspaceKernel, which
    hands θ to its kernel, is set through that kernel's leaves, and its Gram follows θ."""
    from fastfm.kernels import set_space_kernel
    space = SET_SPACES["set_real_categorical"]            # a product with a SubspaceKernel
    kernel = set_space_kernel("modlap", space)
    X = space.sample_encoded(6, seed=1)
    terms = kernel._likelihood_terms(X)
    assert terms.setter is not None
    theta = kernel.theta + 0.1
    np.testing.assert_allclose(terms.gram(theta), kernel.clone_with_theta(theta)(X), rtol=1e-13)

    class OwnSetter(SetKernel):
        @property
        def theta(self):
            return Kernel.theta.fget(self)

        @theta.setter
        def theta(self, theta):
            Kernel.theta.fset(self, theta)

    own = SpaceSum(OwnSetter(space=SET_SPACES["set_only"]), MMDSetKernel(space=SET_SPACES["set_only"]),
                   SET_SPACES["set_only"])
    assert own._theta_leaves() is None
    assert own._likelihood_terms(SET_SPACES["set_only"].sample_encoded(6, seed=1)).setter is None
