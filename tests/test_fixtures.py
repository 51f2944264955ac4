"""Every fixture through both front ends and the fixer.

A fixture's expected findings are the `# FRKnnn: col` comments on its lines; the fixture is checked
with every rule enabled (FRK501 included), so an unexpected finding of any rule fails too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.conftest import tool
from tests.helpers import ROOT, expected, fixed_path, fixture_files, ran

FILES = fixture_files()
ALL = Config(select=("FRK", "FRK501"))
IDS = [f"{p.parent.name}/{p.name}" for p in FILES]


def test_every_rule_has_fixtures():
    from flake8_forksafe.checks import ALL_RULES

    for rule in ALL_RULES:
        d = ROOT / "fixtures" / rule.code
        pos = list(d.glob("pos_*.py"))
        neg = list(d.glob("neg_*.py"))
        assert pos and neg, f"{rule.code} needs positive and negative fixtures in {d}"


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_check_matches_annotations(path):
    src = path.read_bytes()
    got = sorted((f.code, f.line, f.col) for f in check_source(src, str(path), ALL))
    assert got == expected(src.decode("utf-8"))


@pytest.fixture(scope="module")
def front_ends():
    """One real subprocess per front end over all fixtures."""
    files = [str(p) for p in FILES]
    out = {}
    cli = subprocess.run(
        [tool("forksafe"), "check", "--no-cache", "--select", "FRK,FRK501", "--format", "json", *files],
        capture_output=True, text=True, cwd=ROOT,
    )
    ran(cli)
    rows = defaultdict(list)
    for r in json.loads(cli.stdout):
        rows[r["path"]].append((r["code"], r["line"], r["column"] - 1))
    out["forksafe"] = rows
    f8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "FRK,FRK501",
         "--format", "%(path)s\t%(row)d\t%(col)d\t%(code)s", *files],
        capture_output=True, text=True, cwd=ROOT,
    )
    ran(f8)
    rows = defaultdict(list)
    for line in f8.stdout.splitlines():
        path, row, col, code = line.split("\t")
        rows[path].append((code, int(row), int(col) - 1))
    out["flake8"] = rows
    return out


@pytest.mark.parametrize("front", ["forksafe", "flake8"])
def test_front_ends_match_annotations(front_ends, front):
    mismatches = []
    for p in FILES:
        want = expected(p.read_text(encoding="utf-8"))
        got = sorted(front_ends[front].get(str(p), []))
        if got != want:
            mismatches.append(f"{p.relative_to(ROOT)}: want {want}, got {got}")
    assert not mismatches, "\n".join(mismatches)


FIXABLE = [p for p in FILES if p.name.startswith("pos_")]


@pytest.mark.parametrize("path", FIXABLE, ids=[f"{p.parent.name}/{p.name}" for p in FIXABLE])
def test_fix_exact_idempotent_and_clean(path):
    src = path.read_bytes()
    before = check_source(src, str(path), ALL)
    res = fix_source(src, str(path), ALL, unsafe=True)
    assert not res.errors
    fixable = [f for f in before if f.fix]
    target = fixed_path(path)
    if not fixable:
        assert not res.changed
        assert not target.exists(), f"{target.name} exists but nothing in {path.name} is fixable"
        return
    assert target.exists(), f"{path.name} has fixable findings: add the expected output {target.name}"
    assert res.source.decode("utf-8") == target.read_text(encoding="utf-8")
    compile(res.source, str(target), "exec")
    # idempotent
    again = fix_source(res.source, str(path), ALL, unsafe=True)
    assert not again.changed
    # nothing fixable remains, nothing new appears
    assert not [f for f in res.remaining if f.fix], res.remaining
    unfixable_before = sorted(f.code for f in before if not f.fix)
    assert sorted(f.code for f in res.remaining) == unfixable_before


@pytest.mark.parametrize("variant", ["crlf", "bom", "latin1-cookie"])
@pytest.mark.parametrize("path", FIXABLE, ids=[f"{p.parent.name}/{p.name}" for p in FIXABLE])
def test_fix_keeps_line_endings_and_encoding(path, variant):
    target = fixed_path(path)
    if not target.exists():
        pytest.skip("nothing fixable")
    src = path.read_bytes()
    want = target.read_bytes()
    if variant == "crlf":
        src, want = src.replace(b"\n", b"\r\n"), want.replace(b"\n", b"\r\n")
    elif variant == "bom":
        src, want = b"\xef\xbb\xbf" + src, b"\xef\xbb\xbf" + want
    else:
        if src.startswith((b"#!", b"# -*-")):
            pytest.skip("fixture starts with a line the cookie must not precede")
        head = b"# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n"
        src, want = head + src, head + want
    res = fix_source(src, str(path), ALL, unsafe=True)
    assert res.source == want
