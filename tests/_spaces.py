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




def make_conditional_space():
    """A conditional space with nested conditions (model → kernel → degree → coef0) and
    every parameter kind among its conditional parameters (SPEC §3)."""
    return ff.Space([
        ff.Categorical("model", ["linear", "svm", "mlp"]),
        ff.Real("C", 1e-3, 1e3, log=True),
        ff.Categorical("kernel", ["rbf", "poly", "sigmoid"], active_if={"model": ["svm"]}),
        ff.Real("gamma", 1e-4, 1.0, log=True, active_if={"kernel": ["rbf", "poly"]}),
        ff.Integer("degree", 2, 5, active_if={"kernel": "poly"}),
        ff.Real("coef0", 0.0, 1.0, active_if={"degree": [3, 4, 5]}),
        ff.Ordinal("n_layers", [1, 2], active_if={"model": ["mlp"]}),
        ff.Graph("width1", 4, [(0, 1), (1, 2), (2, 3), (3, 0)], labels=[8, 16, 32, 64], active_if={"model": "mlp"}),
        ff.Real("width2", 8.0, 64.0, active_if={"n_layers": [2]}),
    ])


# every kernel and backend test also runs on a conditional space (FM kernels included)
SPACES = {**make_spaces(), "conditional": make_conditional_space()}
