"""The layout's rules, read from the source (ast, nothing imported): a check imports only the model,
the analysis, the shared editing/knowledge helpers and its own hazard family, never another check;
a family never imports a check."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List, Set

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "flake8_forksafe"
CHECKS = sorted(p for p in (PACKAGE / "checks").glob("frk*.py"))
FAMILY_MODULES = sorted((PACKAGE / "families").rglob("*.py"))
SHARED = {"flake8_forksafe.model", "flake8_forksafe.analysis", "flake8_forksafe.edit", "flake8_forksafe.knowledge"}


def _imports(path: Path) -> List[str]:
    """Every module a file imports (function-level imports included); ``from pkg import mod`` counts as
    ``pkg.mod``."""
    out: List[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
            out.extend(f"{node.module}.{a.name}" for a in node.names)
    return out


def _own(imports: List[str]) -> List[str]:
    return [m for m in imports if m == "flake8_forksafe" or m.startswith("flake8_forksafe.")]


def _allowed(module: str) -> bool:
    return any(module == s or module.startswith(s + ".") for s in SHARED) or module.startswith(
        "flake8_forksafe.families."
    )


def test_there_are_checks_and_families_to_test():
    assert len(CHECKS) >= 15
    assert {p.parent.name for p in FAMILY_MODULES} >= {"handles", "pickling", "processes", "cuda", "rng"}


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.stem)
def test_a_check_imports_only_the_model_the_analysis_and_its_own_family(path: Path):
    own = _own(_imports(path))
    # `from flake8_forksafe.model import Rule` also yields "flake8_forksafe.model.Rule": judge modules
    bad = [m for m in own if not _allowed(m)]
    assert not bad, f"{path.name} imports {bad}"
    families: Set[str] = {m.split(".")[2] for m in own if m.startswith("flake8_forksafe.families.")}
    assert len(families) <= 1, f"{path.name} imports several families: {sorted(families)}"


@pytest.mark.parametrize("path", FAMILY_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_family_never_imports_a_check(path: Path):
    bad = [m for m in _own(_imports(path)) if m.startswith("flake8_forksafe.checks")]
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_the_layout_test_sees_a_forbidden_import(tmp_path: Path):
    """The rule above would catch the imports it exists for (a check importing another check)."""
    bad = tmp_path / "frk999.py"
    bad.write_text("from flake8_forksafe.checks.frk201 import collect\nimport flake8_forksafe.engine\n")
    assert [m for m in _own(_imports(bad)) if not _allowed(m)] == [
        "flake8_forksafe.checks.frk201",
        "flake8_forksafe.checks.frk201.collect",
        "flake8_forksafe.engine",
    ]
