"""FM kernels normalised to a unit diagonal (issue 23 §1, ``fastfm.kernels.fm`` "Unit diagonal").

On a path graph the paper's factors have a larger diagonal at the ends: at default hyperparameters ModLap's
prior variance on three integers 0..14 was 2.218 at the corners and 0.84 inside, and on twelve such
integers every suggestion went to a bound.  With ``unit_diagonal=True`` (what BO uses) k̃(x, x') =
w(x) k(x, x') w(x'), k̃(x, x) = variance everywhere.  Checked here for every entry point that computes
k̃ or its derivatives, on both CPU backends, against k and finite differences.
"""
import numpy as np
import pytest

import fastfm as ff
from fastfm._backends import available_backends
from fastfm.kernels.matvec import _single_precision_product, kernel_matvec

BACKENDS = [b for b in ("numpy", "cpp") if b in available_backends()]

SPACES = {
    "integers": ff.Space([ff.Integer(f"v{i}", 0, 14) for i in range(3)]),
    "mixed": ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", -1.0, 1.0), ff.Integer("i", 0, 9),
                       ff.Ordinal("o", ["s", "m", "l", "xl"]), ff.Categorical("c", list("abc")),
                       ff.Graph("star", 5, [(0, k) for k in range(1, 5)])]),
    "conditional": ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("kind", ["a", "b"]),
                             ff.Integer("depth", 1, 6, active_if={"kind": "a"}), ff.Ordinal("o", [1, 2, 3])]),
}
KERNELS = {
    "ModLap": lambda space, **kw: ff.kernels.ModLap(space, **kw),
    "ModDif": lambda space, **kw: ff.kernels.ModDif(space, **kw),
    "FM(0.5,1,0.25;t=1.3)": lambda space, **kw: ff.kernels.FMKernel(space, (0.5, 1.0, 0.25), 1.3, **kw),
}


def _kernel(name, space, backend, unit_diagonal=True, seed=0):
    rng = np.random.default_rng(seed)
    P, Dc = space.n_discrete, space.n_continuous
    kw = dict(alpha=rng.uniform(0.2, 2.0, P), beta=rng.uniform(0.2, 2.0, P), variance=1.7, backend=backend,
              unit_diagonal=unit_diagonal)
    if Dc:
        kw["lengthscale"] = rng.uniform(0.3, 1.2, Dc)
    return KERNELS[name](space, **kw)


@pytest.fixture(params=sorted(SPACES))
def space(request):
    return SPACES[request.param]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_prior_variance_is_the_same_everywhere_and_k_is_rescaled(space, name, backend):
    X = space.sample_encoded(30, seed=3)
    kernel = _kernel(name, space, backend)
    plain = _kernel(name, space, backend, unit_diagonal=False)
    K, K0 = kernel(X), plain(X)
    np.testing.assert_allclose(np.diag(K), 1.7, rtol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), 1.7, rtol=0, atol=0)
    d = np.sqrt(np.diag(K0))
    np.testing.assert_allclose(K, 1.7 * K0 / np.outer(d, d), rtol=1e-12)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-15 * np.max(K))
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.max(K)
    Y = space.sample_encoded(7, seed=4)
    np.testing.assert_allclose(kernel(X, Y), 1.7 * plain(X, Y) / np.outer(d, np.sqrt(plain.diag(Y))), rtol=1e-12)


def test_the_corner_bias_of_path_graphs_is_gone():
    space = SPACES["integers"]
    points = space.encode([{"v0": 0, "v1": 0, "v2": 0}, {"v0": 14, "v1": 14, "v2": 14}, {"v0": 7, "v1": 6, "v2": 8}])
    before = ff.kernels.ModLap(space).diag(points)
    assert before[0] / before[2] > 2.5          # 2.218 vs 0.84 at default hyperparameters
    np.testing.assert_allclose(ff.kernels.ModLap(space, unit_diagonal=True).diag(points), 1.0)


def test_nominal_spaces_are_untouched_bit_for_bit():
    space = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("a", list("abcd")), ff.Categorical("b", [1, 2])])
    X = space.sample_encoded(20, seed=0)
    W = np.random.default_rng(0).standard_normal((20, 20))
    on, off = ff.kernels.ModLap(space, beta=0.7, unit_diagonal=True), ff.kernels.ModLap(space, beta=0.7)
    np.testing.assert_array_equal(on(X), off(X))
    np.testing.assert_array_equal(on.gradient_reduction(X, W), off.gradient_reduction(X, W))


def _finite_difference_reduction(kernel, X, W, h=1e-6):
    theta = kernel.theta.copy()
    out = np.empty(len(theta))
    for j in range(len(theta)):
        values = []
        for step in (h, -h):
            k = kernel.clone_with_theta(np.where(np.arange(len(theta)) == j, theta + step, theta))
            values.append(np.sum(W * k(X)))
        out[j] = (values[0] - values[1]) / (2 * h)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gradients_match_finite_differences(space, name, backend):
    X = space.sample_encoded(25, seed=5)
    kernel = _kernel(name, space, backend, seed=2)
    rng = np.random.default_rng(7)
    W = rng.standard_normal((25, 25))
    reference = _finite_difference_reduction(kernel, X, W)
    scale = np.max(np.abs(reference)) + 1.0
    np.testing.assert_allclose(kernel.gradient_reduction(X, W), reference, atol=1e-6 * scale)
    symmetric = W + W.T
    np.testing.assert_allclose(kernel.gradient_reduction(X, symmetric, symmetric=True),
                               _finite_difference_reduction(kernel, X, symmetric), atol=2e-6 * scale)
    # the full tensor (eval_gradient) and the low-rank form agree with the reduction
    K, dK = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(np.einsum("ab,abj->j", W, dK), kernel.gradient_reduction(X, W), rtol=1e-9,
                               atol=1e-10 * scale)
    U, Z = rng.standard_normal((25, 3)), rng.standard_normal((25, 3))
    np.testing.assert_allclose(kernel._low_rank_reduction(X, U, Z)[kernel._free_mask()],
                               kernel.gradient_reduction(X, U @ Z.T), rtol=1e-9, atol=1e-10 * scale)


@pytest.mark.parametrize("keeps_unscaled_gram", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_likelihood_terms_agree_with_the_kernel(space, backend, keeps_unscaled_gram, monkeypatch):
    """Both ways to the reduction's β share: a copy of the unscaled Gram kept from ``gram`` (small N), and its
    rows recomputed block by block (fm._SHARE_CACHE_ENTRIES)."""
    if not keeps_unscaled_gram:
        monkeypatch.setattr(ff.kernels.fm, "_SHARE_CACHE_ENTRIES", 0)
    X = space.sample_encoded(20, seed=8)
    kernel = _kernel("ModLap", space, backend)
    terms = kernel._likelihood_terms(X)
    K = terms.gram(kernel.theta)
    np.testing.assert_allclose(K, kernel(X), rtol=1e-12, atol=1e-14 * np.max(K))   # θ goes through exp(log)
    K[...] = np.nan     # the GP factorises K in place: the reduction must not read it
    W = np.random.default_rng(3).standard_normal((20, 20))
    W = W + W.T
    np.testing.assert_allclose(terms.reduction(W.copy()), kernel.gradient_reduction(X, W), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_the_compiled_unit_diagonal_reduction_matches_the_numpy_blocks(kernel_name, monkeypatch):
    """Above _SHARE_CACHE_ENTRIES the C++ backend's likelihood terms take ``fm_unit_diagonal_reduction`` (W ∘ wwᵀ
    pair by pair, the weights' share from the Gram's chunks) where the definition, ``_unit_diagonal_reduction``,
    scales W in place (restored to within rounding) and recomputes the Gram in blocks of rows: the same vector, and
    the compiled call leaves W as it was, bit for bit."""
    if "cpp" not in BACKENDS:
        pytest.skip("the C++ extension is not built")
    monkeypatch.setattr(ff.kernels.fm, "_SHARE_CACHE_ENTRIES", 0)
    space = SPACES["mixed"]
    X = space.sample_encoded(300, seed=17)        # several tiles of the row sums
    kernel = _kernel(kernel_name, space, "cpp", seed=4)
    W = np.random.default_rng(5).standard_normal((300, 300))
    W = W + W.T
    results = []
    for compiled in (True, False):
        terms = kernel._likelihood_terms(X)
        if not compiled:
            terms._unit_diagonal_reduction = None
        terms.gram(kernel.theta)
        given = W.copy()
        results.append(terms.reduction(given))
        if compiled:
            np.testing.assert_array_equal(given, W)
    scale = np.abs(results[1]).max()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-11, atol=1e-12 * scale)


@pytest.mark.parametrize("symmetric_weights", [True, False])
def test_fm_unit_diagonal_reduction_against_its_definition(symmetric_weights):
    """The binding's sums and per-point shares against the reference backend's reduction with W ∘ wwᵀ and
    r_a = Σ_b (W_ab + W_ba) w_a w_b K_ab, for a symmetric W (one triangle read) and any W."""
    if "cpp" not in BACKENDS:
        pytest.skip("the C++ extension is not built")
    from fastfm._backends import cpp, numpy_backend
    space = SPACES["mixed"]
    kernel = _kernel("ModLap", space, "cpp", seed=6)
    X = space.sample_encoded(150, seed=18)
    C, D = kernel._split(X)
    C = C / kernel.lengthscale
    args = (space.packed_spectra, np.asarray(kernel.alpha, float), np.asarray(kernel.beta, float), 1.3,
            kernel._modulation)
    rng = np.random.default_rng(19)
    W, w = rng.standard_normal((150, 150)), rng.uniform(0.5, 2.0, 150)
    if symmetric_weights:
        W = W + W.T
    *sums, per_point = cpp.fm_unit_diagonal_reduction(C, D, W, w, *args, symmetric_weights)
    reference = numpy_backend.fm_grad_reduction(C, D, W * w[:, None] * w[None, :], *args, symmetric_weights)
    K = numpy_backend.fm_gram(C, D, None, None, *args)
    expected_r = np.einsum("ab,ab->a", (W + W.T) * w[:, None] * w[None, :], K)
    for got, want in zip(sums, reference):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(per_point, expected_r, rtol=1e-11, atol=1e-12 * np.abs(expected_r).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_likelihood_gram_evaluates_the_groups_once_for_its_normalisers_and_its_scaling(space, backend):
    """``_FMLikelihoodTerms.gram`` hands the normalisers' f at the groups to the unit-diagonal scaling
    (``NormaliserLayout.group_derivatives``): the same Gram, bit for bit, as the scaling evaluating its own."""
    X = space.sample_encoded(20, seed=5)
    kernel = _kernel("ModLap", space, backend)
    terms = kernel._likelihood_terms(X)
    theta = kernel.theta + np.random.default_rng(6).uniform(-0.5, 0.5, kernel.n_theta)
    shared = terms.gram(theta).copy()
    np.testing.assert_array_equal(shared, terms.gram_at(terms._arguments(theta)))
    np.testing.assert_allclose(shared, kernel.clone_with_theta(theta)(X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_neighbours_products_and_input_gradients(backend):
    space = SPACES["mixed"]
    kernel = _kernel("ModLap", space, backend)
    X0, X = space.sample_encoded(4, seed=1), space.sample_encoded(15, seed=2)
    owner = np.array([0, 0, 1, 2, 3, 3])
    var_index = np.array([0, 1, 2, 3, 0, 1])
    new_state = np.array([3, 2, 1, 4, 9, 0])
    points = kernel.neighbour_points(X0, owner, var_index, new_state)
    np.testing.assert_allclose(kernel.neighbour_gram_batch(X0, X, owner, var_index, new_state), kernel(points, X),
                               rtol=1e-11)
    V = np.random.default_rng(4).standard_normal((15, 2))
    np.testing.assert_allclose(kernel_matvec(kernel, X, V), kernel(X) @ V, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(kernel_matvec(kernel, X0, V, X), kernel(X0, X) @ V, rtol=1e-11, atol=1e-12)
    product = _single_precision_product(kernel, X)
    if product is not None:
        np.testing.assert_allclose(product(V), kernel(X) @ V, rtol=1e-5, atol=1e-5)
    K, dK = kernel.gram_and_input_gradient(X0, X)
    np.testing.assert_allclose(K, kernel(X0, X), rtol=1e-11)
    h = 1e-6
    for d in range(space.n_continuous):
        step = np.zeros(space.n_dims)
        step[d] = h
        numeric = (kernel(X0 + step, X) - kernel(X0 - step, X)) / (2 * h)
        np.testing.assert_allclose(dK[:, :, d], numeric, atol=1e-6 * np.max(np.abs(K)))


def test_unit_diagonal_is_a_constructor_parameter():
    space = SPACES["mixed"]
    kernel = ff.kernels.ModLap(space, unit_diagonal=True)
    from sklearn.base import clone
    assert clone(kernel).unit_diagonal is True and kernel.clone_with_theta(kernel.theta).unit_diagonal is True
    assert ff.kernels.ModLap(space).unit_diagonal is False      # the paper's kernel unless asked
    assert ff.Optimizer(space)._kernel.unit_diagonal is True    # BO asks
    assert ff.Optimizer(ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("s", 2, 1)]), kernel="modlap")._kernel is not None


def test_the_scaling_of_several_kernels_in_one_pass_is_each_kernels_own():
    """``_UnitDiagonalRows`` (a likelihood's scaling of all AdditiveFM parts at once) gives, per space, the row
    weights and their β derivatives of that space's own tables; None where every graph is vertex-transitive."""
    from fastfm.kernels import fm
    spaces = [SPACES["mixed"], ff.Space([ff.Categorical("c", list("abc")), ff.Real("x", 0.0, 1.0)]),
              SPACES["integers"], SPACES["conditional"]]
    states = [space.sample_encoded(30, seed=k)[:, space.n_continuous:].astype(np.int64)
              for k, space in enumerate(spaces)]
    rng = np.random.default_rng(4)
    betas = [rng.uniform(0.1, 3.0, space.n_discrete) for space in spaces]
    modulation = ff.kernels.ModLap(spaces[0])._modulation
    rows = fm._UnitDiagonalRows(spaces, states).at(modulation, np.concatenate(betas))
    assert rows[1] is None
    for space, D, beta, scaling in zip(spaces, states, betas, rows):
        if scaling is None:
            continue
        w, G = fm._row_weights(fm._unit_diagonal_tables(space, modulation, beta), D)
        np.testing.assert_allclose(scaling[0], w, rtol=1e-14)
        np.testing.assert_allclose(scaling[1], G, rtol=1e-12, atol=1e-15)
        assert scaling[0].shape == (30,) and scaling[1].shape == (30, space.n_discrete)


@pytest.mark.parametrize("scales_a_copy", [True, False])
@pytest.mark.parametrize("symmetric_weights", [True, False])
def test_the_beta_share_from_a_kept_gram_equals_the_one_from_recomputed_rows(symmetric_weights, scales_a_copy,
                                                                              monkeypatch):
    """``_unit_diagonal_reduction`` given the unscaled Gram whole, or a function of its rows (block by block);
    W' = W ∘ wwᵀ a scaled copy (W untouched) or, above fm._SHARE_CACHE_ENTRIES, W scaled in place and restored."""
    from fastfm.kernels import fm
    if not scales_a_copy:
        monkeypatch.setattr(fm, "_SHARE_CACHE_ENTRIES", 0)
    rng = np.random.default_rng(9)
    n = 37
    A = rng.standard_normal((n, n))
    K = A @ A.T
    W = rng.standard_normal((n, n))
    if symmetric_weights:
        W = W + W.T
    np.fill_diagonal(W, 0.0)
    w, G = rng.uniform(0.5, 2.0, n), rng.standard_normal((n, 3))
    results = []
    for gram_rows in (K, lambda rows: K[rows]):
        W_before = W.copy()
        reduced = []
        results.append(fm._unit_diagonal_reduction(lambda scaled: reduced.append(scaled.copy()) or np.zeros(5),
                                                   gram_rows, W, w, G, 1, symmetric_weights))
        np.testing.assert_array_equal(reduced[0], W_before * w[:, None] * w[None, :])   # the backend's W'
        if scales_a_copy:
            np.testing.assert_array_equal(W, W_before)
        else:
            np.testing.assert_allclose(W, W_before, rtol=1e-14)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    # Σ_b W'_ab K_ab (g(a) + g(b)) with W' = W ∘ wwᵀ: each point's row and column sums (K symmetric)
    share = W * np.outer(w, w) * K
    np.testing.assert_allclose(results[0][1:4], (share.sum(axis=1) + share.sum(axis=0)) @ G, rtol=1e-10)
