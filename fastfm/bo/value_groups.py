"""Groups of a nominal parameter's values that behave alike, learned at the surrogate's full refits (issue 24 §1).

Why.  A nominal parameter is a complete graph: the FM kernel makes every two of its values equally similar, so the
model cannot learn that some values act alike, and a run spends evaluations on each of them as an unknown.  On
Func2C (h2 selects Rosenbrock, the six-hump camel or Beale three times over) the stalled runs' model rated the
optimum's combination 0.03-3.9 nats of log-EI below its best and kept trying h2's three Beale values one by one;
the same run with those three values as one reached -0.199 at 60 evaluations with 3 of 80 runs above -0.15,
against -0.178 and 11 of 80 (docs/benchmarks/bo-efficiency.md, "The default on 80 fresh seeds").

What.  At a full refit, for each nominal parameter of MIN_VALUES to MAX_VALUES values (on a space without
conditions or sets), values are merged into groups greedily: the merge of two groups that raises the log marginal
likelihood of the chosen kernel, at its fitted hyperparameters, the most, while it raises it by more than
MERGE_NATS.  A group's values are then joined by edges of weight EDGE_WEIGHT in the parameter's graph (the other
edges keep weight 1): the same FM kernel on a weighted complete graph (``fastfm.space.Graph``), whose large
Laplacian eigenvalues inside a group smooth the differences between its values away, so nothing new is computed
in the backends.  The kernel refitted on the grouped graph (warm, from the chosen fit's optimum) replaces the
chosen fit when its leave-one-out predictive density is ahead by more than LOO_STANDARD_ERRORS standard errors.
The warm refits until the next full refit keep the groups; the search (the acquisition's moves, the untried
values) still sees every value.

Measured on 80 seeds no default was chosen on, 60 evaluations: Func2C -0.178 -> -0.184 (runs above -0.15:
11 -> 9), Func3C -0.578 -> -0.631 (above -0.3: 14 -> 8), both level at 30; SVM 0.7081 -> 0.7075 (20 seeds); the
spaces without such a parameter unchanged; a fifth to a quarter more time per suggestion on Func2C and Func3C
(docs/benchmarks/bo-efficiency.md, "Groups of nominal values that act alike").
"""
import functools
import itertools
import warnings

import numpy as np

from ..gp.selection import loo_difference

__all__ = ["MIN_VALUES", "MAX_VALUES", "MERGE_NATS", "EDGE_WEIGHT", "LOO_STANDARD_ERRORS", "grouped_parameters",
           "grouped_space", "learn_value_groups"]

MIN_VALUES = 3         # two values: a merge is the parameter's irrelevance, which the kernel's own β learns
MAX_VALUES = 8         # a greedy pass evaluates every pair of groups: C(n, 2) likelihoods per parameter
MERGE_NATS = 1.0
EDGE_WEIGHT = 10.0
LOO_STANDARD_ERRORS = 1.0


def grouped_parameters(space):
    """Indices (into ``space.discrete_params``) of the nominal parameters whose values may be grouped; none on a
    space with conditions or Set parameters."""
    if space.is_conditional or space.set_params:
        return []
    return [j for j, p in enumerate(space.discrete_params)
            if p.is_nominal and MIN_VALUES <= p.n_states <= MAX_VALUES]


def grouped_space(space, groups):
    """``space`` with each parameter named in ``groups`` ({name: [[value index, ...], ...]}, a partition of its
    values) as a complete ``Graph`` of the same values whose edges inside a group weigh EDGE_WEIGHT."""
    from ..space import Space

    parameters = []
    for parameter in space.parameters:
        partition = groups.get(parameter.name)
        if partition is None:
            parameters.append(parameter)
            continue
        parameters.append(_grouped_graph(parameter.name, parameter.n_states,
                                         tuple(tuple(group) for group in partition)))
    return Space(parameters)


# A greedy pass builds a kernel per candidate partition, and the other parameters' partitions recur in every
# candidate and at every later full refit: one Graph per partition keeps its Laplacian spectrum (an
# eigendecomposition, and the FM kernel's tables cached per spectrum) instead of recomputing it each time.
@functools.lru_cache(maxsize=1024)
def _grouped_graph(name, n_states, partition):
    """The complete ``Graph`` of ``n_states`` values whose edges inside a group of ``partition`` (a tuple of tuples of
    value indices) weigh EDGE_WEIGHT, the others 1."""
    from ..space import Graph

    group_of = {value: g for g, members in enumerate(partition) for value in members}
    edges = list(itertools.combinations(range(n_states), 2))
    weights = [EDGE_WEIGHT if group_of[u] == group_of[v] else 1.0 for u, v in edges]
    return Graph(name, n_states, edges, weights=weights)


def learn_value_groups(space, gp, build_kernel, refit):
    """(groups, the refitted GP) or ({}, None): the greedy merges of the module docstring.

    Parameters
    ----------
    space : Space
    gp : the chosen fit (a fitted ``GaussianProcessRegressor``)
    build_kernel : callable (groups) -> a kernel of the chosen kind on ``grouped_space(space, groups)`` holding
        the chosen fit's hyperparameter values
    refit : callable (groups) -> that kernel fitted to the chosen fit's data from those values, as a warm refit
    """
    from ..gp.solvers.cholesky import ExactSolver

    indices = grouped_parameters(space)
    if not indices or gp.solver_ != ExactSolver.name:
        return {}, None

    def log_likelihood(groups):
        """log p(y | X) of the chosen fit's standardised targets, noise and hyperparameters on the grouped graphs
        (one Gram and one Cholesky)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)    # jitter notices
            return ExactSolver.fit(build_kernel(groups), gp.X_train_, gp.y_train_, gp.noise_)[2]

    names = [space.discrete_params[j].name for j in indices]
    partitions = {name: [[value] for value in range(space.discrete_params[j].n_states)]
                  for name, j in zip(names, indices)}
    current = log_likelihood({})
    while True:
        best_value, best_partitions = -np.inf, None
        for name in names:
            partition = partitions[name]
            for a, b in itertools.combinations(range(len(partition)), 2):
                merged = [group for g, group in enumerate(partition) if g not in (a, b)] + [
                    sorted(partition[a] + partition[b])]
                candidate = {**partitions, name: merged}
                value = log_likelihood(_merged_only(candidate))
                if value > best_value:
                    best_value, best_partitions = value, candidate
        if best_partitions is None or not best_value > current + MERGE_NATS:
            break
        current, partitions = best_value, best_partitions
    groups = _merged_only(partitions)
    if not groups:
        return {}, None
    grouped = refit(groups)
    ahead, standard_error = loo_difference(grouped, gp)
    if not ahead > LOO_STANDARD_ERRORS * standard_error:
        return {}, None
    return groups, grouped


def _merged_only(partitions):
    """The partitions that merge some values, each group sorted and the groups in order of their first value (a
    canonical form: the same groups give the same record and the same kernel)."""
    return {name: sorted(sorted(group) for group in partition)
            for name, partition in partitions.items() if any(len(group) > 1 for group in partition)}
