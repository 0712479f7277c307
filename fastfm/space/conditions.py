"""Conditional spaces (SPEC §3): the ``active_if`` DAG of a :class:`~fastfm.space.Space` and what follows from it.

A parameter with ``active_if`` is active only when every parent it names is active and takes one of the
listed values. These functions hold the logic; ``Space.is_active``, ``Space.active_columns`` and
``Space.enforce_conditions`` are their documented entry points. The state they read stays on the
``Space`` (``_conditions``: name -> [(parent name, parent column, allowed codes)], ``_topological_order``),
so spaces pickled before this module existed still load.
"""
import numpy as np

from ..exceptions import InvalidConfigError, SpaceDefinitionError

__all__ = ["resolve", "activity", "active_columns", "enforce", "inactive_code"]


def inactive_code(p):
    """The encoded value of ``p`` where it is inactive: 0.0 for a continuous column, the extra state n else."""
    return float(p.n_states) if not p.is_continuous else 0.0


def resolve(space):
    """({name: [(parent name, parent column, allowed codes)]}, names in an order where parents come first).

    Raises
    ------
    SpaceDefinitionError
        A condition names an unknown or a continuous parameter, lists a
        value the parent does not have, or the conditions form a cycle.
    """
    conditions = {}
    for p in space.parameters:
        if not p.active_if:
            continue
        resolved = []
        for parent_name, allowed in p.active_if.items():
            parent = space._by_name.get(parent_name)
            if parent is None:
                raise SpaceDefinitionError(
                    f"parameter {p.name!r}: active_if names unknown parameter {parent_name!r}; "
                    f"the space has {space.names}")
            if parent.is_continuous:
                hint = (f" ({parent_name!r} is searched as a rounded continuous variable; pass encoding='graph' "
                        "to make it discrete)" if hasattr(parent, "snap_codes") else "")
                raise SpaceDefinitionError(
                    f"parameter {p.name!r}: active_if names continuous parameter {parent_name!r}; "
                    f"conditions may only depend on discrete parameters{hint}")
            codes = []
            for value in allowed:
                try:
                    codes.append(parent.encode_value(value))
                except InvalidConfigError:
                    raise SpaceDefinitionError(
                        f"parameter {p.name!r}: active_if[{parent_name!r}] lists {value!r}, which is not a "
                        f"value of {parent_name!r}") from None
            resolved.append((parent_name, space._column[parent_name], np.unique(np.array(codes, dtype=float))))
        conditions[p.name] = resolved
    # depth-first topological sort; a grey node met again closes a cycle
    order, state = [], {}

    def visit(name, path):
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            cycle = path[path.index(name):] + [name]
            raise SpaceDefinitionError(f"the active_if conditions form a cycle: {' -> '.join(cycle)}")
        state[name] = "visiting"
        for parent_name in (space._by_name[name].active_if or {}):
            visit(parent_name, path + [name])
        state[name] = "done"
        order.append(name)

    for p in space.parameters:
        visit(p.name, [])
    return conditions, order


def activity(space, config):
    """{name: bool} in declaration order: which parameters are active in the (possibly partial) ``config``."""
    if not isinstance(config, dict):
        raise InvalidConfigError(f"a config must be a dict, got {config!r} ({type(config).__name__})")
    active = {}
    for pname in space._topological_order:
        ok = True
        for parent_name, _, codes in space._conditions.get(pname, ()):
            ok = active[parent_name] and parent_name in config
            if ok:
                try:
                    ok = space._by_name[parent_name].encode_value(config[parent_name]) in codes
                except InvalidConfigError:   # a bad value activates nothing
                    ok = False
            if not ok:
                break
        active[pname] = ok
    return {n: active[n] for n in space.names}


def active_columns(space, X):
    """Activity of every encoded column of ``X`` ((n_points, n_dims) or (n_dims,)), from its discrete columns."""
    X = np.asarray(X, dtype=np.float64)
    single = X.ndim == 1
    X2 = np.atleast_2d(X)
    mask = np.ones(X2.shape, dtype=bool)
    for name in space._topological_order:
        col = space._column[name]
        for _, parent_col, codes in space._conditions.get(name, ()):
            mask[:, col] &= mask[:, parent_col] & np.isin(X2[:, parent_col], codes)
    return mask[0] if single else mask


def enforce(space, X, rng=None, previously_active=None):
    """Make encoded points consistent with the conditions, in place (see ``Space.enforce_conditions``)."""
    if not space._conditions:
        return X
    rng = None if rng is None else np.random.default_rng(rng)
    for name in space._topological_order:
        p = space._by_name[name]
        if name not in space._conditions:
            continue
        col = space._column[name]
        active = np.ones(len(X), dtype=bool)
        for _, parent_col, codes in space._conditions[name]:
            active &= np.isin(X[:, parent_col], codes)
        code = inactive_code(p)
        X[~active, col] = code
        # a discrete column still holding "inactive" needs a value; a continuous one cannot tell
        needs_value = active & (X[:, col] == code) if not p.is_continuous else np.zeros(len(X), bool)
        if previously_active is not None:
            needs_value |= active & ~previously_active[:, col]
        if needs_value.any():
            X[needs_value, col] = (p.sample_codes(rng, int(needs_value.sum())) if rng is not None
                                   else (0.5 if p.is_continuous else 0.0))
    return X
