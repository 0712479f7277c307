"""Kernels by name: ``make_kernel`` and the default kernel of a space with ``Set`` parameters.

The two call each other (a set space's kernel names its kernel on the other parameters), so they live
together, above the kernel modules they build from.
"""
from ..exceptions import InvalidValueError
from ..space import Space
from ._space_kernel import VARIANCE_BOUNDS
from .additive import AdditiveFM
from .base import Kernel
from .baselines import AddDif, AddLap, ProdDif, ProdLap
from .continuous import RBF, Matern52
from .fm import FMKernel, ModDif, ModLap, ModNN
from .hierarchical import Hierarchical
from .set_crowding import SetCrowdingKernel
from .sets import MMDSetKernel, SetKernel, SpaceProduct, SpaceSum, SubspaceKernel

__all__ = ["make_kernel", "set_space_kernel"]

_BY_NAME = {
    "modlap": ModLap, "moddif": ModDif, "modnn": ModNN, "fm": FMKernel,
    "prodlap": ProdLap, "addlap": AddLap, "proddif": ProdDif, "adddif": AddDif,
    "rbf": RBF, "matern52": Matern52, "hierarchical": Hierarchical, "modlap_additive": AdditiveFM,
}


def make_kernel(kernel, space, **kwargs):
    """A kernel object from a name ("modlap", "prodlap", ...) or pass an object through.

    On a space with ``Set`` parameters the named kernel covers the other
    parameters and is multiplied by a ``SetKernel`` per set (``set_space_kernel``).
    """
    if isinstance(kernel, Kernel):
        return kernel
    if not isinstance(kernel, str) or kernel.lower() not in _BY_NAME:
        raise ValueError(f"unknown kernel {kernel!r}; choose a Kernel object or one of {sorted(_BY_NAME)}")
    if space.set_params:
        return set_space_kernel(kernel, space, **kwargs)
    return _BY_NAME[kernel.lower()](space, **kwargs)


# The string values of set_space_kernel's ``normalize`` (besides False and True)
SET_KERNEL_FORMS = ("learn", "mmd", "norm+mmd")


def set_space_kernel(kernel_name, space, backend="auto", n_subsample=None, seed=0, normalize="norm+mmd", crowding=False,
                     **kwargs):
    """The default kernel of a space with ``Set`` parameters: a PRODUCT of factors.

        k(x, x') = k_rest(rest, rest') · Π_sets K_set(S, S')

    k_rest is the named kernel ("modlap", "matern52", ...) on the other parameters
    (Matern52 when they have no discrete variable and an FM kernel was named); each
    Set gets a ``SetKernel`` (Matérn 5/2 inner kernel; exact, or K̂ on ``n_subsample``
    points drawn from ``seed``).  Only the first factor keeps a free variance: the others'
    are fixed at 1 (one amplitude).  ``kwargs`` go to the named kernel.

    ``normalize`` (default ``"norm+mmd"``, since issue 24 §4) gives each Set the SUM of the normalised set kernel
    and an ``MMDSetKernel`` (a Gaussian of the distance between the sets' mean embeddings), each with its own
    amplitude (the first fixed at 1 when another factor holds the amplitude).  The set kernel alone is linear in
    the embeddings: it models objectives that sum over the points but not those whose points interact (coverage,
    the p-median, the Chamfer distance), where the MMD term does; BO at 60 evaluations: PMedian 0.118 against
    0.149 with the normalised kernel alone (best known 0.114), SetChamfer 0.005 against 0.123, and level or
    better on the sum-structured problems (docs/benchmarks/sets.md, "The p-median, and the MMD set kernel").
    ``True`` is the normalised set kernel K/√(K(X,X) K(X',X')) alone (the default before; with the plain K_set
    of SPEC §4, ``False``, sets whose points coincide have up to m times the prior variance and expected
    improvement chases them).  ``"learn"`` fits the power γ of K/(K(X,X) K(X',X'))^(γ/2) (``SetKernel``);
    ``"mmd"`` the MMD kernel alone.

    ``crowding=True`` adds to each Set's kernel a ``SetCrowdingKernel``: a linear trend in the number of the set's
    points lost to crowding (points that coincide), whose sign the fit learns.  Where points must cover (the
    Chamfer distance to a target set) it stops the search from proposing sets with coincident points that the set
    kernels alone cannot tell apart: SetChamfer 0.033 → 0.005 at 60 evaluations; level on SetCoverage, PMedian,
    SetDensity and SetPeriodic, at up to 1.5x the time of a suggestion on sets of 10 points
    (docs/benchmarks/sets.md, "Crowded sets").  Off by default for that cost.
    """
    if not (normalize in (False, True) or (isinstance(normalize, str) and normalize in SET_KERNEL_FORMS)):
        raise InvalidValueError(f"normalize must be one of (False, True, {', '.join(map(repr, SET_KERNEL_FORMS))}), "
                                f"got normalize={normalize!r}", "normalize", normalize)
    others = [p for p in space.parameters if p not in space.set_params]
    factors = []
    if others:
        sub = Space(others)
        name = kernel_name.lower()
        if sub.n_discrete == 0 and name not in ("rbf", "matern52"):
            name = "matern52"
            kwargs.pop("unit_diagonal", None)     # an FM kernel's option
        factors.append(SubspaceKernel(make_kernel(name, sub, backend=backend, **kwargs), space))
    for p in space.set_params:
        fixed = "fixed" if factors else VARIANCE_BOUNDS
        common = dict(space=space, parameter=p.name, n_subsample=n_subsample, seed=seed, backend=backend)
        if normalize == "mmd":
            factors.append(MMDSetKernel(variance_bounds=fixed, **common))
        elif normalize == "norm+mmd":
            factors.append(SpaceSum(SetKernel(variance_bounds=fixed, normalize=True, **common),
                                    MMDSetKernel(variance_bounds=VARIANCE_BOUNDS, **common), space))
        else:
            factors.append(SetKernel(variance_bounds=fixed, normalize=normalize, **common))
        if crowding:
            factors[-1] = SpaceSum(factors[-1], SetCrowdingKernel(space, parameter=p.name), space)
    kernel = factors[0]
    for factor in factors[1:]:
        kernel = SpaceProduct(kernel, factor, space)
    return kernel
