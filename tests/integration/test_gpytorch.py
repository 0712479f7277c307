"""``fastfm.integration.gpytorch`` on real PyTorch, GPyTorch and BoTorch: the GPyTorch FM and Hierarchical kernels
against fastfm's own (Gram, diagonal, hyperparameter and input gradients, unit diagonal on and off, a mixed and a
conditional space), the conversions both ways (a fitted GP's kernel included), and a BoTorch SingleTaskGP fitted with
``fit_gpytorch_mll`` whose acquisition ``optimize_acqf_mixed_alternating`` optimises on Func3C's encoding."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gpytorch")

import fastfm as ff  # noqa: E402
from fastfm.integration.gpytorch import (FMKernel, Hierarchical, LogInterval, ModDif, ModLap,  # noqa: E402
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
