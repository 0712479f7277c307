"""Random mixed spaces shared by the kernel and backend tests (importable: tests/ is on pythonpath)."""
import fastfm as ff


def _cycle(n):
    return [(i, (i + 1) % n) for i in range(n)]


def make_spaces():
    """Spaces exercising every variable kind; names are the pytest ids."""
    return {
        "mixed": ff.Space([
            ff.Real("x", -1.0, 1.0),
            ff.Real("lr", 1e-4, 1e-1, log=True),
            ff.Integer("depth", 1, 6),
            ff.Ordinal("size", ["s", "m", "l"]),
            ff.Categorical("booster", ["gbtree", "dart", "linear"]),
            # a 6-cycle has repeated eigenvalues, so eigenvalue grouping matters
            ff.Graph("pair", n_states=6, edges=_cycle(6)),
        ]),
        "nominal_only": ff.Space([ff.Categorical("a", list("abcd")), ff.Categorical("b", [0, 1, 2])]),
        "func3c_like": ff.Space([
            ff.Real("x1", -1, 1), ff.Real("x2", -1, 1),
            ff.Categorical("h1", [0, 1, 2]), ff.Categorical("h2", list(range(5))), ff.Categorical("h3", list(range(4))),
        ]),
        "weighted_graph": ff.Space([
            ff.Real("u", 0.0, 2.0),
            ff.Graph("star", n_states=5, edges=[(0, 1), (0, 2), (0, 3), (0, 4)], weights=[1.0, 2.0, 0.5, 1.0]),
            ff.Integer("k", 0, 3),
        ]),
    }


SPACES = make_spaces()

