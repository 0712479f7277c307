"""repr works for every kernel on every kind of space, and for a GP holding it (issue 23 §3)."""
import pytest

import fastfm as ff
from fastfm.exceptions import SpaceDefinitionError
from fastfm.gp import GaussianProcessRegressor
from fastfm.kernels import AddLap, ProdLap, make_kernel, set_space_kernel
from fastfm.kernels._factory import _BY_NAME

SPACES = {
    "continuous": lambda: ff.Space([ff.Real("x", 0.0, 1.0), ff.Real("y", 1.0, 10.0, log=True)]),
    "one-real": lambda: ff.Space([ff.Real("x", 0.0, 1.0)]),
    "discrete": lambda: ff.Space([ff.Categorical("c", ["a", "b"]), ff.Integer("i", 0, 3)]),
    "mixed": lambda: ff.Space([ff.Real("x", 0.0, 1.0), ff.Ordinal("o", [1, 2, 3])]),
    "set": lambda: ff.Space([ff.Set("s", n_points=2, dim=2)]),
    "set-mixed": lambda: ff.Space([ff.Set("s", n_points=1, dim=1), ff.Categorical("c", ["a", "b"])]),
}


def test_baseline_kernels_on_a_continuous_space():
    space = SPACES["continuous"]()
    for kind in (ProdLap, AddLap):
        text = repr(kind(space))
        assert text.startswith(kind.__name__) and "beta=[]" in text
        assert "GaussianProcessRegressor(kernel=" + text in repr(GaussianProcessRegressor(kind(space)))


@pytest.mark.parametrize("space_name", sorted(SPACES))
@pytest.mark.parametrize("factory", [make_kernel, set_space_kernel])
def test_every_kernel_repr_on_every_space(space_name, factory):
    space = SPACES[space_name]()
    built = 0
    for name in sorted(_BY_NAME):
        try:
            kernel = factory(name, space)
        except SpaceDefinitionError:   # e.g. ModLap needs a discrete variable
            continue
        built += 1
        text = repr(kernel)
        assert isinstance(text, str) and text
        assert text in repr(GaussianProcessRegressor(kernel))
    assert built
