"""fastfm's FM kernels as GPyTorch kernels, for BoTorch models (``pip install fastfm[torch]``).

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

``to_gpytorch(kernel)`` converts a fastfm kernel (a fitted GP's ``kernel_`` included) with its values and
bounds, ``to_fastfm(kernel)`` the other way.

Only the FM kernels have GPyTorch forms here; fastfm's ``Hierarchical`` and ``SetKernel`` do not (yet).
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

from ..exceptions import InvalidConfigError
from ..kernels import Kernel as FastFMKernel
from ..kernels import Product as FastFMProduct
from ..kernels import Sum as FastFMSum
from ..kernels import fm as _fastfm_fm
from ..kernels._space_kernel import ALPHA_BOUNDS, BETA_BOUNDS, LENGTHSCALE_BOUNDS, VARIANCE_BOUNDS
from .._backends.modulation import DIFFUSION

__all__ = ["FMKernel", "ModLap", "ModDif", "LogInterval", "to_gpytorch", "to_fastfm", "botorch_search_domain"]

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


# raw parameter shapes, GPyTorch's conventions: ARD lengthscales (1, n_continuous), a scalar variance
_RAW_SHAPES = {"lengthscale": lambda n: (1, n), "variance": lambda n: ()}


class FMKernel(GPyTorchKernel):
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
    **kwargs
        Passed to ``gpytorch.kernels.Kernel`` (e.g. ``active_dims`` when the encoded space's columns are a
        slice of the model's inputs).
    """

    def __init__(self, space, coefficients=(1.0,), exponent=2.0, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, **kwargs):
        super().__init__(**kwargs)
        # fastfm's own kernel validates the space, the modulation and every value and bound: one set of rules
        reference = self._fastfm_kernel(space, coefficients, exponent, lengthscale, alpha, beta, variance,
                                        lengthscale_bounds, alpha_bounds, beta_bounds, variance_bounds, unit_diagonal)
        reference.theta   # noqa: B018  (reading theta validates the values)
        self.space = space
        self.modulation = reference._modulation
        self.unit_diagonal = bool(unit_diagonal)
        self.n_continuous, self.n_discrete = space.n_continuous, space.n_discrete
        self._register_hyperparameters(reference)
        self._register_spectra(space)

    # ---- construction -------------------------------------------------------------------------------
    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *hyperparameters_and_options):
        return _fastfm_fm.FMKernel(space, coefficients, exponent, *hyperparameters_and_options[:-1],
                                   unit_diagonal=hyperparameters_and_options[-1])

    def _register_hyperparameters(self, reference):
        """raw_<name> = log(value) per fastfm hyperparameter, with its LogInterval constraint."""
        values = reference.get_params()
        for spec in reference.hyperparameters:
            n = spec.n_elements
            if n == 0:   # lengthscales of a space without continuous columns
                continue
            shape = _RAW_SHAPES.get(spec.name, lambda n: (n,))(n)
            value = np.broadcast_to(np.asarray(values[spec.name], dtype=float), (n,))
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
        self.has_lengthscale = self.n_continuous > 0
        self._fixed = {spec.name for spec in reference.hyperparameters if spec.fixed}
        self._bounds = {spec.name: spec.bounds for spec in reference.hyperparameters}

    def _register_spectra(self, space):
        """Per discrete variable p: the eigenprojectors P_g (flattened to (G_p, n_p²), so that one gather on
        v·n_p + v' reads every P_g[v, v']), the distinct eigenvalues μ_g, the shares |g|/n_p (c_p = Σ_g
        (|g|/n_p) f(μ_g, 0) is F_p's mean diagonal: tr P_g = |g|) and the projector diagonals P_g[v, v]."""
        self._n_states = [int(n) for n in space.n_states]
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

    @property
    def alpha(self):
        """α_p per discrete variable, shape (n_discrete,): how strongly the continuous distance modulates F_p."""
        return self._value("alpha")

    @alpha.setter
    def alpha(self, value):
        self._set_value("alpha", value)

    @property
    def beta(self):
        """β_p per discrete variable, shape (n_discrete,): the smoothing of F_p over its graph."""
        return self._value("beta")

    @beta.setter
    def beta(self, value):
        self._set_value("beta", value)

    @property
    def variance(self):
        """The average prior variance at zero continuous distance (a 0-d tensor)."""
        return self._value("variance")

    @variance.setter
    def variance(self, value):
        self._set_value("variance", value)

    def _set_lengthscale(self, value):
        # GPyTorch's lengthscale setter, with the value broadcast to the ARD shape and checked
        self._set_value("lengthscale", value)

    # ---- the covariance -----------------------------------------------------------------------------
    def forward(self, x1, x2, diag=False, last_dim_is_batch=False, **params):
        """K(x1, x2), shape (..., N, M); with ``diag`` the pairs (x1[i], x2[i]), shape (..., N)."""
        if last_dim_is_batch:
            raise NotImplementedError(f"{type(self).__name__} does not support last_dim_is_batch")
        dtype = self.raw_alpha.dtype
        x1, x2 = x1.to(dtype), x2.to(dtype)
        if diag:
            return self._pair_covariance(x1, x2)
        # every (x1[n], x2[m]) pair by broadcasting: (..., N, 1, d) against (..., 1, M, d)
        return self._pair_covariance(x1.unsqueeze(-2), x2.unsqueeze(-3))

    def _states(self, X):
        """The discrete columns as int64 state indices, after checking they are indices."""
        codes = X[..., self.n_continuous:]
        if codes.shape[-1] != self.n_discrete:
            raise InvalidConfigError(f"{type(self).__name__}: inputs must have {self.space.n_dims} columns (this "
                                     f"kernel's space's encoding), got {X.shape[-1]}", "X")
        states = codes.detach().long()
        upper = torch.as_tensor(self._n_states, device=states.device)
        if torch.any(states != codes.detach()) or torch.any(codes < 0) or torch.any(states >= upper):
            raise InvalidConfigError(
                f"{type(self).__name__}: the discrete columns ({self.n_continuous}..{self.space.n_dims - 1}) must hold "
                f"integer state indices below {self._n_states} (fastfm's encoding; no input transform may rescale "
                "them)", "X")
        return states

    def _pair_covariance(self, A, B):
        """k(a, b) for A and B broadcast against each other, shape broadcast(A, B)[:-1]."""
        states_a, states_b = self._states(A), self._states(B)
        shape = torch.broadcast_shapes(A.shape[:-1], B.shape[:-1])
        r = self._continuous_argument(A[..., :self.n_continuous], B[..., :self.n_continuous], shape)
        alphas, betas = self.alpha, self.beta
        K = self.variance.expand(shape)
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
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, **kwargs):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds, alpha_bounds,
                         beta_bounds, variance_bounds, unit_diagonal, **kwargs)

    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *hyperparameters_and_options):
        return _fastfm_fm.ModLap(space, *hyperparameters_and_options[:-1],
                                 unit_diagonal=hyperparameters_and_options[-1])


class ModDif(FMKernel):
    """FM kernel with f(λ, s) = exp(−(1 + α d²) β λ) (the paper's ablation: it violates FM-P3) as a GPyTorch kernel.

    Same arguments as :class:`FMKernel` without ``coefficients`` and ``exponent``.
    """

    def __init__(self, space, lengthscale=0.5, alpha=1.0, beta=1.0, variance=1.0,
                 lengthscale_bounds=LENGTHSCALE_BOUNDS, alpha_bounds=ALPHA_BOUNDS, beta_bounds=BETA_BOUNDS,
                 variance_bounds=VARIANCE_BOUNDS, unit_diagonal=False, **kwargs):
        super().__init__(space, (1.0,), 2.0, lengthscale, alpha, beta, variance, lengthscale_bounds, alpha_bounds,
                         beta_bounds, variance_bounds, unit_diagonal, **kwargs)

    @staticmethod
    def _fastfm_kernel(space, coefficients, exponent, *hyperparameters_and_options):
        return _fastfm_fm.ModDif(space, *hyperparameters_and_options[:-1],
                                 unit_diagonal=hyperparameters_and_options[-1])


# ---- conversions ------------------------------------------------------------------------------------------
def _fm_arguments(kernel):
    """Keyword arguments of the FM constructors (both libraries) holding ``kernel``'s values and bounds."""
    arguments = {"unit_diagonal": bool(kernel.unit_diagonal)}
    for spec in kernel.hyperparameters:
        arguments[spec.name] = np.asarray(kernel.get_params()[spec.name], dtype=float)
        arguments[spec.name + "_bounds"] = spec.bounds
    return arguments


def to_gpytorch(kernel):
    """The GPyTorch form of a fastfm kernel, its current (e.g. fitted) hyperparameters and bounds included.

    Parameters
    ----------
    kernel : fastfm.kernels.ModLap, ModDif, FMKernel, or a Sum / Product of them
        For a fitted ``GaussianProcessRegressor``, its ``kernel_``.

    Returns
    -------
    ModLap, ModDif or FMKernel (``gpytorch.kernels.AdditiveKernel`` / ``ProductKernel`` for a Sum / Product)

    Raises
    ------
    TypeError
        For a kernel with no GPyTorch form here (``Hierarchical``, ``SetKernel``, ``ModNN``, ...).
    """
    if isinstance(kernel, (FastFMSum, FastFMProduct)):
        parts = [to_gpytorch(kernel.k1), to_gpytorch(kernel.k2)]
        return AdditiveKernel(*parts) if isinstance(kernel, FastFMSum) else ProductKernel(*parts)
    if isinstance(kernel, _fastfm_fm.FMKernel):
        arguments = _fm_arguments(kernel)
        # ModLap and ModDif fix the modulation; a ModDif is an FMKernel with the diffusion function
        if isinstance(kernel, _fastfm_fm.ModDif):
            return ModDif(kernel.space, **arguments)
        if isinstance(kernel, _fastfm_fm.ModLap):
            return ModLap(kernel.space, **arguments)
        modulation = kernel._modulation
        return FMKernel(kernel.space, modulation.coefficients, modulation.exponent, **arguments)
    kind = type(kernel).__name__ if isinstance(kernel, FastFMKernel) else repr(type(kernel))
    raise TypeError(f"to_gpytorch converts fastfm's ModLap, ModDif and FMKernel kernels (and Sums and Products of "
                    f"them); {kind} has no GPyTorch form in fastfm.integration.gpytorch")


def to_fastfm(kernel, backend="auto"):
    """The fastfm kernel a GPyTorch FM kernel of this module stands for, with its current hyperparameters.

    The inverse of :func:`to_gpytorch` (e.g. to use fastfm's GP or BO machinery with hyperparameters BoTorch
    fitted); ``backend`` is the fastfm kernel's.
    """
    if not isinstance(kernel, FMKernel):
        raise TypeError(f"to_fastfm converts fastfm.integration.gpytorch's FM kernels, got {type(kernel).__name__}")
    arguments = {"unit_diagonal": kernel.unit_diagonal, "backend": backend}
    for name in ("lengthscale", "alpha", "beta", "variance"):
        if name == "lengthscale" and kernel.n_continuous == 0:
            continue
        arguments[name] = kernel._value(name).detach().cpu().numpy().reshape(-1).astype(float)
        arguments[name + "_bounds"] = kernel._bounds[name]
    arguments["variance"] = float(arguments["variance"][0])
    if type(kernel) is ModDif:
        return _fastfm_fm.ModDif(kernel.space, **arguments)
    if type(kernel) is ModLap:
        return _fastfm_fm.ModLap(kernel.space, **arguments)
    return _fastfm_fm.FMKernel(kernel.space, kernel.modulation.coefficients, kernel.modulation.exponent, **arguments)


def botorch_search_domain(space, max_discrete_values=None):
    """The arguments that describe ``space``'s encoding to BoTorch's ``optimize_acqf_mixed_alternating``.

    Continuous columns get the bounds [0, 1].  A discrete variable on a path graph (``Integer``, ``Ordinal``)
    goes to ``discrete_dims`` (BoTorch's local search then moves it by ±1, the path's own neighbours), every
    other (``Categorical``, ``Graph``, and a conditional variable, whose graph has the extra "inactive"
    vertex) to ``cat_dims``, with its state indices as the values.  A path with more than
    ``max_discrete_values`` states goes to ``cat_dims`` too: BoTorch relaxes larger ``discrete_dims`` to
    continuous values, which are not state indices.  Conditions are not known to BoTorch: on a conditional
    space, pass the candidates through ``space.enforce_conditions``.

    Parameters
    ----------
    space : fastfm.Space
    max_discrete_values : int, optional
        BoTorch's option of that name (default: BoTorch's ``MAX_DISCRETE_VALUES``).

    Returns
    -------
    dict with ``bounds`` (a (2, n_dims) float64 tensor), ``discrete_dims`` and ``cat_dims`` (column → values)
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
    return {"bounds": bounds, "discrete_dims": discrete_dims, "cat_dims": cat_dims}
