"""Every public package states its API in `__all__`: complete, existing and sorted.

Complete: each public name its `__init__` defines or imports is listed (a name left out is
API by accident). Existing: each listed name is there (`from rsi_master.x import *` would
fail otherwise). Sorted as `ruff`'s RUF022 sorts: constants, then classes, then the rest.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import rsi_master

ROOT = Path(rsi_master.__file__).parent


def public_packages() -> list[str]:
    """Every package of rsi_master whose dotted path has no private part."""
    out = []
    for init in sorted(ROOT.rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT.parent).parts
        if not any(p.startswith("_") for p in parts):
            out.append(".".join(parts))
    return out


def defined_names(init: Path, package: str | None = None) -> set[str]:
    """Public names bound at the top level of a package's `__init__` (plain `import x` binds a
    module it uses, not API; `from .m import *` binds what `m.__all__` lists)."""
    names: set[str] = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if alias.name == "*":
                    assert package is not None, f"{init}: a star import needs its package to be resolved"
                    star = importlib.import_module("." * node.level + (node.module or ""), package)
                    names.update(star.__all__)
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def ruff_order(name: str) -> tuple[int, str]:
    if name.upper() == name:
        return 0, name
    return (1 if name[0].isupper() else 2), name


def test_the_packages_are_found():
    found = public_packages()
    assert {"rsi_master", "rsi_master.ledger", "rsi_master.expos", "rsi_master.expos.contamination"} <= set(found)
    assert not any("._" in p for p in found)


def test_names_are_read_from_the_init(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text(
        "from __future__ import annotations\nimport sys\nfrom ._a import A, b as c, _d\n"
        "X: int = 1\nY = 2\n_z = 3\ndef f(): ...\nclass K: ...\n"
    )
    assert defined_names(init) == {"A", "c", "X", "Y", "f", "K"}
    assert sorted(["f", "Kls", "X", "c", "A_B"], key=ruff_order) == ["A_B", "X", "Kls", "c", "f"]


@pytest.mark.parametrize("package", public_packages())
def test_all_is_complete_existing_and_sorted(package):
    module = importlib.import_module(package)
    listed = getattr(module, "__all__", None)
    assert isinstance(listed, list), f"{package} has no __all__ list"
    assert len(listed) == len(set(listed)), f"{package}.__all__ lists a name twice"
    missing = [n for n in listed if not hasattr(module, n)]
    assert not missing, f"{package}.__all__ lists names it does not have: {missing}"
    unlisted = sorted(defined_names(Path(module.__file__), package) - set(listed))
    assert not unlisted, f"{package} defines public names its __all__ leaves out: {unlisted}"
    assert listed == sorted(listed, key=ruff_order), f"{package}.__all__ is not sorted (ruff check --fix sorts it)"
