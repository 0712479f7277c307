"""The suite's timing inputs (``fastfm.benchmarks.workloads``): seeded, of the documented shapes, and what the
CLI builds backend arguments from."""
import numpy as np
import pytest

from fastfm.benchmarks import workloads


def test_benchmark_spaces_are_the_documented_ones_and_seeded():
    spaces = workloads.benchmark_spaces()
    assert list(spaces) == ["Func3C", "Ackley5C", "NAS-like"]
    assert (spaces["Func3C"].n_continuous, spaces["Func3C"].n_discrete) == (2, 3)
    assert (spaces["Ackley5C"].n_continuous, spaces["Ackley5C"].n_discrete) == (1, 5)
    assert (spaces["NAS-like"].n_continuous, spaces["NAS-like"].n_discrete) == (6, 20)
    assert list(workloads.benchmark_spaces()["NAS-like"].n_states) == list(spaces["NAS-like"].n_states)
    assert all(3 <= n <= 8 for n in spaces["NAS-like"].n_states)


@pytest.mark.parametrize("name", ["Func3C", "NAS-like"])
def test_kernel_inputs_are_scaled_seeded_and_symmetric(name):
    space = workloads.benchmark_spaces()[name]
    C, D, W, (spectra, alphas, betas, variance) = workloads.kernel_inputs(space, 30, seed=4)
    X = space.sample_encoded(30, seed=4)
    np.testing.assert_array_equal(C * workloads.LENGTHSCALE, space.split(X)[0])
    assert C.flags.c_contiguous and D.shape == (30, space.n_discrete)
    np.testing.assert_array_equal(W, W.T)
    assert spectra is space.packed_spectra and variance == workloads.VARIANCE
    np.testing.assert_array_equal(alphas, np.full(space.n_discrete, workloads.ALPHA))
    np.testing.assert_array_equal(betas, np.full(space.n_discrete, workloads.BETA))
    again = workloads.kernel_inputs(space, 30, seed=4)
    np.testing.assert_array_equal(again[2], W)
    assert not np.array_equal(workloads.kernel_inputs(space, 30, seed=5)[0], C)


def test_candidates_sets_and_hierarchical_inputs_have_their_shapes():
    space = workloads.benchmark_spaces()["NAS-like"]
    C1, D1 = workloads.candidate_inputs(space, 40)
    assert C1.shape == (40, 6) and D1.shape == (40, 20) and np.all(C1 <= 1.0 / workloads.LENGTHSCALE)
    sets, W = workloads.set_inputs(7, 5, 2, seed=1)
    assert sets.shape == (7, 5, 2) and np.all((sets >= 0) & (sets < 1))
    np.testing.assert_array_equal(W, W.T)
    deep, X, W = workloads.hierarchical_inputs(25, seed=2)
    deep.validate_encoded(X)
    assert X.shape[0] == 25 and W.shape == (25, 25)
    np.testing.assert_array_equal(W, W.T)
