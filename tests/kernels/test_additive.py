"""AdditiveFM: the FM kernel plus one-variable FM terms (fastfm.kernels.additive).

The contract checks (symmetry, PSD, gradients against finite differences, neighbour Grams, input gradients)
run over it in test_kernel_contract.py; these check what it is made of and how BO uses it."""
import numpy as np
import pytest

import fastfm as ff
from fastfm import kernels as fk
from fastfm.gp.priors import DEFAULT_LOG_PRIORS, default_hyperparameter_prior
from fastfm.kernels import additive
from fastfm.kernels.fm import _part_normaliser


@pytest.fixture
def mixed_space():
    return ff.Space([ff.Real("x", -1.0, 1.0), ff.Real("y", 0.0, 1.0), ff.Categorical("a", list("abc")),
                     ff.Integer("i", 0, 4), ff.Categorical("b", ["p", "q"])])


def test_gram_is_the_product_plus_the_one_variable_terms(mixed_space):
    """k = σ² k̃ + Σ_p σ²_p k̃_p with k̃_p the FM kernel on (continuous, v_p) alone, built independently here."""
    rng = np.random.default_rng(0)
    P = mixed_space.n_discrete
    kernel = fk.AdditiveFM(mixed_space)
    kernel.theta = kernel.theta + rng.uniform(-1, 1, kernel.n_theta)
    X = mixed_space.sample_encoded(30, seed=1)
    product = fk.ModLap(mixed_space, lengthscale=kernel.lengthscale, alpha=kernel.alpha, beta=kernel.beta,
                        variance=kernel.variance, unit_diagonal=True)
    expected = product(X)
    for p, parameter in enumerate(mixed_space.discrete_params):
        sub = ff.Space(list(mixed_space.continuous_params) + [parameter])
        values = dict(lengthscale=kernel.additive_lengthscale.reshape(P, -1)[p], alpha=kernel.additive_alpha[p],
                      beta=kernel.additive_beta[p], variance=kernel.additive_variance[p])
        term = fk.ModLap(sub, unit_diagonal=True, **values)
        columns = [0, 1, mixed_space.n_continuous + p]
        expected += term(X[:, columns])
    np.testing.assert_allclose(kernel(X), expected, rtol=1e-13)
    # unit diagonal: the prior variance is the sum of the parts' everywhere
    total = kernel.variance + np.sum(kernel.additive_variance)
    np.testing.assert_allclose(kernel.diag(X), total, rtol=1e-13)


def test_each_term_has_its_own_hyperparameters(mixed_space):
    modlap = fk.ModLap(mixed_space)
    Dc, P = mixed_space.n_continuous, mixed_space.n_discrete
    assert fk.AdditiveFM(mixed_space).n_theta == modlap.n_theta + P * Dc + 3 * P


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_a_gram_between_two_sets_of_points_is_the_components_in_one_call(mixed_space, backend, monkeypatch):
    """K(X, Y) through the backend's fm_cross_gram_sum (one call for every component) equals the components' Grams
    added in order (the path of a backend without it) bit for bit, the scaled components (the product and the
    integer's term: unit-diagonal weights) included."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    kernel = fk.AdditiveFM(mixed_space, backend=backend)
    kernel.theta = kernel.theta + np.random.default_rng(31).uniform(-1, 1, kernel.n_theta)
    X, Y = mixed_space.sample_encoded(37, seed=32), mixed_space.sample_encoded(41, seed=33)
    fused = kernel(X, Y)
    assert kernel._memo("fused_components", kernel._fused_components).cross_gram_sum is not None
    product, terms = kernel._components()
    expected = product(X, Y)
    for term in terms:
        expected = expected + term(X, Y)
    np.testing.assert_array_equal(fused, expected)
    # a backend without the call: the components in turn, the same bits
    monkeypatch.setattr(type(kernel._memo("fused_components", kernel._fused_components)), "cross_gram_sum",
                        property(lambda self: None))
    np.testing.assert_array_equal(kernel(X, Y), fused)


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_neighbour_rows_fused_or_by_component_are_the_same_bits(mixed_space, backend, monkeypatch):
    """A hill-climbing step's rows (``neighbour_gram_batch``): up to FUSED_NEIGHBOUR_MAX_PAIRS pairs one fused Gram of
    the neighbour points, above it the product's neighbour rows plus each term's rows of the base points and of the
    moved ones; both are the neighbour points' Gram, the first bit for bit, the second to rounding (the product's
    neighbour rows multiply the base point's other factors by the moved one's, in another order)."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    kernel = fk.AdditiveFM(mixed_space, backend=backend)
    kernel.theta = kernel.theta + np.random.default_rng(34).uniform(-1, 1, kernel.n_theta)
    X0, X = mixed_space.sample_encoded(4, seed=35), mixed_space.sample_encoded(29, seed=36)
    optimizer = ff.optim.MixedAcquisitionOptimizer(mixed_space)
    owner, var_index, new_state = optimizer._neighbourhoods(X0)
    calls = []
    gram = kernel._memo("fused_components", kernel._fused_components).gram
    monkeypatch.setattr(kernel._memo("fused_components", kernel._fused_components).__class__, "gram",
                        lambda self, *args: calls.append(len(args[0])) or gram(*args))
    fused = kernel.neighbour_gram_batch(X0, X, owner, var_index, new_state)
    assert calls == [len(owner)]
    monkeypatch.setattr(additive, "FUSED_NEIGHBOUR_MAX_PAIRS", len(owner) * len(X) - 1)
    by_component = kernel.neighbour_gram_batch(X0, X, owner, var_index, new_state)
    assert calls == [len(owner)]
    np.testing.assert_allclose(by_component, fused, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(fused, kernel(kernel.neighbour_points(X0, owner, var_index, new_state), X))


@pytest.mark.skipif("cpp" not in ff.available_backends(), reason="the C++ extension is not built")
def test_cpp_backend_matches_numpy(mixed_space):
    rng = np.random.default_rng(3)
    kernels = {backend: fk.AdditiveFM(mixed_space, backend=backend) for backend in ("numpy", "cpp")}
    theta = kernels["numpy"].theta + rng.uniform(-1, 1, kernels["numpy"].n_theta)
    X = mixed_space.sample_encoded(40, seed=4)
    W = rng.normal(size=(40, 40))
    W = W + W.T
    results = {}
    for backend, kernel in kernels.items():
        kernel.theta = theta
        results[backend] = (kernel(X), kernel.gradient_reduction(X, W, symmetric=True),
                            kernel.gram_and_input_gradient(X[:5], X)[1])
    for numpy_value, cpp_value in zip(results["numpy"], results["cpp"]):
        np.testing.assert_allclose(cpp_value, numpy_value, rtol=1e-10, atol=1e-12)


def test_every_hyperparameter_has_a_named_prior(mixed_space):
    """No hyperparameter falls back to the 'centred in its bounds' prior of unknown names."""
    kernel = fk.AdditiveFM(mixed_space)
    assert all(h.name in DEFAULT_LOG_PRIORS for h in kernel.hyperparameters)
    assert default_hyperparameter_prior(kernel).mean.shape == (kernel.n_theta + 1,)


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_likelihood_terms_with_a_fixed_hyperparameter_take_the_generic_path(mixed_space, backend):
    """All free: the fused path (_AdditiveLikelihoodTerms: one normaliser pass, W's diagonal split once); a fixed
    variance: the public Gram at every θ.  Both equal the public Gram and reduction, and give W back (to the
    rounding of the unit diagonal's scaling of W in place and back)."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    X = mixed_space.sample_encoded(20, seed=5)
    rng = np.random.default_rng(6)
    W = rng.normal(size=(20, 20))
    W = W + W.T
    for kernel in (fk.AdditiveFM(mixed_space, backend=backend),
                   fk.AdditiveFM(mixed_space, variance_bounds="fixed", backend=backend)):
        terms = kernel._likelihood_terms(X)
        for _ in range(2):
            theta = kernel.theta + rng.uniform(-1, 1, kernel.n_theta)
            reference = kernel.clone_with_theta(theta)
            np.testing.assert_allclose(terms.gram(theta), reference(X), rtol=1e-13)
            W_before = W.copy()
            expected = reference.gradient_reduction(X, W)
            np.testing.assert_allclose(terms.reduction(W), expected, rtol=1e-11, atol=1e-12 * np.abs(expected).max())
            np.testing.assert_allclose(W, W_before, rtol=1e-14, atol=0)


def _own_grams(terms, theta, parts):
    """The Grams of ``parts`` (indices into terms.parts) through each part's own call at θ, as the Gram took them
    part by part before fm._PartSum."""
    values = np.exp(theta)
    c, dlog_c = terms._normalisers.factors(terms._modulation, values[terms._beta_positions])
    grams = []
    for k in parts:
        part, variables = terms.parts[k], terms._variables[k]
        grams.append(part.gram_at(part.arguments_at(values[terms.selections[k]], _part_normaliser(c, variables),
                                                    dlog_c[variables])))
    return grams


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_the_parts_in_one_call_are_each_parts_own(mixed_space, backend, monkeypatch):
    """Every part, plain (the nominal terms: vertex-transitive graphs) or scaled (the product and the integer's term:
    a path graph, a unit-diagonal scaling), takes one call of the backend (fm._PartSum: fm_gram_sum,
    fm_grad_reduction_sum).  The call gives the parts' Grams, each as its own path scales it, summed in order bit
    for bit; each plain part's gradient vector bit for bit and each scaled part's within the rounding of its
    weights' β share; the whole Gram and gradient equal the parts' in order.  Above _SHARE_CACHE_ENTRIES the scaled
    parts stay in the call without keeping their Grams (an N × N array each): the reduction recomputes them."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    X = mixed_space.sample_encoded(25, seed=8)
    kernel = fk.AdditiveFM(mixed_space, backend=backend)
    terms = kernel._likelihood_terms(X)
    assert [part.plain for part in terms.parts] == [False, True, False, True]   # product, a, i, b
    assert [part.scaled for part in terms.parts] == [True, False, True, False]
    assert terms._fused_parts == [0, 1, 2, 3] and terms._gram_order == [0]
    rng = np.random.default_rng(9)
    kept_first = None
    for _ in range(3):
        theta = kernel.theta + rng.uniform(-1, 1, kernel.n_theta)
        K = terms.gram(theta)
        # each evaluation writes the scaled parts' Grams into the arrays of the one before (no new N × N arrays)
        kept = [scaling[2] for scaling in terms._fused._at[-1] if scaling is not None]
        assert len(kept) == 2 and (kept_first is None or all(a is b for a, b in zip(kept, kept_first)))
        kept_first = kept
        own = _own_grams(terms, theta, range(4))
        np.testing.assert_array_equal(K, own[0] + own[1] + own[2] + own[3])
        np.testing.assert_allclose(K, kernel.clone_with_theta(theta)(X), rtol=1e-13)
        terms.gram(theta)
        W = rng.normal(size=(25, 25))
        W = W + W.T
        W_off, w_diag = W.copy(), W.diagonal().copy()
        np.fill_diagonal(W_off, 0.0)
        fused = terms._fused.reduction(W_off, w_diag)
        _own_grams(terms, theta, range(4))                       # every part's own state at θ
        own = [part.reduction_without_diagonal(W_off.copy(), w_diag) for part in terms.parts]
        ends = np.cumsum([len(vector) for vector in own])
        for k, piece in enumerate(np.split(fused, ends[:-1])):
            if terms.parts[k].plain:
                np.testing.assert_array_equal(piece, own[k])
            else:
                np.testing.assert_allclose(piece, own[k], rtol=1e-12, atol=1e-13 * np.abs(own[k]).max())
        expected = kernel._chain(own)
        terms.gram(theta)
        np.testing.assert_allclose(terms.reduction(W), expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())
    kept = terms.reduction(W)
    monkeypatch.setattr(additive, "_SHARE_CACHE_ENTRIES", 24 ** 2)
    terms = kernel._likelihood_terms(X)
    assert terms._fused_parts == [0, 1, 2, 3] and terms._gram_order == [0] and not terms._fused.keep_grams
    own = _own_grams(terms, theta, range(4))
    np.testing.assert_array_equal(terms.gram(theta), own[0] + own[1] + own[2] + own[3])
    assert all(scaling is None or scaling[2] is None for scaling in terms._fused._at[-1])   # no Gram kept
    recomputed = terms.reduction(W)
    np.testing.assert_allclose(recomputed, kept, rtol=1e-12, atol=1e-13 * np.abs(kept).max())
    expected = kernel.clone_with_theta(theta).gradient_reduction(X, W)
    np.testing.assert_allclose(recomputed, expected, rtol=1e-11, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("symmetric_weights", [True, False])
def test_a_scaled_parts_share_without_its_gram_matches_the_reference(mixed_space, symmetric_weights):
    """fm_grad_reduction_sum with a scaling whose Gram is None (not kept: the C++ backend forms W ∘ wwᵀ pair by
    pair and the weights' β share from the Gram's chunks) against the reference backend's definition, for a
    symmetric W (read on one triangle) and any W, on more points than one tile of the row sums holds."""
    if "cpp" not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    from fastfm._backends import cpp, numpy_backend
    X = mixed_space.sample_encoded(300, seed=21)
    kernel = fk.AdditiveFM(mixed_space, backend="cpp")
    terms = kernel._likelihood_terms(X)
    fused = terms._fused
    theta = kernel.theta + np.random.default_rng(22).uniform(-1, 1, kernel.n_theta)
    terms.gram(theta)
    lengthscales, alphas, betas, variances, _, _, kept = fused._at
    W = np.random.default_rng(23).normal(size=(300, 300))
    if symmetric_weights:
        W = W + W.T
    np.fill_diagonal(W, 0.0)
    scalings = [None if scaling is None else (scaling[0], scaling[1], None) for scaling in kept]
    assert sum(scaling is not None for scaling in scalings) == 2
    arguments = (fused.C, lengthscales, fused.states, W, fused.spectra, alphas, betas, variances, fused.modulation,
                 symmetric_weights)
    reference = numpy_backend.fm_grad_reduction_sum(*arguments, scalings)
    with_grams = cpp.fm_grad_reduction_sum(*arguments, kept)
    recomputed = cpp.fm_grad_reduction_sum(*arguments, scalings)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(recomputed, reference, rtol=1e-11, atol=1e-12 * scale)
    np.testing.assert_allclose(recomputed, with_grams, rtol=1e-12, atol=1e-13 * scale)


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_the_one_call_gradient_against_finite_differences(backend):
    """Σ_ab W_ab ∂K_ab/∂θ of the likelihood terms (every part in one call: an integer's path and a nominal's
    grouped, weighted complete graph are scaled parts) against central differences of Σ W ∘ K(θ)."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Integer("i", 0, 4),
                      ff.Graph("g", 5, [(u, v) for u in range(5) for v in range(u + 1, 5)],
                               weights=[10.0 if u < 2 and v < 2 else 1.0 for u in range(5) for v in range(u + 1, 5)]),
                      ff.Categorical("a", list("abc"))])
    X = space.sample_encoded(30, seed=11)
    kernel = fk.AdditiveFM(space, backend=backend)
    terms = kernel._likelihood_terms(X)
    assert terms._fused_parts == [0, 1, 2, 3] and sum(part.scaled for part in terms.parts) == 3
    rng = np.random.default_rng(12)
    W = rng.normal(size=(30, 30))
    W = W + W.T
    theta = kernel.theta + rng.uniform(-0.5, 0.5, kernel.n_theta)
    terms.gram(theta)
    gradient = terms.reduction(W)
    step = 1e-6
    numeric = np.array([(np.sum(W * terms.gram(theta + step * e)) - np.sum(W * terms.gram(theta - step * e)))
                        / (2 * step) for e in np.eye(kernel.n_theta)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def _components_own_input_gradient(kernel, X1, X):
    """AdditiveFM's K(X1, X) and ∂K/∂X1 from each component's own call, added in order."""
    product, parts = kernel._components()
    K_own, dK_own = product._gram_and_input_gradient(X1, X)
    for part in parts:
        K_part, dK_part = part._gram_and_input_gradient(X1, X)
        K_own, dK_own = K_own + K_part, dK_own + dK_part
    return K_own, dK_own


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_on_a_nominal_space_the_gram_is_the_parts_in_order(backend):
    """Every part plain (the product too): one call, the Gram the parts' own added in order, bit for bit."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("a", list("abcd")), ff.Categorical("b", [0, 1]),
                      ff.Categorical("c", list("xyz"))])
    kernel = fk.AdditiveFM(space, backend=backend)
    X = space.sample_encoded(30, seed=3)
    terms = kernel._likelihood_terms(X)
    assert terms._gram_order == [0] and terms._other_parts == []
    theta = kernel.theta + np.random.default_rng(4).uniform(-1, 1, kernel.n_theta)
    K = terms.gram(theta)
    expected = None
    for gram in _own_grams(terms, theta, range(4)):
        expected = gram if expected is None else expected + gram
    np.testing.assert_array_equal(K, expected)
    # the predictions' K(X1, X2) and ∂K/∂X1 (one fm_cross_gradient_sum): the components' own, added in order
    kernel.theta = theta
    X1 = space.sample_encoded(6, seed=5)
    K_own, dK_own = _components_own_input_gradient(kernel, X1, X)
    K, dK = kernel._gram_and_input_gradient(X1, X)
    assert kernel._fused_components().log_weights == [None] * 4          # every component plain
    np.testing.assert_array_equal(K, K_own)
    np.testing.assert_array_equal(dK, dK_own)


@pytest.mark.parametrize("backend", ["numpy", "cpp"])
def test_input_gradient_is_the_components_own_with_the_scaled_ones(mixed_space, backend):
    """On the mixed space the product and the integer's term are scaled (unit diagonal), the nominal terms plain:
    one call for all four, with the scaled ones' row and column weights, equals the components' own calls added in
    order bit for bit."""
    if backend not in ff.available_backends():
        pytest.skip("the C++ extension is not built")
    kernel = fk.AdditiveFM(mixed_space, backend=backend)
    kernel.theta = kernel.theta + np.random.default_rng(7).uniform(-1, 1, kernel.n_theta)
    X, X1 = mixed_space.sample_encoded(20, seed=8), mixed_space.sample_encoded(5, seed=9)
    scaled = [log_w is not None for log_w in kernel._fused_components().log_weights]
    assert scaled == [True, False, True, False]                          # product, a, i, b
    K_own, dK_own = _components_own_input_gradient(kernel, X1, X)
    K, dK = kernel._gram_and_input_gradient(X1, X)
    np.testing.assert_array_equal(K, K_own)
    np.testing.assert_array_equal(dK, dK_own)


def test_input_gradient_follows_training_points_changed_in_place(mixed_space):
    """The training points' arguments are kept between predictions (``_FusedComponents.kept``): an X2 changed in
    place, same array, gives the Gram of its new values, and so does a new θ."""
    kernel = fk.AdditiveFM(mixed_space)
    X, X1 = mixed_space.sample_encoded(12, seed=10), mixed_space.sample_encoded(4, seed=11)
    K_before, _ = kernel._gram_and_input_gradient(X1, X)
    X[:6] = mixed_space.sample_encoded(6, seed=12)
    K_after, dK_after = kernel._gram_and_input_gradient(X1, X)
    assert not np.allclose(K_after, K_before)
    fresh = fk.AdditiveFM(mixed_space)
    K_fresh, dK_fresh = fresh._gram_and_input_gradient(X1, X.copy())
    np.testing.assert_array_equal(K_after, K_fresh)
    np.testing.assert_array_equal(dK_after, dK_fresh)
    kernel.theta = kernel.theta + 0.3
    fresh.theta = kernel.theta
    np.testing.assert_array_equal(kernel._gram_and_input_gradient(X1, X)[0], fresh._gram_and_input_gradient(X1, X)[0])


def test_components_follow_every_theta(mixed_space):
    """The components' memo keys are pinned when this kernel sets their θ: a new θ, or an attribute set
    directly, gives the Gram of a kernel built with those values."""
    X = mixed_space.sample_encoded(15, seed=2)
    kernel = fk.AdditiveFM(mixed_space)
    rng = np.random.default_rng(1)
    for _ in range(3):
        kernel.theta = kernel.theta + rng.uniform(-1, 1, kernel.n_theta)
        kernel(X)
        fresh = fk.AdditiveFM(mixed_space, **{name: getattr(kernel, name) for name, _ in kernel._hyperparameter_specs()})
        np.testing.assert_allclose(kernel(X), fresh(X), rtol=1e-13)
        np.testing.assert_allclose(kernel.gram_and_input_gradient(X[:3], X)[1],
                                   fresh.gram_and_input_gradient(X[:3], X)[1], rtol=1e-12, atol=1e-14)
    kernel.additive_variance = np.full(mixed_space.n_discrete, 2.0)
    np.testing.assert_allclose(kernel.diag(X), kernel.variance + 2.0 * mixed_space.n_discrete, rtol=1e-13)


def test_inputs_are_checked_once_and_still_named(mixed_space):
    """The terms do not re-check their columns, so the kernel's own check must name a bad value."""
    X = mixed_space.sample_encoded(4, seed=0)
    X[1, mixed_space.n_continuous] = 7.0          # state 7 of the 3-state "a"
    kernel = fk.AdditiveFM(mixed_space)
    for call in (lambda: kernel(X), lambda: kernel.diag(X), lambda: kernel.gram_and_input_gradient(X, X)):
        with pytest.raises(ff.InvalidConfigError, match="a"):
            call()


def test_bad_arguments_are_named(mixed_space):
    with pytest.raises(ValueError, match="base"):
        fk.AdditiveFM(mixed_space, base="rbf")
    with pytest.raises(ff.SpaceDefinitionError, match="discrete"):
        fk.AdditiveFM(ff.Space([ff.Real("x", 0, 1)]))
    with pytest.raises(ValueError, match="additive_variance"):
        fk.AdditiveFM(mixed_space, additive_variance=-1.0)(mixed_space.sample_encoded(2, seed=0))


def test_bo_by_name_resumes_from_its_journal(mixed_space, tmp_path):
    """``Optimizer(kernel="modlap_additive")`` runs, and a resumed run refits from the journal's values."""
    def objective(config):
        return (config["x"] - 0.3) ** 2 + (config["a"] != "b") + 0.1 * config["i"] + (config["b"] == "q") * config["y"]

    journal = tmp_path / "run.jsonl"
    opt = ff.Optimizer(mixed_space, kernel="modlap_additive", n_init=5, seed=0, storage=journal)
    for _ in range(9):
        config = opt.ask()
        opt.tell(config, objective(config))
    assert isinstance(opt.model.kernel_, fk.AdditiveFM)
    fitted = opt.model.kernel_.get_params()
    resumed = ff.Optimizer.load(journal)
    config = resumed.ask()
    resumed.tell(config, objective(config))
    assert isinstance(resumed.model.kernel_, fk.AdditiveFM)
    assert set(resumed.model.kernel_.get_params()) == set(fitted)
    assert len(resumed.trials) == 10
