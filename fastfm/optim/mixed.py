"""Acquisition optimisation on mixed spaces (SPEC §5; paper Supp. D.1).

1. Score ``n_random`` uniform points and ``n_spray`` points around the
   incumbent in batches; keep the best ``n_starts`` distinct ones.  (With
   ``set_point_reuse`` > 1 a Set's random points come from a shared pool, so
   that the set kernels score the candidates through its distinct points.)
2. From every start, alternate one hill-climbing move on the discrete part
   (to the best graph neighbour; all neighbours of a point are scored from the
   factors they share, ``Kernel.neighbour_gram``) with a quasi-Newton search on
   the continuous part, until neither improves.  The continuous step of every start
   is its own projected L-BFGS run to convergence, the running starts batched into one
   model call per iteration (``batched_lbfgs``), as Optuna's GPSampler alternates its
   discrete line searches with a converged gradient ascent (``local_search_mixed``).
   On a space with no discrete variable the starts advance in lockstep instead: one
   scipy L-BFGS-B on the sum of their acquisition values, which is separable across
   starts (the BoTorch ``gen_candidates_scipy`` approach), a few iterations a round;
   and on a set space with no discrete part there is nothing to alternate with: each
   start runs its own batched quasi-Newton minimisation once.
3. Return the best point that is not already evaluated or pending.

On a conditional space (SPEC §3) every point stays valid: random and spray
points respect the conditions, the continuous step never moves an inactive
coordinate (its L-BFGS-B bounds pin it to its inactive code), inactive
discrete variables have no graph moves, and a move that changes which
variables are active clears the children it deactivates and gives the ones it
activates fixed default values (``Space.enforce_conditions``; spray points draw them at
random instead).  A continuous variable active in fewer than two observations (a branch barely evaluated) is
held at the centre of its range by every candidate (UNEXPLORED_CONTINUOUS_CODE).  Such neighbours differ
from their base point in more than one column, so on conditional spaces they
are scored as explicit points rather than through shared factors.

With a trust region (``region``, a ``trust_region.Region``: CASMOPOLITAN, Wan et al. 2021) every candidate
stays inside it: random points are drawn in it, spray and set-point moves are clipped into its box and dropped
outside its Hamming ball, graph moves that leave the ball are not taken, and L-BFGS-B's bounds are its box.

Every acquisition here is MAXIMISED.
"""
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from .._parallel import thread_map
from ..exceptions import FastFMError
from .batched_lbfgs import minimize_batched

__all__ = ["MixedAcquisitionOptimizer", "SearchSpaceExhaustedError", "AcquisitionResult"]

# --- tuning constants (SPEC §5 / paper Supp. D.1 unless noted) -------------------------
# Uniformly random points scored to pick starts, and the best of them (with the spray points) that start the
# local search.  The paper scores 100,000 (SPEC §5); issue 24 §3 took it to 10,000 with 40 starts, then to
# Optuna GPSampler's 2,048 and 10 (BoTorch's optimize_acqf: 1,024 raw samples, 20 restarts): on 30 fitted models
# (Func2C, Func3C, Ackley5C, Contamination, Mixed10C20N; 30 and 80 observations; 3 seeds) the local search
# reached the same acquisition maximum as from 10,000 and 40 in 29 (one 0.006 lower in log-EI), in 0.4-0.6 of
# the time, and BO runs were level in sample efficiency (docs/benchmarks/suggestion.md, "Cheaper acquisition").
N_RANDOM = 2_048
N_STARTS = 10
# ... on a space with Set parameters: each score costs O(n_obs·m²·d) there, and uniformly random sets in an
# m·d-dimensional box are poor starts next to the spray points and L-BFGS-B; the 40 starts of the set
# measurements of issue 24 §4 (asv_benchmarks/sets/acquisition_gap.py) stay
N_RANDOM_SETS = 10_000
N_STARTS_SETS = 40
# ... scaled down by the cost of a score, O(n_obs·m²·d): N_RANDOM_SETS·(SET_POINTS_FULL_SCREEN)²/Σm² random sets
# (Σ over the Set parameters), at least N_RANDOM: 10,000 on sets of up to 4 points, 6,400 at 5, 4,444 at 6, 2,048
# from 9 on.  At m = 20 the 10,000 random sets were half of a suggestion and did not lift the maximum found (BO
# states of SetPeriodic and SetDensity at 30 evaluations: 2,048 ended on average 0.24 below the best log-EI of nine
# searches against 10,000's 0.32, in 55 % of the search time; docs/benchmarks/sets.md, "Sets of 20 points"), and on
# sets of 5-10 points, 30 seeds of 60 evaluations paired with 10,000 random sets measured it level (SetPeriodic,
# SetDensity, PMedian, SetChamfer at 30 and 60), for 7-32 % less time per suggestion (docs/benchmarks/suggestion.md,
# "A random screen sized by the cost of a score").  Before 2026-12-02: 10,000 up to 10 points, 2,048 above.
SET_POINTS_FULL_SCREEN = 4
# ``set_point_reuse`` r > 1 draws the random sets' points from a pool, each point in about r sets
# (``Set.sample_codes``), which the set kernels score through the distinct points (kernels/sets.py,
# SHARED_POINTS_MIN), and takes the starts point-disjoint (``_distinct_rows``).  Off by default: with r = 8 a
# suggestion on sets of 6-10 points took 0.8x the time (SetPeriodic, SetDensity, PMedian at 100 observations) and
# SetPeriodic, PMedian and SetChamfer stayed level at 60 evaluations, but SetCoverage (+0.089 +- 0.048) and
# SetDensity (+0.0032 +- 0.0019, 30 seeds each) ended a little worse, as every cut of the random sets has
# (docs/benchmarks/suggestion.md, "Random sets from a pool of points").  The moves of one point of the best sets
# share their parents' points anyway: they are scored through the distinct points whatever r is.
SET_POINT_REUSE = 1
N_SPRAY = 50              # points around the incumbent, to encourage exploitation
# On a space with Set parameters, candidates that move ONE point of one of the best observed sets (issue 24 §4):
# half relocate it uniformly in the box, half jitter it by SPRAY_CONTINUOUS_STD.  Random sets and the spray
# (which moves every point at once) almost never propose "keep m − 1 good points, put the last one elsewhere",
# which is the step that covers a new mode of a coverage or sum-structured objective.
N_SET_POINT_MOVES = 2_000
SET_POINT_MOVE_PARENTS = 5    # the incumbent and the next best observed sets are the parents of the moves
# The best moves are EXTRA starts of the local search, next to the N_STARTS best random and spray points: ranked
# together, the moves (all near the incumbent) displaced the random starts that reach other modes, and the
# search ended lower on 3 of 12 fitted models (asv_benchmarks/sets/acquisition_gap.py)
N_SET_MOVE_STARTS = 10
# The 2nd, 3rd, ... point of one ask(n): the previous point's candidates re-scored, plus this many random points,
# and this many starts, at most (1/16 and 1/5 of the 10,000 and 40 of ask(n=8) at 200 observations in
# docs/benchmarks/parallel.md)
BATCH_N_RANDOM = 625
BATCH_N_STARTS = 8
# Best-scored candidates kept next to the local optima: the fallback when every local optimum is excluded, and
# the next batch point's candidates (4 × the 40 starts these were measured with)
N_SCORED_KEPT = 160
SCORING_BATCH = 4_096     # rows of the cross-covariance scored at once (memory ~ batch × n_obs)
SPRAY_CONTINUOUS_STD = 0.05   # std of the Gaussian move of spray points in the unit cube (our choice)
# L-BFGS-B iterations per alternation.  The paper takes one (maxiter=1), so a start whose continuous part
# still climbs keeps re-scoring all its graph neighbours every round; with 5, the same 48 maxima as above came
# in 3-4 rounds instead of 7-36, 1.5-3x faster (issue 24 §3)
LBFGS_ITERATIONS_PER_ROUND = 5
# On a space with discrete and continuous variables the continuous step of a round is each start's own quasi-Newton
# run (``_independent_runs``) to convergence, at most this many iterations (Optuna's GPSampler: 200).  The lockstep
# L-BFGS-B above, 5 iterations a round, dropped its curvature pairs every round and kept every start running while
# any one still climbed: on SVM after 100 observations 5-56 rounds and up to 524 model calls a search.  Converged
# runs took about 3 rounds and reached the same or a higher acquisition maximum on every BO state measured (SVM at
# 60-130 evaluations: higher on 9 of 10, by up to 1.0 in log-EI), and BO runs were level on the paper's, HPO,
# conditional and Mixed10C20N problems (docs/benchmarks/suggestion.md, "Independent quasi-Newton runs on mixed
# spaces").
MIXED_ITERATIONS_PER_ROUND = 200
MAX_ROUNDS = 100          # safety cap on alternations; convergence usually comes far earlier (our choice)
IMPROVEMENT_TOL = 1e-6    # a gain below this, relative to max(1, |acquisition|), is "no improvement"
DUPLICATE_TOL = 1e-9      # continuous coordinates closer than this count as the same point
# Starts of the local search that reach the same discrete part with continuous parts closer than this have reached
# the same local optimum of the continuous step (its runs converge to ~1e-5; distinct optima lie far further apart),
# and from there they would climb alike: the one behind stops and ends where the other ends.  On the NAS-like space at
# 200 observations 7 of the 10 starts met after the first round and all of them by the last of 15-17 rounds, each
# round costing about as much for every start as for one (docs/benchmarks/suggestion.md, "Starts that meet").
MERGE_TOL = 1e-4
# After the first round a start whose discrete move gained runs no continuous search in that round, until its discrete
# moves stop gaining (a start still ends only where neither gains): on the NAS-like space at 200 observations the runs
# after each of 15-20 moves were more than half of the search (docs/benchmarks/suggestion.md, "Starts that meet").
# True runs it after every move, the alternation before 2026-12-07 (for asv_benchmarks/peers/met_starts_probe.py).
CONTINUOUS_AFTER_EVERY_MOVE = False
# Where a conditional space's continuous variable is active in fewer than two observations, the model knows no trend
# along it, only what its inactive code (0.0, the lower bound) lends it: the acquisition pulls the variable onto that
# code, where the new branch looks like the many points that do not have it, or onto the face farthest from its one
# observation, where the posterior variance peaks (the boundary over-exploration of GP-based BO, Siivola et al. 2018).
# On DeepBranch the first points of the optimum's leaf went to the box's faces, where the objective is 10x its
# typical value in the leaf, and 6 of 20 runs never came back to the leaf.  So every candidate holds such a variable
# at the centre of its range (the default ``Space.enforce_conditions`` gives it) until two observations have it
# active: at 200 evaluations all 20 runs found the optimum (1 observation: 17), at 60 −0.906 ± 0.067 against
# −0.607 ± 0.129 (docs/benchmarks/conditional.md, "Holding a new branch's continuous variables at the centre").
UNEXPLORED_CONTINUOUS_CODE = 0.5
UNEXPLORED_BELOW_OBSERVATIONS = 2


def set_point_keys(space, x):
    """The points of the Sets of ``x`` (encoded), as hashable (set index, point bytes) keys."""
    keys = set()
    for s, param in enumerate(space.set_params):
        points = np.ascontiguousarray(x[space.column(param.name)]).reshape(param.n_points, param.dim)
        keys.update((s, point.tobytes()) for point in points)
    return keys


def _tolerance(values):
    return IMPROVEMENT_TOL * np.maximum(1.0, np.abs(values))


class SearchSpaceExhaustedError(FastFMError, RuntimeError):
    """Every point of a finite (purely discrete) space has been evaluated or is pending."""


@dataclass(frozen=True)
class AcquisitionResult:
    """The chosen point and diagnostics."""

    x: np.ndarray               # (n_dims,) encoded
    value: float                # acquisition value at x
    n_rounds: int               # alternations run
    start_values: np.ndarray    # acquisition of the starts, before local search
    candidates: np.ndarray = None   # local optima and best-scored points (the next point of a batch starts there)


def _random_set_count(set_params):
    """Random candidates the search scores on a space with these ``Set`` parameters: N_RANDOM_SETS scaled by
    SET_POINTS_FULL_SCREEN² / Σ m² (the cost of a score), between N_RANDOM and N_RANDOM_SETS."""
    points_squared = sum(param.n_points ** 2 for param in set_params)
    scaled = round(N_RANDOM_SETS * SET_POINTS_FULL_SCREEN ** 2 / points_squared)
    return int(min(N_RANDOM_SETS, max(N_RANDOM, scaled)))


class MixedAcquisitionOptimizer:
    """Maximise an acquisition function of a fitted GP over a ``Space``.

    Parameters
    ----------
    space : Space
    n_random, n_spray, n_starts : int
        See the module constants (``n_random`` and ``n_starts`` default to N_RANDOM and N_STARTS, or
        N_STARTS_SETS and ``_random_set_count(space.set_params)`` random sets on a space with ``Set`` parameters).
    lbfgs_iterations_per_round : int or None
        None (default): on a space with discrete variables each start's continuous step runs its own quasi-Newton
        search to convergence (at most MIXED_ITERATIONS_PER_ROUND iterations), elsewhere LBFGS_ITERATIONS_PER_ROUND
        lockstep L-BFGS-B iterations per step.  An integer: that many lockstep iterations per continuous step on
        every space (the paper's alternation is 1; the default on every space before 2026-12-03 was 5).
    n_set_point_moves : int
        On a space with ``Set`` parameters: candidates that move one point of one of the best observed
        sets (N_SET_POINT_MOVES; 0 turns them off).  Ignored on other spaces.
    set_point_reuse : int
        On a space with ``Set`` parameters: each point of the random sets' pool is in about this many of them
        (SET_POINT_REUSE; 1 draws every point anew).
    max_rounds : int
        Cap on discrete/continuous alternations.
    """

    def __init__(self, space, n_random=None, n_spray=N_SPRAY, n_starts=None,
                 lbfgs_iterations_per_round=None, max_rounds=MAX_ROUNDS,
                 scoring_batch=SCORING_BATCH, n_set_point_moves=N_SET_POINT_MOVES, set_point_reuse=SET_POINT_REUSE):
        self.space = space
        has_sets = bool(getattr(space, "set_params", None))
        if n_random is None:
            n_random = _random_set_count(space.set_params) if has_sets else N_RANDOM
        if n_starts is None:
            n_starts = N_STARTS_SETS if has_sets else N_STARTS
        self.n_random = int(n_random)
        self.n_spray = int(n_spray)
        self.n_starts = int(n_starts)
        # None: the defaults (independent runs on mixed spaces); an integer: lockstep iterations on every space
        self.independent_mixed_runs = lbfgs_iterations_per_round is None
        self.lbfgs_iterations_per_round = int(LBFGS_ITERATIONS_PER_ROUND if lbfgs_iterations_per_round is None
                                              else lbfgs_iterations_per_round)
        self.max_rounds = int(max_rounds)
        self.scoring_batch = int(scoring_batch)
        self.n_set_point_moves = int(n_set_point_moves)
        self.set_point_reuse = int(set_point_reuse)
        self._region = None       # the trust region of the call in progress (optimize/optimize_next), or None
        self._unexplored = _UnexploredColumns(space)   # ... and its continuous columns too few observations have active
        if self.n_set_point_moves < 0:
            raise ValueError(f"n_set_point_moves must be >= 0, got n_set_point_moves={n_set_point_moves!r}")
        for name in ("n_random", "n_starts", "lbfgs_iterations_per_round", "max_rounds", "scoring_batch",
                     "set_point_reuse"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)!r}")

    # ------------------------------------------------------------------ public
    def optimize(self, gp, acquisition, incumbent, exclude, rng, region=None):
        """Return an :class:`AcquisitionResult`.

        Parameters
        ----------
        gp : fitted GaussianProcessRegressor
        acquisition : callable (mu, sigma) -> (value, d/dmu, d/dsigma), arrays of shape (M,)
            On the GP's standardised scale; maximised.
        incumbent : (n_dims,) encoded best observed point (centre of the spray points)
        exclude : (n_excluded, n_dims) encoded points that must not be returned
        rng : numpy Generator
        region : trust_region.Region, optional
            Keep every candidate inside it (the incumbent should be its centre).
        """
        self._begin(gp, region)
        try:
            candidates = np.vstack([self._random(self.n_random, rng), self._in_region(self._spray(incumbent, rng))])
            moves = None
            if getattr(self.space, "set_params", None) and self.n_set_point_moves:
                moves = self._in_region(_set_point_moves(self.space, self.n_set_point_moves, gp, incumbent, rng))
            return self._optimize_from(gp, acquisition, candidates, self.n_starts, exclude, rng, moves,
                                       N_SET_MOVE_STARTS)
        finally:
            self._begin(None, None)

    def optimize_random(self, gp, acquisition, exclude, rng):
        """The best of ``n_random`` uniformly random points that is not excluded, without local search (a trust
        region's restart point, CASMOPOLITAN's guided restart)."""
        exclude = np.asarray(exclude, dtype=float).reshape(-1, self.space.n_dims)
        self._begin(gp, None)
        try:
            X = self._random(self.n_random, rng)
            values = self.score(gp, acquisition, X)
            for i in np.argsort(-values, kind="stable"):
                if not self._is_duplicate(X[i], exclude):
                    return AcquisitionResult(X[i].copy(), float(values[i]), 0, values[i:i + 1], X)
            return self._fallback(gp, acquisition, exclude, rng, 0, values[:0])
        finally:
            self._begin(None, None)

    def optimize_next(self, gp, acquisition, previous, exclude, rng, region=None):
        """The next point of a batch (``ask(n)``), at a fraction of ``optimize``'s cost.

        ``gp`` is the model conditioned on the points already chosen (``fastfm.gp.fantasy``), ``previous`` the
        ``candidates`` of the previous result: its local optima and best-scored points, re-scored under the
        conditioned model (where a chosen point's variance has collapsed they drop, and the others come
        forward), next to at most BATCH_N_RANDOM random points; the local search starts from at most
        BATCH_N_STARTS of them.  With ``region``, the previous candidates outside it are dropped."""
        self._begin(gp, region)
        try:
            n_random = min(self.n_random, BATCH_N_RANDOM)
            previous = self._in_region(np.array(previous, dtype=float).reshape(-1, self.space.n_dims), clip=False)
            candidates = np.vstack([self._unexplored.hold(previous), self._random(n_random, rng)])
            n_starts = min(self.n_starts, BATCH_N_STARTS)
            return self._optimize_from(gp, acquisition, candidates, n_starts, exclude, rng)
        finally:
            self._begin(None, None)

    def _optimize_from(self, gp, acquisition, candidates, n_starts, exclude, rng, extra=None, n_extra_starts=0):
        """Score ``candidates``, run the local search from the best ``n_starts`` distinct ones (and from the best
        ``n_extra_starts`` of ``extra``, ranked apart), and return the best point that is not excluded."""
        space = self.space
        exclude = np.asarray(exclude, dtype=float).reshape(-1, space.n_dims)
        values = self.score(gp, acquisition, candidates)
        order = np.argsort(-values, kind="stable")
        starts = self._distinct_rows(candidates, order, n_starts, point_disjoint=self._pools_set_points())
        if extra is not None and len(extra) and n_extra_starts:
            extra_values = self.score(gp, acquisition, extra)
            extra_order = np.argsort(-extra_values, kind="stable")
            extra_starts = self._distinct_rows(extra, extra_order, n_extra_starts)
            starts = np.concatenate([starts, len(candidates) + extra_starts])
            candidates = np.vstack([candidates, extra])
            values = np.concatenate([values, extra_values])
            order = np.argsort(-values, kind="stable")
        X = candidates[starts].copy()
        start_values = values[starts].copy()
        X, acq, n_rounds = self._local_search(gp, acquisition, X, start_values.copy())
        # best first: local optima, then the scored candidates as a fallback; a Set's points are put
        # in canonical order, so that a reordering of an evaluated set counts as a duplicate
        pool = space.canonical(np.vstack([X, candidates[order[:N_SCORED_KEPT]]]))
        pool_values = np.concatenate([acq, values[order[:N_SCORED_KEPT]]])
        for i in np.argsort(-pool_values, kind="stable"):
            if not self._is_duplicate(pool[i], exclude):
                return AcquisitionResult(pool[i].copy(), float(pool_values[i]), n_rounds, start_values, pool)
        return self._fallback(gp, acquisition, exclude, rng, n_rounds, start_values)

    # --------------------------------------------------------------- internals
    def _begin(self, gp, region):
        """Set the state of one call: its trust region and the continuous columns too few training points of ``gp``
        have active (neither when ``gp`` is None, at the end of the call).  Inside a trust region only the columns
        inactive at its centre are held (their box is the whole range); the others stay in the box around it."""
        self._region = region
        self._unexplored = _UnexploredColumns(self.space, getattr(gp, "X_train_", None),
                                              None if region is None else region.centre)

    def _random(self, n, rng):
        """``n`` uniformly random points of the space, or of the trust region when there is one."""
        if self._region is None:
            X = self.space.sample_encoded(n, seed=rng, set_point_reuse=self.set_point_reuse)
        else:
            X = self._region.sample(n, self.space, rng)
        return self._unexplored.hold(X)

    def _in_region(self, X, clip=True):
        """``X`` with its continuous coordinates clipped into the trust region's box and the rows outside its
        Hamming ball dropped (``X`` itself without a region)."""
        region = self._region
        if region is None or X is None or len(X) == 0:
            return X
        if clip:
            X = region.clip(X, self.space)
        return X[region.contains(X, self.space)]

    def _spray(self, incumbent, rng):
        """Points near the incumbent: a Gaussian move of the continuous part, and for
        half of them one discrete variable moved to a random graph neighbour."""
        space = self.space
        if self.n_spray == 0 or incumbent is None:
            return np.zeros((0, space.n_dims))
        S = np.repeat(np.asarray(incumbent, dtype=float)[None, :], self.n_spray, axis=0)
        active = space.active_columns(S)
        cont = space.continuous_dims
        if len(cont):
            moved = np.clip(S[:, cont] + rng.normal(0.0, SPRAY_CONTINUOUS_STD, (self.n_spray, len(cont))), 0.0, 1.0)
            S[:, cont] = np.where(active[:, cont], moved, S[:, cont])     # inactive coordinates stay put
        if space.n_discrete:
            for row in range(0, self.n_spray, 2):
                movable = np.flatnonzero(active[row, space.n_continuous:])
                if not len(movable):
                    continue
                p = rng.choice(movable)
                col = space.n_continuous + p
                adjacent = space.neighbours[p][int(S[row, col])]
                if len(adjacent):
                    S[row, col] = rng.choice(adjacent)
            space.enforce_conditions(S, rng, previously_active=active)
        return self._unexplored.hold(S)

    def score(self, gp, acquisition, X):
        """Acquisition of many points, in batches (the cross-covariance runs in the backend).

        The batches are independent, so they run in threads, one core each: the
        cross-covariance, the triangular solve and the acquisition of a batch
        all overlap with the other batch's (the kernel's own threading would
        leave the solve and the acquisition serial).
        """
        out = np.empty(X.shape[0])
        starts = list(range(0, X.shape[0], self.scoring_batch))

        def score_batch(start):
            block = X[start:start + self.scoring_batch]
            mu, sigma = gp.predict_standardized(block)
            out[start:start + len(block)] = acquisition(mu, sigma)[0]

        with thread_map(len(starts)) as run_all:
            run_all(score_batch, starts)
        return out

    def _pools_set_points(self):
        return self.set_point_reuse > 1 and bool(getattr(self.space, "set_params", None))

    def _distinct_rows(self, X, order, k, point_disjoint=False):
        """The first ``k`` rows of X in ``order`` that are no duplicate of an earlier one; with ``point_disjoint``,
        also sharing no point of a Set with an earlier one.

        Why point-disjoint: the random sets share a pool of points (SET_POINT_REUSE), and a good point lifts every
        set it is in, so the best-scored sets come in groups around a few points; the local search needs starts
        spread as the best of independent random sets are."""
        chosen, taken = [], set()
        for i in order:
            if chosen and self._is_duplicate(X[i], X[chosen]):
                continue
            if point_disjoint:
                points = set_point_keys(self.space, X[i])
                if not taken.isdisjoint(points):
                    continue
                taken.update(points)
            chosen.append(i)
            if len(chosen) == k:
                break
        return np.array(chosen, dtype=np.int64)

    def _is_duplicate(self, x, others):
        if len(others) == 0:
            return False
        return bool(np.any(_same_point(others, x, self.space.n_continuous, DUPLICATE_TOL)))

    def _local_search(self, gp, acquisition, X, acq):
        space = self.space
        if not space.n_discrete and getattr(space, "set_params", None):
            new_C, new_acq = _independent_runs(self, gp, acquisition, X)
            gain = new_acq > acq + _tolerance(acq)
            X[gain, :space.n_continuous], acq[gain] = new_C[gain], new_acq[gain]
            return X, acq, 1
        active = np.ones(len(X), dtype=bool)
        leader = np.arange(len(X))   # a start that met another follows it (_merge_met_starts)
        independent_runs = space.n_discrete and self.independent_mixed_runs
        rounds = 0
        for rounds in range(1, self.max_rounds + 1):
            improved = np.zeros(len(X), dtype=bool)
            if space.n_discrete:
                idx = np.flatnonzero(active)
                moved, values = self._hill_climb_step(gp, acquisition, X[idx], acq[idx])
                gain = values > acq[idx] + _tolerance(acq[idx])
                X[idx[gain]] = moved[gain]
                acq[idx[gain]] = values[gain]
                improved[idx[gain]] = True
            if space.n_continuous:
                idx = np.flatnonzero(active)
                if independent_runs and rounds > 1 and not CONTINUOUS_AFTER_EVERY_MOVE:
                    idx = np.flatnonzero(active & ~improved)
                if len(idx):
                    if independent_runs:
                        new_C, new_acq = _independent_runs(self, gp, acquisition, X[idx], MIXED_ITERATIONS_PER_ROUND)
                    else:
                        new_C, new_acq = self._continuous_step(gp, acquisition, X[idx], acq[idx])
                    gain = new_acq > acq[idx] + _tolerance(acq[idx])
                    X[idx[gain], : space.n_continuous] = new_C[gain]
                    acq[idx[gain]] = new_acq[gain]
                    improved[idx[gain]] = True
            active &= improved
            if space.n_discrete:
                _merge_met_starts(X, acq, active, leader, space.n_continuous)
            if not active.any():
                break
        leader = _final_leaders(leader)
        return X[leader], acq[leader], rounds

    def _neighbourhoods(self, X):
        """(owner, var_index, new_state) listing every graph neighbour of every row of X."""
        space = self.space
        owner, var_index, new_state = [], [], []
        for s, x in enumerate(X):
            for p, adjacency in enumerate(space.neighbours):
                adjacent = adjacency[int(x[space.n_continuous + p])]
                owner.append(np.full(len(adjacent), s, dtype=np.int64))
                var_index.append(np.full(len(adjacent), p, dtype=np.int64))
                new_state.append(adjacent)
        cat = lambda parts: np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)  # noqa: E731
        return cat(owner), cat(var_index), cat(new_state)

    def _hill_climb_step(self, gp, acquisition, X, current):
        """For every row, the best graph neighbour and its acquisition, or the row itself when
        no neighbour beats ``current``.  All neighbours of all rows are scored in one call:
        each neighbour differs from its row in one variable, so the kernel reuses the other
        factors (``neighbour_gram_batch``)."""
        owner, var_index, new_state = self._neighbourhoods(X)
        if len(owner) == 0:
            return X.copy(), current.copy()
        kernel = gp.kernel_
        neighbours = kernel.neighbour_points(X, owner, var_index, new_state)
        if self.space.is_conditional:
            # a move may (de)activate other variables: explicit, repaired points
            # (fixed default values for what a move activates, so the search converges)
            self.space.enforce_conditions(neighbours, previously_active=self.space.active_columns(X)[owner])
            self._unexplored.hold(neighbours)
            values = self.score(gp, acquisition, neighbours)
        else:
            K_cross = kernel.neighbour_gram_batch(X, gp.X_train_, owner, var_index, new_state)
            mu, sigma = gp.predict_standardized_from_cross(K_cross, kernel.diag(neighbours))
            values = acquisition(mu, sigma)[0]
        if self._region is not None:
            # a move out of the trust region's Hamming ball is never taken
            values = np.where(self._region.contains(neighbours, self.space), values, -np.inf)
        best_X, best_values = X.copy(), current.copy()
        # best neighbour per row: sort by (owner, value) and take each owner's last entry
        order = np.lexsort((values, owner))
        last = order[np.r_[owner[order][1:] != owner[order][:-1], True]]
        better = values[last] > current[owner[last]]
        best_X[owner[last[better]]] = neighbours[last[better]]
        best_values[owner[last[better]]] = values[last[better]]
        return best_X, best_values

    def _continuous_step(self, gp, acquisition, X, acq):
        """One L-BFGS-B step on Σ_starts −acq(c_i | v_i), separable across starts."""
        nc = self.space.n_continuous
        fixed = X.copy()
        m = len(X)

        def negative_total(flat):
            Z = fixed.copy()
            Z[:, :nc] = flat.reshape(m, nc)
            mu, sigma, dmu, dsigma = gp.predict_standardized_with_input_gradient(Z)
            value, dvalue_dmu, dvalue_dsigma = acquisition(mu, sigma)
            grad = dvalue_dmu[:, None] * dmu + dvalue_dsigma[:, None] * dsigma
            return -float(np.sum(value)), -grad.ravel()

        x0 = X[:, :nc].ravel()
        # an inactive coordinate is pinned to its value (its inactive code), an unexplored one to its centre
        active = self._unexplored.movable(X).ravel()
        lower, upper = (np.zeros(nc), np.ones(nc)) if self._region is None else (self._region.lower,
                                                                                 self._region.upper)
        box = list(zip(np.tile(lower, m), np.tile(upper, m)))
        bounds = [b if on else (x, x) for on, x, b in zip(active, x0, box)]
        result = minimize(negative_total, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                          options={"maxiter": self.lbfgs_iterations_per_round})
        C = np.where(active.reshape(m, nc), np.clip(result.x.reshape(m, nc), np.tile(lower, (m, 1)),
                                                    np.tile(upper, (m, 1))), X[:, :nc])
        Z = fixed.copy()
        Z[:, :nc] = C
        mu, sigma = gp.predict_standardized(Z)
        return C, acquisition(mu, sigma)[0]

    def _fallback(self, gp, acquisition, exclude, rng, n_rounds, start_values):
        """All optimised and scored points were duplicates: for a finite space enumerate
        what is left; otherwise draw fresh random points."""
        space = self.space
        if self._region is not None:
            # the region's points first; the whole space only when the region has none left
            for _ in range(10):
                X = self._random(self.n_starts, rng)
                values = self.score(gp, acquisition, X) if len(X) else X[:, 0]
                for i in np.argsort(-values):
                    if not self._is_duplicate(X[i], exclude):
                        return AcquisitionResult(X[i], float(values[i]), n_rounds, start_values)
        if space.n_continuous == 0:
            # the real states of each variable; inactive ones are then set by the conditions
            real_states = [p.n_states for p in space.discrete_params]
            total = int(np.prod(np.array(real_states, dtype=float)))
            if total <= 1_000_000:
                grids = np.meshgrid(*[np.arange(n) for n in real_states], indexing="ij")
                all_points = np.stack([g.ravel() for g in grids], axis=1).astype(float)
                if space.is_conditional:
                    all_points = np.unique(space.enforce_conditions(all_points), axis=0)
                    total = len(all_points)
                seen = {tuple(row) for row in exclude}
                left = np.array([row for row in all_points if tuple(row) not in seen]).reshape(-1, space.n_dims)
                if len(left) == 0:
                    raise SearchSpaceExhaustedError(
                        f"all {total} points of this purely discrete space have been evaluated or are pending")
                values = self.score(gp, acquisition, left)
                best = int(np.argmax(values))
                return AcquisitionResult(left[best], float(values[best]), n_rounds, start_values)
        for _ in range(100):
            X = self._unexplored.hold(space.sample_encoded(self.n_starts, seed=rng))
            values = self.score(gp, acquisition, X)
            for i in np.argsort(-values):
                if not self._is_duplicate(X[i], exclude):
                    return AcquisitionResult(X[i], float(values[i]), n_rounds, start_values)
        raise SearchSpaceExhaustedError("could not find a point that is not already evaluated or pending")


def _set_point_moves(space, n, gp, incumbent, rng):
    """``n`` copies of the best observed points (the incumbent and the next best of the
    GP's training data), each with one point of one Set moved: relocated uniformly in the box (the first
    half) or jittered by SPRAY_CONTINUOUS_STD (the second half).  Other coordinates stay as they are."""
    parents = [] if incumbent is None else [np.asarray(incumbent, dtype=float)[None, :]]
    X_train, y_train = getattr(gp, "X_train_", None), getattr(gp, "y_train_", None)
    if X_train is not None and y_train is not None and len(X_train) == len(y_train):
        parents.append(np.asarray(X_train)[np.argsort(np.asarray(y_train), kind="stable")[:SET_POINT_MOVE_PARENTS]])
    if not parents:
        return np.zeros((0, space.n_dims))
    parents = np.vstack(parents)[:SET_POINT_MOVE_PARENTS]
    moved = parents[rng.integers(len(parents), size=n)].copy()
    set_params = space.set_params
    which_set = rng.integers(len(set_params), size=n)
    relocate = np.arange(n) < n // 2
    for s, param in enumerate(set_params):
        rows = np.flatnonzero(which_set == s)
        if not len(rows):
            continue
        columns = np.arange(space.n_dims)[space.column(param.name)].reshape(param.n_points, param.dim)
        point_columns = columns[rng.integers(param.n_points, size=len(rows))]      # (rows, dim)
        old = moved[rows[:, None], point_columns]
        jittered = np.clip(old + rng.normal(0.0, SPRAY_CONTINUOUS_STD, old.shape), 0.0, 1.0)
        new = np.where(relocate[rows, None], rng.random(old.shape), jittered)
        moved[rows[:, None], point_columns] = new
    return moved


class _UnexploredColumns:
    """The continuous columns of a conditional space that fewer than UNEXPLORED_BELOW_OBSERVATIONS training points have
    active: candidates hold them at the centre of their range (UNEXPLORED_CONTINUOUS_CODE), and the local search does
    not move them."""

    def __init__(self, space, X_train=None, centre=None):
        self.space = space
        self.mask = None            # (n_continuous,) bool, or None when there is none
        if X_train is not None and space.is_conditional and space.n_continuous:
            nc = space.n_continuous
            active = space.active_columns(np.asarray(X_train, dtype=float))[:, :nc]
            unexplored = active.sum(axis=0) < UNEXPLORED_BELOW_OBSERVATIONS
            if centre is not None:   # a trust region's centre: the columns active there keep to its box
                unexplored &= ~space.active_columns(np.asarray(centre, dtype=float)[None, :])[0, :nc]
            self.mask = unexplored if unexplored.any() else None

    def hold(self, X):
        """``X`` (in place) with its coordinates in these columns, where active, at UNEXPLORED_CONTINUOUS_CODE."""
        if self.mask is not None and len(X):
            nc = self.space.n_continuous
            held = self.space.active_columns(X)[:, :nc] & self.mask
            X[:, :nc] = np.where(held, UNEXPLORED_CONTINUOUS_CODE, X[:, :nc])
        return X

    def movable(self, X):
        """(n_points, n_continuous) bool: the continuous coordinates of ``X`` a local search may move (active, and
        not in these columns)."""
        movable = self.space.active_columns(X)[:, :self.space.n_continuous]
        return movable if self.mask is None else movable & ~self.mask


def _same_point(others, x, n_continuous, tolerance):
    """(len(others),) bool: the rows of ``others`` with x's discrete part and continuous coordinates within
    ``tolerance`` of x's."""
    same = np.all(others[:, n_continuous:] == x[n_continuous:], axis=1)
    return same & np.all(np.abs(others[:, :n_continuous] - x[:n_continuous]) <= tolerance, axis=1)


def _merge_met_starts(X, acq, active, leader, n_continuous):
    """Stop (``active``, in place) each active start of the local search that has met another start still leading
    its own way: the same discrete part, continuous parts within MERGE_TOL, and an acquisition as high (a tie goes to
    the lower index).  ``leader[i]`` (in place) becomes the start it met."""
    leading = np.flatnonzero(leader == np.arange(len(X)))
    for i in np.flatnonzero(active):
        others = leading[leading != i]
        ahead = (acq[others] > acq[i]) | ((acq[others] == acq[i]) & (others < i))
        met = others[_same_point(X[others], X[i], n_continuous, MERGE_TOL) & ahead]
        if len(met):
            leader[i] = met[np.argmax(acq[met])]
            active[i] = False
            leading = leading[leading != i]


def _final_leaders(leader):
    """Where each start ends: a start that met another ends where that one ends (as it would have climbed there
    too), following the starts it met in turn."""
    for _ in range(len(leader)):
        if np.all(leader[leader] == leader):
            break
        leader = leader[leader]
    return leader


def _independent_runs(optimizer, gp, acquisition, X, maxiter=None):
    """A continuous search of the rows of X with their discrete parts held: one quasi-Newton run per start on its
    own (``batched_lbfgs``: one model call per iteration for all running starts), at most ``maxiter`` iterations
    (default: as many as the alternation allows in all, on a set space with no discrete part to alternate with).
    Independent runs stop one by one and keep their curvature pairs to the end; the lockstep L-BFGS-B of
    ``_continuous_step`` evaluates every start until the slowest stops and restarts its memory every round.  On
    set spaces, where a row of the model's input gradient costs O(N m² d), that took 30-40 % off the local search
    and found higher acquisition values, and on mixed spaces it ends the alternation in 2-3 rounds; with a cheap
    kernel (Matérn on a few Reals) the NumPy bookkeeping of the runs costs more than it saves, so plain continuous
    spaces keep the lockstep run (docs/benchmarks/suggestion.md, "Independent runs of the local search on set
    spaces", "Independent quasi-Newton runs on mixed spaces").

    Returns the continuous parts (n_starts, n_continuous) and their acquisition values."""
    space, region = optimizer.space, optimizer._region
    nc = space.n_continuous

    def negative_acquisition(starts, C):
        Z = X[starts]
        Z[:, :nc] = C
        mu, sigma, dmu, dsigma = gp.predict_standardized_with_input_gradient(Z)
        value, dvalue_dmu, dvalue_dsigma = acquisition(mu, sigma)
        return -value, -(dvalue_dmu[:, None] * dmu + dvalue_dsigma[:, None] * dsigma)

    lower, upper = (np.zeros(nc), np.ones(nc)) if region is None else (region.lower, region.upper)
    # an inactive coordinate is pinned to its value (its inactive code), an unexplored one to its centre
    active = optimizer._unexplored.movable(X)
    start = X[:, :nc]
    C, _, _ = minimize_batched(negative_acquisition, start, np.where(active, lower, start),
                               np.where(active, upper, start),
                               maxiter or optimizer.lbfgs_iterations_per_round * optimizer.max_rounds)
    Z = X.copy()
    Z[:, :nc] = C
    mu, sigma = gp.predict_standardized(Z)
    return C, acquisition(mu, sigma)[0]
