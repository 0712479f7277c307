"""The surrogate of ``Optimizer``: its candidate kernels, the fit of each suggestion (warm-started, with the
restart schedule below) and, with kernel="auto", the choice between ModLap and AdditiveFM at each full refit.

A fit is described by its record (``Optimizer._fit_record``, kept in the journal with every ask): the told count,
the seed of its restarts, the warm start and the kernel it belongs to, the restarts, and the fitted values.  A
loaded optimizer rebuilds the last fit from its record, bit for bit.
"""
import collections
import copy
import functools
import math
import warnings

import numpy as np

from ..exceptions import FastFMError
from ..gp._data import resolve_y_transform
from ..gp.priors import default_hyperparameter_prior, dimension_scaled_hyperparameter_prior
from ..gp.selection import loo_difference, select_by_loo
from ..kernels import Kernel, make_kernel
from . import value_groups

__all__ = ["ModelFitWarning", "WARM_RESTARTS", "WARM_FINALISTS", "FULL_FINALISTS", "LARGE_ADDITIVE_RESTARTS",
           "LARGE_ADDITIVE_FINALISTS", "LARGE_MODLAP_RESTARTS", "LARGE_MODLAP_FINALISTS", "LARGE_MODLAP_FROM_TOLD",
           "FULL_REFIT_GROWTH",
           "DIMENSION_SCALED_MIN_DIMS", "ADDITIVE_MAX_DIMS", "KERNEL_CHOICE_STANDARD_ERRORS",
           "RIVAL_WARM_STANDARD_ERRORS", "Y_TRANSFORM_CANDIDATES", "Y_TRANSFORM_CHOICE_BELOW",
           "GROUPED_KERNEL_CACHE_SIZE"]

# The kernels of the partitions of nominal values tried last (``_Surrogate._candidate_kernel``; templates, copied
# before a fit sets their values): a full refit's greedy search builds one per candidate partition, and the next full
# refit tries the same first merges again.  Bounded, least recently used out: kept whole, an optimizer held every
# partition it had ever tried (Func3C after 100 evaluations: 124-165 kernels, most of its 0.8-0.9 MB pickle).
GROUPED_KERNEL_CACHE_SIZE = 64

_FM_KERNEL_NAMES = ("modlap", "modlap_additive", "moddif", "modnn", "fm", "prodlap", "addlap", "proddif", "adddif")
# kernels built by name with unit_diagonal=True (FMKernel and its subclasses)
_UNIT_DIAGONAL_KERNELS = ("modlap", "moddif", "fm")


class ModelFitWarning(RuntimeWarning):
    """The surrogate could not be fitted; a random point was suggested instead."""


class _Surrogate:
    """The model half of ``Optimizer`` (a mixin: it reads the optimizer's space, trials, settings and rng)."""

    @property
    def model(self):
        """The Gaussian process behind the last model-based suggestion (a fitted ``GaussianProcessRegressor``), or
        None: before the first one (the initial design) and with kernel="random".  It was fitted on the evaluations
        told before that suggestion (``model.X_train_``); ``model.predict`` takes configs (or points encoded by
        ``space.encode``) and answers in the units of the objective, and ``model.kernel_`` holds the fitted
        hyperparameters.  An optimizer loaded from a journal rebuilds it here, the same fit value for value, from
        the journal's record of it.  The optimizer's own: refitted at the next ask, never to be fitted or changed by
        the caller."""
        if self._gp is None and self._fit_record is not None and self._fit_record["n_told"] is not None:
            self._gp = self._rebuild_fit()
        return self._gp

    def _rebuild_fit(self):
        """The GP of the last fit record, refitted from it on the evaluations it saw (the first ``n_told`` told):
        what a loaded optimizer held when its journal's last ask was made (None, with a ModelFitWarning, if the
        refit fails).  The fit is deterministic given its record (its seed and warm start are in it)."""
        try:
            return self._fit(copy.deepcopy(self._fit_record))
        except (FastFMError, np.linalg.LinAlgError, ValueError) as exc:
            warnings.warn(f"fastfm: rebuilding the last GP fit failed ({type(exc).__name__}: {exc})",
                          ModelFitWarning, stacklevel=3)
            return None

    def _build_kernels(self, kernel):
        """{name: kernel} of the fits' candidates (``_fit``)."""
        if isinstance(kernel, str) and kernel.lower() == "auto":
            if _admits_additive(self.space):
                return {name: self._build_kernel(name) for name in ("modlap", "modlap_additive")}
            return {"modlap": self._build_kernel("auto")}
        return {"kernel": self._build_kernel(kernel)}

    def _build_kernel(self, kernel):
        if isinstance(kernel, Kernel):
            return kernel
        if not isinstance(kernel, str):
            raise ValueError(f"kernel must be a name or a Kernel object, got kernel={kernel!r}")
        name = kernel.lower()
        # a space with Set parameters: make_kernel multiplies the named kernel on the other
        # parameters (Matern52 when they have no discrete one) by a SetKernel per set
        if self.space.n_discrete == 0 and name in _FM_KERNEL_NAMES + ("auto",) and not self.space.set_params:
            # integers searched as rounded continuous variables (Integer(encoding="auto")) make a continuous
            # space by design, and "auto" asks for no FM kernel in particular: no warning then
            if not self.space.rounded_params and name != "auto":
                warnings.warn(f"kernel {kernel!r} needs discrete variables; using Matern52 on this continuous space",
                              RuntimeWarning, stacklevel=4)
            name = "matern52"
        name = "modlap" if name == "auto" else name
        # FM kernels with a unit diagonal: else the ends of an ordinal's path draw every suggestion (kernels.fm)
        options = {"unit_diagonal": True} if name in _UNIT_DIAGONAL_KERNELS else {}
        return make_kernel(name, self.space, backend=self.backend, **options)

    def _training_data(self, n_told=None):
        """(X, y) the model is fitted on: of the first ``n_told`` told evaluations (all when None), the successes,
        and the failures at the worst value seen when imputed."""
        trials, X = self._trials[:n_told], self._X[:n_told]
        failed = np.array([t.failed for t in trials])
        y = np.array([t.value for t in trials])
        if self.failures == "impute" and failed.any():
            y = np.where(failed, np.max(y[~failed]), y)
            return X, y
        return X[~failed], y[~failed]

    def _fit_model(self):
        """The GP on the told data: the cached fit when nothing was told since, else a new fit warm-started at
        the last one's hyperparameters (None, with a ModelFitWarning, when the fit fails)."""
        if self._gp is not None and self._fit_record["n_told"] == self.n_told:
            return self._gp
        warm = None if self._fit_record is None else [self._fit_record["params"], self._fit_record["noise"]]
        record = {"n_told": self.n_told, "seed": int(self._rng.integers(1 << 31)), "warm": warm,
                  "n_restarts": _restarts_of_fit(self.n_restarts, warm is not None, self.n_told)}
        full = _is_full_fit(warm is not None, self.n_told)
        if _admits_additive(self.space):    # journals written before: no key, no racing on replay
            record["n_finalists"] = FULL_FINALISTS if full else WARM_FINALISTS
        if full and len(self._kernels) > 1 and _is_large(self.space):
            # the full fits on a large space, AdditiveFM's and from LARGE_MODLAP_FROM_TOLD values ModLap's: fewer
            # starts (journals written before: no key, every start)
            record["additive_starts"] = {"n_restarts": min(record["n_restarts"], LARGE_ADDITIVE_RESTARTS),
                                         "n_finalists": LARGE_ADDITIVE_FINALISTS}
            if self.n_told >= LARGE_MODLAP_FROM_TOLD:
                record["modlap_starts"] = {"n_restarts": min(record["n_restarts"], LARGE_MODLAP_RESTARTS),
                                           "n_finalists": LARGE_MODLAP_FINALISTS}
        if len(self._kernels) > 1:     # the kernel the warm start belongs to (journals of one kernel: no key)
            record["warm_kernel"] = None if self._fit_record is None else self._fit_record.get("kernel", "modlap")
            # a ModLap far behind at the last full fit (RIVAL_WARM_STANDARD_ERRORS): carried by the warm fits, and
            # the next full fit refits it from there (journals written before: no key, every candidate in full)
            rival = None if self._fit_record is None else self._fit_record.get("rival")
            if rival is not None:
                record["rival_start" if full else "rival"] = rival
        if self._learns_value_groups():     # journals written before: no key, no groups on replay
            previous = {} if self._fit_record is None else self._fit_record.get("groups", {})
            record["groups"] = {} if full else previous
        if self._chooses_y_transform():    # the transforms this fit may use (journals written before: no key)
            kept = self.log_transform_y if self._fit_record is None else self._fit_record.get("transform", "auto")
            if self.n_told >= Y_TRANSFORM_CHOICE_BELOW:
                record["transforms"] = ["auto"]
            else:
                record["transforms"] = [kept] + ([t for t in Y_TRANSFORM_CANDIDATES if t != kept] if full else [])
        # the last fit's kernel object is the warm start of the fit of its own kernel, unless it holds groups of
        # values that this full refit learns anew (it then starts from the same values on the plain graphs)
        warm_kernel = None if self._gp is None or (full and self._fit_record.get("groups")) else self._gp.kernel_
        try:
            gp = self._fit(record, warm_kernel)
        except (FastFMError, np.linalg.LinAlgError, ValueError) as exc:
            warnings.warn(f"fastfm: GP fit failed ({type(exc).__name__}: {exc}); suggesting a random point",
                          ModelFitWarning, stacklevel=5)
            self.last_suggestion_info = {"source": "random (fit failed)", "error": str(exc)}
            return None
        record.update(params=_kernel_values(gp.kernel_), noise=float(gp.noise_))
        self._gp, self._fit_record = gp, record
        return gp

    def _chooses_y_transform(self):
        """Whether each full fit chooses the transform of y (log_transform_y="auto", not overridden in gp_options)."""
        return (isinstance(self.log_transform_y, str) and self.log_transform_y == "auto"
                and "log_transform_y" not in self.gp_options)

    def _learns_value_groups(self):
        """Whether the full refits learn groups of nominal values (``value_groups``): kernel="auto" on the spaces
        of fewer than ADDITIVE_MAX_DIMS columns where it considers AdditiveFM, with a nominal parameter of
        value_groups.MIN_VALUES-MAX_VALUES values.  Not on the larger spaces with a continuous variable: there the
        greedy search over 20 or more parameters was most of a full refit (Mixed10C20N at 109 told values: 3.3 of
        3.8 s, 201 likelihood evaluations), slower than GPSampler's suggestion, and without it the runs were level
        (10 paired seeds: -0.04 +- 0.04 at 30, +0.06 +- 0.21 at 60, +0.27 +- 0.20 at 200; docs/benchmarks/
        bo-efficiency.md, "AdditiveFM weighed on large spaces with a continuous variable")."""
        return (set(self._kernels) == {"modlap", "modlap_additive"}     # kernel="auto" where it considers both
                and not _is_large(self.space)
                and bool(value_groups.grouped_parameters(self.space)))

    def _candidate_kernel(self, name, groups):
        """Candidate kernel ``name``, on the graphs of ``groups`` (``value_groups.grouped_space``) when given."""
        if not groups:
            return self._kernels[name]
        key = (name, repr(groups))
        cache = self.__dict__.get("_grouped_kernels")
        if not isinstance(cache, collections.OrderedDict):
            cache = self._grouped_kernels = collections.OrderedDict(cache or {})
        if key in cache:
            cache.move_to_end(key)
        else:
            options = {"unit_diagonal": True} if name in _UNIT_DIAGONAL_KERNELS else {}
            cache[key] = make_kernel(name, value_groups.grouped_space(self.space, groups), backend=self.backend,
                                     **options)
            if len(cache) > GROUPED_KERNEL_CACHE_SIZE:
                cache.popitem(last=False)
        return cache[key]

    def _learn_value_groups(self, name, gp, record, X, y):
        """At a full refit: the chosen fit ``gp`` of kernel ``name``, or its refit on the groups of nominal values
        that ``value_groups.learn_value_groups`` finds (kept in ``record["groups"]``), run from ``gp``'s optimum as a
        warm refit is (``_fit_kernel``'s ``rival`` start)."""
        optimum = {"params": _kernel_values(gp.kernel_), "noise": gp.noise_}
        groups, grouped = value_groups.learn_value_groups(
            self.space, gp,
            lambda groups: _with_kernel_values(self._candidate_kernel(name, groups), optimum["params"]),
            lambda groups: self._fit_kernel(name, record, None, X, y, gp.log_transform_y, rival=optimum,
                                            groups=groups))
        record["groups"] = groups
        return gp if grouped is None else grouped

    def _fit(self, record, warm_kernel=None):
        """The GP of a fit record: the one candidate kernel, or with several (kernel="auto") the one fitted since
        the last full refit, and at a full refit each of them (a ModLap far behind at the last one from its own
        optimum: RIVAL_WARM_STANDARD_ERRORS, ``record["rival"]``), keeping AdditiveFM unless ModLap is ahead by
        leave-one-out predictive density (KERNEL_CHOICE_STANDARD_ERRORS; the choice goes into
        ``record["kernel"]``).  With log_transform_y="auto" the record lists the transforms of y: the kept one,
        which every kernel is fitted to, and at a full fit the other candidates (Y_TRANSFORM_CANDIDATES), each
        fitted with the chosen kernel from the kept transform's optimum as a warm refit is; the one whose fit
        predicts y itself better left out goes into ``record["transform"]``."""
        X, y = self._training_data(record["n_told"])
        full = _is_full_fit(record["warm"] is not None, record["n_told"])
        if len(self._kernels) > 1 and "warm_kernel" not in record:
            # a journal's fit from before kernel="auto" weighed AdditiveFM on this space (a large space with a
            # continuous variable, 2026-12-06): replayed as it was made, on ModLap alone
            names = ["modlap"]
        else:
            names = list(self._kernels) if full or len(self._kernels) == 1 else [record["warm_kernel"]]
        transforms = _transforms_for(record.get("transforms"), y)
        kept = None if transforms is None else transforms[0]
        rival_start = record.get("rival_start")
        gps, errors = {}, []
        for name in names:
            try:
                rival = rival_start if rival_start is not None and rival_start["kernel"] == name else None
                gps[name] = self._fit_kernel(name, record, warm_kernel, X, y, kept, rival=rival)
            except (FastFMError, np.linalg.LinAlgError, ValueError) as exc:
                errors.append(exc)
        if not gps:
            raise errors[0]
        name = (select_by_loo(gps, preferred="modlap_additive", standard_errors=KERNEL_CHOICE_STANDARD_ERRORS)
                if len(gps) > 1 else next(iter(gps)))
        if len(self._kernels) > 1:
            record["kernel"] = name
        if full and "groups" in record:
            gps[name] = self._learn_value_groups(name, gps[name], record, X, y)
        if len(gps) > 1:
            record.pop("rival", None)
            if name == "modlap_additive" and "modlap" in gps:
                ahead, standard_error = loo_difference(gps[name], gps["modlap"])
                if ahead > RIVAL_WARM_STANDARD_ERRORS * standard_error:
                    record["rival"] = {"kernel": "modlap", "params": _kernel_values(gps["modlap"].kernel_),
                                       "noise": float(gps["modlap"].noise_)}
        if transforms is None:
            return gps[name]
        fits = {kept: gps[name]}
        for transform in transforms[1:]:
            try:
                fits[transform] = self._fit_kernel(name, record, None, X, y, transform, start=gps[name])
            except (FastFMError, np.linalg.LinAlgError, ValueError):
                pass            # the kept transform's fit stands
        record["transform"] = select_by_loo(fits, y)
        return fits[record["transform"]]

    def _fit_kernel(self, name, record, warm_kernel, X, y, log_transform_y=None, start=None, rival=None, groups=None):
        """The GP with candidate kernel ``name`` fitted to (X, y) as ``record`` says (y through
        ``log_transform_y``, by default the optimizer's option), or, given ``start`` (a fitted GP) or ``rival``
        (a record's {"params", "noise"} of this kernel), from that optimum with the restarts and racing of a warm
        refit; on the graphs of ``groups`` of nominal values when given (``value_groups``; default: the record's at a
        warm refit, none at a full one)."""
        from ..gp import GaussianProcessRegressor

        # warm start: the previous fit's hyperparameters are the first restart (its kernel object when this
        # process made it, else the same values restored from the journal, bit for bit); with several
        # candidates only the previous fit's own kernel starts there
        warm = record["warm"] if record.get("warm_kernel", name) == name else None
        # a warm refit keeps the groups of values of the last full refit; a full refit fits every candidate on the
        # plain graphs and learns its groups after them (record["groups"] holds what it learned), then refits the
        # chosen kernel on them (``groups``)
        if groups is None and not _is_full_fit(record["warm"] is not None, record["n_told"]):
            groups = record.get("groups")
        kernel = self._candidate_kernel(name, groups)
        if warm is not None:
            kernel = warm_kernel if warm_kernel is not None else _with_kernel_values(kernel, warm[0])
        # no noise restart (the regressor's default is one): BO's fits were measured and tuned without it, and a
        # loaded journal refits as its run did (gp_options={"noise_restarts": k} asks for them)
        options = {"n_restarts": record.get("n_restarts", self.n_restarts), "noise_restarts": 0,
                   "log_transform_y": self.log_transform_y if log_transform_y is None else log_transform_y}
        if self.hyperparameter_prior is not None:
            options["theta_prior"] = self.hyperparameter_prior(kernel)
        if warm is not None:
            options["noise"] = warm[1]
        if record.get("n_finalists") is not None:
            options["n_finalists"] = record["n_finalists"]
        # the record's fewer starts for this kernel's full fit on a large space (None: a kernel without such a key)
        starts_key = {"modlap_additive": "additive_starts", "modlap": "modlap_starts"}.get(name)
        if starts_key is not None and starts_key in record:
            options.update(record[starts_key])
        if start is not None or rival is not None:
            kernel = start.kernel_ if start is not None else _with_kernel_values(kernel, rival["params"])
            options.update(noise=start.noise_ if start is not None else rival["noise"],
                           n_restarts=min(options["n_restarts"], WARM_RESTARTS), n_finalists=WARM_FINALISTS)
        options.update(self.gp_options)
        gp = GaussianProcessRegressor(kernel, random_state=record["seed"], **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # jitter notices: expected at times in BO
            gp.fit(X, y)
        return gp

    def _fit_state(self):
        """What the next fit of another optimizer on the same space can start from (``_continue_fit``): the last
        fit's record, its GP and the grouped kernels built so far; None before the first fit."""
        if self._fit_record is None or self._gp is None:
            return None
        return {"record": self._fit_record, "gp": self._gp, "grouped_kernels": self.__dict__.get("_grouped_kernels")}

    def _continue_fit(self, state):
        """Start this optimizer's next fit from ``state`` (another optimizer's ``_fit_state`` on the same space, told
        other data): a warm refit from its optimum, or a full refit where the schedule of ``n_told`` says so, as if
        this optimizer had made that fit itself.  Why: a caller that builds an optimizer per suggestion
        (``fastfm.integration.optuna.FMSampler``, whose running trials are told anew each time) would otherwise
        make a first fit, all restarts and candidates, at every suggestion."""
        if state is None:
            return
        # n_told None: a fit of other data, never the cached fit of this optimizer's told values
        self._fit_record = {**state["record"], "n_told": None}
        self._gp = state["gp"]
        if state["grouped_kernels"] is not None:
            self._grouped_kernels = state["grouped_kernels"]

    def _restore_fit(self, record):
        """On load: the fit the recorded run held after this ask (refitted only if the next ask would reuse it)."""
        if record is None or record == self._fit_record:
            return
        self._fit_record = record
        self._gp = None


# A warm-started refit (one more value told since the last fit) runs WARM_RESTARTS random restart next to the
# warm start and the kernel's θ; the first fit, and each refit at which the data have grown by a factor of
# FULL_REFIT_GROWTH since the last such refit, runs all n_restarts.  The previous optimum is most often still the
# optimum after one more point (Optuna's GPSampler refits from it alone); the periodic full fit lets a run leave a
# mode it has outgrown.  A geometric schedule (10, 12, 15, 19, 23, 29, ... 87, 109, 136 told values) rather than
# every 5th, and 1 warm restart rather than 2: at 100 observations a full fit took 0.30 s against 0.05 s warm on
# Func3C, and the two kept the average suggestion 1.3-1.9x GPSampler's; 40 seeds at 60 evaluations and 5 at 200
# measured them level (issue 24 §3; docs/benchmarks/suggestion.md, "Fewer restarts of a warm fit").
# On set spaces no warm restart at all (the warm start alone) saved 4-9 % of a 60-evaluation run's suggestion time
# and its means leaned worse in 9 of 10 (problem, budget) cells over 20 paired seeds: the restart stays there too
# (docs/benchmarks/suggestion.md, "Cheaper set likelihood evaluations").  Nor does a warm fit keep the last θ
# while refits gain little likelihood (< 0.25 nats; up to 3 suggestions, none after a new best): 5-16 % of a run's
# suggestion time, and Ackley5C at 60 worse by 2 s.e., the set runs worse on 7-8 of 10 seeds (same report).
WARM_RESTARTS = 1
FULL_REFIT_GROWTH = 1.25

# A warm refit races its starts (GaussianProcessRegressor(n_finalists=WARM_FINALISTS)): the warm start and the
# random restart each run fastfm.gp.fitting._SCREEN_MAXITER L-BFGS-B iterations, and only the better continues to
# convergence.  The warm start mostly converges within them; a random restart that has not overtaken it by then
# stops there instead of after its 30-50 likelihood evaluations.  On Func2C at 100-125 observations a warm
# suggestion with kernel="auto" fell from 0.119 to 0.082 s (the mean with the full refit at 109; 26 suggestions),
# at the same sample efficiency: 40 seeds at 60 evaluations, Func2C -0.160 -> -0.157 (10 of 40 above -0.15 both),
# Func3C -0.432 -> -0.454, Ackley5C 0.530 -> 0.543 (s.e. 0.011, 0.055, 0.045), and at 200 every seed of 10 at
# -0.2063 and -0.7221, Ackley5C 0.0044 (docs/benchmarks/suggestion.md, "Racing the warm refit").
# A full refit races its 12 starts too, FULL_FINALISTS of them continuing after the screen, so that it still
# compares many modes but runs only the best few to convergence: a full refit on XGBoost at 99 and 109 told values
# took 0.5-0.7 s instead of 1.1-1.7 s.  On seeds 0-39, the seeds on which this loop's defaults were chosen, the
# best values at 60 leaned worse (three measurements; 2026-12-04: Func2C +0.007 +- 0.010, Func3C +0.033 +- 0.034,
# Ackley5C +0.028 +- 0.050), and so did every other change tried on them (choosing the start by held-out density
# too, 2026-12-05): the defaults' lead on the seeds they were chosen on.  On 40 fresh seeds (1000-1039) racing was
# level (Func2C +0.003 +- 0.009, Func3C -0.033 +- 0.029, Ackley5C -0.030 +- 0.058 at 60; SVM and XGBoost on 10
# fresh seeds level too), for 8-18 % less suggestion time over a 60-evaluation run (docs/benchmarks/suggestion.md,
# "Racing the full refits, on fresh seeds").
# Only on the spaces where kernel="auto" considers AdditiveFM (_admits_additive: a discrete variable, no Set, fewer
# than ADDITIVE_MAX_DIMS columns or a continuous variable), where it was measured (on the large mixed spaces as part
# of the choice, ADDITIVE_MAX_DIMS): on MaxSATWeighted (60 binary variables, 61
# hyperparameters, 10 seeds at 100 evaluations) racing the warm refits lost -0.9801 +- 0.0021 -> -0.9744 +- 0.0017,
# and the large problems' suggestions are 2-10x faster than GPSampler's without it.  On the set problems (10 paired
# seeds at 60 evaluations, 2026-12-03) racing saved 0-14 % of a suggestion and moved the best values both ways
# beyond noise (SetChamfer +0.009 +- 0.007 at 60, SetCoverage -0.14 +- 0.15): not adopted there.
WARM_FINALISTS = 1
FULL_FINALISTS = 3

# A full fit of AdditiveFM by kernel="auto" on a space of ADDITIVE_MAX_DIMS columns or more runs this many random
# restarts (not n_restarts) and continues this many after the screen.  There AdditiveFM has P·(d + 3) more
# hyperparameters than ModLap (NAS-like, 6 continuous + 20 discrete: 227 against 47) and a likelihood evaluation
# costs 3x ModLap's (8 against 2.7 ms at 200 points, one thread): from 12 starts its full fit at 200 observations
# took 1.6-1.8 s of a 2.1-2.4 s suggestion (CPU, one thread), against issue 24's 1 s; from 3 restarts 0.7-0.8 s, at the
# same optimum in 6 of 8 random states of 120-200 points (NAS-like, Mixed10C20N; 1.4-3.7 nats lower in two).  BO runs
# level: Mixed10C20N, 20 paired seeds, -0.27 +- 0.19 at 60, +0.10 +- 0.18 at 100, +0.09 +- 0.33 at 200; Ackley53,
# 10 seeds, +0.03 +- 0.02 at 60, -0.07 +- 0.06 at 100 (docs/benchmarks/suggestion.md, "AdditiveFM's full fit on
# large spaces from fewer starts").  A start at ModLap's optimum (AdditiveFM holds ModLap as its product part)
# found nothing the default start did not.
LARGE_ADDITIVE_RESTARTS = 3
LARGE_ADDITIVE_FINALISTS = 2

# ... and ModLap's full fits there, from this many told values on, run this many random restarts with this many
# finalists.  At 200 observations on the NAS-like space ModLap's full fit from 12 starts was 0.4 s of CPU of the
# default's first suggestion; from 3 restarts the suggestion took 0.75-0.92 s (mean 0.85) against 0.86-1.19 s (mean
# 1.03) on the idle AMD EPYC, two threads (issue 24's 1 s).  Not below 100 told values, where a fit is cheap and
# runs with it leaned worse at 30 evaluations (Mixed10C20N +0.16 +- 0.16, 20 seeds; Ackley53 +0.05 +- 0.04, 10).
# From 100 on, in BO runs, AdditiveFM was kept at every full refit (30 of 30 traced, Mixed10C20N seeds 0-5 and
# Ackley53 0-3) and its fit does not depend on ModLap's: the runs were the same to the digit (Mixed10C20N 20 seeds,
# Ackley53 10, to 200 evaluations).  What it saves is the first fit on a told history of 100 values or more, and
# each full refit's ModLap where it is not refitted from its own optimum (RIVAL_WARM_STANDARD_ERRORS)
# (docs/benchmarks/suggestion.md, "ModLap's full fit on large spaces from fewer starts").
LARGE_MODLAP_RESTARTS = 3
LARGE_MODLAP_FINALISTS = 2
LARGE_MODLAP_FROM_TOLD = 100


def _restarts_of_fit(n_restarts, warm, n_told):
    """The random restarts of the fit at ``n_told`` values (``warm``: a previous fit's optimum is a start)."""
    return n_restarts if _is_full_fit(warm, n_told) else min(n_restarts, WARM_RESTARTS)


def _is_full_fit(warm, n_told):
    """Whether the fit at ``n_told`` values runs all restarts (and, with kernel="auto", fits every candidate): the
    first fit, and the full refits of the schedule."""
    return not warm or _is_full_refit(n_told)


def _is_full_refit(n_told):
    """Whether ``n_told`` is where floor(log n / log FULL_REFIT_GROWTH) steps up: a stateless geometric schedule
    (a loaded journal refits exactly as the run did)."""
    def step(n):
        return math.floor(math.log(n) / math.log(FULL_REFIT_GROWTH) + 1e-9)
    return n_told > 1 and step(n_told) > step(n_told - 1)


# hyperparameter_prior="auto" takes the dimension-scaled lengthscale prior (Hvarfner et al. 2024) on spaces of
# this many encoded columns or more: the "many variables" (20-60).  On Mixed10C20N (30 columns, seeds 0-9,
# 100 evaluations) it took the best value from 8.64 +- 0.51 to 7.16 +- 0.51 (better on 9 of 10 seeds); on the
# all-discrete large problems it is the default prior (no lengthscales); on the paper's problems (4-6 columns)
# the shift measured level within noise at 60 evaluations (30 seeds: Func2C -0.130 vs -0.130, Func3C -0.432 vs
# -0.466, Ackley5C 0.774 vs 0.723), and "auto" leaves them as they were (docs/benchmarks/bo-efficiency.md,
# "Many variables").  Spaces with Set parameters keep the default prior: the shift was not measured there.  The
# dimension-scaled prior also pools the FM smoothings log β towards their mean (gp.priors.SMOOTHING_POOL_STD).
DIMENSION_SCALED_MIN_DIMS = 20


# kernel="auto" fits AdditiveFM next to ModLap, and each full refit keeps one by their leave-one-out predictive
# density (the margin below), on spaces with a discrete variable, no Set and fewer encoded columns than this.
# Why: with 10-60 observations the product kernel cannot carry what one nominal value showed in one combination to
# the others, and AdditiveFM's one-variable terms can (its module docstring), but on objectives without main
# effects its P·(d + 3) more hyperparameters cost (LABS, IsingSparsification) and at 10-20 points they overfit
# (Func3C at 30).  Choosing by held-out prediction took both: on the paper's problems at 60 evaluations (40 seeds)
# Ackley5C 0.796 -> 0.615, Func2C -0.137 -> -0.165, Func3C level (-0.454 -> -0.507), and Func3C at 30 kept ModLap's
# value where AdditiveFM alone lost it (docs/benchmarks/bo-efficiency.md, "Choosing the kernel per run, and a
# stratified initial design"; since measured otherwise, below).  The price: where AdditiveFM is kept a suggestion
# costs about twice ModLap's (level with Optuna's GPSampler at 50-100 observations since issue 24 §3's changes,
# 0.87-1.5x its time with greenlet; docs/benchmarks/suggestion.md, "Against GPSampler with greenlet, and set
# spaces").  From 20 columns on, on spaces without a continuous variable, ModLap is kept alone: there the choice kept
# AdditiveFM at most full refits and lost LABS (+7.2 +- 5.0 at 200, 10 seeds; the held-out density is ahead near
# the data even without main effects), and a term per variable is 2-6x ModLap's time per suggestion.  With a
# continuous variable the choice stays at any size: the product kernel multiplies the continuous part's kernel by
# every discrete variable's, so what a run learned of the continuous shape fades with each discrete variable two
# points differ in, and AdditiveFM's terms (each on the continuous variables and one discrete variable) share it.
# Measured, 10 paired seeds: Mixed10C20N (10 continuous + 20 nominal) 9.57 -> 8.74 at 60 and 4.03 -> 2.66 at 200
# (-1.37 +- 0.49), Ackley53 (3 continuous + 50 binary, CASMOPOLITAN's) 1.72 -> 1.03 at 60 (better on 10 of 10)
# (docs/benchmarks/bo-efficiency.md, "AdditiveFM weighed on large spaces with a continuous variable").
ADDITIVE_MAX_DIMS = 20

# ... and keeps AdditiveFM unless ModLap's leave-one-out density is ahead by more than this many standard errors of
# the paired difference (gp.selection.select_by_loo's ``preferred``; Vehtari, Gelman & Gabry 2017).  AdditiveFM
# contains ModLap, and before 30 told values the plain choice was a coin toss (Func3C: ModLap ahead in 35 of 48
# refits by 0.02-2.8 nats, AdditiveFM ahead by up to 31 from 36 on) whose ModLap fits cost the search: with the
# margin, Func3C -0.140 -> -0.269 at 30 and -0.428 -> -0.609 at 60, Func2C -0.188 -> -0.199 at 60 (40 paired seeds),
# Ackley5C level at 60 and 0.94 -> 1.10 at 30 (1.9 s.e., 30 seeds) (docs/benchmarks/bo-efficiency.md, "Keeping
# AdditiveFM unless ModLap is clearly ahead").  0 is the plain choice, the default before 2026-12-03.
KERNEL_CHOICE_STANDARD_ERRORS = 2.0

# ... and where a full refit keeps AdditiveFM with ModLap behind by more than this many standard errors, the next
# full refit fits ModLap from its own optimum as a warm refit does (WARM_RESTARTS, raced), not from 11 starts: its
# value there is only whether it has come back within reach.  AdditiveFM holds ModLap as its product part, and on
# the paper's and the HPO problems ModLap falls behind for good once AdditiveFM's terms have the data (SVM, three
# runs of 100 evaluations: ahead at 10-29 told values, from 36 on behind by 1.2-5.4 standard errors, 3-41 nats,
# more with every refit).  ModLap's full fit was a third of a full refit (SVM at 109 told values: 0.43 of 1.40 s,
# one thread), and every fit kept the same kernel (docs/benchmarks/suggestion.md, "A far-behind ModLap refitted
# warm").
RIVAL_WARM_STANDARD_ERRORS = 3.0


# log_transform_y="auto" chooses at the first fit and at the full refits (below Y_TRANSFORM_CHOICE_BELOW told
# values) between y through the transform the regressor's "auto" resolves to ("shift", the log of y above its
# minimum, or on extreme upper tails the copula) and y as it is: the candidate kernels are fitted to the transform
# kept so far, and the chosen kernel once more to the other transform, started at that fit's optimum with a warm
# refit's restarts (so a full refit costs one warm refit more); the leave-one-out density of y itself (the
# transform's Jacobian included, as in a warped GP's marginal likelihood, Snelson et al. 2004) picks one, which the
# warm refits until the next full refit keep.  Why: the log was chosen on objectives with heavy upper tails (Func2C's
# Rosenbrock and Beale corners, where it resolves the differences near the minimum), but where a few good values lie
# far below the bulk it stretches them further, and the model and the search are worse than on y itself: at 30
# evaluations (20 seeds, paired) Hartmann6 -2.69 -> -3.04 (18 of 20 seeds better), Ackley5C 1.37 -> 0.97 (0.68 ->
# 0.45 at 60); the paper's other problems, the large and the set problems level (docs/benchmarks/bo-efficiency.md,
# "Choosing the transform of y at each full fit").  The copula has no density in y (a step function of the ranks):
# where "auto" resolves to it, it is the one transform.
Y_TRANSFORM_CANDIDATES = ("auto", False)
# From this many told values on every fit takes "auto" (the shift log): by then most of a run's points sit near its
# incumbent, and resolving their small differences is what the log does and what the leave-one-out density of all
# the points does not weigh.  Choosing on to the end took Ackley5C at 200 evaluations from 0.0046 to 0.0144
# (10 seeds; three runs ended 0.011-0.090 above the optimum, modelling y as it is at every fit, their best values
# unchanged over the last 50-100 evaluations); choosing below 100 only, 0.0035, the runs up to 100 unchanged.
Y_TRANSFORM_CHOICE_BELOW = 100


def _transforms_for(transforms, y):
    """The transforms of y a fit compares: the record's list (None: the optimizer's option alone), without the
    identity where "auto" resolves to the copula on these y, and "auto" for a kept identity there."""
    if transforms is None:
        return None
    if resolve_y_transform(np.asarray(y, dtype=float), "auto") == "copula":
        return ["auto"]
    return list(transforms)


def _is_large(space):
    """Whether ``space`` has ADDITIVE_MAX_DIMS columns or more, where kernel="auto" considers AdditiveFM only with a
    continuous variable (``_admits_additive``), fits both kernels from fewer starts (LARGE_ADDITIVE_RESTARTS,
    LARGE_MODLAP_RESTARTS) and learns no groups of nominal values."""
    return space.n_dims >= ADDITIVE_MAX_DIMS


def _admits_additive(space):
    """Whether kernel="auto" considers AdditiveFM on ``space`` (ADDITIVE_MAX_DIMS; any size with a continuous
    variable)."""
    return space.n_discrete > 0 and not space.set_params and (not _is_large(space) or space.n_continuous > 0)


def _hyperparameter_prior(value, space):
    """The callable ``kernel -> prior`` of ``Optimizer(hyperparameter_prior=value)``, or None."""
    if isinstance(value, str) and value == "auto":
        value = "dimension_scaled" if space.n_dims >= DIMENSION_SCALED_MIN_DIMS and not space.set_params else "default"
    if isinstance(value, str) and value == "default":
        return default_hyperparameter_prior
    if isinstance(value, str) and value == "dimension_scaled":
        return functools.partial(dimension_scaled_hyperparameter_prior, n_dims=space.n_dims)
    if value is not None and not callable(value):
        raise ValueError("hyperparameter_prior must be 'auto', 'default', 'dimension_scaled', None or a callable "
                         f"kernel -> prior, got hyperparameter_prior={value!r}")
    return value


def _kernel_values(kernel):
    """The kernel's hyperparameter values by name, exactly (not their logs: exp(log v) is not always v)."""
    return {name: np.asarray(value, dtype=float).tolist() for name, value in kernel.get_params().items()}


def _with_kernel_values(kernel, values):
    """A copy of ``kernel`` holding ``values`` (``_kernel_values`` of a kernel of the same structure)."""
    import copy
    clone = copy.deepcopy(kernel)
    for name, value in values.items():
        owner, path = clone, name.split("__")
        for part in path[:-1]:
            owner = getattr(owner, part)
        setattr(owner, path[-1], np.array(value, dtype=float) if isinstance(value, list) else float(value))
    return clone
