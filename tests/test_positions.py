"""``engine.locate`` computes positions for the top-level statements holding reported nodes only
(``engine.report_positions``): every node of every fixture and corpus file, and of odd layouts
(line endings, no final newline, header comments, decorators, semicolons, form feeds), gets the
position libcst's PositionProvider gives it on the whole module."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List

import libcst as cst
import pytest

from flake8_forksafe import engine
from flake8_forksafe.config import Config
from flake8_forksafe.source import decode

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in ROOT.glob("fixtures/FRK*/*.py") if not p.name.endswith(".fixed.py"))
FILES += sorted((ROOT / "tests" / "corpus").glob("*.py"))
CFG = Config(select=("FRK", "FRK501"))

ODD = {
    "crlf": "import os\r\n\r\nclass A:\r\n    def f(self):\r\n        return os.getpid()\r\n\r\nx = A()\r\n",
    "lone-cr": "import os\r\rdef f():\r    return 1\r\rprint(f())\r",
    "no-final-newline": "import os\n\ndef f():\n    return os.sep\n\nprint(f())",
    "footer-no-final-newline": "x = 1\n\nprint(x)\n# the end",
    "header-comments": "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n\n# about f\ndef f():\n    pass\n",
    "decorators": "import functools\n\n\n# lead\n@functools.lru_cache()\n# between\n@staticmethod\ndef f(a,\n      b):\n    return a\n",
    "semicolons": "import os; import sys\nx = 1; y = (2,\n  3); print(x)\nif x: y = 2; z = 3\n",
    "form-feed": "x = 1\n\x0c\ndef f():\n    return x\n\x0c\nclass C:\n    y = 'a\x0cb'\n",
    "continuations": "x = 1 + \\\n    2\ns = '''a\nb'''\ndef g(): return s\n",
    "indented-comments": "def f():\n    x = 1\n    # trailing, indented\n# column 0\n\nclass C:\n  pass\n",
    "tabs": "if True:\n\tx = 1\n\tif x:\n\t\ty = 2\n",
    "empty-lines-only-body": "\n\n\nx = 1\n\n\n",
}


def _all_nodes(module: cst.Module) -> List[cst.CSTNode]:
    out: List[cst.CSTNode] = []
    stack: List[cst.CSTNode] = [module]
    while stack:
        n = stack.pop()
        out.append(n)
        for f in dataclasses.fields(n):
            v = getattr(n, f.name)
            if isinstance(v, cst.CSTNode):
                stack.append(v)
            elif isinstance(v, (tuple, list)):
                stack.extend(c for c in v if isinstance(c, cst.CSTNode))
    return out


def _same_positions(text: str) -> None:
    a = engine.analyse(text, CFG)
    whole = engine.positions(a.module)
    nodes = [n for n in _all_nodes(a.module) if n is not a.module and n in whole]
    got = engine.report_positions(a, nodes)
    assert got.whole is None  # every node was placed in its statement
    for n in nodes:
        assert got[n] == whole[n], (type(n).__name__, got[n], whole[n])
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            assert engine.node_start(got, n) == engine.node_start(whole, n)


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_layouts(name):
    _same_positions(ODD[name])


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixtures_and_corpus(path):
    _same_positions(decode(path.read_bytes(), str(path)))


def test_reported_calls_need_no_search():
    # a reported call's top-level statement is known from the analysis: no walk of the module
    text = "from torch.utils.data import DataLoader\n\nx = 1\nloader = DataLoader(range(4), num_workers=2)\n"
    a = engine.analyse(text, CFG)
    call = next(c.node for c in a.calls if c.qname and c.qname.endswith("DataLoader"))
    got = engine.report_positions(a, [call])
    assert got.owner == {id(call): 2} and list(got.shift) == []  # computed when asked
    assert engine.node_start(got, call) == (4, 9, 4, 44) and list(got.shift) == [2]
    assert got[call] == engine.positions(a.module)[call] and got.whole is None
