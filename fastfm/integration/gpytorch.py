"""fastfm's FM kernels (and its Hierarchical and Set kernels) as GPyTorch kernels, for BoTorch models
(``pip install fastfm[torch]``).

    import fastfm as ff
    from botorch.models import SingleTaskGP
    from botorch.fit import fit_gpytorch_mll
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from fastfm.integration.gpytorch import ModLap, botorch_search_domain

    model = SingleTaskGP(train_X, train_Y, covar_module=ModLap(space))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    # acquisition: optimize_acqf_mixed_alternating(acqf, q=1, **botorch_search_domain(space))

The kernels compute, with torch operations (so that autograd differentiates them in their hyperparameters
and in the continuous inputs), exactly what fastfm's own ``ModLap``, ``ModDif`` and ``FMKernel`` compute
(Oh et al., UAI 2021, Eq. 5):

    k((c, v), (c', v')) = σ² Π_p F_p(v_p, v'_p, α_p·d^t),   F_p(v, v', s) = Σ_g f(μ_g^p, s | β_p) P_g^p[v, v'],

where d is the ARD distance of the continuous parts (lengthscales θ_d), μ_g^p the distinct eigenvalues of
variable p's graph Laplacian and P_g^p = U_g U_gᵀ their eigenprojectors: Σ_i U[v, i] f(λ_i) U[v', i] of
Eq. 5 grouped by eigenvalue.  The projectors are precomputed per variable (a tensor P[g, v, v']) and read
with one gather per variable and kernel call.  σ² = variance / Π_p c_p(β_p), c_p the mean diagonal of F_p
at s = 0, as in ``fastfm.kernels.fm`` (its module docstring gives the reasons), and ``unit_diagonal=True``
applies fastfm's option of the same name, k̃(x, x') = w(x) k(x, x') w(x'), w_p(v) = (c_p / F_p(v, v, 0))^½.

Inputs are fastfm's encoded arrays (``Space.encode``), as float64 tensors: the continuous columns first, in
[0, 1], then one column per discrete variable holding its integer state index.  Do not give the model an
input transform that rescales the discrete columns (BoTorch's ``Normalize``): the kernel reads them as
indices, and rejects a value that is not one.  BoTorch warns that such inputs are not in the unit cube
(``InputDataWarning``); that warning is expected here.

Hyperparameters
---------------
Each hyperparameter is a raw parameter holding its *logarithm* (``raw_lengthscale``, ``raw_alpha``,
``raw_beta``, ``raw_variance``; the properties ``lengthscale``, ``alpha``, ``beta``, ``variance`` give the
values), constrained by a :class:`LogInterval` built from the fastfm bounds.  So the raw parameters are
fastfm's ``theta``, the gradients autograd gives are fastfm's ``eval_gradient`` ones, and BoTorch's
``fit_gpytorch_mll`` hands L-BFGS-B the bounds [log low, log high] (it reads every constraint's
``inverse_transform`` of its bounds), which is how fastfm fits its own GPs.  A hyperparameter with fastfm
bounds "fixed" is a parameter that does not require a gradient.

With ``compiled=True`` the symmetric Gram K(X, X) of an unbatched float64 CPU tensor (what a GP fit
evaluates) comes from fastfm's compiled backend through a ``torch.autograd.Function`` whose backward pass
is fastfm's fused gradient reduction: the same numbers, several times faster (:class:`FMKernel`).

``to_gpytorch(kernel)`` converts a fastfm kernel (a fitted GP's ``kernel_`` included) with its values and
bounds, ``to_fastfm(kernel)`` the other way.

:class:`Hierarchical` is fastfm's conditional-space kernel (Hutter & Osborne 2013) in the same way, with the
raw parameters ``raw_gamma``, ``raw_rho``, ``raw_lengthscale`` and ``raw_variance``.

:class:`SetKernel` is fastfm's set kernel (Kim et al., "Bayesian optimization over sets", Eq. 3: a Matérn
inner kernel averaged over all pairs of points, optionally normalised), exact or its random-projection
approximation K̂ with fastfm's draw, on the columns of one ``Set`` parameter of fastfm's encoded arrays (or on
rows of m·dim values), with ``raw_lengthscale`` and ``raw_variance``; it has no ``compiled`` option.
fastfm's ``ModNN``, ``SubspaceKernel`` and the continuous-only and baseline kernels have no GPyTorch form here
(``to_gpytorch`` says so).
"""
from __future__ import annotations

import math

try:
    import torch
    from gpytorch.constraints import Interval
    from gpytorch.kernels import AdditiveKernel, ProductKernel
    from gpytorch.kernels import Kernel as GPyTorchKernel
except ImportError as exc:   # the optional extra is missing
    raise ImportError("fastfm.integration.gpytorch needs PyTorch and GPyTorch (and BoTorch for its helpers), which "
                      "are not installed: pip install fastfm[torch]") from exc

import numpy as np

from ..exceptions import InvalidConfigError, InvalidValueError
from ..kernels import Kernel as FastFMKernel
from ..kernels import Product as FastFMProduct
from ..kernels import Sum as FastFMSum
from ..kernels import fm as _fastfm_fm
from ..kernels import hierarchical as _hierarchical
from ..kernels import sets as _fastfm_sets
from ..kernels._space_kernel import ALPHA_BOUNDS, BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS
from .._backends.modulation import DIFFUSION

__all__ = ["FMKernel", "ModLap", "ModDif", "Hierarchical", "SetKernel", "LogInterval", "to_gpytorch", "to_fastfm",
           "botorch_search_domain"]

_FLOAT = torch.float64


class LogInterval(Interval):
    """A constraint for a raw parameter that holds the logarithm of a positive hyperparameter.

    ``transform(raw) = exp(raw)`` and ``inverse_transform(value) = log(value)``, so
    ``inverse_transform`` of the bounds gives [log lower, log upper], which is what BoTorch's
    ``fit_gpytorch_mll`` passes to L-BFGS-B (``get_parameters_and_bounds``): the fit keeps the value in
    [lower, upper] by bounding its logarithm, as fastfm's own fit does.  The transform itself does not
    clip (a saturating map such as GPyTorch's sigmoid ``Interval`` would flatten the likelihood near the
    bounds, where fitted values often lie); an optimiser that ignores the bounds may leave them.

    Parameters
    ----------
    lower_bound, upper_bound : float or array-like
        Positive bounds of the *value* (lower may be 0 and upper ``inf``: positivity only).
    """

    def __init__(self, lower_bound, upper_bound):
        super().__init__(lower_bound, upper_bound, transform=torch.exp, inv_transform=torch.log)
        # Interval stores its bounds in the default dtype (often float32): keep fastfm's float64 bounds
        self.lower_bound = torch.as_tensor(lower_bound, dtype=_FLOAT)
        self.upper_bound = torch.as_tensor(upper_bound, dtype=_FLOAT)

    def transform(self, tensor):
        return torch.exp(tensor)

    def inverse_transform(self, transformed_tensor):
        return torch.log(torch.as_tensor(transformed_tensor))

    def __repr__(self):
        return f"{type(self).__name__}({self.lower_bound.tolist()}, {self.upper_bound.tolist()})"


def _positive_hyperparameter(name, doc):
    """A property that reads and writes the positive hyperparameter ``name`` (stored as ``raw_<name>``, its log,
    through the kernel's ``_value`` / ``_set_value``)."""
    return property(lambda self: self._value(name), lambda self, value: self._set_value(name, value), doc=doc)


class _CompiledGram(torch.autograd.Function):
    """K(X, X) by fastfm's compiled backend, differentiated by fastfm's own derivatives (``compiled=True``).

    forward: ``reference(X)``, the fastfm kernel at the module's current values.  backward, with W the
    incoming gradient ∂L/∂K: the raw parameters' gradients are ``reference.gradient_reduction(X, W)``
    (Σ_ab W_ab ∂K_ab/∂log θ_j: the raw parameters are the log θ), and the inputs' gradient is
    ∂L/∂X[a, d] = Σ_b (W_ab + W_ba) ∂K_ab/∂X[a, d] (K is symmetric and X is both of its arguments) from
    ``reference.gram_and_input_gradient``.  No second derivatives.
    """

    @staticmethod
    def forward(ctx, X, module, *raw_parameters):
        values = module._current_values()
        X_numpy = X.detach().cpu().numpy()
        ctx.values, ctx.X_numpy, ctx.module = values, X_numpy, module
        return torch.as_tensor(module._reference_at(values)(X_numpy), dtype=X.dtype, device=X.device)

    @staticmethod
    def backward(ctx, grad_K):
        X_numpy, module = ctx.X_numpy, ctx.module
        reference = module._reference_at(ctx.values)     # the values of this forward pass, whatever came after
        W = grad_K.detach().cpu().numpy()
        grad_X = None
        if ctx.needs_input_grad[0]:
            Dc = module.n_continuous
            _, dK = reference.gram_and_input_gradient(X_numpy, X_numpy)    # dK[a, b, d] = ∂K_ab/∂X[a, d]
            gradient = np.zeros_like(X_numpy)
            gradient[:, :Dc] = np.einsum("ab,abd->ad", W + W.T, dK)
            grad_X = torch.as_tensor(gradient, dtype=grad_K.dtype, device=grad_K.device)
        free = reference.gradient_reduction(X_numpy, W)      # free (not fixed) log θ, in fastfm's theta order
        grads, start = [], 0
        for name in module._hyperparameter_names:
            raw = getattr(module, "raw_" + name)
            if name in module._fixed:
                grads.append(None)
                continue
            grads.append(torch.as_tensor(free[start:start + raw.numel()], dtype=raw.dtype,
                                         device=raw.device).reshape(raw.shape))
            start += raw.numel()
        return (grad_X, None, *grads)


# raw parameter shapes, GPyTorch's conventions: lengthscales (1, n) (ARD last), a scalar variance
_RAW_SHAPES = {"lengthscale": lambda n: (1, n), "variance": lambda n: ()}


class _FastFMHyperparameters(GPyTorchKernel):
    """What every GPyTorch form of a fastfm kernel shares: log-valued raw hyperparameters registered from a
    fastfm kernel (its values and bounds), read and set as values, and handed back to fastfm."""

    def __init__(self, reference, **kwargs):
        super().__init__(**kwargs)
        reference.theta   # noqa: B018  (reading theta validates the values)
        self._reference = reference
        self._hyperparameter_names = []
        values = reference.get_params()
        for spec in reference.hyperparameters:
            n = spec.n_elements
            if n == 0:   # e.g. lengthscales of a space without continuous columns
                continue
            self._hyperparameter_names.append(spec.name)
            shape = _RAW_SHAPES.get(spec.name, lambda n: (n,))(n)
            value = np.array(np.broadcast_to(np.asarray(values[spec.name], dtype=float), (n,)))   # a writable copy
            raw = torch.nn.Parameter(torch.log(torch.as_tensor(value, dtype=_FLOAT)).reshape(shape),
                                     requires_grad=not spec.fixed)
            self.register_parameter("raw_" + spec.name, raw)
            if spec.fixed:
                constraint = LogInterval(0.0, math.inf)
            else:
                constraint = LogInterval(torch.as_tensor(spec.bounds[:, 0]).reshape(shape),
                                         torch.as_tensor(spec.bounds[:, 1]).reshape(shape))
            self.register_constraint("raw_" + spec.name, constraint)
        # GPyTorch's Kernel.lengthscale property reads raw_lengthscale through its constraint when this is set
        self.has_lengthscale = "lengthscale" in self._hyperparameter_names
        self._bounds = {spec.name: spec.bounds for spec in reference.hyperparameters}
        self._fixed = {spec.name for spec in reference.hyperparameters if spec.fixed}

    # ---- hyperparameter values ----------------------------------------------------------------------
    def _value(self, name):
        raw = getattr(self, "raw_" + name)
        return getattr(self, "raw_" + name + "_constraint").transform(raw)

    def _set_value(self, name, value):
        raw = getattr(self, "raw_" + name)
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device)
        if torch.any(value <= 0) or not torch.all(torch.isfinite(value)):
            raise ValueError(f"{name} must be positive and finite, got {value!r}")
        self.initialize(**{"raw_" + name: torch.log(value).expand(raw.shape).clone()})

    variance = _positive_hyperparameter("variance", "The variance hyperparameter (a 0-d tensor).")

    def _set_lengthscale(self, value):
        # GPyTorch's lengthscale setter, with the value broadcast to the raw shape and checked
        self._set_value("lengthscale", value)

    def _fastfm_arguments(self, backend):
        """Keyword arguments of the fastfm constructor holding the current values and the bounds."""
        arguments = {"backend": backend, **self._current_values()}
        for name in self._hyperparameter_names:
            arguments[name + "_bounds"] = self._bounds[name]
        return arguments

    def _current_values(self):
        """{name: value} of the hyperparameters as the fastfm kernel takes them (arrays, a float variance)."""
        values = {}
        for name in self._hyperparameter_names:
            value = self._value(name).detach().cpu().numpy().reshape(-1).astype(float)
            values[name] = float(value[0]) if name == "variance" else value
        return values

    def _reference_at(self, values):
        """The fastfm kernel at ``values`` (one kernel whose attributes are set: fastfm memoises on them)."""
        for name, value in values.items():
            setattr(self._reference, name, value)
        return self._reference


class _SpaceKernel(_FastFMHyperparameters):
    """What the GPyTorch forms of fastfm's space kernels (FM, Hierarchical) share: the reading of fastfm's
    encoded inputs, and the ``compiled`` symmetric Gram."""

    def __init__(self, reference, compiled=False, **kwargs):
        super().__init__(reference, **kwargs)
        self.compiled = bool(compiled)
        self.space = reference.space
        self.n_continuous, self.n_discrete = self.space.n_continuous, self.space.n_discrete
        self._n_states = [int(n) for n in self.space.n_states]

    # ---- evaluation ---------------------------------------------------------------------------------
    def forward(self, x1, x2, diag=False, last_dim_is_batch=False, **params):
        """K(x1, x2), shape (..., N, M); with ``diag`` the pairs (x1[i], x2[i]), shape (..., N)."""
        if last_dim_is_batch:
            raise NotImplementedError(f"{type(self).__name__} does not support last_dim_is_batch")
        dtype = self.raw_variance.dtype
        x1, x2 = x1.to(dtype), x2.to(dtype)
        if diag:
            return self._pair_covariance(x1, x2)
        if self._compiled_applies(x1, x2):
            self._states(x1)
            raw_parameters = [getattr(self, "raw_" + name) for name in self._hyperparameter_names]
            return _CompiledGram.apply(x1, self, *raw_parameters)
        # every (x1[n], x2[m]) pair by broadcasting: (..., N, 1, d) against (..., 1, M, d)
        return self._pair_covariance(x1.unsqueeze(-2), x2.unsqueeze(-3))

    def _pair_covariance(self, A, B):
        """k(a, b) for the points of A and B broadcast against each other, shape broadcast(A, B)[:-1]."""
        raise NotImplementedError

    def _compiled_applies(self, x1, x2):
        """``compiled`` covers the symmetric Gram of one unbatched float64 set of points on the CPU (a GP's
        training Gram, and the joint train + test one of its predictions); the torch operations do the rest."""
        return (self.compiled and x1.dim() == 2 and x1.dtype == torch.float64 and x1.device.type == "cpu"
                and (x2 is x1 or (x2.shape == x1.shape and torch.equal(x1, x2))))

    def _states(self, X):
        """The discrete columns as int64 state indices, after checking that they are indices."""
        if X.shape[-1] != self.space.n_dims:
            raise InvalidConfigError(f"{type(self).__name__}: inputs must have {self.space.n_dims} columns (this "
                                     f"kernel's space's encoding), got {X.shape[-1]}", "X")
        codes = X[..., self.n_continuous:].detach()
        states = codes.long()
        upper = torch.as_tensor(self._n_states, device=states.device)
        if torch.any(states != codes) or torch.any(codes < 0) or torch.any(states >= upper):
            raise InvalidConfigError(
                f"{type(self).__name__}: the discrete columns ({self.n_continuous}..{self.space.n_dims - 1}) must "
                f"hold integer state indices below {self._n_states} (fastfm's encoding; no input transform may "
                "rescale them)", "X")
        return states


class FMKernel(_SpaceKernel):
    """The generalised FM kernel of Prop. 1 (f(λ, s) = Σ_n a_n (1 + βλ + α·d^t)^(−n)) as a GPyTorch kernel.

    The same arguments as ``fastfm.kernels.FMKernel`` (the ``backend`` aside), and the same covariance
    (module docstring).  ``coefficients`` and ``exponent`` are fixed; the hyperparameters are learnt.

    Parameters
    ----------
    space : fastfm.Space
        The space whose encoded points the kernel takes; it needs at least one discrete variable.
    coefficients : sequence of float, default (1.0,)
        a_1..a_N ≥ 0, not all zero; ``(1.0,)`` with ``exponent=2`` is ModLap.
    exponent : float in (0, 2], default 2
        t, the power of the ARD distance.
    lengthscale : float or array of shape (n_continuous,)
    alpha, beta : float or array of shape (n_discrete,)
    variance : float
        Average prior variance at zero continuous distance (the prior variance everywhere with
        ``unit_diagonal``).
    *_bounds : (low, high), (n, 2) array or "fixed"
        fastfm's bounds (:class:`LogInterval` constraints); "fixed" keeps the value out of the fit.
    unit_diagonal : bool, default False
        fastfm's option: every factor normalised to a unit diagonal relative to its mean.
    compiled : bool, default False
        Compute the symmetric Gram K(X, X) of an unbatched float64 CPU tensor (a GP's training Gram, and
        its joint train + test one in predictions) with fastfm's compiled backend, and its backward pass with
        fastfm's fused gradient reductions (no second derivatives).  The same numbers (to rounding), faster:
        on Func3C's space (one thread) forward and backward took 0.9 / 1.1 / 4.0 ms instead of 2.6 / 9.1 /
        68 ms at N = 50 / 200 / 500, and ``fit_gpytorch_mll`` of a SingleTaskGP 2.9 s instead of 6.6 s at
        N = 20, 5.6 s instead of 22.7 s at N = 200.  Cross-covariances and batches stay with torch operations.
    **kwargs
        Passed to ``gpytorch.kernels.Kernel``.
    """

    def __init__(self, space, coefficients=(1.0,), exponent=2.0, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, compiled=False, **kwargs):
        # fastfm's own kernel validates the space, the modulation and every value and bound: one set of rules
        reference = self._fastfm_kernel(space, coefficients, exponent, lengthscale, alpha, beta, variance,
                                        lengthscale_bounds, alpha_bounds, beta_bounds, variance_bounds,
                                        unit_diagonal=unit_diagonal)
        super().__init__(reference, compiled, **kwargs)
        self.modulation = reference._modulation
        self.unit_diagonal = bool(unit_diagonal)
        self._register_spectra(self.space)

    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *arguments, **keywords):
        """fastfm's kernel of this kind (its constructor's arguments after ``space``; ModLap and ModDif ignore
        ``coefficients`` and ``exponent``)."""
        return _fastfm_fm.FMKernel(space, coefficients, exponent, *arguments, **keywords)

    def _register_spectra(self, space):
        """Per discrete variable p: the eigenprojectors P_g (flattened to (G_p, n_p²), so that one gather on
        v·n_p + v' reads every P_g[v, v']), the distinct eigenvalues μ_g, the shares |g|/n_p (c_p = Σ_g
        (|g|/n_p) f(μ_g, 0) is F_p's mean diagonal: tr P_g = |g|) and the projector diagonals P_g[v, v]."""
        for p, spectrum in enumerate(space.graphs):
            projectors = torch.as_tensor(spectrum.projectors(), dtype=_FLOAT)            # (G, n, n)
            n = spectrum.n_states
            self.register_buffer(f"projectors_{p}", projectors.reshape(len(projectors), n * n), persistent=False)
            self.register_buffer(f"projector_diagonals_{p}", torch.diagonal(projectors, dim1=-2, dim2=-1).clone(),
                                 persistent=False)
            self.register_buffer(f"group_values_{p}", torch.as_tensor(spectrum.group_values, dtype=_FLOAT),
                                 persistent=False)
            shares = np.diff(spectrum.group_starts) / n
            self.register_buffer(f"group_shares_{p}", torch.as_tensor(shares, dtype=_FLOAT), persistent=False)

    alpha = _positive_hyperparameter(
        "alpha", "α_p per discrete variable, shape (n_discrete,): how strongly the continuous distance modulates F_p.")

    beta = _positive_hyperparameter(
        "beta", "β_p per discrete variable, shape (n_discrete,): the smoothing of F_p over its graph.")

    def _pair_covariance(self, A, B):
        states_a, states_b = self._states(A), self._states(B)
        shape = torch.broadcast_shapes(A.shape[:-1], B.shape[:-1])
        r = self._continuous_argument(A[..., :self.n_continuous], B[..., :self.n_continuous], shape)
        alphas, betas = self.alpha, self.beta
        K = self.variance.expand(shape)
        # Eq. 5: one factor per discrete variable, all modulated by the same continuous distance
        for p in range(self.n_discrete):
            factor = self._factor(p, states_a[..., p], states_b[..., p], alphas[p] * r, betas[p])
            at_zero = self._modulating_function(getattr(self, f"group_values_{p}"), 0.0, betas[p])
            if self.unit_diagonal:
                # F_p(v, v', s) w_p(v) w_p(v') / c_p = F_p(v, v', s) / (F_p(v, v, 0) F_p(v', v', 0))^½
                # (fastfm.kernels.fm, "Unit diagonal"): the mean diagonal c_p of σ² cancels against w_p
                diagonal = getattr(self, f"projector_diagonals_{p}").T @ at_zero            # F_p(v, v, 0), (n_p,)
                factor = factor / torch.sqrt(diagonal[states_a[..., p]] * diagonal[states_b[..., p]])
            else:
                # σ² = variance / Π_p c_p: each factor divided by its mean diagonal c_p
                factor = factor / torch.sum(getattr(self, f"group_shares_{p}") * at_zero)
            K = K * factor
        return K

    def _continuous_argument(self, CA, CB, shape):
        """r = d^t, d² = Σ_d (c_d − c'_d)²/θ_d² (Eq. 5's continuous argument before α_p), shape ``shape``."""
        if self.n_continuous == 0:
            return torch.zeros(shape, dtype=self.raw_alpha.dtype, device=self.raw_alpha.device)
        lengthscale = self.lengthscale.reshape(self.n_continuous)
        difference = CA / lengthscale - CB / lengthscale
        squared = torch.sum(difference * difference, dim=-1).expand(shape)
        t = self.modulation.exponent
        if t == 2.0:
            return squared
        # d^t = (d²)^(t/2) has an infinite derivative at d = 0 for t < 2: evaluate the power only where d > 0 and
        # give 0 (value and gradient) at d = 0, as fastfm's backends do (numpy_backend.fm_cross_gradient)
        positive = squared > 0
        safe = torch.where(positive, squared, torch.ones_like(squared))
        return torch.where(positive, safe ** (0.5 * t), torch.zeros_like(squared))

    def _factor(self, p, states_a, states_b, s, beta):
        """F_p(v, v', s) = Σ_g f(μ_g, s | β_p) P_g[v, v'] (Eq. 5 grouped by eigenvalue), shape of s."""
        n = self._n_states[p]
        projector_entries = getattr(self, f"projectors_{p}")[:, states_a * n + states_b]     # (G, *shape)
        values = getattr(self, f"group_values_{p}").reshape((-1,) + (1,) * s.dim())
        return torch.sum(self._modulating_function(values, s.unsqueeze(0), beta) * projector_entries, dim=0)

    def _modulating_function(self, eigenvalues, s, beta):
        """f(μ, s | β) of fastfm._backends.modulation, broadcasting."""
        if self.modulation.kind == DIFFUSION:
            return torch.exp(-(1.0 + s) * beta * eigenvalues)
        inverse = 1.0 / (1.0 + beta * eigenvalues + s)
        total, power = 0.0, inverse
        for a in self.modulation.coefficients:
            total = total + a * power
            power = power * inverse
        return total

    def to_fastfm(self, backend="auto"):
        """The fastfm kernel with this kernel's current hyperparameters and bounds (see :func:`to_fastfm`)."""
        return self._fastfm_kernel(self.space, self.modulation.coefficients, self.modulation.exponent,
                                   unit_diagonal=self.unit_diagonal, **self._fastfm_arguments(backend))

    def __repr__(self):
        coefficients = "" if type(self) is not FMKernel else (
            f", coefficients={self.modulation.coefficients}, exponent={self.modulation.exponent}")
        return f"{type(self).__name__}({self.space!r}{coefficients}, unit_diagonal={self.unit_diagonal})"


class ModLap(FMKernel):
    """FM kernel with f(λ, s) = 1/(1 + βλ + α d²) (the paper's recommended kernel) as a GPyTorch kernel.

    Same arguments as :class:`FMKernel` without ``coefficients`` and ``exponent``.
    """

    def __init__(self, space, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, compiled=False, **kwargs):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds, alpha_bounds,
                         beta_bounds, variance_bounds, unit_diagonal, compiled, **kwargs)

    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *arguments, **keywords):
        return _fastfm_fm.ModLap(space, *arguments, **keywords)


class ModDif(FMKernel):
    """FM kernel with f(λ, s) = exp(−(1 + α d²) β λ) as a GPyTorch kernel.

    The paper's ablation: positive definite, but it violates the FM principle (FM-P3).  Same arguments as
    :class:`FMKernel` without ``coefficients`` and ``exponent``.
    """

    def __init__(self, space, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, compiled=False, **kwargs):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds, alpha_bounds,
                         beta_bounds, variance_bounds, unit_diagonal, compiled, **kwargs)

    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *arguments, **keywords):
        return _fastfm_fm.ModDif(space, *arguments, **keywords)


def _matern(squared, nu):
    """Unit-amplitude Matérn k_ν of the squared scaled distance r², ν ∈ {1/2, 3/2, 5/2}, as fastfm's
    ``numpy_backend.matern_profile`` writes it (GPML §4.2.1).

    r = (r²)^½ has an infinite derivative at r² = 0, where every coordinate difference is 0 too (so every
    derivative of r² is 0): the square root is taken where r² > 0 only, and r = 0 (value and gradient) elsewhere,
    as fastfm's backends define the slope there.
    """
    positive = squared > 0
    r = torch.where(positive, torch.sqrt(torch.where(positive, squared, torch.ones_like(squared))),
                    torch.zeros_like(squared))
    if nu == 0.5:
        return torch.exp(-r)
    t = math.sqrt(2.0 * nu) * r                    # √3 r or √5 r
    if nu == 1.5:
        return (1.0 + t) * torch.exp(-t)
    return (1.0 + t + t * t / 3.0) * torch.exp(-t)


class Hierarchical(_SpaceKernel):
    """fastfm's conditional-space kernel (Hutter & Osborne 2013; ``fastfm.kernels.Hierarchical``) as a GPyTorch
    kernel: k(x, x') = σ² κ(Σ_i d_i(x, x')² / ℓ²) with κ the RBF or Matérn 5/2 profile and

        d_i² = 0 (column i inactive in both points), ω_i² (active in one),
               ω_i² (2 − 2 cos(πρ_i (x̂_i − x̂'_i))) (both active, a real column: continuous or ordinal),
               2 ω_i² [v_i ≠ v'_i] (both active, a categorical column),

    ω_i = Π_{j ∈ anc(i) ∪ {i}} γ_j (their Eq. 6), x̂ = v/(n − 1) for an ordinal.  The activity of every column
    comes from the discrete columns (``Space.active_columns``).  Same arguments as fastfm's (``backend`` aside),
    and ``compiled`` as :class:`FMKernel`'s.
    """

    def __init__(self, space, base="matern52", gamma=0.9, rho=0.5, lengthscale=0.5, variance=1.0,
                 gamma_bounds=_hierarchical.GAMMA_BOUNDS, rho_bounds=_hierarchical.RHO_BOUNDS,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, variance_bounds=VARIANCE_BOUNDS, compiled=False, **kwargs):
        reference = _hierarchical.Hierarchical(space, base, gamma, rho, lengthscale, variance, gamma_bounds,
                                               rho_bounds, lengthscale_bounds, variance_bounds)
        super().__init__(reference, compiled, **kwargs)
        self.base = base
        is_real, scale, ancestry = reference._structure()
        self.register_buffer("is_real", torch.as_tensor(is_real, dtype=torch.bool), persistent=False)
        self.register_buffer("column_scale", torch.as_tensor(scale, dtype=_FLOAT), persistent=False)
        self.register_buffer("ancestry", torch.as_tensor(ancestry, dtype=_FLOAT), persistent=False)

    gamma = _positive_hyperparameter(
        "gamma", "γ_j per encoded column, in (0, 1]: how much a difference in column j and below it counts.")

    rho = _positive_hyperparameter(
        "rho", "ρ_i per real column (continuous, then ordinal), in (0, 1]: the frequency of its (sin, cos) embedding.")

    def _activity(self, X):
        """Space.active_columns of the points (NumPy: the activity is a function of the state indices only)."""
        flat = X.detach().reshape(-1, X.shape[-1]).cpu().numpy()
        return torch.as_tensor(self.space.active_columns(flat), device=X.device).reshape(X.shape)

    def _pair_covariance(self, A, B):
        for points in (A, B):
            self._states(points)                                             # the discrete columns are indices
        # state indices are not differentiable inputs (an ordinal's x̂ = v/(n − 1) would otherwise pass a
        # gradient through its cosine, which the FM kernels' gathers never do)
        A, B = (torch.cat([X[..., :self.n_continuous], X[..., self.n_continuous:].detach()], dim=-1) for X in (A, B))
        active_a, active_b = self._activity(A), self._activity(B)
        # ω_i² = Π_{j ∈ anc(i) ∪ {i}} γ_j² (their Eq. 6), summed in logs: raw_gamma is log γ
        omega_squared = torch.exp(2.0 * (self.ancestry @ self.raw_gamma))
        rho_pi = torch.zeros(self.space.n_dims, dtype=A.dtype, device=A.device)
        if self.is_real.any():
            rho_pi = rho_pi.masked_scatter(self.is_real, math.pi * self.rho)
        VA, VB = A * self.column_scale, B * self.column_scale
        delta = rho_pi * (VA - VB)
        both_terms = torch.where(self.is_real, 2.0 - 2.0 * torch.cos(delta), 2.0 * (VA != VB).to(A.dtype))
        # d_i²/ω_i²: the term above where both points have column i active, 1 where one has, 0 where neither has
        only_one = (active_a != active_b).to(A.dtype)
        d_squared = omega_squared * torch.where(active_a & active_b, both_terms, only_one)
        squared = torch.sum(d_squared, dim=-1) / self.lengthscale.reshape(()) ** 2
        return self.variance * self._profile(squared)

    def _profile(self, squared):
        """κ(r²): exp(−r²/2) or the Matérn 5/2 profile (1 + √5 r + 5r²/3) exp(−√5 r) (GPML Eqs. 4.9, 4.17)."""
        if self.base == "rbf":
            return torch.exp(-0.5 * squared)
        return _matern(squared, 2.5)

    def to_fastfm(self, backend="auto"):
        """The fastfm kernel with this kernel's current hyperparameters and bounds (see :func:`to_fastfm`)."""
        return _hierarchical.Hierarchical(self.space, self.base, **self._fastfm_arguments(backend))

    def __repr__(self):
        return f"{type(self).__name__}({self.space!r}, base={self.base!r})"


def _set_mean(A, B, nu):
    """1/(m m') Σ_i Σ_j k_ν(‖a_i − b_j‖) for the sets of A (..., m, d) and B (..., m', d), their points already
    divided by the lengthscales: the set kernel at unit amplitude (the paper's Eq. 3), shape broadcast(A, B)[:-2].

    Every pair term is a tensor of its own (autograd keeps them): memory O(m m' d) per pair of sets.
    """
    difference = A.unsqueeze(-2) - B.unsqueeze(-3)                     # (..., m, m', d)
    return _matern(torch.sum(difference * difference, dim=-1), nu).mean(dim=(-2, -1))


class SetKernel(_FastFMHyperparameters):
    """fastfm's set kernel (``fastfm.kernels.SetKernel``; Kim et al., "Bayesian optimization over sets") as a
    GPyTorch kernel:

        K(X, X') = σ² · 1/(m m') Σ_i Σ_j k_ν(‖(x_i − x'_j)/ℓ‖)          (the paper's Eq. 3)

    with the unit-amplitude Matérn inner kernel k_ν (ν ∈ {1/2, 3/2, 5/2}) and one lengthscale or one per
    coordinate of the points (ARD).  ``normalize=True`` gives fastfm's K(X, X') / √(K(X, X) K(X', X')) times σ²
    (unit diagonal before σ²: the plain kernel gives a set of coinciding points up to m times the prior variance
    of a spread-out one).  With ``n_subsample`` L < m it is fastfm's approximation K̂ (Eq. 5): each set is
    replaced by L of its points, chosen by fastfm's own ``subsample_sets`` (the projection order of Eq. 6, the
    positions of Eq. 7, or per set with ``subsample="independent"``) from the same ``seed``, so the values are
    fastfm's.  The choice is piecewise constant in the points: a point left out has no gradient, as in fastfm.

    Inputs are rows, as GPyTorch takes them, float64 (..., N, D).  With ``space`` they are fastfm's encoded
    arrays (``Space.encode``) and the kernel reads the n_points·dim columns of the Set ``parameter`` (coordinates
    scaled to [0, 1]), so it can be multiplied with a kernel on the other columns; without ``space`` each row is
    one set, its points one after the other (m·dim values).  The Gram keeps every pair term for autograd:
    memory O(N M m m' d).  There is no ``compiled`` option here.

    Parameters
    ----------
    inner, lengthscale, nu, variance, lengthscale_bounds, variance_bounds, space, parameter, normalize
        As ``fastfm.kernels.SetKernel`` (which validates them).
    n_subsample, seed, subsample
        As ``fastfm.kernels.SetKernel``; ``seed=None`` draws one now, kept in ``seed`` (so that this kernel and
        :meth:`to_fastfm`'s are one fixed function).
    dim : int, optional
        The points' dimension, without ``space``: how to read a row as points when the lengthscale is isotropic
        (an ARD lengthscale gives it; with ``space`` the Set does).
    **kwargs
        Passed to ``gpytorch.kernels.Kernel``.

    Examples
    --------
    >>> space = ff.Space([ff.Set("points", n_points=5, dim=2, low=-1.0, high=1.0)])      # doctest: +SKIP
    >>> model = SingleTaskGP(train_X, train_Y, covar_module=SetKernel(space=space, normalize=True))  # doctest: +SKIP
    """

    def __init__(self, inner=None, n_subsample=None, seed=None, lengthscale=None, nu=None, variance=None,
                 lengthscale_bounds=None, variance_bounds=None, space=None, parameter=None, normalize=False,
                 subsample="shared", dim=None, **kwargs):
        if isinstance(normalize, str):
            # the learned power γ of fastfm's normalize="learn" has no GPyTorch parameter here yet
            raise InvalidValueError(f"normalize must be True or False for the GPyTorch SetKernel, got "
                                    f"normalize={normalize!r}", "normalize", normalize)
        # fastfm's own kernel validates every argument and resolves ``inner``: one set of rules
        reference = _fastfm_sets.SetKernel(inner, n_subsample, seed, lengthscale, nu, variance, lengthscale_bounds,
                                           variance_bounds, space, parameter, normalize, subsample=subsample)
        super().__init__(reference, **kwargs)
        self.nu, self.n_subsample, self.seed = reference.nu, reference.n_subsample, reference.seed
        self.normalize, self.subsample = reference.normalize, reference.subsample
        self.space, self.parameter = reference.space, reference.parameter
        self.n_points, self.dim = None, _set_point_dim(reference, dim)
        if self.space is not None:
            self.n_points = reference._set_shape[0]
            self._columns = reference._columns

    def forward(self, x1, x2, diag=False, last_dim_is_batch=False, **params):
        """K(x1, x2), shape (..., N, M); with ``diag`` the pairs (x1[i], x2[i]), shape (..., N)."""
        if last_dim_is_batch:
            raise NotImplementedError("SetKernel does not support last_dim_is_batch")
        A, B = self._scaled_subsets(x1, "x1"), self._scaled_subsets(x2, "x2")
        if diag:
            K = _set_mean(A, B, self.nu)
            if self.normalize:
                K = K / torch.sqrt(_set_mean(A, A, self.nu) * _set_mean(B, B, self.nu))
            return self.variance * K
        # every pair of sets by broadcasting: (..., N, 1, m, d) against (..., 1, M, m', d)
        K = _set_mean(A.unsqueeze(-3), B.unsqueeze(-4), self.nu)
        if self.normalize:
            K = K / torch.sqrt(_set_mean(A, A, self.nu).unsqueeze(-1) * _set_mean(B, B, self.nu).unsqueeze(-2))
        if x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2)):
            # K(X, X): the sums over (i, j) and (j, i) round differently; make it exactly symmetric, as fastfm's is
            K = 0.5 * (K + K.transpose(-2, -1))
        return self.variance * K

    def _sets(self, x, name):
        """The sets of the rows of x, shape (..., N, m, dim), after checking the shape and the values."""
        if self.space is not None:
            if x.shape[-1] != self.space.n_dims:
                raise InvalidConfigError(
                    f"SetKernel on the Set {self.parameter!r}: {name} must have {self.space.n_dims} columns (the "
                    f"encoding of this kernel's space), got shape {tuple(x.shape)}", name)
            x = x[..., self._columns]
        elif x.shape[-1] == 0 or x.shape[-1] % self.dim:
            raise InvalidConfigError(
                f"SetKernel: each row of {name} must hold one set, m points of dim={self.dim} one after the other "
                f"(m·{self.dim} values), got shape {tuple(x.shape)}", name)
        if not torch.all(torch.isfinite(x)):
            raise InvalidValueError(f"SetKernel: {name} holds non-finite values", name)
        return x.reshape(*x.shape[:-1], x.shape[-1] // self.dim, self.dim)

    def _scaled_subsets(self, x, name):
        """The (subsampled) sets of x divided by the lengthscales, shape (..., N, L, dim)."""
        sets = self._sets(x.to(self.raw_variance.dtype), name)
        m = sets.shape[-2]
        if self.n_subsample is not None and self.n_subsample < m:
            # K̂ (Eqs. 5-7): fastfm's choice of points, a function of the seed and the (detached) points
            flat = sets.reshape(-1, m, self.dim)
            _, indices = _fastfm_sets.subsample_sets(flat.detach().cpu().numpy(), self.n_subsample, self.seed,
                                                     self.subsample)
            index = torch.as_tensor(np.ascontiguousarray(indices), device=sets.device)
            sets = torch.gather(flat, 1, index.unsqueeze(-1).expand(-1, -1, self.dim))
            sets = sets.reshape(*x.shape[:-1], self.n_subsample, self.dim)
        return sets / self.lengthscale.reshape(-1)

    def to_fastfm(self, backend="auto"):
        """The fastfm kernel with this kernel's current hyperparameters and bounds (see :func:`to_fastfm`)."""
        arguments = self._fastfm_arguments(backend)
        if np.size(arguments["lengthscale"]) == 1:
            arguments["lengthscale"] = float(arguments["lengthscale"][0])
        return _fastfm_sets.SetKernel(n_subsample=self.n_subsample, seed=self.seed, nu=self.nu, space=self.space,
                                      parameter=self.parameter, normalize=self.normalize, subsample=self.subsample,
                                      **arguments)

    def __repr__(self):
        where = f"parameter={self.parameter!r}" if self.space is not None else f"dim={self.dim}"
        subsample = "" if self.n_subsample is None else (f", n_subsample={self.n_subsample}, seed={self.seed}, "
                                                         f"subsample={self.subsample!r}")
        return f"SetKernel({where}, nu={self.nu}, normalize={self.normalize}{subsample})"


def _set_point_dim(reference, dim):
    """The points' dimension of a GPyTorch SetKernel: the Set's (with a space), else ``dim`` or the ARD
    lengthscale's size, checked against the lengthscale (fastfm checks it only when called)."""
    n_lengthscales = int(np.size(reference.lengthscale))
    if reference.space is not None:
        set_dim = reference._set_shape[1]
        if dim is not None and dim != set_dim:
            raise InvalidConfigError(f"SetKernel: dim={dim!r} but the Set {reference.parameter!r} has points of "
                                     f"dim={set_dim}", "dim")
        dim = set_dim
    elif dim is None:
        if n_lengthscales == 1:
            raise InvalidConfigError("SetKernel without a space reads each row as m points of dimension dim: give "
                                     "dim= (or an ARD lengthscale, one per coordinate)", "dim")
        dim = n_lengthscales
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim < 1:
        raise InvalidConfigError(f"SetKernel: dim must be a positive integer, got dim={dim!r}", "dim")
    if n_lengthscales not in (1, dim):
        raise InvalidConfigError(f"SetKernel: lengthscale has {n_lengthscales} values but the sets' points have "
                                 f"dim={dim}", "lengthscale")
    return int(dim)


# ---- conversions ------------------------------------------------------------------------------------------
def _fastfm_arguments(kernel):
    """Keyword arguments of a constructor (either library's) holding a fastfm ``kernel``'s values and bounds."""
    arguments = {}
    for spec in kernel.hyperparameters:
        if spec.n_elements == 0:   # e.g. ρ on a space without real columns: the constructor's default
            continue
        arguments[spec.name] = np.asarray(kernel.get_params()[spec.name], dtype=float)
        arguments[spec.name + "_bounds"] = spec.bounds
    return arguments


def to_gpytorch(kernel, compiled=False, dim=None):
    """The GPyTorch form of a fastfm kernel, its current (e.g. fitted) hyperparameters and bounds included.

    Parameters
    ----------
    kernel : fastfm.kernels.ModLap, ModDif, FMKernel, Hierarchical, SetKernel, or a Sum / Product of them
        For a fitted ``GaussianProcessRegressor``, its ``kernel_``.
    compiled : bool, default False
        The FM and Hierarchical kernels' option (see :class:`FMKernel`); a :class:`SetKernel` has none.
    dim : int, optional
        The points' dimension of a ``SetKernel`` built without a space whose lengthscale is isotropic (GPyTorch
        takes each set as one row of m·dim values; see :class:`SetKernel`).

    Returns
    -------
    ModLap, ModDif, FMKernel, Hierarchical or SetKernel (``gpytorch.kernels.AdditiveKernel`` / ``ProductKernel``
    for a Sum / Product)

    Raises
    ------
    TypeError
        For a kernel with no GPyTorch form here (``ModNN``, ``RBF``, ``SubspaceKernel``, ``MMDSetKernel``, ...).
    """
    if isinstance(kernel, (FastFMSum, FastFMProduct)):
        parts = [to_gpytorch(kernel.k1, compiled, dim), to_gpytorch(kernel.k2, compiled, dim)]
        return AdditiveKernel(*parts) if isinstance(kernel, FastFMSum) else ProductKernel(*parts)
    if isinstance(kernel, _fastfm_sets.SetKernel) and not isinstance(kernel, _fastfm_sets.MMDSetKernel):
        return SetKernel(n_subsample=kernel.n_subsample, seed=kernel.seed, nu=kernel.nu, space=kernel.space,
                         parameter=kernel.parameter, normalize=kernel.normalize, subsample=kernel.subsample,
                         dim=None if kernel.space is not None else dim, **_fastfm_arguments(kernel))
    if isinstance(kernel, _fastfm_fm.FMKernel):
        arguments = dict(_fastfm_arguments(kernel), unit_diagonal=bool(kernel.unit_diagonal), compiled=compiled)
        # ModLap and ModDif fix the modulation (a ModDif is an FMKernel with the diffusion function)
        if isinstance(kernel, _fastfm_fm.ModDif):
            return ModDif(kernel.space, **arguments)
        if isinstance(kernel, _fastfm_fm.ModLap):
            return ModLap(kernel.space, **arguments)
        modulation = kernel._modulation
        return FMKernel(kernel.space, modulation.coefficients, modulation.exponent, **arguments)
    if isinstance(kernel, _hierarchical.Hierarchical):
        return Hierarchical(kernel.space, kernel.base, compiled=compiled, **_fastfm_arguments(kernel))
    kind = type(kernel).__name__ if isinstance(kernel, FastFMKernel) else repr(type(kernel))
    raise TypeError(f"to_gpytorch converts fastfm's ModLap, ModDif, FMKernel, Hierarchical and SetKernel kernels (and "
                    f"Sums and Products of them); {kind} has no GPyTorch form in fastfm.integration.gpytorch")


def to_fastfm(kernel, backend="auto"):
    """The fastfm kernel a GPyTorch kernel of this module stands for, with its current hyperparameters and bounds.

    The inverse of :func:`to_gpytorch` (e.g. to use fastfm's GP or BO machinery with hyperparameters that BoTorch
    fitted); ``backend`` is the fastfm kernel's.
    """
    if not isinstance(kernel, _FastFMHyperparameters):
        raise TypeError(f"to_fastfm converts fastfm.integration.gpytorch's kernels, got {type(kernel).__name__}")
    return kernel.to_fastfm(backend)


def botorch_search_domain(space, max_discrete_values=None):
    """The arguments that describe ``space``'s encoding to BoTorch's ``optimize_acqf_mixed_alternating``.

    Continuous columns get the bounds [0, 1].  A discrete variable on a path graph (``Integer``, ``Ordinal``)
    goes to ``discrete_dims`` (BoTorch's local search then moves it by ±1, the path's own neighbours), every
    other (``Categorical``, ``Graph``, and a conditional variable, whose graph has the extra "inactive"
    vertex) to ``cat_dims``, with its state indices as the values.  A path with more than
    ``max_discrete_values`` states goes to ``cat_dims`` too: BoTorch relaxes larger ``discrete_dims`` to
    continuous values, which are not state indices.  For the same reason ``options`` asks for random
    initial points: BoTorch's default starts from an optimum of the continuous relaxation, where the
    kernel rejects the fractional indices (BoTorch then warns and falls back to random points itself).
    Conditions are not known to BoTorch: on a conditional space, pass the candidates through
    ``space.enforce_conditions``.

    Parameters
    ----------
    space : fastfm.Space
    max_discrete_values : int, optional
        BoTorch's option of that name (default: BoTorch's ``MAX_DISCRETE_VALUES``).

    Returns
    -------
    dict with ``bounds`` (a (2, n_dims) float64 tensor), ``discrete_dims`` and ``cat_dims`` (column → values), and
    ``options`` ({"initialization_strategy": "random"}; add BoTorch's other options to it)

    Examples
    --------
    >>> candidate, value = optimize_acqf_mixed_alternating(acqf, q=1, **botorch_search_domain(space))  # doctest: +SKIP
    """
    if max_discrete_values is None:
        from botorch.optim.optimize_mixed import MAX_DISCRETE_VALUES as max_discrete_values
    bounds = torch.zeros(2, space.n_dims, dtype=_FLOAT)
    bounds[1, :space.n_continuous] = 1.0
    discrete_dims, cat_dims = {}, {}
    for column, parameter, n_states in zip(space.discrete_dims, space.discrete_params, space.n_states):
        column, n_states = int(column), int(n_states)
        bounds[1, column] = n_states - 1
        values = [float(v) for v in range(n_states)]
        ordered = parameter.graph_kind == "path" and not parameter.is_conditional and n_states <= max_discrete_values
        (discrete_dims if ordered else cat_dims)[column] = values
    return {"bounds": bounds, "discrete_dims": discrete_dims, "cat_dims": cat_dims,
            "options": {"initialization_strategy": "random"}}
