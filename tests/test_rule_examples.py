"""The VALID / INVALID examples kept beside each rule (Fixit style) hold."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.checks import ALL_RULES
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.model import Example
from flake8_forksafe.fix import fix_source
from tests.helpers import expected


def _cases(kind):
    for rule in ALL_RULES:
        for i, ex in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, ex, id=f"{rule.code}-{kind.lower()}-{i}")


def _config(rule):
    return Config(select=(rule.code,))


def _interactive(rule):
    """Rules about notebooks (FRK405) check their examples as notebook code."""
    return True if getattr(rule, "EXAMPLES_AS_NOTEBOOK", False) else None


@pytest.mark.parametrize("rule,src", list(_cases("VALID")))
def test_valid(rule, src):
    src = textwrap.dedent(src)
    assert [f for f in check_source(src, "example.py", _config(rule), interactive=_interactive(rule))] == []


@pytest.mark.parametrize("rule,ex", list(_cases("INVALID")))
def test_invalid(rule, ex):
    ex = ex if isinstance(ex, Example) else Example(ex)
    src = textwrap.dedent(ex.code)
    got = sorted((f.code, f.line, f.col) for f in check_source(src, "example.py", _config(rule), interactive=_interactive(rule)))
    want = [e for e in expected(src) if e[0] == rule.code]
    assert want, "an INVALID example must annotate its findings"
    assert got == want
    if ex.expected_fix is not None:
        res = fix_source(src, "example.py", _config(rule), unsafe=True)
        assert res.source == textwrap.dedent(ex.expected_fix)


def test_registry_is_consistent():
    codes = [r.code for r in ALL_RULES]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    names = [r.name for r in ALL_RULES]
    assert len(set(names)) == len(names)
    for r in ALL_RULES:
        assert r.__doc__ and r.name and r.code.startswith("FRK")
        assert r.fix_applicability in (None, "safe", "unsafe")
        if r.fix_applicability:
            assert r.fix_title, f"{r.code} has a fix but no fix_title"


def test_readme_rule_table_matches_the_registry():
    """README's rule table names every rule once, with its name and its fix applicability, and each
    rule page's "Fix safety" section starts with the same word."""
    root = Path(__file__).resolve().parent.parent
    rows = {}
    for line in (root / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| \[(FRK\d+)\]\(docs/rules/\1\.md\) \| `([a-z0-9-]+)`.* \| ([^|]+) \|$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).strip())
    want_fix = {None: "—", "safe": "safe", "unsafe": "unsafe (`--unsafe-fixes`)"}
    assert rows == {r.code: (r.name, want_fix[r.fix_applicability]) for r in ALL_RULES}
    for r in ALL_RULES:
        page = (root / "docs" / "rules" / f"{r.code}.md").read_text(encoding="utf-8")
        safety = page.split("## Fix safety\n", 1)[1].lstrip()
        first = {None: "No automatic fix", "safe": "Safe", "unsafe": "Unsafe"}[r.fix_applicability]
        assert safety.startswith(first), f"{r.code}: Fix safety starts {safety[:40]!r}, not {first!r}"
