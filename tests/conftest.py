"""Shared fixtures: one set of random mixed spaces serves every kernel and backend test."""
import numpy as np
import pytest

from _spaces import SPACES


@pytest.fixture(params=sorted(SPACES), ids=sorted(SPACES))
def space(request):
    return SPACES[request.param]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
