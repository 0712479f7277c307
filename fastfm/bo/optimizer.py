"""The ask/tell ``Optimizer``: trials with ids, pending asks conditioned on by fantasies, an optional journal.

The BO loop of SPEC §5 (an exact GP on an FM kernel, hyperparameters by marginal likelihood with 10
restarts, expected improvement in log form, the mixed acquisition optimiser) made asynchronous:

* every ask is a pending trial with an id until it is told or abandoned; the next ask conditions the GP on
  the pending points with fantasy values (``gp.fantasy``: the Kriging believer by default, a block update
  of the Cholesky factor, not a refit), so ``ask(n=4)`` and four workers asking while the others evaluate
  get distinct, spread-out points;
* the GP is refitted only when a new value has been told: asks between two tells share one fit;
* failed evaluations are modelled as the worst value seen (``failures="impute"``) so that suggestions
  move away from where the objective fails;
* with ``storage`` every ask, tell and abandon is a fsynced record of a journal (``journal.Journal``), from
  which ``Optimizer.load`` restores the optimiser exactly; processes sharing a journal see each other's
  trials and pending asks.
"""
import collections
import contextlib
import dataclasses
import json
import math
import numbers
import os
import threading
import time
import warnings

import numpy as np

from .._parallel import single_threaded_blas
from .._version import __version__
from ..acquisition import acquisition_function, upper_confidence_bound_and_grad
from ..exceptions import InvalidConfigError, InvalidValueError, StorageError, TrialStateError
from ..gp import fantasy
from ..gp._data import is_y_transform
from ..optim import MixedAcquisitionOptimizer, SearchSpaceExhaustedError
from ..optim import trust_region as _tr
from ..space import Space
from .journal import JOURNAL_FORMAT, JOURNAL_VERSION, Journal, decode_object, encode_object, worker_identity
from .surrogate import ModelFitWarning, _hyperparameter_prior, _Surrogate
from .trials import PendingTrial, Suggestion, Trial, trials_dataframe
from .untried import DEFAULT_PATIENCE, patience_setting, untried_value_point

__all__ = ["Optimizer", "ModelFitWarning"]

_FAILURE_MODES = ("impute", "ignore")
_INITIAL_DESIGNS = ("stratified", "random")
# The exploration margin ξ of (log-)EI, in standardised units of the modelled y: improvement counts below
# best − ξ only.  With ξ = 0, once the incumbent's continuous part sits at a cusp (Ackley5C's |u|), each
# evaluation there still improves by ~1e-4, the posterior std of such a move (~1e-3) keeps its EI level with
# trying a nominal value never evaluated, and a run spent up to 29 of 200 evaluations on them; 3 of 20 Ackley5C
# runs ended with one h_i one step off the optimum, a value never tried in 200 evaluations.  ξ = 0.001 cuts such
# moves' log-EI by ~1.6 and leaves moves with a std ≥ 0.01 as they were (docs/benchmarks/bo-efficiency.md,
# "The exploration margin of EI"); 0.01, the default of scikit-optimize and GPyOpt, fixed Ackley5C too but left
# 3 of 16 Func2C runs at 60 evaluations in a wrong combination.
DEFAULT_XI = 0.001

# n_init="auto" (``initial_design_size``): DEFAULT_N_INIT initial points, and on a space with a nominal parameter of
# more values than that, one per value of the largest such parameter, up to MAX_AUTO_N_INIT, so that the stratified
# design (every state of a discrete parameter equally often) tries each value once.  Why: a nominal parameter's
# kernel (a complete graph) makes every two of its values equally alike, so the model predicts an untried value as
# the average of the tried ones, and with 10 points a parameter of 17 values starts with 7 of them untried.  On
# Ackley5C (five nominal parameters of 17 values) 17 initial points took the best value at 60 evaluations from
# 0.560 to 0.295 (paired over 80 fresh seeds, -0.265 +- 0.052, better on 61; 15 points: -0.164 +- 0.053) and at 30
# from 1.169 to 1.015 (-0.15 +- 0.09); 15 points on Func2C and Func3C (nominal parameters of 3-5 values) were level
# at 60 and worse at 30, and the spaces without a nominal parameter of more than 10 values keep 10
# (docs/benchmarks/bo-efficiency.md, "One initial point per value of a many-valued nominal parameter").
DEFAULT_N_INIT = 10
MAX_AUTO_N_INIT = 20


def _jsonable_setting(value):
    """A setting as JSON, or as a pickled object where JSON has no form for it (a kernel object, a callable)."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return {"__pickle__": encode_object(value)}


def _setting_from_json(value):
    if isinstance(value, dict) and set(value) == {"__pickle__"}:
        return decode_object(value["__pickle__"])
    return value


class _TrialRecords:
    """The optimiser's trials and pending asks, changed only by applying records (ask, tell, abandon) — through
    the journal when there is one, so that a live run, a loaded one and processes sharing a journal all build
    the same state the same way."""

    @property
    def trials(self):
        """Every told evaluation, in order (copies: editing them leaves the history unchanged)."""
        return [dataclasses.replace(t, config=_config_copy(t.config)) for t in self._trials]

    @property
    def pending(self):
        """The asks not yet told or abandoned, as ``Suggestion`` dicts (each with its ``trial_id``)."""
        return [Suggestion(_config_copy(p.config), p.trial_id) for p in self._pending.values()]

    @property
    def n_told(self):
        """How many evaluations were told, failed ones included."""
        return len(self._trials)

    @property
    def storage(self):
        """The journal's path, or None."""
        return None if self._journal is None else self._journal.path

    def to_dataframe(self):
        """The told trials as a pandas DataFrame, one row each, as ``OptimizeResult.to_dataframe`` gives them
        (``trial_id``, the parameters, ``value``, ``failed``, ``error``, ``suggest_time``, ``eval_time``)."""
        return trials_dataframe(self._trials, self.space.names, "Optimizer.to_dataframe")

    def best(self):
        """(config, value) of the best successful evaluation, or (None, nan)."""
        ok = [t for t in self._trials if not t.failed]
        if not ok:
            return None, float("nan")
        best = min(ok, key=lambda t: t.value)
        return _config_copy(best.config), best.value

    def _resolve(self, x):
        """(trial id, encoded point) of what ``tell`` was given; typed errors for bad or repeated tells."""
        if isinstance(x, numbers.Integral) and not isinstance(x, bool):
            trial_id = int(x)
            if trial_id in self._pending:
                return trial_id, self._pending[trial_id].x
            if trial_id in self._told:
                raise TrialStateError(f"trial {trial_id} was already told (value {self._told[trial_id].value!r}); "
                                      "each trial is told once", trial_id)
            raise TrialStateError(f"unknown trial id {trial_id}: it was never asked (or was abandoned)", trial_id)
        if not isinstance(x, dict):
            raise InvalidConfigError(f"x must be a config dict or a trial id, got x={x!r}", "x", x)
        encoded = self.space.encode(x)            # typed errors; nothing recorded yet
        trial_id = getattr(x, "trial_id", None)
        if trial_id is not None and trial_id in self._told:
            raise TrialStateError(f"trial {trial_id} was already told (value {self._told[trial_id].value!r}); "
                                  "each trial is told once", trial_id)
        if trial_id is not None and trial_id in self._pending:
            if not np.allclose(self._pending[trial_id].x, encoded, rtol=0, atol=1e-12):
                raise TrialStateError(f"the config told as trial {trial_id} is not the one asked: {dict(x)!r}",
                                      trial_id)
            return trial_id, encoded
        pending_id = self._pending_id_of(encoded)
        if pending_id is not None:
            return pending_id, encoded
        same = np.flatnonzero(np.all(np.abs(self._X - encoded) <= 1e-12, axis=1))
        if same.size:
            t = self._trials[int(same[0])]
            raise TrialStateError(f"this config was already told as trial {t.trial_id} "
                                  f"(value {t.value!r}): {dict(x)!r}", t.trial_id)
        return self._next_id, encoded

    def _pending_id_of(self, encoded):
        for trial_id, p in self._pending.items():
            if np.allclose(p.x, encoded, rtol=0, atol=1e-12):
                return trial_id
        return None

    @contextlib.contextmanager
    def _locked(self):
        """Ask, tell and abandon of several threads take turns (this process's lock), and of several processes
        sharing a journal (its file lock)."""
        with self._thread_lock, (self._journal.locked() if self._journal is not None else contextlib.nullcontext()):
            yield

    def __getstate__(self):                  # a lock does not pickle; a copy gets its own
        state = self.__dict__.copy()
        del state["_thread_lock"]
        state.pop("_grouped_kernels", None)  # kernel templates a copy rebuilds on demand (_candidate_kernel)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._thread_lock = threading.RLock()

    def _commit(self, record):
        """Apply one record, through the journal when there is one (written, fsynced, then read back with
        whatever other processes appended before it)."""
        if self._journal is None:
            self._apply(record)
        else:
            self._journal.append(record)
            self._sync()

    def _sync(self):
        """Apply what was appended to the journal since the last sync (by this process or others).  Records read
        wait in ``_unapplied`` until applied, so that an interrupt between the read and the apply loses none."""
        if self._journal is None:
            return
        self._unapplied.extend(self._journal.read_new())
        while self._unapplied:
            self._apply(self._unapplied[0])
            self._unapplied.popleft()

    def _apply(self, record, replay=False):
        kind = record["type"]
        if kind == "header":
            return
        trial_id = int(record["id"])
        if kind == "ask":
            x = np.asarray(record["x"], dtype=np.float64)
            self._pending[trial_id] = PendingTrial(trial_id, self.space.decode(x), x, record["suggest_time"],
                                                   record.get("worker"))
            self._next_id = max(self._next_id, trial_id + 1)
            if replay:
                self._rng.bit_generator.state = record["rng"]
                self._restore_fit(record.get("fit"))
                self._design_seed = record.get("design_seed", self._design_seed)
        elif kind == "tell":
            if trial_id in self._told:           # a repeated record (two writers racing): keep the first
                return
            pending = self._pending.pop(trial_id, None)
            x = pending.x if pending is not None else np.asarray(record["x"], dtype=np.float64)
            config = pending.config if pending is not None else self.space.decode(x)
            failed = bool(record["failed"])
            trial = Trial(config, float("nan") if failed else float(record["value"]), failed,
                          _nan_if_none(record.get("eval_time")),
                          pending.suggest_time if pending is not None else float("nan"), record.get("error"), trial_id)
            self._trials.append(trial)
            self._told[trial_id] = trial
            self._X = np.vstack([self._X, x[None, :]])
            self._next_id = max(self._next_id, trial_id + 1)
        elif kind == "abandon":
            self._pending.pop(trial_id, None)
        else:
            raise StorageError(f"unknown journal record type {kind!r}")

    def _header(self):
        return {"type": "header", "format": JOURNAL_FORMAT, "version": JOURNAL_VERSION, "fastfm": __version__,
                "space": encode_object(self.space), "space_repr": repr(self.space),
                "settings": {k: _jsonable_setting(v) for k, v in self._settings.items()}, "time": time.time()}


class Optimizer(_Surrogate, _TrialRecords):
    """Ask/tell Bayesian optimiser on a mixed ``Space`` (minimisation).

    Parameters
    ----------
    space : Space
    kernel : str or Kernel, default "auto"
        A kernel name ("modlap", "moddif", "prodlap", "hierarchical", ... see
        ``kernels.make_kernel``), a kernel object, or "random" for random search.  On
        a space without discrete variables the FM names fall back to Matern52 (FM
        needs a graph).  On a conditional space (SPEC §3) "hierarchical" is the
        kernel made for it; the FM kernels work there too.  "auto": ModLap, and on spaces with a
        discrete variable and no Set, of fewer than ADDITIVE_MAX_DIMS columns or with a continuous variable, also
        ``AdditiveFM`` ("modlap_additive"); each full refit keeps AdditiveFM unless ModLap predicts
        the told values left out better by more than KERNEL_CHOICE_STANDARD_ERRORS standard errors
        (``fastfm.gp.selection``), and ``last_suggestion_info["kernel"]`` names the one kept.  There
        each full refit also groups the values of a nominal parameter (3-8 values, a space of fewer than
        ADDITIVE_MAX_DIMS columns without conditions) that the data say act alike
        (``fastfm.bo.value_groups``), and the model treats a group's values as near-equal until the next
        full refit (``last_suggestion_info["value_groups"]``).
    n_init : int or "auto", default "auto"
        Initial points (asked, pending ones included) before the model is used.  "auto": DEFAULT_N_INIT (10), or
        on a space with a nominal parameter of more values, one point per value of the largest (at most
        MAX_AUTO_N_INIT, 20), so that the stratified design tries each value once (``initial_design_size``); the
        number is in ``n_init`` and the journal.
    initial_design : {"stratified", "random"}, default "stratified"
        Where the initial points come from: "stratified" is one ``Space.sample_stratified_encoded`` design of
        ``n_init`` points (a Latin hypercube on the continuous parameters, the states of each discrete one
        equally often), "random" independent uniform draws.  Random search (kernel="random") is always random.
    seed : int or None
        The same seed gives the same run.
    acquisition : {"logei", "ei", "ucb"}
    xi : float, default DEFAULT_XI (0.001)
        Exploration margin of "logei" and "ei", in standardised units of the modelled y: improvement counts
        below best − xi only, so that moves predicted to gain less are not chased (ignored by "ucb").
    untried_patience : int or None, default DEFAULT_PATIENCE (5)
        After this many told values since the initial design without a clear new best or a newly tried value, the
        next model suggestion is the incumbent with one nominal parameter set to a value no point has used yet
        (the GP predicts such a value as the average of the others, so expected improvement alone may never try
        it; ``fastfm.bo.untried``); ``last_suggestion_info["untried_value"]`` marks it.  None: never.
    n_restarts : int, default 10
        Random restarts of the marginal-likelihood maximisation at the first fit and the full refits (where the
        told values have grown by a quarter); a warm refit in between runs WARM_RESTARTS, raced against the
        warm start, and with kernel="auto" on a space of 20 columns or more AdditiveFM's full fits run at most
        LARGE_ADDITIVE_RESTARTS, and ModLap's from 100 told values LARGE_MODLAP_RESTARTS (``fastfm.bo.surrogate``).
    log_transform_y : {"auto", "shift", "copula", False, True}, default "auto"
        The transform of y the GP models (``GaussianProcessRegressor``): "shift" is log(1 + (y − min y)/s),
        s = min(std y, median y − min y), at least a tenth of the std of y clipped at its 90th percentile (it tames
        heavy upper tails, an upper tail cannot blur the differences among the better half of the values, and a
        plateau the search re-evaluates cannot collapse it; ``fastfm.gp._data.shift_scale``); "copula" the normal
        scores of y's ranks, which a failure penalty (1e10 among values near 1) or a heavy tail cannot squash;
        "auto" is "copula" once the largest y lies over 1000 interquartile ranges above the median (docs/benchmarks/
        robustness.md, "Objective values"), else, at the first fit and each full refit below 100 told values,
        "shift" or y as is, whichever predicts the told y better left out (its density in y's own units; the warm
        refits in between keep it; ``last_suggestion_info["y_transform"]`` names it;
        ``fastfm.bo.surrogate.Y_TRANSFORM_CANDIDATES``, ``Y_TRANSFORM_CHOICE_BELOW``), and "shift" from 100 told
        values on; True is log(y) (y > 0); False models y as is.
    hyperparameter_prior : "auto", "default", "dimension_scaled", None or callable
        "default": weak Gaussian priors on the log hyperparameters and, on a kernel of four or more continuous
        dimensions, a left tail −0.1/ℓ² on its continuous lengthscales ℓ (``default_hyperparameter_prior``,
        ``LENGTHSCALE_TAIL``, ``LENGTHSCALE_TAIL_MIN_DIMS``); "dimension_scaled": their lengthscale means raised
        by log(D)/2, D = ``space.n_dims`` (Hvarfner et al. 2024), and the FM kernel's per-variable smoothings
        log β pooled towards their common mean (``dimension_scaled_hyperparameter_prior``,
        ``PooledGaussianLogPrior``); "auto" (the default):
        "dimension_scaled" from DIMENSION_SCALED_MIN_DIMS columns on (no Set), else "default"; None: plain
        marginal likelihood; a callable ``kernel -> prior`` (see ``GaussianLogPrior``; the priors without the tail:
        ``functools.partial(default_hyperparameter_prior, lengthscale_tail=0)``).
    gp_options : dict, optional
        Passed to ``GaussianProcessRegressor`` (noise_bounds, ...); overrides the above.
    acq_options : dict, optional
        Passed to ``MixedAcquisitionOptimizer`` (n_random, n_spray, n_starts, ...).
    backend : {"auto", "numpy", "cpp", "cuda"}
        Kernel backend when ``kernel`` is a name.
    pending : {"believer", "liar_min"}, default "believer"
        Fantasy values of pending asks: the GP's mean there (Kriging believer) or the best value seen
        (constant liar); see ``fastfm.gp.fantasy`` and docs/benchmarks/parallel.md for the comparison.
    failures : {"impute", "ignore"}, default "impute"
        "impute": failed evaluations enter the model with the worst successful value, so that the
        search moves away from regions where the objective fails; "ignore": they are only excluded (for
        failures not tied to a region: a crashed node, a flaky network).  On Func3C failing in a quarter of
        its box, "ignore" spent 22 of 30 model points there, "impute" 1.2 (docs/benchmarks/parallel.md).
    storage : str or os.PathLike, optional
        A journal file (JSON lines) that records every ask, tell and abandon as it happens, fsynced;
        it must not exist yet (``Optimizer.load`` continues an existing one).
    trust_region : None, True, "casmopolitan", TrustRegion or dict, default None
        Maximise the acquisition in a CASMOPOLITAN trust region (Wan et al. 2021; ``fastfm.optim.trust_region``):
        a Hamming ball and a box around the best recent point, grown, shrunk and restarted as the told values
        go.  True: the paper code's settings (``TrustRegion()``); a dict or ``TrustRegion`` sets them.

    Examples
    --------
    >>> opt = Optimizer(space, kernel="modlap", n_init=10, seed=0)   # doctest: +SKIP
    >>> x = opt.ask(); opt.tell(x, f(x))                              # doctest: +SKIP
    >>> xs = opt.ask(n=4)                                             # doctest: +SKIP
    """

    def __init__(self, space, kernel="auto", n_init="auto", seed=None, acquisition="logei", n_restarts=10,
                 log_transform_y="auto", acq_options=None, backend="auto", gp_options=None,
                 hyperparameter_prior="auto", pending="believer", failures="impute", storage=None,
                 trust_region=None, initial_design="stratified", xi=DEFAULT_XI, untried_patience=DEFAULT_PATIENCE):
        if isinstance(space, Space):
            n_init = initial_design_size(space, n_init)     # a journal's header keeps the number
        rng = _checked_arguments(space, n_init, n_restarts, seed, acquisition, xi, log_transform_y, pending, failures,
                                 initial_design)
        self._trust_region = _tr.trust_region_setting(trust_region)
        self._settings = {
            "kernel": kernel, "n_init": int(n_init), "seed": seed, "acquisition": acquisition,
            "n_restarts": int(n_restarts), "log_transform_y": log_transform_y, "acq_options": acq_options,
            "backend": backend, "gp_options": gp_options, "hyperparameter_prior": hyperparameter_prior,
            "pending": pending, "failures": failures, **_trust_region_settings(self._trust_region)}
        if initial_design != "stratified":     # journals of the default keep the header they had
            self._settings["initial_design"] = initial_design
        if xi != DEFAULT_XI:
            self._settings["xi"] = float(xi)
        self.untried_patience = patience_setting(untried_patience)
        if self.untried_patience != DEFAULT_PATIENCE:
            self._settings["untried_patience"] = self.untried_patience
        self.space = space
        self.n_init = int(n_init)
        self.seed = seed
        self.acquisition = acquisition
        self.xi = float(xi)
        self.n_restarts = int(n_restarts)
        self.log_transform_y = log_transform_y
        self.backend = backend
        self.gp_options = dict(gp_options or {})
        self.pending_strategy = pending
        self.failures = failures
        self.initial_design = initial_design
        self._design_seed = None                   # drawn at the first design point; kept in the journal
        self.hyperparameter_prior = _hyperparameter_prior(hyperparameter_prior, space)
        self._rng = rng
        self._random_search = isinstance(kernel, str) and kernel.lower() == "random"
        # the candidate kernels of every fit, by name (the first is ``_kernel``): one, or with kernel="auto" on a
        # space that admits it ModLap and AdditiveFM, between which each full refit chooses (ADDITIVE_MAX_DIMS)
        self._kernels = {} if self._random_search else self._build_kernels(kernel)
        self._kernel = next(iter(self._kernels.values()), None)
        self._acq_optimizer = MixedAcquisitionOptimizer(space, **(acq_options or {}))
        self._trials = []
        self._told = {}                            # trial id -> Trial
        self._X = np.zeros((0, space.n_dims))      # encoded, every told point (failed too)
        self._pending = {}                         # trial id -> PendingTrial, asked, not told or abandoned
        self._next_id = 0
        self._gp = None                            # the last fit, and what it was fitted from (_fit_record)
        self._fit_record = None
        self._batch_candidates = None
        self.last_suggestion_info = {}
        self._journal = None
        self._thread_lock = threading.RLock()
        self._unapplied = collections.deque()
        if storage is not None:
            journal = Journal(storage)
            with journal.locked():
                if journal.exists():
                    raise StorageError(f"storage={os.fspath(storage)!r} already holds a journal; continue it with "
                                       "Optimizer.load(path) (or minimize(..., storage=path)), or choose a new file")
                journal.append(self._header())
                journal.read_new()
            self._journal = journal

    # ---------------------------------------------------------------- ask/tell
    def ask(self, n=None):
        """Suggest configs to evaluate; each is remembered as a pending trial until told or abandoned.

        Parameters
        ----------
        n : int or None
            None: one config (a dict).  An int: a list of ``n`` distinct configs chosen jointly (each
            conditioned on the ones before it and on every other pending ask); fewer when a finite space has
            fewer points left that are neither evaluated nor pending.

        Returns
        -------
        Suggestion (a dict with a ``trial_id`` attribute), or a list of them.

        Raises
        ------
        SearchSpaceExhaustedError
            Every point of a finite space is evaluated or pending.
        """
        if n is None:
            return self._ask(1, partial=False)[0]
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
            raise InvalidValueError(f"n must be a positive integer or None, got n={n!r}", "n", n)
        return self._ask(int(n), partial=True)

    def _ask(self, n, partial, total_limit=None):
        return list(self._asks(n, partial, total_limit))

    def _asks(self, n, partial, total_limit=None):
        """Up to ``n`` asks, each yielded as soon as it is recorded (``minimize`` starts its evaluation while the
        next point of the batch is chosen); with ``total_limit``, no more than make told + pending reach it
        (decided under the journal's lock, so that processes sharing a journal stop at ``n_iter`` together).
        The optimizer's lock (and the journal's) is held until the generator finishes: consume it at once."""
        # The suggestion works on small matrices (n_obs × n_obs, batches of candidates): one
        # BLAS thread is far faster there than several spinning ones (see pyproject.toml).  The limit is set
        # inside the lock: the BLAS pool is process-wide, and threads asking at once each saved the limit the
        # other had set, so the last to leave put back one thread for good.
        with self._locked(), single_threaded_blas():
            self._batch_candidates = None     # the 2nd, 3rd, ... model point of this call start from the previous one's
            self._sync()
            if total_limit is not None:
                n = min(n, total_limit - self.n_told - len(self._pending))
            for i in range(n):
                start = time.perf_counter()
                try:
                    x = self._suggest()
                except SearchSpaceExhaustedError:
                    if partial and i:
                        return
                    raise
                trial_id = self._next_id
                config = self.space.decode(x)
                x = self.space.encode(config)     # the point of the config evaluated (decode rounds, log-scales)
                self._commit({"type": "ask", "id": trial_id, "x": x.tolist(), "config": _jsonable_config(config),
                              "suggest_time": time.perf_counter() - start,
                              "source": self.last_suggestion_info.get("source"), "worker": worker_identity(),
                              "time": time.time(), "rng": self._rng.bit_generator.state, "fit": self._fit_record,
                              **({} if self._design_seed is None else {"design_seed": self._design_seed})})
                yield Suggestion(_config_copy(self._pending[trial_id].config), trial_id)

    def tell(self, x, y, *, error=None, eval_time=float("nan")):
        """Record the value ``y`` of a trial.

        Parameters
        ----------
        x : dict or int
            What ``ask`` returned (its trial id is read), a trial id, or any config of the space (matched to
            a pending ask with the same point, else recorded as a new trial).
        y : float or None
            NaN, ±inf or None marks a failed evaluation: it is kept in the history and never suggested
            again, and (``failures="impute"``) modelled as the worst value seen.
        error : str or BaseException, optional
            Why the evaluation failed (kept in the trial and the journal; an exception as "TypeName: message").
        eval_time : float, optional
            Seconds the evaluation took.

        Raises
        ------
        TrialStateError
            The trial was already told (or the config already evaluated), or the id is unknown.
        InvalidConfigError
            A config outside the space (unknown/missing parameter, bad value or type); nothing is recorded.
        """
        if isinstance(y, np.ndarray) and y.ndim == 0:     # a 0-d array is a number
            y = y[()]
        failed = y is None
        if not failed:
            if isinstance(y, (bool, np.bool_)) or not isinstance(y, (numbers.Real, np.floating, np.integer)):
                raise InvalidValueError(f"y must be a real number (or NaN/None for a failed evaluation), got y={y!r}",
                                        "y", y)
            y = float(y)
            failed = not math.isfinite(y)
        error, eval_time = _checked_failure_fields(error, eval_time)
        with self._locked():
            self._sync()
            trial_id, x_encoded = self._resolve(x)
            record = {"type": "tell", "id": trial_id, "value": None if failed else y, "failed": bool(failed),
                      "error": error, "eval_time": _finite_or_none(eval_time), "time": time.time()}
            if trial_id not in self._pending:
                record["x"] = x_encoded.tolist()
            self._commit(record)
        told = self._told[trial_id]
        return dataclasses.replace(told, config=_config_copy(told.config))

    def abandon(self, x, reason=None):
        """Release a pending ask without a value (its worker crashed or was stopped).

        The point may be suggested again; telling its config later records it as a new trial (its id is released).

        Raises
        ------
        TrialStateError
            No pending ask has this id or config.
        """
        with self._locked():
            self._sync()
            trial_id = x if isinstance(x, numbers.Integral) else getattr(x, "trial_id", None)
            if trial_id is None and isinstance(x, dict):
                trial_id = self._pending_id_of(self.space.encode(x))
            if trial_id not in self._pending:
                state = "told" if trial_id in self._told else "unknown"
                raise TrialStateError(f"cannot abandon trial {trial_id!r}: it is not pending ({state})", trial_id)
            self._commit({"type": "abandon", "id": int(trial_id), "reason": reason, "time": time.time()})

    # ----------------------------------------------------------- the journal

    @classmethod
    def load(cls, path, seed="restore"):
        """The optimiser recorded in the journal ``path``, as it was: its settings, every trial, the pending
        asks, the RNG's state and the model's warm start, so that its next suggestion is the one the
        uninterrupted run would have made.  It keeps appending to the same journal.

        Parameters
        ----------
        path : str or os.PathLike
        seed : "restore", int or None
            "restore": the RNG as the run left it (to continue the run).  An int or None: a fresh RNG, for a
            process that joins a journal other processes are using (each worker its own seed, so that they do
            not draw the same random numbers).

        Raises
        ------
        StorageError
            The file is missing, empty or not a fastfm journal.
        """
        journal = Journal(path)
        if not journal.exists():
            raise StorageError(f"storage={os.fspath(path)!r}: no journal there (missing or empty file)")
        with journal.locked():
            records = journal.read_all()
        if not records or records[0].get("type") != "header" or records[0].get("format") != JOURNAL_FORMAT:
            raise StorageError(f"storage={os.fspath(path)!r} is not a fastfm journal (no header line)")
        header = records[0]
        if header.get("version", 0) > JOURNAL_VERSION:
            raise StorageError(f"storage={os.fspath(path)!r} was written by a newer journal format "
                               f"(version {header['version']}; this fastfm reads {JOURNAL_VERSION})")
        space = decode_object(header["space"])
        settings = {k: _setting_from_json(v) for k, v in header["settings"].items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)      # the kernel fallback warned when the run began
            optimizer = cls(space, **settings)
        optimizer._journal = journal
        for record in records[1:]:
            optimizer._apply(record, replay=True)
        if not (isinstance(seed, str) and seed == "restore"):
            optimizer._rng = np.random.default_rng(seed)
        return optimizer

    # ------------------------------------------------------------- suggestion
    def _pending_points(self):
        """The encoded pending asks, shape (k, n_dims)."""
        return np.array([p.x for p in self._pending.values()]).reshape(-1, self.space.n_dims)

    def _excluded(self, pending=None):
        """Told and pending points: never suggested again."""
        return np.vstack([self._X, self._pending_points() if pending is None else pending])

    def _suggest(self):
        successes = sum(not t.failed for t in self._trials)
        if self._random_search or self.n_told + len(self._pending) < self.n_init or successes < 2:
            self.last_suggestion_info = {"source": "random"}
            return self._random_point()
        return self._model_point()

    def _random_point(self):
        excluded = self._excluded()
        x = _design_point(self, excluded)
        if x is not None:
            return x
        for _ in range(1000):
            x = self.space.sample_encoded(1, seed=self._rng)[0]
            if not self._acq_optimizer._is_duplicate(x, excluded):
                return x
        raise SearchSpaceExhaustedError("could not draw a random point that is not already evaluated or pending")

    def _model_point(self):
        if self._gp is None and self._fit_record is not None and self._fit_record["n_told"] == self.n_told:
            # loaded from a journal: rebuild the fit the run held (deterministic from its record)
            self._gp = self._fit(self._fit_record)
        gp = self._fit_model()
        if gp is None:
            return self._random_point()
        ok = np.array([not t.failed for t in self._trials])
        values = np.array([t.value for t in self._trials])
        incumbent = self._X[ok][int(np.argmin(values[ok]))]
        pending = self._pending_points()
        model = fantasy.condition_on(gp, pending, self.pending_strategy)
        acquisition = acquisition_function(self.acquisition, model.best_y_standardized_, self.xi)
        excluded = self._excluded(pending)
        result, info = _optimize_acquisition(self, gp, model, acquisition, incumbent, excluded, values, ok)
        if self._trust_region is None:      # a trust region restarts on its own terms
            untried = untried_value_point(self.space, self._X, self._X[ok], values[ok], pending, incumbent,
                                          lambda Z: self._acq_optimizer.score(model, acquisition, Z),
                                          self.untried_patience, self.n_init)
            if untried is not None:
                x, value = untried
                result, info = dataclasses.replace(result, x=x, value=value), {**info, "untried_value": True}
        self._batch_candidates = result.candidates
        self.last_suggestion_info = {"source": "model", "acquisition": result.value, "rounds": result.n_rounds,
                                     "n_pending": len(pending), **info}
        if "kernel" in self._fit_record:
            self.last_suggestion_info["kernel"] = self._fit_record["kernel"]
        if "transform" in self._fit_record:
            self.last_suggestion_info["y_transform"] = gp.y_transform_
        if self._fit_record.get("groups"):     # the values the model treats as alike (fastfm.bo.value_groups)
            choices = {p.name: p.choices for p in self.space.discrete_params if hasattr(p, "choices")}
            self.last_suggestion_info["value_groups"] = {
                name: [[choices[name][v] for v in group] for group in partition if len(group) > 1]
                for name, partition in self._fit_record["groups"].items()}
        return result.x


def _design_point(optimizer, excluded):
    """The next point of the optimizer's stratified initial design (the one at the index of told + pending, so
    that a batch, a loaded journal and processes sharing one continue the same design), or None: random search,
    initial_design="random", past n_init, or the point already told or pending."""
    index = optimizer.n_told + len(optimizer._pending)
    if optimizer._random_search or optimizer.initial_design != "stratified" or index >= optimizer.n_init:
        return None
    if optimizer._design_seed is None:
        optimizer._design_seed = int(optimizer._rng.integers(1 << 62))
    design = optimizer.space.sample_stratified_encoded(optimizer.n_init, seed=optimizer._design_seed)
    x = design[index]
    return None if optimizer._acq_optimizer._is_duplicate(x, excluded) else x


def _trust_region_settings(settings):
    """The journal header's record of a trust region: none when it is off (the journals of runs without one
    stay as they were)."""
    return {} if settings is None else {"trust_region": dataclasses.asdict(settings)}


def _restart_lcb(mu, sigma):
    """CASMOPOLITAN's guided restart scores random points by the lower confidence bound μ − 1.96σ (maximised as
    its negative, as every acquisition here)."""
    return upper_confidence_bound_and_grad(mu, sigma, _tr.LCB_RESTART_Z ** 2)


def _optimize_acquisition(optimizer, gp, model, acquisition, incumbent, excluded, values, ok):
    """(the ``AcquisitionResult`` of the next model suggestion, a dict for last_suggestion_info): the first point
    of an ask from the incumbent's spray and random points, the next ones of a batch from the previous one's
    candidates; with a trust region, inside it (centred at its best point), or its restart point when it has
    just collapsed."""
    region, info = (None, {}) if optimizer._trust_region is None else _trust_region_of(optimizer, gp, values, ok)
    acq, rng = optimizer._acq_optimizer, optimizer._rng
    if info.get("restart"):
        return acq.optimize_random(model, _restart_lcb, excluded, rng), info
    if optimizer._batch_candidates is None:
        incumbent = incumbent if region is None else region.centre
        return acq.optimize(model, acquisition, incumbent, excluded, rng, region), info
    return acq.optimize_next(model, acquisition, optimizer._batch_candidates, excluded, rng, region), info


def _trust_region_of(optimizer, gp, values, ok):
    """(the trust region of the next suggestion or None when it restarts, a dict for last_suggestion_info)."""
    space = optimizer.space
    state = _tr.trust_region_state(optimizer._trust_region, np.where(ok, values, np.nan), optimizer.n_init,
                                   space.n_discrete)
    info = {"trust_region": {"length": state.length, "length_discrete": state.length_discrete,
                             "n_restarts": state.n_restarts}, "restart": state.restarting}
    if state.restarting:
        return None, info
    since = np.arange(len(values)) >= state.start
    candidates = np.flatnonzero(ok & since)
    centre = optimizer._X[candidates[int(np.argmin(values[candidates]))]]
    lengthscales = _tr.continuous_lengthscales(gp.kernel_, space.n_continuous)
    return _tr.region_around(centre, state, space, lengthscales), info


def initial_design_size(space, n_init="auto"):
    """The initial points of ``Optimizer(space, n_init=n_init)``: ``n_init`` itself when it is an int, and for
    "auto" DEFAULT_N_INIT, or the value count of the space's largest nominal parameter when that is more (at most
    MAX_AUTO_N_INIT).  Anything else is returned as it is, for ``Optimizer``'s check to reject."""
    if isinstance(n_init, str) and n_init == "auto":
        counts = [p.n_states for p in space.discrete_params if p.is_nominal]
        return min(max([DEFAULT_N_INIT, *counts]), MAX_AUTO_N_INIT)
    return n_init


def _checked_arguments(space, n_init, n_restarts, seed, acquisition, xi, log_transform_y, pending, failures,
                       initial_design):
    """The Optimizer's arguments checked (a typed error naming the first bad one); returns the RNG of ``seed``."""
    if not isinstance(space, Space):
        raise InvalidValueError(f"space must be a fastfm.Space, got a {type(space).__name__}: space={space!r:.200}",
                                "space", space)
    if isinstance(n_init, bool) or not isinstance(n_init, numbers.Integral) or n_init < 1:
        raise InvalidValueError(f"n_init must be 'auto' or a positive integer, got n_init={n_init!r}", "n_init",
                                n_init)
    if isinstance(n_restarts, bool) or not isinstance(n_restarts, numbers.Integral) or n_restarts < 0:
        raise InvalidValueError(f"n_restarts must be a non-negative integer, got n_restarts={n_restarts!r}",
                                "n_restarts", n_restarts)
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"seed must be None, a non-negative integer or a numpy SeedSequence or "
                                f"Generator, got seed={seed!r} ({exc})", "seed", seed) from None
    acquisition_function(acquisition, 0.0)  # validate the name now
    if isinstance(xi, bool) or not isinstance(xi, numbers.Real) or not (math.isfinite(xi) and xi >= 0):
        raise InvalidValueError(f"xi must be a finite number >= 0, got xi={xi!r}", "xi", xi)
    if not is_y_transform(log_transform_y):
        raise InvalidValueError("log_transform_y must be 'auto', 'shift', 'copula', False or True, "
                                f"got log_transform_y={log_transform_y!r}", "log_transform_y", log_transform_y)
    if pending not in fantasy.FANTASY_STRATEGIES:
        raise InvalidValueError(f"pending must be one of {list(fantasy.FANTASY_STRATEGIES)}, got pending={pending!r}",
                                "pending", pending)
    if failures not in _FAILURE_MODES:
        raise InvalidValueError(f"failures must be one of {list(_FAILURE_MODES)}, got failures={failures!r}",
                                "failures", failures)
    if initial_design not in _INITIAL_DESIGNS:
        raise InvalidValueError(f"initial_design must be one of {list(_INITIAL_DESIGNS)}, got initial_design="
                                f"{initial_design!r}", "initial_design", initial_design)
    return rng


def _checked_failure_fields(error, eval_time):
    """``tell``'s error (an exception as "TypeName: message") and eval_time, checked."""
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}: {error}"
    if error is not None and not isinstance(error, str):
        raise InvalidValueError(f"error must be a str, an exception or None, got error={error!r}", "error", error)
    if eval_time is not None and (isinstance(eval_time, (bool, np.bool_))
                                  or not isinstance(eval_time, (numbers.Real, np.floating, np.integer))):
        raise InvalidValueError(f"eval_time must be a number of seconds or None, got eval_time={eval_time!r}",
                                "eval_time", eval_time)
    return error, eval_time


def _config_copy(config):
    """A copy of a config for the caller to edit: its arrays (a Set's points) copied, every other value the same
    object.  Not a deep copy: a Categorical's choice may be any object (a class instance without ``__eq__``, say),
    and the space matches choices by equality, so a copied instance would be an unknown choice when told back."""
    return {name: value.copy() if isinstance(value, np.ndarray) else value for name, value in config.items()}


def _jsonable_config(config):
    """The config as JSON values (numpy scalars to Python, arrays, tuples and sets to lists, any other object, such
    as a function that is a Categorical's choice, to its repr): the journal's readable copy (the encoded point next
    to it is what is read back)."""
    def convert(v):
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):       # a Set parameter's points (m, dim)
            return convert(v.tolist())
        if isinstance(v, (tuple, list, set, frozenset)):
            items = [convert(u) for u in v]
            return sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items
        if isinstance(v, dict):
            return {str(k): convert(u) for k, u in v.items()}
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)
        if v is None or isinstance(v, (str, bool, int, float)):
            return v
        return repr(v)
    return {k: convert(v) for k, v in config.items()}


def _finite_or_none(value):
    return float(value) if value is not None and math.isfinite(value) else None


def _nan_if_none(value):
    return float("nan") if value is None else float(value)
