"""The architecture's measures, read from the source with `ast` (docs/architecture.md quotes them).

    .venv/bin/python scripts/measure_architecture.py            # the static measures (a second)
    .venv/bin/python scripts/measure_architecture.py --suite    # and the default test run (README) timed

Prints a `---` line, then `key: value` lines.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "rsi_master"
MAX_MODULE_LINES = 400
# The README's test command: the default (not `slow`) tests in four pytest-xdist workers.
SUITE = ["-q", "-n", "auto", "--dist", "loadfile"]


def _any_parameters(tree: ast.AST, name: str) -> int:
    """Parameters called `name` annotated `Any` (a value whose domain type is not written down)."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if (
                    arg.arg == name
                    and arg.annotation is not None
                    and ast.unparse(arg.annotation) in ("Any", "typing.Any")
                ):
                    count += 1
    return count


def _is_tool(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Registered with the tool registry's decorator (`@tool("name", ...)`)."""
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "tool" for d in fn.decorator_list
    )


def _tool_impls(tree: ast.AST) -> tuple[int, int]:
    """(tool implementations, those whose first parameter is not a `ToolContext`: they take the session)."""
    impls = session = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_tool(node):
            impls += 1
            first = (node.args.posonlyargs + node.args.args)[:1]
            if not first or first[0].annotation is None or ast.unparse(first[0].annotation) != "ToolContext":
                session += 1
    return impls, session


def _session_parameters(tree: ast.AST) -> int:
    """Parameters that take the whole session: annotated `ExpOS`, or called `expos` and not annotated."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if (arg.annotation is None and arg.arg == "expos")
        or (arg.annotation is not None and ast.unparse(arg.annotation) in ("ExpOS", "'ExpOS'", '"ExpOS"'))
    )


def measure() -> dict[str, object]:
    task_any = expos_any = internal = total = 0
    impls = impls_session = session_params = 0
    long: list[str] = []
    lines = 0
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        n = len(text.splitlines())
        lines += n
        if n > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(REPO)} ({n})")
        tree = ast.parse(text, str(path))
        task_any += _any_parameters(tree, "task")
        expos_any += _any_parameters(tree, "expos")
        n_impls, n_session = _tool_impls(tree)
        impls += n_impls
        impls_session += n_session
        session_params += _session_parameters(tree)
        # A function nested in another is walked from both: count each import statement once.
        seen: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in seen:
                        seen.add(id(node))
                        total += 1
                        if isinstance(node, ast.Import):
                            internal += any(a.name.startswith("rsi_master") for a in node.names)
                        else:
                            internal += bool(node.level) or (node.module or "").startswith("rsi_master")
    sys.path.insert(0, str(REPO))
    from tests.test_architecture import cycles, import_graph  # the architecture test's own graph

    type_cycles = cycles(import_graph(types=True))
    return {
        "src_lines": lines,
        "type_cycles": len(type_cycles),
        "type_cycles_list": "; ".join(" <-> ".join(m.removeprefix("rsi_master.") for m in c) for c in type_cycles)
        or "-",
        "task_any_parameters": task_any,
        "expos_any_parameters": expos_any,
        "tool_implementations": impls,
        "tool_implementations_taking_the_session": impls_session,
        "session_parameters": session_params,
        "function_local_imports_internal": internal,
        "function_local_imports_all": total,
        "modules_over_400_lines": len(long),
        "modules_over_400_lines_list": ", ".join(long) or "-",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite", action="store_true", help="also time the default test run (`pytest -q -n auto --dist loadfile`)"
    )
    args = parser.parse_args()
    figures = measure()
    if args.suite:
        start = time.monotonic()
        rc = subprocess.run([sys.executable, "-m", "pytest", *SUITE], cwd=REPO, check=False).returncode
        figures["test_suite_seconds"] = round(time.monotonic() - start)
        figures["test_suite_exit"] = rc
    print("---")
    for key, value in figures.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
