"""The fix loop: one libcst parse per round, several rules fixed in one round when their edits touch
different top-level statements, and outputs equal to fixing one rule at a time."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, List

import libcst
import pytest

from flake8_forksafe import fix as fixmod
from flake8_forksafe.config import Config
from flake8_forksafe.fix import fix_source

ROOT = Path(__file__).resolve().parent.parent
FIXED = sorted(ROOT.glob("fixtures/FRK*/*.fixed.py"))


@contextlib.contextmanager
def counted_parses() -> Iterator[List[int]]:
    calls = [0]
    real = libcst.parse_module

    def wrapped(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    libcst.parse_module = wrapped
    try:
        yield calls
    finally:
        libcst.parse_module = real


def one_rule_fixtures():
    out = []
    for fixed in FIXED:
        src = fixed.with_name(fixed.name.replace(".fixed.py", ".py"))
        out.append(pytest.param(src, fixed, id=f"{src.parent.name}/{src.name}"))
    return out


@pytest.mark.parametrize("src,fixed", one_rule_fixtures())
def test_fixture_fix_parse_count(src: Path, fixed: Path) -> None:
    """Every fixture: fixed output as expected, and libcst parses = rounds that changed the text + 1."""
    code = src.parent.name
    config = Config(select=(code,))
    with counted_parses() as calls:
        res = fix_source(src.read_bytes(), str(src), config, unsafe=True)
    assert res.source == fixed.read_bytes()
    assert res.changed
    # one rule: one round rewrites the file, the next parses it (validation) and finds nothing to fix
    assert calls[0] <= 2, f"{code}: {calls[0]} libcst parses for a one-rule fix"


TWO_RULES = '''\
import h5py
import torch
from torch.utils.data import DataLoader, Dataset


class H5(Dataset):
    def __init__(self, path):
        self.f = h5py.File(path, "r")

    def __len__(self):
        return len(self.f["x"])

    def __getitem__(self, i):
        return self.f["x"][i]


class OnGpu(Dataset):
    def __init__(self):
        self.data = torch.zeros(10).cuda()

    def __getitem__(self, i):
        return self.data[i]
'''


def test_disjoint_fixes_share_a_round() -> None:
    """Two rules whose fixes touch different classes are applied in one round (2 parses), and give the
    same text as fixing them one rule at a time."""
    config = Config()
    with counted_parses() as calls:
        res = fix_source(TWO_RULES, "two.py", config, unsafe=True)
    codes = sorted({f.code for f in res.fixed})
    assert len(codes) >= 2, codes
    one_at_a_time = TWO_RULES
    for code in codes:
        one_at_a_time = fix_source(one_at_a_time, "two.py", Config(select=(code,)), unsafe=True).source
    assert res.source == one_at_a_time
    assert calls[0] == 2


def test_overlapping_edits_wait_for_the_next_round() -> None:
    spans = [(0, 2), (2, 5), (5, 9)]
    a = fixmod._touched([(3, 4, ["x\n"])], spans)
    b = fixmod._touched([(2, 2, ["import os\n"])], spans)  # an insertion touches both neighbours
    assert fixmod._touched([(5, 5, ["\n", "    def f(self):\n"])], spans) == {1}  # the end of a block
    c = fixmod._touched([(7, 8, ["y\n"])], spans)
    assert a == {1} and b == {0, 1} and c == {2}
    assert a & b and not a & c


def test_a_rewrite_that_does_not_parse_is_declined(monkeypatch) -> None:
    from flake8_forksafe.checks import ALL_RULES

    src = TWO_RULES
    first = fix_source(src, "two.py", Config(), unsafe=True)
    code = sorted(f.code for f in first.fixed)[0]
    rule = next(r for r in ALL_RULES if r.code == code)

    class Broken:
        code = "x"

        def __init__(self, text):
            self.code = text

    monkeypatch.setattr(rule, "fix", lambda self, a, reports: Broken(a.module.code + "def (:\n"))
    monkeypatch.setattr("flake8_forksafe.fix.retarget_imports", lambda before, after: after)  # a text, not a module
    res = fix_source(src, "two.py", Config(), unsafe=True)
    assert any(n.startswith(f"{code} not fixed: the rewritten file would not compile") for n in res.notes)
    assert code in {f.code for f in res.remaining}
    assert not any(f.code == code for f in res.fixed)
