"""``Space.sample_stratified_encoded`` (the initial design of BO) and the Optimizer's use of it: each parameter
is spread evenly, a batch and a loaded journal continue one design, and random search stays random."""
import shutil
from collections import Counter

import numpy as np
import pytest

import fastfm as ff

SPACE = ff.Space([ff.Real("x", -1.0, 1.0), ff.Real("lr", 1e-4, 1.0, log=True), ff.Integer("k", 0, 4),
                  ff.Integer("n_trees", 10, 300), ff.Ordinal("width", [16, 32, 64, 128]),
                  ff.Categorical("c", ["a", "b", "c"]), ff.Set("s", 2, 2)])


@pytest.mark.parametrize("n", [1, 7, 10, 24])
def test_every_parameter_is_spread_evenly(n):
    X = SPACE.sample_stratified_encoded(n, seed=n)
    SPACE.validate_encoded(X)
    for name in ("x", "lr"):            # one point in each of n strata of the code
        strata = np.floor(X[:, SPACE.column(name)] * n).astype(int)
        assert sorted(strata) == list(range(n))
    for name, n_states in (("k", 5), ("width", 4), ("c", 3)):     # each state equally often, up to one
        counts = Counter(X[:, SPACE.column(name)].tolist())
        assert len(counts) == min(n, n_states)
        assert max(counts.values()) - min(counts.values()) <= 1
    # a rounded continuous Integer: the i-th smallest of its n values lies in the i-th n-th of its 291 integers
    n_trees = np.sort([config["n_trees"] - 10 for config in SPACE.decode(X)])
    assert SPACE["n_trees"].is_continuous
    assert np.all(n_trees >= np.floor(291 * np.arange(n) / n)) and np.all(n_trees <= 291 * np.arange(1, n + 1) / n)
    assert X[:, SPACE.column("s")].shape == (n, 4)


def test_the_same_seed_gives_the_same_design_and_columns_are_shuffled_independently():
    a, b = SPACE.sample_stratified_encoded(12, seed=3), SPACE.sample_stratified_encoded(12, seed=3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, SPACE.sample_stratified_encoded(12, seed=4))
    x, k = a[:, SPACE.column("x")], a[:, SPACE.column("k")]
    assert not np.all(np.diff(x[np.argsort(k, kind="stable")]) > 0)    # not sorted together


def test_a_conditional_space_gets_a_valid_design():
    space = ff.Space([ff.Categorical("model", ["svm", "tree"]),
                      ff.Real("C", 1e-3, 1e3, log=True, active_if={"model": "svm"}),
                      ff.Integer("depth", 1, 8, active_if={"model": "tree"})])
    X = space.sample_stratified_encoded(10, seed=0)
    space.validate_encoded(X)
    assert Counter(c["model"] for c in space.decode(X)) == {"svm": 5, "tree": 5}


def _objective(config):
    return config["x"] ** 2 + (config["c"] != "b") + 0.1 * config["k"]


SMALL = ff.Space([ff.Real("x", -1.0, 1.0), ff.Integer("k", 0, 4), ff.Categorical("c", ["a", "b", "c"])])


def test_the_optimizers_initial_points_are_one_design_across_a_batch_and_a_load(tmp_path):
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(SMALL, n_init=9, seed=5, storage=path)
    first = opt.ask(n=4)
    for x in first[:3]:
        opt.tell(x, _objective(x))
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    loaded = ff.Optimizer.load(copy)
    rest, rest_loaded = opt.ask(n=5), loaded.ask(n=5)
    assert rest == rest_loaded
    design = [dict(c) for c in first + rest]
    assert Counter(c["c"] for c in design) == {"a": 3, "b": 3, "c": 3}
    assert sorted(np.floor((np.array([c["x"] for c in design]) + 1) / 2 * 9).astype(int)) == list(range(9))
    assert opt.last_suggestion_info["source"] == "random"


def test_random_designs_and_random_search_draw_independent_points():
    for options in ({"initial_design": "random"}, {"kernel": "random"}):
        opt = ff.Optimizer(SMALL, n_init=9, seed=0, **options)
        xs = np.array([SMALL.encode(x) for x in opt.ask(n=9)])
        rng = np.random.default_rng(0)      # what the optimizer's generator draws, one point at a time
        reference = np.vstack([SMALL.sample_encoded(1, seed=rng) for _ in range(9)])
        assert opt._design_seed is None
        np.testing.assert_allclose(xs, reference)
    with pytest.raises(ValueError, match="initial_design must be one of"):
        ff.Optimizer(SMALL, initial_design="sobol")


def test_auto_initial_design_tries_every_value_of_a_many_valued_nominal_parameter(tmp_path):
    from fastfm.bo.optimizer import DEFAULT_N_INIT, MAX_AUTO_N_INIT, initial_design_size
    many = ff.Space([ff.Real("x", 0.0, 1.0), ff.Categorical("c", [f"v{i}" for i in range(17)]),
                     ff.Categorical("d", "abc"), ff.Integer("k", 0, 40)])
    # an ordinal parameter of 41 values and a nominal one of 3 leave the default; a nominal one of 17 sets it
    assert initial_design_size(SMALL) == initial_design_size(ff.Space([ff.Integer("k", 0, 40)])) == DEFAULT_N_INIT
    assert initial_design_size(many) == 17 and initial_design_size(many, 12) == 12
    huge = ff.Space([ff.Categorical("c", [str(i) for i in range(50)])])
    assert initial_design_size(huge) == MAX_AUTO_N_INIT
    path = tmp_path / "run.jsonl"
    opt = ff.Optimizer(many, seed=3, storage=path)
    assert opt.n_init == 17
    design = opt.ask(n=17)
    assert sorted(c["c"] for c in design) == sorted(f"v{i}" for i in range(17))   # each value once
    assert opt.last_suggestion_info["source"] == "random"
    assert ff.Optimizer.load(path).n_init == 17                                  # the journal keeps the number
    for bad in ("many", 0, 2.5, True):
        with pytest.raises(ff.InvalidValueError, match="n_init must be 'auto' or a positive integer"):
            ff.Optimizer(many, n_init=bad)
