"""Batches: ``ask(n=4)``, and four asks without a tell, give four distinct, spread-out configs on Func3C — not
the near-duplicates (the same discrete values, continuous values within 2%) that the issue reported."""
import itertools

import pytest

import fastfm as ff
from fastfm.benchmarks import Func3C

PROBLEM = Func3C()
DISCRETE = [p.name for p in PROBLEM.space.parameters if isinstance(p, ff.Categorical)]
CONTINUOUS = [p for p in PROBLEM.space.parameters if isinstance(p, ff.Real)]
assert DISCRETE == ["h1", "h2", "h3"] and [p.name for p in CONTINUOUS] == ["x1", "x2"]


def _near_duplicates(a, b, tolerance=0.02):
    """The same discrete values and every continuous value within ``tolerance`` of its range."""
    return (all(a[name] == b[name] for name in DISCRETE)
            and all(abs(a[p.name] - b[p.name]) <= tolerance * (p.high - p.low) for p in CONTINUOUS))


def _optimizer_with_12_told(seed, pending):
    opt = ff.Optimizer(PROBLEM.space, n_init=5, seed=seed, n_restarts=2, pending=pending)
    for _ in range(12):
        x = opt.ask()
        opt.tell(x, PROBLEM(x))
    assert opt.last_suggestion_info["source"] == "model"
    return opt


def _check_spread(configs, opt):
    assert len(configs) == 4
    assert len({tuple(sorted(c.items())) for c in configs}) == 4           # pairwise distinct
    assert len({c.trial_id for c in configs}) == 4
    pairs = list(itertools.combinations(configs, 2))
    near = [(a, b) for a, b in pairs if _near_duplicates(a, b)]
    assert len(near) < len(pairs), "every pair of the batch is a near-duplicate"   # the reported bug
    assert near == [], f"near-duplicate suggestions in one batch: {near}"
    told = [t.config for t in opt.trials]
    for c in configs:                                                       # nor a repeat of a told point
        assert not any(_near_duplicates(c, t, tolerance=1e-9) for t in told)
    assert {p.trial_id for p in opt.pending} == {c.trial_id for c in configs}


@pytest.mark.parametrize("pending", ["believer", "liar_min"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ask_n_4_gives_four_spread_out_configs(seed, pending):
    opt = _optimizer_with_12_told(seed, pending)
    batch = opt.ask(n=4)
    assert opt.last_suggestion_info["source"] == "model"
    assert opt.last_suggestion_info["n_pending"] == 3                       # the last one saw the other three
    _check_spread(batch, opt)


@pytest.mark.parametrize("pending", ["believer", "liar_min"])
@pytest.mark.parametrize("seed", [0, 3])
def test_four_asks_without_a_tell_give_four_spread_out_configs(seed, pending):
    opt = _optimizer_with_12_told(seed, pending)
    asks = [opt.ask() for _ in range(4)]
    assert opt.last_suggestion_info["n_pending"] == 3
    _check_spread(asks, opt)


def test_a_batch_of_one_is_a_list_and_ask_n_validates_n():
    opt = ff.Optimizer(PROBLEM.space, kernel="random", n_init=2, seed=0)
    one = opt.ask(n=1)
    assert isinstance(one, list) and len(one) == 1 and one[0].trial_id == 0
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ff.InvalidValueError):
            opt.ask(n=bad)
    assert [p.trial_id for p in opt.pending] == [0]                        # nothing recorded by a bad call


def test_a_batch_larger_than_what_is_left_of_a_finite_space_is_cut_short():
    space = ff.Space([ff.Categorical("a", ["x", "y", "z"]), ff.Ordinal("b", [1, 2])])
    opt = ff.Optimizer(space, n_init=2, seed=0, n_restarts=2)
    first = opt.ask()
    opt.tell(first, 1.0)
    batch = opt.ask(n=10)
    assert len(batch) == 5                                                  # 6 points, one told
    keys = {tuple(sorted(c.items())) for c in batch} | {tuple(sorted(first.items()))}
    assert len(keys) == 6
    from fastfm.optim import SearchSpaceExhaustedError
    with pytest.raises(SearchSpaceExhaustedError):
        opt.ask()
    with pytest.raises(SearchSpaceExhaustedError):
        opt.ask(n=2)
