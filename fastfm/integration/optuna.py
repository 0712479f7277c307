"""``FMSampler``: an Optuna sampler that runs fastfm's Bayesian optimisation on a study's search space.

    import optuna
    from fastfm.integration.optuna import FMSampler

    study = optuna.create_study(sampler=FMSampler(seed=0))
    study.optimize(objective, n_trials=50)

How a trial is sampled
----------------------
Optuna samples define-by-run: the objective asks for its parameters one at a time.  The sampler
proposes values jointly for the *relative search space*, inferred from the completed trials
(``infer_conditional_search_space``):

* the parameters every completed trial suggested, with one distribution (single-value distributions left
  out: Optuna fixes those itself);
* the *conditional* ones, suggested by some completed trials only, when a parent explains them: a
  categorical (or an int or grid searched as a graph) parameter of the space, suggested by every trial that
  suggested the child and by some that did not, whose values in the first trials never occur in the second.
  The child then becomes ``active_if={parent: the values it had with the child}`` in the fastfm ``Space``:
  it is active exactly where the completed trials suggested it.  Parents may be conditional themselves
  (``classifier -> kernel -> degree``), and a child that several parents explain takes the nearest one.

The model proposes a whole configuration of that conditional space, and the sampler returns its *active*
parameters: those of the branch it chose, which are the ones the objective asks for when it follows that
branch.  Every other parameter goes to the ``independent_sampler``, with a warning once per parameter (none
for a parameter no completed trial has suggested yet: a branch met for the first time): one whose
distribution changes between trials, one whose presence no single parent's values explain (a continuous
parent, ``x > 0``, or a conjunction of two parents), or one the proposal has inactive that the objective
asks for all the same (its branches other than the completed trials showed).  So does everything during the
first ``n_startup_trials`` completed trials.

Each relative sample builds a fresh ``fastfm.Optimizer`` on the search space and tells it:

* every COMPLETE trial, as the config of its parameters active in it (its value negated when the study
  maximises: fastfm minimises; a configuration completed twice keeps its first value, as ``Optimizer.tell``
  takes each point once); FAIL and PRUNED trials are left out, as Optuna's own samplers do;
* every other RUNNING trial that has all the parameters active in it (``consider_pending``) at the best
  value seen: the constant liar.  ``Optimizer`` conditions on pending points only for the asks it made
  itself and has no public way to add a point someone else is evaluating; telling a running configuration
  at the best value moves the next suggestion away from it, as its own ``pending="liar_min"`` does.  The
  values this sampler proposes are written to the trial's system attributes, so that processes sharing the
  storage see a running trial's configuration before the objective has suggested all of it (as Optuna's
  ``GPSampler`` does).

A fresh optimiser per sample keeps the sampler stateless apart from its random generator (and caches of
what the completed trials determine: the conditional search space, the fastfm ``Space``): threads
(``study.optimize(n_jobs=...)``), processes sharing an RDB or a journal storage, and resumed studies all
see the same thing, the study's trials.  The one thing carried from a proposal to the next is where the
model fit starts: the last fit's hyperparameters (``Optimizer._continue_fit``), so that a proposal costs a
warm refit, as a suggestion of one optimizer's ask/tell loop does, rather than a first fit with every restart
and candidate kernel (Func2C, Func3C and Ackley5C, 60 trials: 0.13-0.15 s per trial instead of 0.36-0.65 s
with kernel="auto"; docs/benchmarks/integrations.md).  Another process or a resumed study starts its first
proposal's fit afresh.

How the parameters map
----------------------
==========================================  ===========================================================
Optuna distribution                         fastfm parameter
==========================================  ===========================================================
``FloatDistribution(low, high)``            ``Real(low, high)``
``FloatDistribution(low, high, log=True)``  ``Real(low, high, log=True)``
``FloatDistribution(low, high, step=s)``    ``Integer(0, n)`` over the grid index k, value low + k·s
``IntDistribution(low, high)``              ``Integer(low, high)`` (log=True: ``Integer(log=True)``)
``IntDistribution(low, high, step=s > 1)``  ``Integer(0, n)`` over the grid index k, value low + k·s
``CategoricalDistribution(choices)``        ``Categorical`` over the choices' indices
==========================================  ===========================================================

A grid (a stepped float or int) is an ``Integer`` over its indices so that every proposal is on the grid
and the kernel sees the grid's order: a path graph up to ``fastfm.space.parameters.MAX_GRAPH_INTEGER_STATES``
points, a rounded continuous variable above (``Integer(encoding="auto")``).  Categorical choices are
indices so that any choice Optuna accepts comes back as the very object (None, True, 1.5 and "a" in one
list, where True == 1 and 1.0 == 1 would confuse a lookup by value).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import math
import numbers
import threading

try:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.study import StudyDirection
    from optuna.trial import TrialState
except ImportError as exc:
    raise ImportError("fastfm.integration.optuna needs Optuna (>= 3.6), which is not installed: "
                      "pip install fastfm[optuna]") from exc

import numpy as np

from ..bo import Optimizer
from ..exceptions import InvalidConfigError, InvalidValueError, TrialStateError
from ..kernels import Kernel
from ..optim import SearchSpaceExhaustedError
from ..space import Categorical, Integer, Real, Space

__all__ = ["FMSampler"]

_logger = logging.getLogger(__name__)

# The trial system attribute (split in chunks "<key>:0", "<key>:1", ...) holding the values this sampler
# proposed for a trial, in Optuna's internal representation, for other workers to see while it runs.
RELATIVE_PARAMS_KEY = "fastfm:relative_params"
# RDBStorage stores a system attribute's value in at most 2048 characters of JSON (its quotes included).
_SYSTEM_ATTR_CHUNK = 2045

# Kernels that need discrete variables (graphs); on a search space of floats alone the sampler uses
# Matern52 instead, as ``Optimizer`` does, without the warning ``Optimizer`` gives to someone who named one.
_GRAPH_KERNEL_NAMES = ("modlap", "moddif", "modnn", "fm", "prodlap", "addlap", "proddif", "adddif")
# ``Optimizer`` arguments the sampler sets itself.
_RESERVED_OPTIONS = ("space", "seed", "kernel", "storage")
# A small mixed space on which the constructor builds an ``Optimizer`` once, so that a bad kernel name or
# option fails when the sampler is made rather than inside the first trial after the startup ones.
_PROBE_SPACE = Space([Real("x", 0.0, 1.0), Categorical("c", [0, 1])])


# ------------------------------------------------------------------------------------------------ mapping
class _RealCodec:
    """``FloatDistribution`` without a step: a ``Real`` with the same bounds and log flag."""

    def __init__(self, name, distribution, active_if=None):
        self.distribution = distribution
        self.parameter = Real(name, distribution.low, distribution.high, log=distribution.log, active_if=active_if)

    def to_fastfm(self, value):
        return min(max(float(value), self.distribution.low), self.distribution.high)

    def to_optuna(self, value):
        return min(max(float(value), self.distribution.low), self.distribution.high)


class _IntegerCodec:
    """``IntDistribution`` with step 1: an ``Integer`` with the same bounds and log flag."""

    def __init__(self, name, distribution, active_if=None):
        self.distribution = distribution
        self.parameter = Integer(name, distribution.low, distribution.high, log=distribution.log,
                                 active_if=active_if)

    def to_fastfm(self, value):
        return int(value)

    def to_optuna(self, value):
        return int(value)


class _GridCodec:
    """A stepped ``FloatDistribution`` or ``IntDistribution``: an ``Integer`` over the grid index k of
    low + k·step, so that every proposal lies on the grid."""

    def __init__(self, name, distribution, active_if=None):
        self.distribution = distribution
        # Optuna lowers high onto the grid, so the ratio is an integer up to rounding
        self.n_steps = int(round((distribution.high - distribution.low) / distribution.step))
        self.parameter = Integer(name, 0, self.n_steps, active_if=active_if)

    def to_fastfm(self, value):
        index = int(round((float(value) - self.distribution.low) / self.distribution.step))
        return min(max(index, 0), self.n_steps)

    def to_optuna(self, index):
        low, step = self.distribution.low, self.distribution.step
        if isinstance(self.distribution, IntDistribution):
            return int(low + int(index) * step)
        return min(float(low + int(index) * step), self.distribution.high)


class _ChoiceCodec:
    """``CategoricalDistribution``: a ``Categorical`` over the choices' indices."""

    def __init__(self, name, distribution, active_if=None):
        self.distribution = distribution
        self.parameter = Categorical(name, list(range(len(distribution.choices))), active_if=active_if)

    def to_fastfm(self, value):
        # the same object or an equal one of the same type first: Optuna's own lookup
        # (``choices.index``) takes True for 1 and 1 for 1.0
        for index, choice in enumerate(self.distribution.choices):
            if choice is value or (type(choice) is type(value) and _equal_or_both_nan(choice, value)):
                return index
        return int(self.distribution.to_internal_repr(value))

    def to_optuna(self, index):
        return self.distribution.choices[int(index)]


def _equal_or_both_nan(a, b):
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:   # a choice whose comparison raises is not the value
        return False


def _is_supported(distribution):
    return isinstance(distribution, (FloatDistribution, IntDistribution, CategoricalDistribution))


def _parameter_codec(name, distribution, active_if=None):
    if isinstance(distribution, CategoricalDistribution):
        kind = _ChoiceCodec
    elif isinstance(distribution, FloatDistribution):
        kind = _RealCodec if distribution.step is None else _GridCodec
    elif isinstance(distribution, IntDistribution):
        kind = _IntegerCodec if distribution.step == 1 else _GridCodec
    else:
        kind = None
    if kind is not None:
        return kind(name, distribution, active_if)
    raise InvalidValueError(f"FMSampler: parameter {name!r} has a distribution it cannot map: {distribution!r}",
                            name, distribution)


class SearchSpaceCodec:
    """A fastfm ``Space`` for an Optuna search space, and the maps between Optuna's values and fastfm configs.

    Parameters
    ----------
    search_space : dict of str to optuna.distributions.BaseDistribution
        Float, int and categorical distributions, none of them single-valued.
    conditions : dict of str to (str, tuple), optional
        child -> (parent, allowed values): the child is active only where the parent is active and takes one of
        the allowed values, given as fastfm values of the parent (a choice's index, a grid's index, an int), as
        :func:`infer_conditional_search_space` finds them.  The parents are discrete and in ``search_space``.

    Attributes
    ----------
    space : fastfm.Space
        One parameter per distribution, in the order of the names (so that workers that met the
        parameters in different orders build the same space), each child with ``active_if={parent: allowed}``.
    """

    def __init__(self, search_space, conditions=None):
        self.search_space = dict(search_space)
        self.conditions = dict(conditions or {})
        self._codecs = {name: _parameter_codec(name, distribution, _active_if(self.conditions.get(name)))
                        for name, distribution in sorted(self.search_space.items())}
        self.space = Space([codec.parameter for codec in self._codecs.values()])

    def to_config(self, params):
        """The fastfm config of Optuna parameter values (external representation); parameters outside the search
        space are left out, and so are missing ones (``Space.encode`` says whether the config is whole)."""
        return {name: codec.to_fastfm(params[name]) for name, codec in self._codecs.items() if name in params}

    def to_params(self, config):
        """Optuna parameter values (external representation) of a fastfm config (its active parameters)."""
        return {name: codec.to_optuna(config[name]) for name, codec in self._codecs.items() if name in config}

    def _whole(self, config):
        """True when ``config`` holds exactly the parameters active in it."""
        active = self.space.is_active(config)
        return all((name in config) == active[name] for name in self._codecs)

    def holds(self, trial):
        """True when ``trial`` suggested exactly the parameters of the search space that are active in it (all of
        them in a space without conditions), each with the search space's distribution."""
        for name in trial.params.keys() & self.search_space.keys():
            if trial.distributions.get(name) != self.search_space[name]:
                return False
        return self._whole(self.to_config(trial.params))

    def running_params(self, trial):
        """A running trial's values of the search space: those it suggested, completed by those the sampler
        proposed to it (``RELATIVE_PARAMS_KEY``), less those inactive in them; None when an active one is missing
        or one is from another distribution."""
        proposed = _read_relative_params(trial)
        params = {}
        for name, distribution in self.search_space.items():
            if name in trial.params:
                if trial.distributions.get(name) != distribution:
                    return None
                params[name] = trial.params[name]
            elif name in proposed:
                try:   # proposed for an earlier search space, perhaps: its index may be out of range
                    params[name] = distribution.to_external_repr(proposed[name])
                except (IndexError, TypeError, ValueError):
                    return None
        active = self.space.is_active(self.to_config(params))
        if not all(name in params for name in self._codecs if active[name]):
            return None
        return {name: value for name, value in params.items() if active[name]}


def _active_if(condition):
    return None if condition is None else {condition[0]: list(condition[1])}


# --------------------------------------------------------------------------------- conditional search space
@dataclasses.dataclass(frozen=True)
class ConditionalSearchSpace:
    """What the completed trials of a define-by-run objective say about its search space.

    Attributes
    ----------
    distributions : dict of str to optuna.distributions.BaseDistribution
        The modelled parameters, parents before their children: those every completed trial suggested, and the
        conditional ones a parent explains.
    conditions : dict of str to (str, tuple)
        child -> (parent, allowed fastfm values of the parent), as ``SearchSpaceCodec`` takes them.
    unexplained : frozenset of str
        Parameters some completed trials suggested and others not, that no parent explains: left to the
        independent sampler.
    """

    distributions: dict
    conditions: dict
    unexplained: frozenset

    def restricted_to(self, search_space):
        """(distributions, conditions) of the parameters that ``search_space`` holds with the same distribution,
        less the children of a parameter left out (``search_space`` may come from fewer completed trials)."""
        kept, conditions = {}, {}
        for name, distribution in self.distributions.items():       # parents first
            condition = self.conditions.get(name)
            if search_space.get(name) != distribution or (condition is not None and condition[0] not in kept):
                continue
            kept[name] = distribution
            if condition is not None:
                conditions[name] = condition
        return kept, conditions


def infer_conditional_search_space(trials):
    """The conditional search space that explains which parameters each completed trial suggested.

    Parameters
    ----------
    trials : sequence of optuna.trial.FrozenTrial
        The completed trials.

    Returns
    -------
    ConditionalSearchSpace

    Notes
    -----
    A parameter enters when every trial that suggested it used one distribution (not single-valued, of a kind
    the sampler maps).  One that every trial suggested is unconditional.  One that only some trials suggested
    (child) needs a parent: a discrete modelled parameter (categorical, or an int or grid searched as a graph)
    suggested by every trial that suggested the child and by at least one that did not, whose values in the
    first trials and in the second are disjoint sets.  The child is then active where the parent is active and
    takes one of the values it had with the child, which is exactly where the trials suggested it (values the
    parent never took leave the child inactive).  A parent suggested by strictly more trials than its child, the
    conditions form a tree; a child that several parents explain takes the one suggested by the fewest trials
    (the nearest), then the one with the fewest values, then the first by name.  Conjunctions of parents are not
    searched: a child no single parent explains is ``unexplained``.
    """
    trials = list(trials)
    distributions, inconsistent = {}, set()
    for trial in trials:
        for name, distribution in trial.distributions.items():
            if name in inconsistent:
                continue
            if name not in distributions:
                distributions[name] = distribution
            elif distributions[name] != distribution:
                inconsistent.add(name)
                del distributions[name]
    distributions = {name: d for name, d in distributions.items() if _is_supported(d) and not d.single()}
    codecs = {name: _parameter_codec(name, d) for name, d in distributions.items()}
    present = {name: frozenset(i for i, trial in enumerate(trials) if name in trial.params) for name in distributions}
    modelled = {name: d for name, d in sorted(distributions.items()) if len(present[name]) == len(trials)}
    conditions, unexplained = {}, set()
    # a parent is suggested by more trials than its child: deciding the children in that order, every parent of
    # a child is decided before it
    for child in sorted((n for n in distributions if n not in modelled), key=lambda n: (-len(present[n]), n)):
        explanations = []
        for parent in modelled:
            if codecs[parent].parameter.is_continuous or not present[child] < present[parent]:
                continue
            with_child = {codecs[parent].to_fastfm(trials[i].params[parent]) for i in present[child]}
            without = {codecs[parent].to_fastfm(trials[i].params[parent]) for i in present[parent] - present[child]}
            if not with_child & without:
                explanations.append(((len(present[parent]), codecs[parent].parameter.n_states, parent),
                                     (parent, tuple(sorted(with_child)))))
        if explanations:
            modelled[child] = distributions[child]
            conditions[child] = min(explanations)[1]
        else:
            unexplained.add(child)
    return ConditionalSearchSpace(modelled, conditions, frozenset(unexplained))


def _read_relative_params(trial):
    chunks, i = [], 0
    while (chunk := trial.system_attrs.get(f"{RELATIVE_PARAMS_KEY}:{i}")) is not None:
        chunks.append(chunk)
        i += 1
    if not chunks:
        return {}
    try:
        return json.loads("".join(chunks))
    except ValueError:   # a chunk not yet written by a worker that is writing them now
        return {}


def _write_relative_params(study, trial, search_space, params):
    """Record the proposal on the trial, for other workers to count it as pending while it runs.

    The storage API of a study (``study._storage``, ``trial._trial_id``) is Optuna's private one, the
    same that its ``GPSampler`` uses for this; a public ``Trial.set_system_attr`` no longer exists."""
    internal = {name: search_space[name].to_internal_repr(value) for name, value in params.items()}
    text = json.dumps(internal)
    for start in range(0, len(text), _SYSTEM_ATTR_CHUNK):
        study._storage.set_trial_system_attr(trial._trial_id, f"{RELATIVE_PARAMS_KEY}:{start // _SYSTEM_ATTR_CHUNK}",
                                             text[start:start + _SYSTEM_ATTR_CHUNK])


# ------------------------------------------------------------------------------------------------ sampler
class FMSampler(BaseSampler):
    """Optuna sampler running fastfm's Bayesian optimisation (an FM-kernel GP on mixed spaces).

    See the module docstring for how trials, pending trials and distributions are handled.

    Parameters
    ----------
    seed : int or None
        Seeds the sampler's random generator (each model's seed is drawn from it) and the default
        independent sampler.  With ``n_jobs=1`` the same seed gives the same study.
    n_startup_trials : int, default 10
        Completed trials sampled by the independent sampler before the model is used (the first trial always
        is: there is nothing to model yet).
    independent_sampler : optuna.samplers.BaseSampler, optional
        For the startup trials and for parameters outside the relative search space (conditional ones that
        no parent explains, module docstring).  Default: ``optuna.samplers.RandomSampler(seed=seed)``.
    kernel : str or callable, default "auto"
        A kernel name of ``fastfm.Optimizer`` ("auto" is its default: ModLap, or AdditiveFM where it fits the
        trials better, with learned groups of nominal values), or a callable ``space -> fastfm.kernels.Kernel``
        (a kernel object belongs to one space, and the search space can grow).  On a search space without
        discrete parameters the graph kernels ("modlap", "prodlap", ...) become Matern52.  Each proposal's fit
        starts from the last one's (a warm refit; all restarts on the optimizer's geometric schedule), as in one
        optimizer's ask/tell loop.
    optimizer_options : dict, optional
        Further arguments of ``fastfm.Optimizer`` (``acquisition``, ``n_restarts``, ``gp_options``, ...);
        not ``space``, ``seed``, ``kernel`` or ``storage``, which the sampler sets.  ``n_init`` defaults to 1:
        the startup trials are the sampler's.
    consider_pending : bool, default True
        Condition each proposal on the other running trials (constant liar, module docstring).
    warn_independent_sampling : bool, default True
        Log a warning (logger ``fastfm.integration.optuna``) the first time each parameter is sampled by
        the independent sampler after the startup trials (not while no completed trial has suggested it).

    Raises
    ------
    InvalidValueError
        A bad ``n_startup_trials``, ``independent_sampler``, ``kernel`` or ``optimizer_options``.
    ValueError
        A value ``fastfm.Optimizer`` rejects in ``optimizer_options``, or an unknown kernel name.

    Notes
    -----
    Single-objective studies only: a multi-objective study raises ``InvalidValueError`` (a ValueError) when
    its first trial asks for a parameter.
    """

    def __init__(self, seed=None, *, n_startup_trials=10, independent_sampler=None, kernel="auto",
                 optimizer_options=None, consider_pending=True, warn_independent_sampling=True):
        if (not isinstance(n_startup_trials, numbers.Integral) or isinstance(n_startup_trials, bool)
                or n_startup_trials < 0):
            raise InvalidValueError(f"n_startup_trials must be a non-negative integer, got "
                                    f"n_startup_trials={n_startup_trials!r}", "n_startup_trials", n_startup_trials)
        if independent_sampler is not None and not isinstance(independent_sampler, BaseSampler):
            raise InvalidValueError(f"independent_sampler must be an optuna.samplers.BaseSampler, got "
                                    f"independent_sampler={independent_sampler!r}", "independent_sampler",
                                    independent_sampler)
        if isinstance(kernel, Kernel) or not (isinstance(kernel, str) or callable(kernel)):
            # a Kernel object is callable too (on points), but it is built for one space
            raise InvalidValueError(f"kernel must be a kernel name or a callable space -> Kernel (a kernel object "
                                    f"belongs to one space, and the search space can change), got kernel={kernel!r}",
                                    "kernel", kernel)
        self._n_startup_trials = int(n_startup_trials)
        self._independent_sampler = RandomSampler(seed=seed) if independent_sampler is None else independent_sampler
        self._kernel = kernel
        self._optimizer_options = {"n_init": 1, **_checked_optimizer_options(optimizer_options)}
        self._consider_pending = bool(consider_pending)
        self._warn_independent_sampling = bool(warn_independent_sampling)
        Optimizer(_PROBE_SPACE, kernel=kernel if isinstance(kernel, str) else "random", seed=0,
                  **self._optimizer_options)
        self._rng = np.random.default_rng(seed)
        # (key, ConditionalSearchSpace) of the last completed trials seen: the key names the study and its
        # completed trials, which no longer change
        self._inferred = None
        self._codec = None                 # the SearchSpaceCodec of the last search space
        self._last_fit = None              # (codec, Optimizer._fit_state()) of the last model proposal
        self._warned_params = set()
        # numbers of the running trials whose parameters the independent sampler chooses on purpose (the
        # startup trials): no warning for them
        self._startup_trials = set()
        self._suggested_before = {}      # trial number -> parameters completed trials had suggested at its proposal
        self._make_locks()

    def _make_locks(self):
        # One lock around every model fit and ask: the threads of study.optimize(n_jobs=...) share this
        # sampler's optimizer, its random state and its record of the trials each suggestion saw.
        self._model_lock = threading.Lock()
        # One thread at a time updates the cached conditional search space.
        self._search_space_lock = threading.Lock()

    def __getstate__(self):                # locks do not pickle; a copy gets its own
        state = self.__dict__.copy()
        del state["_model_lock"], state["_search_space_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.pop("_intersection_search_space", None)   # a sampler pickled before the conditional spaces
        self.__dict__.setdefault("_inferred", None)
        self.__dict__.setdefault("_last_fit", None)         # a sampler pickled before proposals continued the fit
        self._make_locks()

    def reseed_rng(self):
        """A fresh random generator here and in the independent sampler (Optuna calls this per thread)."""
        with self._model_lock:
            self._rng = np.random.default_rng()
        self._independent_sampler.reseed_rng()

    # ------------------------------------------------------------------------------------ relative sampling
    def infer_relative_search_space(self, study, trial):
        """The parameters every completed trial suggested with one distribution, and the conditional ones whose
        presence a parent's values explain (``infer_conditional_search_space``); single values left out."""
        if len(study.directions) > 1:
            raise InvalidValueError(
                f"FMSampler supports single-objective studies only; this study has "
                f"directions={[d.name for d in study.directions]}", "directions", study.directions)
        completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        return dict(self._conditional_search_space(study, completed).distributions)

    def _conditional_search_space(self, study, completed):
        key = (study._study_id, tuple(t._trial_id for t in completed))
        with self._search_space_lock:
            if self._inferred is None or self._inferred[0] != key:
                self._inferred = (key, infer_conditional_search_space(completed))
            return self._inferred[1]

    def sample_relative(self, study, trial, search_space):
        """Values of the search space from fastfm's optimiser, or {} (the independent sampler decides) during
        the startup trials and when a finite search space has no point left."""
        # The lock covers reading the trials through recording the proposal: a thread that samples next then
        # sees this trial's proposal as pending (other processes can still race between the two).
        with self._model_lock:
            trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
            completed = [t for t in trials if t.state == TrialState.COMPLETE]
            # startup: the independent sampler is expected to choose everything (no completed trial: no model)
            if len(completed) < max(self._n_startup_trials, 1):
                self._startup_trials.add(trial.number)
                return {}
            # what the completed trials had suggested when this proposal was made: only those parameters warn
            # in sample_independent (another thread's trial may complete meanwhile with a branch this one
            # could not model)
            self._suggested_before[trial.number] = {name for t in completed for name in t.params}
            if not search_space:
                return {}
            sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
            # the conditions, from the completed trials read now (a trial may have completed since Optuna
            # inferred ``search_space``): only the parameters ``search_space`` holds can be proposed
            modelled, conditions = self._conditional_search_space(study, completed).restricted_to(search_space)
            if not modelled:
                return {}
            codec = self._codec_for(modelled, conditions)
            completed = [t for t in completed if codec.holds(t)]
            running = []
            if self._consider_pending:
                running = [codec.running_params(t) for t in trials
                           if t.state == TrialState.RUNNING and t.number != trial.number]
                running = [params for params in running if params is not None]
            seed = int(self._rng.integers(2**31 - 1))
            params = self._propose(codec, [(t.params, sign * t.value) for t in completed], running, seed)
            if params:
                _write_relative_params(study, trial, modelled, params)
            else:     # a finite search space with every point completed or running: nothing for the model to add
                self._startup_trials.add(trial.number)
            return params

    def _codec_for(self, search_space, conditions):
        # the Space is kept while the search space stays the same: its graphs' spectra are computed once
        if (self._codec is None or self._codec.search_space != search_space
                or self._codec.conditions != conditions):
            self._codec = SearchSpaceCodec(search_space, conditions)
        return self._codec

    def _kernel_for(self, space):
        if not isinstance(self._kernel, str):
            return self._kernel(space)
        if space.n_discrete == 0 and self._kernel.lower() in _GRAPH_KERNEL_NAMES:
            return "matern52"
        return self._kernel

    def _propose(self, codec, observations, running, seed):
        """One suggestion of an ``Optimizer`` told the (params, value to minimise) observations and the running
        configurations at the best value seen (constant liar)."""
        optimizer = Optimizer(codec.space, kernel=self._kernel_for(codec.space), seed=seed, **self._optimizer_options)
        # the model fit starts from the last proposal's (a warm refit, or a full one on the optimizer's schedule), as
        # in one optimizer's ask/tell loop, rather than from scratch at every trial
        if self._last_fit is not None and self._last_fit[0] is codec:
            optimizer._continue_fit(self._last_fit[1])
        for params, value in observations:
            try:
                optimizer.tell(codec.to_config(params), value)
            except TrialStateError:
                pass     # the configuration completed before: it keeps its first value
        best_value = optimizer.best()[1]
        if running and math.isfinite(best_value):
            for params in running:
                try:
                    optimizer.tell(codec.to_config(params), best_value)
                except (TrialStateError, InvalidConfigError):
                    pass  # already told (a completed twin, another running one), or from another search space
        try:
            suggestion = optimizer.ask()
        except SearchSpaceExhaustedError:
            return {}
        finally:
            state = optimizer._fit_state()
            if state is not None:
                self._last_fit = (codec, state)
        return codec.to_params(suggestion)

    # ---------------------------------------------------------------------------------- independent sampling
    def sample_independent(self, study, trial, param_name, param_distribution):
        """The independent sampler's value, with a warning the first time a parameter that completed trials have
        suggested comes here after the startup trials (outside the relative search space: conditional on no
        single parent, or its range changes; or inactive in the model's proposal, the objective's branches being
        other than inferred)."""
        # Decided from this trial's own relative sampling rather than from the number of completed trials
        # now: with several workers a trial that started in the startup phase may suggest its parameters
        # after the startup trials completed.
        # No warning either for a parameter no completed trial had suggested when this trial's proposal was made
        # (a branch met for the first time, perhaps by another worker's trial completing since): there was
        # nothing to model.
        if (self._warn_independent_sampling and param_name not in self._warned_params
                and trial.number not in self._startup_trials
                and param_name in self._suggested_before.get(trial.number, ())):
            self._warned_params.add(param_name)
            _logger.warning(
                "FMSampler: parameter %r (trial %d) is sampled by %s, not by the model: it is not in the "
                "relative search space (not suggested by the completed trials with one distribution, or "
                "suggested by only some of them and no single categorical or small integer parameter's values "
                "tell which), or the model's proposal has it inactive. Later trials warn no more for it; "
                "warn_independent_sampling=False silences this.",
                param_name, trial.number, type(self._independent_sampler).__name__)
        return self._independent_sampler.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial):
        self._independent_sampler.before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self._startup_trials.discard(trial.number)
        self._suggested_before.pop(trial.number, None)
        self._independent_sampler.after_trial(study, trial, state, values)


def _checked_optimizer_options(options):
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidValueError(f"optimizer_options must be a dict of fastfm.Optimizer arguments, got "
                                f"optimizer_options={options!r}", "optimizer_options", options)
    accepted = set(inspect.signature(Optimizer).parameters) - set(_RESERVED_OPTIONS)
    for key in options:
        if key in _RESERVED_OPTIONS:
            raise InvalidValueError(f"optimizer_options[{key!r}]: FMSampler sets {key!r} itself"
                                    + (" (use FMSampler(kernel=...))" if key == "kernel" else "")
                                    + (" (use FMSampler(seed=...))" if key == "seed" else ""),
                                    "optimizer_options", key)
        if key not in accepted:
            raise InvalidValueError(f"optimizer_options has unknown key {key!r}; fastfm.Optimizer takes "
                                    f"{sorted(accepted)}", "optimizer_options", key)
    return dict(options)
