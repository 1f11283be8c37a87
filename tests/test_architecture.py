"""The package's import structure: no cycle between modules, no private module reached from another package.

The graph is read from the source with `ast`: every import, also those inside functions (a lazy import
still ties two modules together), except those under `if TYPE_CHECKING:`, which never run and exist so
that an annotation can name a type without importing its module at run time. `lint-imports` checks the
layers between packages (pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import rsi_master

ROOT = Path(rsi_master.__file__).parent


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _resolve(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_nodes(tree: ast.AST, *, types: bool = False):
    """Every node of `tree` except the bodies of `if TYPE_CHECKING:` blocks (with `types`, those too)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if (
            not types
            and isinstance(node, ast.If)
            and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        ):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def import_graph(*, types: bool = False) -> dict[str, set[str]]:
    """module -> the modules of this package it imports (a `from pkg import sub` names `pkg.sub`);
    with `types`, also the imports an annotation needs (`if TYPE_CHECKING:`)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path)), types=types):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                for alias in node.names:
                    sub = f"{origin}.{alias.name}"
                    targets.append(sub if sub in mods else origin)
            for target in targets:
                resolved = _resolve(target, mods) if target.startswith("rsi_master") else None
                if resolved and resolved != mod:
                    graph[mod].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle_and_only_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules():
    found = cycles(import_graph())
    assert not found, "import cycles (break each by moving the shared part into its own module):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_no_type_cycle_inside_expos():
    """ExpOS's modules name each other's types without a circle either: a service annotates what it
    takes with a protocol of what it uses (`expos/_ports.py`), so no module of a service names the
    session's, which is the one that puts them together."""
    graph = import_graph(types=True)
    expos = {
        m: {t for t in ts if t.startswith("rsi_master.expos.")}
        for m, ts in graph.items()
        if m.startswith("rsi_master.expos.")
    }
    found = cycles(expos)
    assert not found, "type cycles inside expos:\n" + "\n".join(" <-> ".join(c) for c in found)


def _private_owner(module: str) -> str | None:
    """The package that owns `module` privately: `a.b._c.d` is private to `a.b`."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_private_module_reached_from_another_package():
    reached = set()
    for mod, imported in import_graph().items():
        for target in imported:
            owner = _private_owner(target)
            if owner is not None and not (mod == owner or mod.startswith(owner + ".")):
                reached.add((mod, target))
    assert not reached, "private modules imported from outside their package:\n" + "\n".join(
        f"{a} imports {b}" for a, b in sorted(reached)
    )


MAX_MODULE_LINES = 400


def test_no_module_over_400_lines():
    """A module past 400 lines holds more than one concept: split it rather than raise the limit."""
    long = {
        str(path.relative_to(ROOT.parent)): n
        for path in ROOT.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split each): {long}"


LOCAL_IMPORTS_MAX = 60


def _function_local_imports(tree: ast.AST) -> list[ast.stmt]:
    """The import statements inside functions that name a module of this package (each once)."""
    found: dict[int, ast.stmt] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                internal = (
                    isinstance(node, ast.ImportFrom)
                    and (bool(node.level) or (node.module or "").startswith("rsi_master"))
                ) or (isinstance(node, ast.Import) and any(a.name.startswith("rsi_master") for a in node.names))
                if internal:
                    found[id(node)] = node
    return list(found.values())


def test_function_local_imports_of_our_own_modules_stay_few():
    """An import inside a function is for what is heavy at import (torch and friends, the runtime
    outside training and scoring, optional extras): docs/architecture.md lists the ones left. The CLI's
    command modules import at the top, since `rsi-master` imports a command's module only to run it."""
    per_module = {
        str(path.relative_to(ROOT.parent)): len(_function_local_imports(ast.parse(path.read_text(), str(path))))
        for path in ROOT.rglob("*.py")
    }
    total = sum(per_module.values())
    assert total < LOCAL_IMPORTS_MAX, f"{total} function-local imports of our own modules (goal: under 60)"
    cli = {m: n for m, n in per_module.items() if m.startswith("rsi_master/cli/") and n}
    # `_common` is on `--help`'s path: the ledger, the artifact store and the runtime stay out of it.
    assert cli == {"rsi_master/cli/_common.py": 3, "rsi_master/cli/_serve.py": 1}, cli


def test_the_heaviest_first_order_names_test_files_that_exist():
    """`tests/conftest.py` hands these files to pytest-xdist's workers first; a renamed or removed
    file would silently drop out of that order."""
    from tests.conftest import HEAVY_FIRST

    repo = Path(__file__).parents[1]
    assert len(set(HEAVY_FIRST)) == len(HEAVY_FIRST)
    assert [p for p in HEAVY_FIRST if not (repo / p).is_file()] == []
