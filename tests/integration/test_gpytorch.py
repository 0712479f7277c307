"""``fastfm.integration.gpytorch`` on real PyTorch, GPyTorch and BoTorch: the GPyTorch FM, Hierarchical and Set
kernels against fastfm's own (Gram, diagonal, hyperparameter and input gradients, unit diagonal on and off, a mixed
and a conditional space; the set kernel exact and subsampled, plain and normalised), the conversions both ways (a
fitted GP's kernel included), and BoTorch SingleTaskGPs fitted with ``fit_gpytorch_mll``, one whose acquisition
``optimize_acqf_mixed_alternating`` optimises on Func3C's encoding and one on a Set space."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gpytorch")

import fastfm as ff  # noqa: E402
from fastfm.integration.gpytorch import (FMKernel, Hierarchical, LogInterval, ModDif, ModLap, SetKernel,  # noqa: E402
                                         botorch_search_domain, to_fastfm, to_gpytorch)

from _spaces import make_conditional_space  # noqa: E402


def _mixed_space():
    """Two continuous dimensions, a nominal variable, a graph-encoded integer (a path) and a custom graph."""
    return ff.Space([
        ff.Real("x1", 0.0, 1.0), ff.Real("x2", -2.0, 2.0),
        ff.Categorical("c", ["a", "b", "c"]),
        ff.Integer("i", 0, 5, encoding="graph"),
        ff.Graph("g", 5, [(0, 1), (1, 2), (2, 3), (1, 4)]),
    ])


SPACES = {"mixed": _mixed_space(), "conditional": make_conditional_space()}

# fastfm's kernel of each kind, built with the given hyperparameters (FMKernel: the generalised family, t ≠ 2)
KINDS = {
    "ModLap": lambda space, **kw: ff.kernels.ModLap(space, **kw),
    "ModDif": lambda space, **kw: ff.kernels.ModDif(space, **kw),
    "FMKernel": lambda space, **kw: ff.kernels.FMKernel(space, (0.5, 1.0, 0.25), 1.3, **kw),
}
GPYTORCH_CLASSES = {"ModLap": ModLap, "ModDif": ModDif, "FMKernel": FMKernel}


def _fastfm_kernel(kind, space, unit_diagonal, seed=0, backend="auto"):
    """A fastfm kernel with random hyperparameters of every size (inside the default bounds)."""
    rng = np.random.default_rng(seed)
    P = space.n_discrete
    return KINDS[kind](space, lengthscale=rng.uniform(0.2, 1.0, space.n_continuous), alpha=rng.uniform(0.2, 3.0, P),
                       beta=rng.uniform(0.2, 2.0, P), variance=rng.uniform(0.5, 2.0), unit_diagonal=unit_diagonal,
                       backend=backend)


def _log_hyperparameter_gradient(kernel):
    """The raw parameters' gradients in fastfm's theta order [log θ | log α | log β | log variance] (the raw
    parameters are the logarithms)."""
    return torch.cat([kernel.raw_lengthscale.grad.reshape(-1), kernel.raw_alpha.grad, kernel.raw_beta.grad,
                      kernel.raw_variance.grad.reshape(1)]).numpy()


def _dense(lazy):
    return lazy.to_dense().detach().numpy()


def _assert_equals_compiled(actual, expected):
    """rtol 1e-10, and an absolute 1e-13 of the largest entry: fastfm's compiled backend rounds the smallest
    entries (ε times the largest, from cancellations in Σ_g f_g P_g[v, v']) differently from its NumPy one."""
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-13 * np.abs(expected).max())


CASES = [(space_name, kind, unit_diagonal)
         for space_name in SPACES for kind in KINDS for unit_diagonal in (False, True)]
IDS = [f"{s}-{k}-{'unit' if u else 'plain'}" for s, k, u in CASES]


@pytest.fixture(params=CASES, ids=IDS)
def case(request):
    space_name, kind, unit_diagonal = request.param
    space = SPACES[space_name]
    return kind, space, unit_diagonal, space.sample_encoded(14, seed=1), space.sample_encoded(9, seed=2)


def test_gram_and_diagonal_equal_fastfm(case):
    kind, space, unit_diagonal, X, Y = case
    reference = _fastfm_kernel(kind, space, unit_diagonal, backend="numpy")
    kernel = to_gpytorch(reference)
    assert type(kernel) is GPYTORCH_CLASSES[kind]
    X_t, Y_t = torch.tensor(X), torch.tensor(Y)
    np.testing.assert_allclose(_dense(kernel(X_t, Y_t)), reference(X, Y), rtol=1e-10, atol=0)
    np.testing.assert_allclose(_dense(kernel(X_t)), reference(X), rtol=1e-10, atol=0)
    np.testing.assert_allclose(kernel(X_t, diag=True).detach().numpy(), reference.diag(X), rtol=1e-10, atol=0)
    _assert_equals_compiled(_dense(kernel(X_t, Y_t)), _fastfm_kernel(kind, space, unit_diagonal)(X, Y))


def test_batched_inputs_give_each_batch_its_gram(case):
    kind, space, unit_diagonal, X, Y = case
    reference = _fastfm_kernel(kind, space, unit_diagonal, backend="numpy")
    kernel = to_gpytorch(reference)
    batch = torch.stack([torch.tensor(X[:5]), torch.tensor(X[5:10])])     # (2, 5, d) against (9, d)
    K = _dense(kernel(batch, torch.tensor(Y)))
    assert K.shape == (2, 5, 9)
    np.testing.assert_allclose(K[1], reference(X[5:10], Y), rtol=1e-10, atol=0)


def test_hyperparameter_gradients_equal_fastfm(case):
    kind, space, unit_diagonal, X, _ = case
    reference = _fastfm_kernel(kind, space, unit_diagonal)
    kernel = to_gpytorch(reference)
    W = np.random.default_rng(3).standard_normal((len(X), len(X)))
    # Σ W∘∂K/∂log θ by autograd of Σ W∘K, against fastfm's fused reduction and its full derivative tensor
    torch.sum(torch.tensor(W) * kernel(torch.tensor(X)).to_dense()).backward()
    gradient = _log_hyperparameter_gradient(kernel)
    expected = reference.gradient_reduction(X, W)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(gradient, expected, rtol=0, atol=1e-9 * scale)
    _, dK = reference(X, eval_gradient=True)
    assert dK.shape == (len(X), len(X), len(expected))
    np.testing.assert_allclose(gradient, np.einsum("ab,abj->j", W, dK), rtol=0, atol=1e-9 * scale)


def test_input_gradient_equals_fastfm(case):
    kind, space, unit_diagonal, X, Y = case
    reference = _fastfm_kernel(kind, space, unit_diagonal)
    kernel = to_gpytorch(reference)
    Y_t = torch.tensor(Y, requires_grad=True)
    V = np.random.default_rng(4).standard_normal((len(Y), len(X)))
    torch.sum(torch.tensor(V) * kernel(Y_t, torch.tensor(X)).to_dense()).backward()
    K, dK = reference.gram_and_input_gradient(Y, X)       # dK[m, n, d] = ∂K[m, n]/∂Y[m, d]
    expected = np.einsum("mn,mnd->md", V, dK)
    Dc = space.n_continuous
    np.testing.assert_allclose(Y_t.grad[:, :Dc].numpy(), expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    assert torch.all(Y_t.grad[:, Dc:] == 0)              # state indices are not differentiable inputs


def test_compiled_gram_equals_the_torch_operations(case):
    kind, space, unit_diagonal, X, _ = case
    reference = _fastfm_kernel(kind, space, unit_diagonal)
    W = torch.tensor(np.random.default_rng(5).standard_normal((len(X), len(X))))
    results = []
    for compiled in (False, True):
        kernel = to_gpytorch(reference, compiled=compiled)
        X_t = torch.tensor(X, requires_grad=True)
        K = kernel(X_t).to_dense()
        torch.sum(W * K).backward()
        results.append((K.detach().numpy(), X_t.grad.numpy(), _log_hyperparameter_gradient(kernel)))
    (K, grad_X, grad_theta), (K_compiled, grad_X_compiled, grad_theta_compiled) = results
    assert type(kernel) is GPYTORCH_CLASSES[kind] and kernel.compiled
    _assert_equals_compiled(K, K_compiled)
    np.testing.assert_allclose(grad_X_compiled, grad_X, rtol=0, atol=1e-10 * np.abs(grad_X).max())
    np.testing.assert_allclose(grad_theta_compiled, grad_theta, rtol=0, atol=1e-10 * np.abs(grad_theta).max())
    # cross-covariances and batches take the torch operations
    batch = torch.tensor(np.stack([X[:4], X[4:8]]))
    _assert_equals_compiled(_dense(kernel(batch))[1], reference(X[4:8]))


def test_fixed_hyperparameter_is_not_learnt():
    space = SPACES["mixed"]
    reference = ff.kernels.ModLap(space, alpha=[0.5, 1.0, 2.0], alpha_bounds="fixed", lengthscale=[0.3, 0.6])
    kernel = to_gpytorch(reference)
    assert not kernel.raw_alpha.requires_grad and kernel.raw_beta.requires_grad
    X = space.sample_encoded(10, seed=5)
    W = np.random.default_rng(6).standard_normal((10, 10))
    expected = reference.gradient_reduction(X, W)           # alpha is not in theta
    for compiled in (False, True):
        kernel = to_gpytorch(reference, compiled=compiled)
        torch.sum(torch.tensor(W) * kernel(torch.tensor(X)).to_dense()).backward()
        assert kernel.raw_alpha.grad is None
        gradient = np.concatenate([kernel.raw_lengthscale.grad.reshape(-1).numpy(), kernel.raw_beta.grad.numpy(),
                                   kernel.raw_variance.grad.reshape(1).numpy()])
        np.testing.assert_allclose(gradient, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert to_fastfm(kernel).hyperparameters[1].fixed


def test_constructor_matches_fastfm_defaults_and_setters_take_values():
    space = SPACES["mixed"]
    kernel = ModLap(space, unit_diagonal=True)
    X = space.sample_encoded(8, seed=7)
    _assert_equals_compiled(_dense(kernel(torch.tensor(X))), ff.kernels.ModLap(space, unit_diagonal=True)(X))
    kernel.lengthscale = [0.2, 0.4]
    kernel.alpha, kernel.beta, kernel.variance = 2.0, torch.tensor([0.5, 1.0, 1.5]), 1.5
    assert kernel.lengthscale.shape == (1, 2) and kernel.alpha.shape == (3,) and kernel.variance.dim() == 0
    reference = ff.kernels.ModLap(space, lengthscale=[0.2, 0.4], alpha=2.0, beta=[0.5, 1.0, 1.5], variance=1.5,
                                  unit_diagonal=True)
    _assert_equals_compiled(_dense(kernel(torch.tensor(X))), reference(X))
    # the constraint is fastfm's bounds on the logarithm, as BoTorch reads them
    constraint = kernel.raw_beta_constraint
    assert isinstance(constraint, LogInterval)
    np.testing.assert_allclose(constraint.inverse_transform(constraint.lower_bound).numpy(), np.log(1e-3))
    with pytest.raises(ValueError, match="positive"):
        kernel.variance = -1.0


def test_to_gpytorch_keeps_a_fitted_gps_hyperparameters_both_ways():
    space = SPACES["mixed"]
    X = space.sample_encoded(20, seed=8)
    y = np.sin(3 * X[:, 0]) + X[:, 2] - 0.3 * X[:, 3] + 0.5 * (X[:, 4] == 2)
    gp = ff.GaussianProcessRegressor(ff.kernels.ModLap(space, unit_diagonal=True), n_restarts=0, random_state=0)
    gp.fit(X, y)
    fitted = gp.kernel_
    kernel = to_gpytorch(fitted)
    theta = torch.cat([kernel.raw_lengthscale.reshape(-1), kernel.raw_alpha, kernel.raw_beta,
                       kernel.raw_variance.reshape(1)]).detach().numpy()
    np.testing.assert_allclose(theta, fitted.theta, rtol=0, atol=1e-14)
    _assert_equals_compiled(_dense(kernel(torch.tensor(X))), fitted(X))
    back = to_fastfm(kernel)
    assert type(back) is ff.kernels.ModLap and back.unit_diagonal
    np.testing.assert_allclose(back.theta, fitted.theta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(back.bounds, fitted.bounds)


def test_sum_and_product_convert_to_gpytorch_compositions():
    space = SPACES["mixed"]
    X = space.sample_encoded(7, seed=9)
    first, second = _fastfm_kernel("ModLap", space, False), _fastfm_kernel("FMKernel", space, True, seed=1)
    for composite in (first + second, first * second):
        _assert_equals_compiled(_dense(to_gpytorch(composite)(torch.tensor(X))), composite(X))


@pytest.mark.parametrize("base", ["matern52", "rbf"])
@pytest.mark.parametrize("space_name", sorted(SPACES))
def test_hierarchical_equals_fastfm(space_name, base):
    space = SPACES[space_name]
    rng = np.random.default_rng(13)
    n_real = ff.kernels.Hierarchical(space).n_real
    reference = ff.kernels.Hierarchical(space, base, gamma=rng.uniform(0.3, 1.0, space.n_dims),
                                        rho=rng.uniform(0.2, 1.0, n_real), lengthscale=0.7, variance=1.3)
    kernel = to_gpytorch(reference)
    assert type(kernel) is Hierarchical
    X, Y = space.sample_encoded(12, seed=14), space.sample_encoded(8, seed=15)
    _assert_equals_compiled(_dense(kernel(torch.tensor(X), torch.tensor(Y))), reference(X, Y))
    np.testing.assert_allclose(kernel(torch.tensor(X), diag=True).detach().numpy(), reference.diag(X), rtol=1e-12)
    # hyperparameter gradients, theta order [log γ | log ρ | log ℓ | log σ²]
    W = rng.standard_normal((len(X), len(X)))
    torch.sum(torch.tensor(W) * kernel(torch.tensor(X)).to_dense()).backward()
    gradient = torch.cat([kernel.raw_gamma.grad, kernel.raw_rho.grad, kernel.raw_lengthscale.grad.reshape(1),
                          kernel.raw_variance.grad.reshape(1)]).numpy()
    expected = reference.gradient_reduction(X, W)
    np.testing.assert_allclose(gradient, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    # input gradient (zero where a column is inactive in either point)
    Y_t = torch.tensor(Y, requires_grad=True)
    V = rng.standard_normal((len(Y), len(X)))
    torch.sum(torch.tensor(V) * kernel(Y_t, torch.tensor(X)).to_dense()).backward()
    expected = np.einsum("mn,mnd->md", V, reference.gram_and_input_gradient(Y, X)[1])
    np.testing.assert_allclose(Y_t.grad[:, :space.n_continuous].numpy(), expected, rtol=0,
                               atol=1e-10 * np.abs(expected).max())
    assert torch.all(Y_t.grad[:, space.n_continuous:] == 0)
    back = to_fastfm(kernel)
    assert type(back) is ff.kernels.Hierarchical and back.base == base
    np.testing.assert_allclose(back.theta, reference.theta, rtol=0, atol=1e-14)


def test_errors_name_the_problem():
    space = SPACES["mixed"]
    with pytest.raises(TypeError, match="ModNN has no GPyTorch form"):
        to_gpytorch(ff.kernels.ModNN(space))
    kernel = ModLap(space)
    X = torch.tensor(space.sample_encoded(4, seed=10))
    X[0, 3] = 0.5                                           # a rescaled state index
    with pytest.raises(ff.InvalidConfigError, match="integer state indices"):
        kernel(X).to_dense()
    with pytest.raises(ff.SpaceDefinitionError):
        ModLap(ff.Space([ff.Real("x", 0.0, 1.0)]))


def test_search_domain_describes_the_encoding():
    pytest.importorskip("botorch")
    domain = botorch_search_domain(SPACES["mixed"])
    np.testing.assert_array_equal(domain["bounds"].numpy(), [[0, 0, 0, 0, 0], [1, 1, 2, 5, 4]])
    assert domain["discrete_dims"] == {3: [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}          # the path: ±1 moves
    assert sorted(domain["cat_dims"]) == [2, 4]


@pytest.fixture(scope="module")
def func3c_model():
    """A SingleTaskGP with ModLap on 20 points of Func3C, fitted by BoTorch (negated: BoTorch maximises)."""
    pytest.importorskip("botorch")
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    problem = ff.benchmarks.Func3C()
    X = problem.space.sample_encoded(20, seed=11)
    train_X, train_Y = torch.tensor(X), -torch.tensor(problem.evaluate_encoded(X)).unsqueeze(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # InputDataWarning: state indices are not in the unit cube
        model = SingleTaskGP(train_X, train_Y, covar_module=ModLap(problem.space, unit_diagonal=True))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return problem, model, train_Y


def test_single_task_gp_fits_with_botorch(func3c_model):
    problem, model, _ = func3c_model
    kernel = model.covar_module
    start = ModLap(problem.space)
    moved = [not torch.equal(getattr(kernel, name), getattr(start, name)) for name in ("alpha", "beta", "variance")]
    assert any(moved)
    for name in ("lengthscale", "alpha", "beta", "variance"):     # L-BFGS-B kept fastfm's bounds
        constraint = getattr(kernel, f"raw_{name}_constraint")
        value = getattr(kernel, name)
        assert torch.all(value >= constraint.lower_bound * (1 - 1e-12))
        assert torch.all(value <= constraint.upper_bound * (1 + 1e-12))
    test_X = torch.tensor(problem.space.sample_encoded(5, seed=12))
    with torch.no_grad():
        mean = model.posterior(test_X).mean
    assert mean.shape == (5, 1) and torch.all(torch.isfinite(mean))


def test_compiled_kernel_gives_the_same_likelihood_and_fits(func3c_model):
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    problem, fitted, train_Y = func3c_model
    train_X = fitted.train_inputs[0]
    values = []
    for compiled in (False, True):
        kernel = to_gpytorch(to_fastfm(fitted.covar_module), compiled=compiled)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # InputDataWarning
            model = SingleTaskGP(train_X, train_Y, covar_module=kernel)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        model.train()
        loss = -mll(model(train_X), model.train_targets)
        loss.backward()
        values.append((loss.item(), _log_hyperparameter_gradient(kernel)))
    assert values[1][0] == pytest.approx(values[0][0], rel=1e-12)
    np.testing.assert_allclose(values[1][1], values[0][1], rtol=0, atol=1e-9 * np.abs(values[0][1]).max())
    fit_gpytorch_mll(mll)                       # the compiled model
    model.eval()
    with torch.no_grad():
        assert torch.all(torch.isfinite(model.posterior(train_X[:3]).mean))


def test_optimize_acqf_mixed_alternating_returns_an_encoded_point(func3c_model):
    from botorch.acquisition import LogExpectedImprovement
    from botorch.optim import optimize_acqf_mixed_alternating

    problem, model, train_Y = func3c_model
    space = problem.space
    acquisition = LogExpectedImprovement(model, best_f=train_Y.max())
    candidate, value = optimize_acqf_mixed_alternating(acquisition, q=1, num_restarts=2, raw_samples=32,
                                                       **botorch_search_domain(space))
    assert candidate.shape == (1, space.n_dims) and torch.isfinite(value).all()
    point = candidate.detach().numpy()
    space.validate_encoded(point)                           # integer states in range, continuous in [0, 1]
    assert np.isfinite(problem.evaluate_encoded(point)).all()


def test_hierarchical_single_task_gp_fits_on_a_conditional_space():
    pytest.importorskip("botorch")
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    space = SPACES["conditional"]
    X = space.sample_encoded(20, seed=16)
    y = X[:, :space.n_continuous].sum(axis=1) + 0.5 * X[:, space.n_continuous]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # InputDataWarning: state indices are not in the unit cube
        model = SingleTaskGP(torch.tensor(X), torch.tensor(y).unsqueeze(-1), covar_module=Hierarchical(space))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    kernel = model.covar_module
    assert torch.all(kernel.gamma <= 1.0 + 1e-12) and torch.all(kernel.rho <= 1.0 + 1e-12)     # fastfm's bounds
    with torch.no_grad():
        mean = model.posterior(torch.tensor(space.sample_encoded(4, seed=17))).mean
    assert torch.all(torch.isfinite(mean))


# ---- SetKernel ----------------------------------------------------------------------------------------------
def _set_space():
    """A Set of 5 points in [−1, 1]² between a Real and a Categorical: the kernel reads the Set's columns only."""
    return ff.Space([ff.Real("x", 0.0, 1.0), ff.Set("points", n_points=5, dim=2, low=-1.0, high=1.0),
                     ff.Categorical("c", ["a", "b", "c"])])


SET_SPACE = _set_space()
# (nu, ARD, normalize, n_subsample, subsample): the exact kernel and both draws of K̂ (L = 3 of m = 5)
SET_CASES = [(nu, ard, normalize, None, "shared") for nu in (0.5, 1.5, 2.5) for ard in (False, True)
             for normalize in (False, True)] + [(2.5, True, normalize, 3, subsample) for normalize in (False, True)
                                                for subsample in ("shared", "independent")]
SET_IDS = [f"nu{nu}-{'ard' if ard else 'iso'}-{'norm' if normalize else 'plain'}-"
           f"{'exact' if L is None else f'L{L}-{subsample}'}" for nu, ard, normalize, L, subsample in SET_CASES]


@pytest.fixture(params=SET_CASES, ids=SET_IDS)
def set_case(request):
    nu, ard, normalize, n_subsample, subsample = request.param
    reference = ff.kernels.SetKernel(space=SET_SPACE, parameter="points", nu=nu, lengthscale=[0.3, 0.7] if ard else 0.4,
                                     variance=1.7, normalize=normalize, n_subsample=n_subsample, seed=4,
                                     subsample=subsample, backend="numpy")
    return reference, SET_SPACE.sample_encoded(11, seed=21), SET_SPACE.sample_encoded(6, seed=22)


def _set_log_gradient(kernel):
    """The raw parameters' gradients in fastfm's theta order [log ℓ | log σ²]."""
    return torch.cat([kernel.raw_lengthscale.grad.reshape(-1), kernel.raw_variance.grad.reshape(1)]).numpy()


def test_set_kernel_equals_fastfm(set_case):
    reference, X, Y = set_case
    kernel = to_gpytorch(reference)
    assert type(kernel) is SetKernel and kernel.n_points == 5 and kernel.dim == 2
    X_t, Y_t = torch.tensor(X), torch.tensor(Y)
    np.testing.assert_allclose(_dense(kernel(X_t, Y_t)), reference(X, Y), rtol=1e-10, atol=0)
    np.testing.assert_allclose(_dense(kernel(X_t)), reference(X), rtol=1e-10, atol=0)
    np.testing.assert_allclose(kernel(X_t, diag=True).detach().numpy(), reference.diag(X), rtol=1e-10, atol=0)
    np.testing.assert_allclose(_dense(kernel(X_t, Y_t)), to_fastfm(kernel)(X, Y), rtol=1e-10, atol=0)  # C++ backend
    if reference.n_subsample is not None:        # K̂ is fastfm's draw, not the exact kernel
        exact = ff.kernels.SetKernel(space=SET_SPACE, nu=reference.nu, lengthscale=reference.lengthscale,
                                     variance=reference.variance, normalize=reference.normalize)
        assert np.abs(_dense(kernel(X_t, Y_t)) - exact(X, Y)).max() > 1e-3


def test_set_kernel_hyperparameter_gradients_equal_fastfm(set_case):
    reference, X, _ = set_case
    kernel = to_gpytorch(reference)
    W = np.random.default_rng(23).standard_normal((len(X), len(X)))
    torch.sum(torch.tensor(W) * kernel(torch.tensor(X)).to_dense()).backward()
    gradient = _set_log_gradient(kernel)
    expected = reference.gradient_reduction(X, W)
    assert gradient.shape == expected.shape == (np.size(reference.lengthscale) + 1,)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(gradient, expected, rtol=0, atol=1e-10 * scale)
    _, dK = reference(X, eval_gradient=True)
    np.testing.assert_allclose(gradient, np.einsum("ab,abj->j", W, dK), rtol=0, atol=1e-10 * scale)


def test_set_kernel_input_gradient_equals_fastfm(set_case):
    reference, X, Y = set_case
    kernel = to_gpytorch(reference)
    Y_t = torch.tensor(Y, requires_grad=True)
    V = np.random.default_rng(24).standard_normal((len(Y), len(X)))
    torch.sum(torch.tensor(V) * kernel(Y_t, torch.tensor(X)).to_dense()).backward()
    _, dK = reference.gram_and_input_gradient(Y, X)       # dK[m, n, d] = ∂K[m, n]/∂Y[m, d], continuous columns
    expected = np.einsum("mn,mnd->md", V, dK)
    Dc = SET_SPACE.n_continuous
    np.testing.assert_allclose(Y_t.grad[:, :Dc].numpy(), expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    assert torch.all(Y_t.grad[:, Dc:] == 0) and torch.all(Y_t.grad[:, 0] == 0)   # the other columns are not read


def test_set_kernel_gram_is_symmetric_psd_and_permutation_invariant():
    kernel = SetKernel(space=SET_SPACE, lengthscale=[0.3, 0.7], variance=1.3)
    X = SET_SPACE.sample_encoded(30, seed=25)
    K = _dense(kernel(torch.tensor(X)))
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-12 * np.abs(K).max()
    # the points of each set in another order: the same kernel values (a function of the set)
    columns = SET_SPACE.column("points")
    shuffled = X.copy()
    rng = np.random.default_rng(26)
    for row in shuffled:
        row[columns] = row[columns].reshape(5, 2)[rng.permutation(5)].reshape(-1)
    np.testing.assert_allclose(_dense(kernel(torch.tensor(shuffled), torch.tensor(X))), K, rtol=1e-12, atol=0)


def test_set_kernel_without_a_space_reads_rows_of_points():
    rng = np.random.default_rng(27)
    sets, others = rng.random((8, 4, 3)), rng.random((5, 4, 3))         # sets of 4 points in R³
    reference = ff.kernels.SetKernel(lengthscale=0.6, nu=1.5, variance=0.8, normalize=True)
    kernel = to_gpytorch(reference, dim=3)
    assert kernel.dim == 3 and kernel.space is None
    K = _dense(kernel(torch.tensor(sets.reshape(8, 12)), torch.tensor(others.reshape(5, 12))))
    np.testing.assert_allclose(K, reference(sets, others), rtol=1e-10, atol=0)
    # an ARD lengthscale gives the points' dimension; batches give each batch its Gram
    ard = SetKernel(lengthscale=[0.3, 0.5, 0.9], n_subsample=2, seed=3)
    assert ard.dim == 3
    batch = torch.tensor(sets.reshape(2, 4, 12))
    K = _dense(ard(batch))
    assert K.shape == (2, 4, 4)
    np.testing.assert_allclose(K[1], ard.to_fastfm()(sets[4:]), rtol=1e-10, atol=0)


def test_set_kernel_round_trips_a_fitted_gp_kernel():
    problem = ff.benchmarks.SetChamfer()
    X = problem.space.sample_encoded(15, seed=28)
    gp = ff.GaussianProcessRegressor(ff.kernels.SetKernel(space=problem.space, lengthscale=[0.5, 0.5], n_subsample=4,
                                                          seed=7, normalize=True),
                                     n_restarts=0, random_state=0)
    gp.fit(X, problem.evaluate_encoded(X))
    fitted = gp.kernel_
    kernel = to_gpytorch(fitted)
    theta = torch.cat([kernel.raw_lengthscale.reshape(-1), kernel.raw_variance.reshape(1)]).detach().numpy()
    np.testing.assert_allclose(theta, fitted.theta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(_dense(kernel(torch.tensor(X))), fitted(X), rtol=1e-10, atol=0)
    back = to_fastfm(kernel)
    assert type(back) is ff.kernels.SetKernel
    assert (back.space, back.parameter, back.n_subsample, back.seed, back.normalize, back.nu, back.subsample) == (
        fitted.space, fitted.parameter, 4, 7, True, 2.5, "shared")
    np.testing.assert_allclose(back.theta, fitted.theta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(back.bounds, fitted.bounds)
    # a fixed variance (the Set factors of fastfm's default kernel) stays out of the fit both ways
    fixed = to_gpytorch(ff.kernels.SetKernel(space=problem.space, variance=1.0, variance_bounds="fixed"))
    assert not fixed.raw_variance.requires_grad and fixed.to_fastfm().hyperparameters[1].fixed


def test_set_kernel_errors_name_the_problem():
    kernel = SetKernel(space=SET_SPACE)
    with pytest.raises(ff.InvalidConfigError, match=r"Set 'points': x1 must have 12 columns") as error:
        kernel(torch.zeros(3, 10)).to_dense()
    assert error.value.parameter == "x1"
    with pytest.raises(ff.InvalidConfigError, match="m points of dim=2") as error:
        SetKernel(dim=2)(torch.zeros(3, 5)).to_dense()                # 5 values are not whole points of R²
    assert error.value.parameter == "x1"
    bad = torch.tensor(SET_SPACE.sample_encoded(2, seed=29))
    bad[0, 3] = float("nan")
    with pytest.raises(ff.InvalidValueError, match="non-finite"):
        kernel(bad).to_dense()
    with pytest.raises(ff.InvalidConfigError, match="give dim=") as error:
        SetKernel()                                    # an isotropic lengthscale, no space: rows are ambiguous
    assert error.value.parameter == "dim"
    with pytest.raises(ff.InvalidConfigError, match="lengthscale has 3 values") as error:
        SetKernel(space=SET_SPACE, lengthscale=[0.1, 0.2, 0.3])
    assert error.value.parameter == "lengthscale"
    with pytest.raises(ff.InvalidValueError, match="nu must be one of"):
        SetKernel(space=SET_SPACE, nu=2.0)
    with pytest.raises(ff.SpaceDefinitionError, match="not a Set"):
        SetKernel(space=SET_SPACE, parameter="c")
    with pytest.raises(TypeError, match="SubspaceKernel has no GPyTorch form"):
        to_gpytorch(ff.kernels.set_space_kernel("matern52", SET_SPACE))
    # the MMD set kernel is a SetKernel subclass, but not the GPyTorch SetKernel's form: refused, not converted
    with pytest.raises(TypeError, match="MMDSetKernel has no GPyTorch form"):
        to_gpytorch(ff.kernels.MMDSetKernel(space=SET_SPACE))


def test_set_kernel_single_task_gp_fits_with_botorch():
    pytest.importorskip("botorch")
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    # a function of the set (the mean of a function of its points): what the set kernel's GP should learn
    space = ff.Space([ff.Set("points", n_points=4, dim=2, low=0.0, high=1.0)])

    def objective(X):
        points = X.reshape(len(X), 4, 2)
        return np.mean(np.sin(4.0 * points[..., 0]) * np.cos(3.0 * points[..., 1]), axis=1)

    X, X_test = space.sample_encoded(30, seed=30), space.sample_encoded(40, seed=31)
    y, y_test = objective(X), objective(X_test)
    model = SingleTaskGP(torch.tensor(X), torch.tensor(y).unsqueeze(-1),
                         covar_module=SetKernel(space=space, lengthscale=[0.5, 0.5], normalize=True))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    kernel = model.covar_module
    assert not torch.allclose(kernel.lengthscale, torch.tensor(0.5, dtype=torch.float64))
    for name in ("lengthscale", "variance"):                    # L-BFGS-B kept fastfm's bounds
        constraint, value = getattr(kernel, f"raw_{name}_constraint"), getattr(kernel, name)
        assert torch.all(value >= constraint.lower_bound * (1 - 1e-12))
        assert torch.all(value <= constraint.upper_bound * (1 + 1e-12))
    model.eval()
    reversed_points = X.reshape(30, 4, 2)[:, ::-1].reshape(30, 8)         # the same sets, points in another order
    with torch.no_grad():
        mean, mean_test, mean_reversed = (model.posterior(torch.tensor(points)).mean.squeeze(-1).numpy()
                                          for points in (X, X_test, reversed_points))
    # better than the prior mean (the training mean, after BoTorch's Standardize), in and out of the sample
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.2 * np.std(y)
    assert np.sqrt(np.mean((mean_test - y_test) ** 2)) < 0.3 * np.sqrt(np.mean((y_test - y.mean()) ** 2))
    np.testing.assert_allclose(mean_reversed, mean, rtol=0, atol=1e-9 * np.abs(mean).max())
