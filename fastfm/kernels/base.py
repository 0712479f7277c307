"""The kernel contract shared by every fastfm kernel (scikit-learn's, plus a fused gradient).

A kernel is called on *encoded* arrays (see ``Space.encode``):

* ``k(X, Y=None, eval_gradient=False)`` returns K (N, M), or (K, dK) with
  dK of shape (N, N, n_theta), derivatives w.r.t. ``theta``;
* ``k.diag(X)`` returns the Gram diagonal without forming the Gram;
* ``k.theta`` is the flat vector of log hyperparameters (fixed ones
  excluded), ``k.bounds`` its (n_theta, 2) log bounds;
* ``k.gradient_reduction(X, W)`` returns Σ_ab W_ab ∂K_ab/∂theta_j for every j
  without materialising the N×N×n_theta tensor: the GP's log-marginal-
  likelihood gradient is 0.5·tr((ααᵀ − K⁻¹) ∂K/∂θ_j) (GPML Eq. 5.9), i.e.
  this reduction with W = 0.5(ααᵀ − K⁻¹).

Subclasses declare their hyperparameters in ``_hyperparameter_specs`` and
implement ``_gram``, ``_diag`` and ``_full_reduction`` / ``_full_gradient``
over *all* hyperparameters (fixed ones included); the base class does the
log-space packing, fixed-parameter masking and cloning once.
"""
import copy
from typing import NamedTuple

import numpy as np

__all__ = ["Hyperparameter", "Kernel", "Sum", "Product"]


class Hyperparameter(NamedTuple):
    """A kernel hyperparameter: ``bounds`` is (n_elements, 2) in the original (not log) scale,
    or the string "fixed"."""

    name: str
    value_type: str
    bounds: object
    n_elements: int = 1
    fixed: bool = False


def _as_bounds(bounds, n, name):
    if isinstance(bounds, str):
        if bounds != "fixed":
            raise ValueError(f"{name}_bounds must be a (low, high) pair or 'fixed', got {bounds!r}")
        return bounds
    b = np.asarray(bounds, dtype=float)
    if b.shape == (2,):
        b = np.tile(b, (n, 1))
    if b.shape != (n, 2) or np.any(b[:, 0] <= 0) or np.any(b[:, 0] >= b[:, 1]):
        raise ValueError(f"{name}_bounds must be positive (low, high) pairs with low < high, "
                         f"one or {n} of them; got {bounds!r}")
    return b


def _broadcast_value(value, n, name):
    v = np.asarray(value, dtype=float)
    if v.ndim == 0:
        v = np.full(n, float(v))
    if v.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have {n} elements, got shape {v.shape}")
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{name} must be positive and finite, got {name}={value!r}")
    return v


# Step of the central differences of Kernel.diag_input_gradient; the inputs live in the unit cube.
DIAG_FD_STEP = 1e-6


class Kernel:
    """Base class of all fastfm kernels (see the module docstring for the contract)."""

    # ---- subclass interface -------------------------------------------------
    def _hyperparameter_specs(self):
        """List of (name, n_elements) in theta order; each name has ``<name>`` and
        ``<name>_bounds`` attributes on the instance."""
        raise NotImplementedError

    def _gram(self, X, Y):
        raise NotImplementedError

    def _diag(self, X):
        raise NotImplementedError

    def _full_reduction(self, X, W):
        """Σ W ∘ ∂K/∂log ψ over all hyperparameters, shape (n_all,)."""
        raise NotImplementedError

    def _full_gradient(self, X):
        """(K, dK) with dK over all hyperparameters, shape (N, N, n_all)."""
        raise NotImplementedError

    def _check_X(self, X, name="X"):
        return np.ascontiguousarray(np.asarray(X, dtype=np.float64))

    # ---- hyperparameters ------------------------------------------------------
    @property
    def hyperparameters(self):
        result = []
        for name, n in self._hyperparameter_specs():
            bounds = _as_bounds(getattr(self, name + "_bounds"), n, name)
            result.append(Hyperparameter(name, "numeric", bounds, n, isinstance(bounds, str)))
        return result

    def _values(self, name, n):
        return self._memo(("values", name, n), lambda: _broadcast_value(getattr(self, name), n, name))

    # ---- memo of hyperparameter-derived quantities ----------------------------------
    # BO calls a kernel thousands of times per suggestion with the same hyperparameters:
    # validated arrays, normalisers and backend arguments are computed once per
    # hyperparameter state, keyed on the attribute values (so setting ``k.alpha = ...``
    # directly, as scikit-learn allows, invalidates it too).
    def _static_key(self):
        """Constructor arguments other than hyperparameters that derived values depend on."""
        return ()

    def _state_key(self):
        pinned = self.__dict__.get("_pinned_state_key")
        if pinned is not None:
            return pinned
        parts = [self._static_key()]
        for name, _ in self._hyperparameter_specs():
            value = getattr(self, name)
            parts.append(value if isinstance(value, float) else np.asarray(value, dtype=float).tobytes())
        return tuple(parts)

    def _memo(self, label, compute):
        key = self._state_key()
        cache = self.__dict__.get("_memo_cache")
        if cache is None or cache[0] != key:
            cache = (key, {})
            self.__dict__["_memo_cache"] = cache
        store = cache[1]
        if label not in store:
            store[label] = compute()
        return store[label]

    def _fix_inputs(self, X):
        """A promise that ``X`` (this very array) is the inputs of many evaluations at changing θ and is never
        written: the likelihood terms make it on their private copy, so a kernel may keep values derived from
        X at the current θ for the next call (``SetKernel``: the Gram that a likelihood gradient at the same θ
        needs again).  The default keeps nothing."""

    def _set_theta_pinned(self, theta):
        """``theta = theta``, and the memo's key fixed at this state until the next call.  For a kernel whose
        hyperparameters only its owner sets, always through this (AdditiveFM's components): the key read from
        the values costs ~10 µs, and an acquisition makes thousands of kernel calls."""
        self.__dict__.pop("_pinned_state_key", None)
        self.theta = theta
        self.__dict__["_pinned_state_key"] = self._state_key()

    def _all_log_values(self):
        specs = self._hyperparameter_specs()
        if not specs:
            return np.zeros(0)
        return np.concatenate([np.log(self._values(name, n)) for name, n in specs])

    def _free_mask(self):
        specs = self.hyperparameters
        if not specs:
            return np.zeros(0, dtype=bool)
        return np.concatenate([np.full(h.n_elements, not h.fixed) for h in specs])

    @property
    def n_dims(self):
        """Number of columns of the encoded arrays this kernel takes."""
        raise NotImplementedError

    @property
    def theta(self):
        """Log of the free hyperparameters, flat."""
        return self._all_log_values()[self._free_mask()]

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=float)
        mask = self._free_mask()
        if theta.shape != (int(mask.sum()),):
            raise ValueError(f"theta must have shape ({int(mask.sum())},), got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be finite, got theta={theta!r}")
        values = self._all_log_values()
        values[mask] = theta
        self.__dict__.pop("_pinned_state_key", None)    # the pin described the state being replaced
        i = 0
        for name, n in self._hyperparameter_specs():
            if n == 0:  # e.g. lengthscales of a space without continuous parameters
                continue
            new = np.exp(values[i:i + n])
            setattr(self, name, new if n > 1 or np.ndim(getattr(self, name)) else float(new[0]))
            i += n

    @property
    def bounds(self):
        """Log bounds of the free hyperparameters, shape (n_theta, 2)."""
        rows = [np.log(h.bounds) for h in self.hyperparameters if not h.fixed]
        return np.vstack(rows) if rows else np.zeros((0, 2))

    @property
    def n_theta(self):
        return int(self._free_mask().sum())

    def _theta_leaves(self):
        """The kernels whose hyperparameters make up ``theta``, in its order, each set by ``Kernel.theta``'s setter;
        None when some part sets them its own way (then only ``theta = ...`` is right)."""
        return [self] if type(self).theta is Kernel.theta else None

    def __sklearn_clone__(self):
        """``sklearn.base.clone`` of a kernel (e.g. inside a cloned GaussianProcessRegressor): a deep copy.

        A kernel's ``get_params`` lists its hyperparameter values, not its constructor arguments (the
        space, the bounds, the backend), so scikit-learn cannot rebuild it from them."""
        return copy.deepcopy(self)

    def clone_with_theta(self, theta):
        """A copy of this kernel with ``theta`` set."""
        clone = copy.deepcopy(self)
        clone.theta = theta
        return clone

    def get_params(self, deep=True):
        """Hyperparameter values by name (arrays copied); ``deep`` is accepted for scikit-learn."""
        return {name: np.array(getattr(self, name), dtype=float) for name, _ in self._hyperparameter_specs()}

    def _likelihood_terms(self, X):
        """The kernel work of one GP likelihood evaluation at many θ, on fixed inputs X.

        Returns an object with ``gram(theta)`` (K(X, X) at the free log
        hyperparameters ``theta``) and ``reduction(W)`` (``gradient_reduction``
        at the θ of the last ``gram`` call).  The GP's fitting loop calls these
        a few hundred times per fit; kernels override this to skip the public
        API's per-call checks and bookkeeping (see ``FMKernel``).  It works on
        a private copy, so ``self`` is never modified.
        """
        return _KernelLikelihoodTerms(self, X)

    # ---- evaluation ------------------------------------------------------------
    def __call__(self, X, Y=None, eval_gradient=False):
        """Gram matrix K(X, Y); with ``eval_gradient`` also dK/dθ of shape (N, N, n_theta)."""
        X = self._check_X(X)
        if eval_gradient:
            if Y is not None:
                raise ValueError("eval_gradient=True is only supported when Y is None")
            K, dK = self._full_gradient(X)
            return K, dK[:, :, self._free_mask()]
        return self._gram(X, None if Y is None else self._check_X(Y, "Y"))

    def diag(self, X):
        """The diagonal of K(X, X), shape (N,)."""
        return self._diag(self._check_X(X))

    def gradient_reduction(self, X, W, symmetric=False):
        """Σ_ab W_ab ∂K(X, X)_ab/∂θ_j for every free θ_j, shape (n_theta,).

        Parameters
        ----------
        X : array of shape (N, n_dims)
        W : array of shape (N, N)
            Weights, e.g. 0.5(ααᵀ − K⁻¹) in GP fitting.  Only W's symmetric
            part matters (∂K is symmetric).
        symmetric : bool, default False
            A promise that W = Wᵀ; a backend may then read one triangle of W
            (the C++ FM reduction does).  With a non-symmetric W and
            ``symmetric=True`` the result is undefined.
        """
        X = self._check_X(X)
        W = np.ascontiguousarray(np.asarray(W, dtype=np.float64))
        if W.shape != (X.shape[0], X.shape[0]):
            raise ValueError(f"W must have shape ({X.shape[0]}, {X.shape[0]}), got W.shape={W.shape}")
        reduction = self._full_reduction_symmetric if symmetric else self._full_reduction
        return reduction(X, W)[self._free_mask()]

    def _full_reduction_symmetric(self, X, W):
        """``_full_reduction`` for a W known to be symmetric (kernels with a faster path override it)."""
        return self._full_reduction(X, W)

    def neighbour_gram(self, x, X, var_index, new_state):
        """Cross-covariances of discrete graph neighbours of ``x`` against ``X``.

        Row m is K(x_m, X), where x_m equals ``x`` except that discrete
        variable ``var_index[m]`` (0-based among the discrete variables) takes
        state ``new_state[m]``.  Kernels whose factors allow it (the FM family)
        reuse the factors neighbours share (see :meth:`neighbour_gram_batch`).

        Returns
        -------
        ndarray of shape (M, N)
        """
        x = np.asarray(x, dtype=np.float64)
        owner = np.zeros(len(np.atleast_1d(var_index)), dtype=np.int64)
        return self.neighbour_gram_batch(x[None, :], X, owner, var_index, new_state)

    def neighbour_gram_batch(self, X0, X, owner, var_index, new_state):
        """:meth:`neighbour_gram` for several base points in one call.

        Row m is K(x_m, X), where x_m equals ``X0[owner[m]]`` except that discrete
        variable ``var_index[m]`` takes state ``new_state[m]``.

        Returns
        -------
        ndarray of shape (M, N)
        """
        return self(self.neighbour_points(X0, owner, var_index, new_state), X)

    def neighbour_points(self, X0, owner, var_index, new_state):
        """The explicit neighbour points of :meth:`neighbour_gram_batch`, shape (M, n_dims)."""
        X0 = np.asarray(X0, dtype=np.float64)
        owner = np.asarray(owner, dtype=np.int64)
        var_index = np.asarray(var_index, dtype=np.int64)
        points = X0[owner].copy()
        points[np.arange(len(owner)), self.n_dims - self._n_discrete() + var_index] = new_state
        return points

    def _n_discrete(self):
        space = getattr(self, "space", None)
        return space.n_discrete if space is not None else 0

    # A kernel whose k(x, x) varies with the continuous inputs where a probe of a few shifted points cannot see it
    # (a diagonal invariant under a common shift of the inputs: SetCrowdingKernel) says so here; for the others
    # the GP probes (``gp.solvers.cholesky.probe_diag``).
    diag_varies_with_continuous = False

    def diag_input_gradient(self, X, n_continuous):
        """∂k(x, x)/∂c_d over the first ``n_continuous`` (continuous) columns of X, shape (M, n_continuous).

        By central differences of :meth:`diag` (DIAG_FD_STEP, in the unit cube); a kernel with an exact form
        overrides it, and sums and products combine their factors'."""
        out = np.empty((X.shape[0], n_continuous))
        for d in range(n_continuous):
            Xp, Xm = X.copy(), X.copy()
            Xp[:, d] += DIAG_FD_STEP
            Xm[:, d] -= DIAG_FD_STEP
            out[:, d] = (self.diag(Xp) - self.diag(Xm)) / (2.0 * DIAG_FD_STEP)
        return out

    def gram_and_input_gradient(self, X1, X2):
        """K(X1, X2) and ∂K[m, n]/∂X1[m, d] for the continuous columns d.

        Returns
        -------
        K : ndarray of shape (M, N)
        dK : ndarray of shape (M, N, n_continuous)
        """
        X1 = self._check_X(X1)
        X2 = self._check_X(X2, "X2")
        return self._gram_and_input_gradient(X1, X2)

    def _gram_and_input_gradient(self, X1, X2):
        raise NotImplementedError(f"{type(self).__name__} has no input gradient")

    # GPU-resident likelihood (fastfm._backends.cuda_linalg): kernels whose backend can leave k(X, X)
    # on the device override these three; the GP then keeps K, its factor and W there.
    def _device_module(self, X):
        """The ``cuda`` backend module when this kernel's k(X, X) runs on the GPU and can stay there, else None."""
        return None

    def _gram_on_device(self, X):
        """k(X, X) as a device array (only when :meth:`_device_module` is not None)."""
        raise NotImplementedError(f"{type(self).__name__} has no device-resident Gram")

    def _full_reduction_on_device(self, X, W):
        """:meth:`_full_reduction` of a device array W (only when :meth:`_device_module` is not None)."""
        raise NotImplementedError(f"{type(self).__name__} has no device-resident reduction")

    def gram_and_gradient_reduction(self, X, W):
        """(K(X, X), gradient_reduction(X, W)); a convenience for tests and benchmarks."""
        return self(X), self.gradient_reduction(X, W)

    def __add__(self, other):
        return Sum(self, other)

    def __mul__(self, other):
        return Product(self, other)

    def __repr__(self):
        # n == 0 (e.g. a discrete-variable hyperparameter on a purely continuous space) shows [].
        args = ", ".join(f"{name}={self._repr_value(name, n)}" for name, n in self._hyperparameter_specs())
        return f"{type(self).__name__}({args})"

    def _repr_value(self, name, n):
        try:
            values = np.round(np.asarray(self._values(name, n), dtype=float), 4)
        except Exception:  # repr must never raise: fall back to the raw attribute
            return repr(getattr(self, name, None))
        return values.tolist() if n != 1 or values.size != 1 else float(values.reshape(-1)[0])


class _Composite(Kernel):
    """Two kernels on the same encoded inputs; hyperparameters are k1's then k2's."""

    def __init__(self, k1, k2):
        self.k1 = k1
        self.k2 = k2

    @property
    def n_dims(self):
        return self.k1.n_dims

    def _n_discrete(self):
        return self.k1._n_discrete()

    @property
    def hyperparameters(self):
        return ([h._replace(name="k1__" + h.name) for h in self.k1.hyperparameters]
                + [h._replace(name="k2__" + h.name) for h in self.k2.hyperparameters])

    def _free_mask(self):
        return np.concatenate([self.k1._free_mask(), self.k2._free_mask()])

    def _fix_inputs(self, X):
        self.k1._fix_inputs(X)
        self.k2._fix_inputs(X)

    def _all_log_values(self):
        return np.concatenate([self.k1._all_log_values(), self.k2._all_log_values()])

    def _hyperparameter_specs(self):
        return ([("k1__" + n, m) for n, m in self.k1._hyperparameter_specs()]
                + [("k2__" + n, m) for n, m in self.k2._hyperparameter_specs()])

    @property
    def theta(self):
        return np.concatenate([self.k1.theta, self.k2.theta])

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=float)
        n1 = self.k1.n_theta
        if theta.shape != (n1 + self.k2.n_theta,):
            raise ValueError(f"theta must have shape ({n1 + self.k2.n_theta},), got {theta.shape}")
        self.k1.theta = theta[:n1]
        self.k2.theta = theta[n1:]

    def _theta_leaves(self):
        if type(self).theta is not _Composite.theta:
            return None
        first, second = self.k1._theta_leaves(), self.k2._theta_leaves()
        return None if first is None or second is None else first + second

    @property
    def bounds(self):
        return np.vstack([self.k1.bounds, self.k2.bounds])

    def get_params(self, deep=True):
        params = {"k1__" + k: v for k, v in self.k1.get_params().items()}
        params.update({"k2__" + k: v for k, v in self.k2.get_params().items()})
        return params

    def _check_X(self, X, name="X"):
        return self.k1._check_X(X, name)

    @property
    def diag_varies_with_continuous(self):
        return self.k1.diag_varies_with_continuous or self.k2.diag_varies_with_continuous

    def __repr__(self):
        return f"{type(self).__name__}({self.k1!r}, {self.k2!r})"


def _combine_into_first(ufunc, A, B):
    """ufunc(A, B), written into A where A is a float64 array of the result's shape that may be written (a
    kernel's fresh Gram): one N × N array fewer at the peak of a composite kernel's Gram."""
    if (isinstance(A, np.ndarray) and A.dtype == np.float64 and A.flags.writeable
            and np.shape(B) == A.shape):
        return ufunc(A, B, out=A)
    return ufunc(A, B)


class Sum(_Composite):
    """k1 + k2."""

    def _gram_and_input_gradient(self, X1, X2):
        K1, dK1 = self.k1._gram_and_input_gradient(X1, X2)
        K2, dK2 = self.k2._gram_and_input_gradient(X1, X2)
        return K1 + K2, dK1 + dK2

    def _gram(self, X, Y):
        return _combine_into_first(np.add, self.k1._gram(X, Y), self.k2._gram(X, Y))

    def _diag(self, X):
        return self.k1._diag(X) + self.k2._diag(X)

    def diag_input_gradient(self, X, n_continuous):
        return self.k1.diag_input_gradient(X, n_continuous) + self.k2.diag_input_gradient(X, n_continuous)

    def _full_reduction(self, X, W):
        return np.concatenate([self.k1._full_reduction(X, W), self.k2._full_reduction(X, W)])

    def _full_gradient(self, X):
        K1, dK1 = self.k1._full_gradient(X)
        K2, dK2 = self.k2._full_gradient(X)
        return K1 + K2, np.concatenate([dK1, dK2], axis=2)


class Product(_Composite):
    """k1 · k2 (elementwise)."""

    def _gram_and_input_gradient(self, X1, X2):
        K1, dK1 = self.k1._gram_and_input_gradient(X1, X2)
        K2, dK2 = self.k2._gram_and_input_gradient(X1, X2)
        return K1 * K2, dK1 * K2[:, :, None] + dK2 * K1[:, :, None]

    def _gram(self, X, Y):
        return _combine_into_first(np.multiply, self.k1._gram(X, Y), self.k2._gram(X, Y))

    def _diag(self, X):
        return self.k1._diag(X) * self.k2._diag(X)

    def diag_input_gradient(self, X, n_continuous):
        return (self.k1.diag_input_gradient(X, n_continuous) * self.k2._diag(X)[:, None]
                + self.k1._diag(X)[:, None] * self.k2.diag_input_gradient(X, n_continuous))

    def _full_reduction(self, X, W):
        # Σ W ∂(K1∘K2) = Σ (W∘K2) ∂K1 + Σ (W∘K1) ∂K2, one weight at a time: W and one N × N array at the peak
        grad1 = self.k1._full_reduction(X, _combine_into_first(np.multiply, self.k2._gram(X, None), W))
        grad2 = self.k2._full_reduction(X, _combine_into_first(np.multiply, self.k1._gram(X, None), W))
        return np.concatenate([grad1, grad2])

    def _full_gradient(self, X):
        K1, dK1 = self.k1._full_gradient(X)
        K2, dK2 = self.k2._full_gradient(X)
        return K1 * K2, np.concatenate([dK1 * K2[:, :, None], dK2 * K1[:, :, None]], axis=2)


class _KernelLikelihoodTerms:
    """``Kernel._likelihood_terms`` through the public contract (any kernel).

    ``device`` is the ``cuda`` module when the kernel keeps k(X, X) on the GPU (``Kernel._device_module``);
    the GP then calls ``gram_on_device`` and ``reduction_on_device`` with the whole W on the device
    (``splits_diagonal`` False: its diagonal stays in it)."""

    splits_diagonal = False

    def __init__(self, kernel, X):
        self.kernel = copy.deepcopy(kernel)
        self.X = self.kernel._check_X(X)
        self.kernel._fix_inputs(self.X)
        self.mask = self.kernel._free_mask()
        self.device = self.kernel._device_module(self.X)
        self.setter = _ThetaSetter.of(self.kernel)

    def gram(self, theta):
        if self.setter is None:
            self.kernel.theta = theta
        else:
            self.setter(theta)
        return self.kernel._gram(self.X, None)

    def reduction(self, W):
        return self.kernel._full_reduction(self.X, W)[self.mask]

    def gram_on_device(self, theta):
        if self.setter is None:
            self.kernel.theta = theta
        else:
            self.setter(theta)
        return self.kernel._gram_on_device(self.X)

    def reduction_on_device(self, W, w_diag):
        return self.kernel._full_reduction_on_device(self.X, W)[self.mask]


class _ThetaSetter:
    """``kernel.theta = theta`` for the likelihood terms' private kernel, without the per-call bookkeeping.

    The public setter rebuilds the hyperparameter list (validating every bound) and reads every value through the
    memo on each call: ~0.2 ms on the sum of two set kernels, 12 % of a likelihood evaluation there.  The terms'
    kernel is a private copy whose bounds never change, so which hyperparameters are free is read once; each call
    then sets exactly the values the public setter would (the free ones exp(θ), the fixed ones exp(log(value)), as
    it does) and pins every leaf's memo key, so that the Gram's many memo reads skip recomputing it."""

    def __init__(self, plan, n_theta):
        self.plan = plan          # [(leaf, [(name, n, free, scalar)])], in theta order
        self.n_theta = n_theta

    @classmethod
    def of(cls, kernel):
        leaves = kernel._theta_leaves()
        if leaves is None:
            return None
        plan = []
        for leaf in leaves:
            specs = [(name, n, not hyperparameter.fixed, np.ndim(getattr(leaf, name)) == 0)
                     for hyperparameter, (name, n) in zip(leaf.hyperparameters, leaf._hyperparameter_specs()) if n]
            plan.append((leaf, specs))
        return cls(plan, kernel.n_theta)

    def __call__(self, theta):
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.n_theta,):
            raise ValueError(f"theta must have shape ({self.n_theta},), got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must be finite, got theta={theta!r}")
        start = 0
        for leaf, specs in self.plan:
            for name, n, free, scalar in specs:
                if free:
                    new = np.exp(theta[start:start + n])
                    start += n
                else:
                    new = np.exp(np.log(_broadcast_value(getattr(leaf, name), n, name)))
                setattr(leaf, name, float(new[0]) if n == 1 and scalar else new)
            leaf.__dict__.pop("_pinned_state_key", None)
            leaf.__dict__["_pinned_state_key"] = leaf._state_key()
