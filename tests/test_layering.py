"""The package's layers, enforced: every import inside ``fastfm`` (function-level ones included) points
down the layer table of docs/architecture.md, and no module imports itself back through a cycle.

The table, lowest first; a component may import the components listed for it and its own modules:

    ground     _version, exceptions, _config, _parallel, _progress
    data       space/ (ground), _backends/ (ground and the compiled _cpp)
    kernels    kernels/ (ground, space, _backends)
    models     gp/ (ground, space, _backends, kernels); acquisition (ground only: duck-typed posterior), optim/
               (ground and the compiled _cpp, whose batched L-BFGS bookkeeping it drives)
    loop       bo (everything above but the face and the tools)
    suite      benchmarks/ (ground and space: problems and data only, no runner)
    face       fastfm/__init__ (everything but the tools); imported by the tools only
    tools      cli/, __main__, integration/ (Optuna, GPyTorch), plot and the one-release aliases (everything)
"""
import ast
import pathlib

import pytest

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent / "fastfm"

GROUND = {"_version", "exceptions", "_config", "_parallel", "_progress"}
DATA = {"space", "_backends"}
MODELS = {"gp", "acquisition", "optim"}
ALL_BELOW_FACE = GROUND | DATA | {"kernels"} | MODELS | {"bo", "benchmarks", "_cpp"}

# component -> the other components it may import
ALLOWED = {
    "_version": set(),
    "exceptions": set(),
    "_config": {"exceptions"},
    "_parallel": {"_config", "exceptions"},
    "_progress": set(),
    "_cpp": set(),
    "space": GROUND,
    "_backends": GROUND | {"_cpp"},
    "kernels": GROUND | DATA,
    "gp": GROUND | DATA | {"kernels"},
    "acquisition": GROUND,
    "optim": GROUND | {"_cpp"},
    "bo": GROUND | DATA | {"kernels"} | MODELS,
    "benchmarks": GROUND | {"space"},
    "__init__": ALL_BELOW_FACE,
}
# the tools sit on top and may import anything, the face included
TOOLS = {"cli", "__main__", "bench", "gp_large", "integration", "plot"}


def _module_name(path):
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    """Every module of the source tree, and the names under ``fastfm`` that are modules or packages."""
    files = {_module_name(p): p for p in sorted(PACKAGE_ROOT.rglob("*.py"))}
    known = set(files) | {"fastfm._cpp"}
    return files, known


def _component(module):
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _imports(module, path, known):
    """(line, imported module) for each import of a ``fastfm`` module, anywhere in the file."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "fastfm" or alias.name.startswith("fastfm."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "fastfm" or target.startswith("fastfm.")):
                continue
            for alias in node.names:
                # `from pkg import name` imports the submodule pkg.name when there is one, else pkg itself
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if sub in known else target


def _import_graph():
    files, known = _modules()
    return {m: list(_imports(m, p, known)) for m, p in files.items()}, files


def test_the_walker_sees_function_level_and_relative_imports():
    graph, _ = _import_graph()
    targets = {t for _, t in graph["fastfm"]}
    assert {"fastfm.bo", "fastfm.space", "fastfm._config"} <= targets
    # a function-level import resolves too: the kernels' GPU hook imports cuda_linalg inside a method
    assert "fastfm._backends.cuda_linalg" in {t for _, t in graph["fastfm.kernels.fm"]}


def test_every_component_is_in_the_table():
    graph, _ = _import_graph()
    unknown = {_component(m) for m in graph} - set(ALLOWED) - TOOLS
    assert not unknown, f"components missing from the layer table: {sorted(unknown)}"


def test_imports_point_down_the_layers():
    graph, files = _import_graph()
    violations = []
    for module, imports in graph.items():
        source = _component(module)
        if source in TOOLS:
            continue
        for line, target in imports:
            dest = _component(target)
            if dest == source and source != "__init__":
                continue
            if dest not in ALLOWED[source]:
                violations.append(f"{files[module].relative_to(PACKAGE_ROOT.parent)}:{line}: "
                                  f"{module} ({source}) imports {target} ({dest})")
    assert not violations, "imports against the layer table:\n" + "\n".join(violations)


def test_no_import_cycle():
    graph, _ = _import_graph()
    edges = {m: {t for _, t in imports if t in graph and t != m} for m, imports in graph.items()}
    # Tarjan's strongly connected components, iteratively: any component of two or more modules is a cycle
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]

    def visit(root):
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("limit", [400])
def test_no_class_over_the_size_limit(limit):
    oversized = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    oversized.append(f"{path.relative_to(PACKAGE_ROOT.parent)}:{node.lineno} {node.name}: {lines}")
    assert not oversized, f"classes over {limit} lines:\n" + "\n".join(oversized)
