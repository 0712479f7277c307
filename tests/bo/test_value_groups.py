"""Groups of nominal values learned at the full refits (``fastfm.bo.value_groups``): the grouped graph's kernel,
what the greedy merges find on objectives whose values act alike or differ, where groups are learned, and that a
journal replays them."""
import shutil
import warnings

import numpy as np
import pytest

import fastfm as ff
from fastfm.bo import value_groups
from fastfm.bo.surrogate import _is_full_refit
from fastfm.kernels import make_kernel

SPACE = ff.Space([ff.Real("x", -1.0, 1.0), ff.Real("z", -1.0, 1.0), ff.Categorical("a", list(range(3))),
                  ff.Categorical("b", list(range(5)))])
_EFFECT_A = np.array([0.0, -1.0, 1.0])
_ALIKE_B = np.array([1.0, -1.0, 0.0, 0.0, 0.0])          # b = 2, 3 and 4 act alike
_SPREAD_B = np.array([2.0, -2.0, 0.0, 4.0, -4.0])       # every value of b differs, some more than others


def _objective(effect_b):
    def f(config):
        return (config["x"] - 0.3) ** 2 + (config["z"] + 0.2) ** 2 + _EFFECT_A[config["a"]] + effect_b[config["b"]]
    return f


def _groups_after_random_points(objective, seed, n=36):
    """The optimizer after the ask of the full refit at ``n`` told random points (``n`` is on the schedule)."""
    assert _is_full_refit(n)
    opt = ff.Optimizer(SPACE, seed=seed, n_restarts=3, n_init=n)
    for _ in range(n):
        x = opt.ask()
        opt.tell(x, objective(x))
    opt.ask()
    return opt


@pytest.mark.parametrize("name", ["modlap", "modlap_additive"])
def test_singleton_groups_give_the_complete_graphs_kernel(name):
    """The grouped graph with no group (every edge of weight 1) is the nominal parameter's complete graph."""
    options = {"unit_diagonal": True} if name == "modlap" else {}
    X = SPACE.sample_encoded(30, seed=0)
    plain = make_kernel(name, SPACE, **options)
    singletons = make_kernel(name, value_groups.grouped_space(SPACE, {"b": [[v] for v in range(5)]}), **options)
    np.testing.assert_allclose(singletons(X), plain(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["modlap", "modlap_additive"])
def test_a_group_makes_its_values_more_alike_and_the_kernel_stays_psd(name):
    options = {"unit_diagonal": True} if name == "modlap" else {}
    points = SPACE.encode([{"x": 0.1, "z": -0.4, "a": 1, "b": b} for b in range(5)])
    plain = make_kernel(name, SPACE, **options)
    grouped = make_kernel(name, value_groups.grouped_space(SPACE, {"b": [[0], [1], [2, 3, 4]]}), **options)
    K_plain, K_grouped = plain(points), grouped(points)
    for i, j in ((2, 3), (2, 4), (3, 4)):
        assert K_grouped[i, j] > K_plain[i, j] + 0.05, (i, j, K_grouped[i, j], K_plain[i, j])
    assert K_grouped[0, 1] <= K_plain[0, 1] + 1e-12
    X = SPACE.sample_encoded(60, seed=1)
    K = grouped(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -1e-10


def test_values_that_act_alike_are_grouped_apart_from_the_others():
    found = []
    for seed in range(4):
        opt = _groups_after_random_points(_objective(_ALIKE_B), seed)
        groups = opt._fit_record["groups"]
        for group in groups.get("b", []):
            assert len(group) == 1 or set(group) <= {2, 3, 4}, (seed, groups)
        found.append([2, 3, 4] in groups.get("b", []))
        shown = opt.last_suggestion_info.get("value_groups", {})
        assert shown == {name: [g for g in partition if len(g) > 1] for name, partition in groups.items()}
    assert sum(found) >= 2, found


def test_groups_follow_the_order_of_the_values_effects():
    """Where every value differs, a merge still joins values whose effects are close: each group is a run of
    consecutive values in the order of their effects, never values with another value's effect between them."""
    rank = np.argsort(np.argsort(_SPREAD_B))
    for seed in range(3):
        groups = _groups_after_random_points(_objective(_SPREAD_B), seed)._fit_record["groups"]
        for group in groups.get("b", []):
            ranks = sorted(rank[v] for v in group)
            assert ranks == list(range(ranks[0], ranks[0] + len(ranks))), (seed, groups)


def test_where_groups_are_learned():
    assert value_groups.grouped_parameters(SPACE) == [0, 1]
    assert ff.Optimizer(SPACE)._learns_value_groups()
    assert not ff.Optimizer(SPACE, kernel="modlap")._learns_value_groups()      # a kernel the user named
    binary_and_many = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", [0, 1]),
                                ff.Categorical("d", list(range(value_groups.MAX_VALUES + 1)))])
    assert value_groups.grouped_parameters(binary_and_many) == []
    assert not ff.Optimizer(binary_and_many)._learns_value_groups()
    conditional = ff.Space([ff.Categorical("kind", ["a", "b", "c"]),
                            ff.Real("x", 0.0, 1.0, active_if={"kind": ["a"]})])
    assert value_groups.grouped_parameters(conditional) == []
    with_set = ff.Space([ff.Categorical("c", [0, 1, 2]), ff.Set("s", 3, 2)])
    assert value_groups.grouped_parameters(with_set) == []


def _run_to_a_grouped_full_refit(tmp_path):
    """(optimizer with a journal, the journal's path, the objective, the pending suggestion) right after the ask of
    the first full refit that holds groups, on the first of a few seeds whose run has one by 36 told values (seed 1
    here: b = 2, 3, 4 from 29 on)."""
    objective = _objective(_ALIKE_B)
    for seed in (1, 2, 0, 3):
        path = tmp_path / f"run{seed}.jsonl"
        opt = ff.Optimizer(SPACE, n_init=6, seed=seed, n_restarts=3, storage=path)
        for _ in range(36):
            x = opt.ask()
            record = opt._fit_record
            if record is not None and _is_full_refit(record["n_told"]) and record.get("groups"):
                return opt, path, objective, x
            opt.tell(x, objective(x))
    pytest.fail("no run held groups of values by 36 told values")


def test_a_journal_replays_the_groups(tmp_path):
    """The warm refits after a grouped full refit keep its groups, and a loaded journal suggests what the
    uninterrupted run does."""
    opt, path, objective, x = _run_to_a_grouped_full_refit(tmp_path)
    groups = opt._fit_record["groups"]
    opt.tell(x, objective(x))
    for _ in range(3):
        x = opt.ask()
        assert opt._fit_record["groups"] == groups        # warm refits keep them
        opt.tell(x, objective(x))
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    assert loaded._fit_record == opt._fit_record
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a, b = opt.ask(n=2), loaded.ask(n=2)
    assert a == b
    for x in a:
        opt.tell(x, objective(x))
        loaded.tell(x.trial_id, objective(x))
    assert opt.ask() == loaded.ask()
    assert opt._fit_record == loaded._fit_record


def test_a_full_refit_with_groups_is_rebuilt_from_its_record(tmp_path):
    """A loaded journal that ends with a full refit's ask rebuilds that fit from its record: the candidates on the
    plain graphs, then the same groups and the same hyperparameters."""
    opt, path, _, _ = _run_to_a_grouped_full_refit(tmp_path)
    loaded = ff.Optimizer.load(path)
    assert loaded._fit_record == opt._fit_record
    record = dict(loaded._fit_record)
    rebuilt = loaded._fit(record)
    assert record["groups"] == opt._fit_record["groups"]
    np.testing.assert_array_equal(rebuilt.kernel_.theta, opt.model.kernel_.theta)
    assert rebuilt.noise_ == opt.model.noise_


def test_a_partition_has_one_graph():
    """A greedy pass rebuilds the space per candidate: each partition's Graph (and its Laplacian spectrum) is made
    once, with the group's edges at EDGE_WEIGHT."""
    first = value_groups.grouped_space(SPACE, {"a": [[0, 2], [1]], "b": [[0], [1], [2, 3, 4]]})
    again = value_groups.grouped_space(SPACE, {"a": [[0, 2], [1]], "b": [[0, 1], [2, 3, 4]]})
    assert first["a"] is again["a"]
    assert first["b"] is not again["b"]
    weights = dict(zip(first["a"].edges, first["a"].weights))
    assert weights == {(0, 1): 1.0, (0, 2): value_groups.EDGE_WEIGHT, (1, 2): 1.0}


def test_the_kernels_of_tried_partitions_are_bounded_and_not_pickled(monkeypatch):
    """A full refit's greedy search builds a kernel per candidate partition; the optimizer keeps only the most
    recently used few (a long run kept every partition it had tried), and a pickled copy, which rebuilds them on
    demand, continues as the original."""
    import pickle

    from fastfm.bo import surrogate

    monkeypatch.setattr(surrogate, "GROUPED_KERNEL_CACHE_SIZE", 4)
    asked = []      # (kernel name, partition) of every grouped kernel the fits asked for, in order
    candidate_kernel = surrogate._Surrogate._candidate_kernel

    def recording(self, name, groups):
        if groups:
            asked.append((name, repr(groups)))
        return candidate_kernel(self, name, groups)

    monkeypatch.setattr(surrogate._Surrogate, "_candidate_kernel", recording)
    objective = _objective(_ALIKE_B)
    opt = _groups_after_random_points(objective, seed=1)
    last_use = {key: i for i, key in enumerate(asked)}
    assert len(last_use) > 4                          # more partitions than the cache holds
    assert list(opt._grouped_kernels) == sorted(last_use, key=last_use.get)[-4:]   # the 4 used last, in order
    copy = pickle.loads(pickle.dumps(opt))
    assert "_grouped_kernels" not in copy.__dict__
    for _ in range(2):
        [pending] = opt.pending
        value = objective(pending)
        opt.tell(pending.trial_id, value)
        copy.tell(pending.trial_id, value)
        assert opt.ask() == copy.ask()
    assert copy._fit_record == opt._fit_record
