"""The language server's ``codeAction/resolve`` computes a fix with only the rules that fix
(``fix_source(..., fixers_only=True)``): the same fixed text as ``forksafe fix`` restricted to the
code (every rule run), on every fixture and corpus file, for each fixable code and for "fix all"."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from flake8_forksafe.frontends.lsp import fixed_text
from flake8_forksafe.model import SAFE, UNSAFE, SourceError

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in ROOT.glob("fixtures/FRK*/*.py") if not p.name.endswith(".fixed.py"))
FILES += sorted((ROOT / "tests" / "corpus").glob("*.py"))
CFG = Config(select=("FRK", "FRK501"))


def every_rule(text: str, path: str, unsafe: bool, code: Optional[str]) -> Optional[str]:
    """``fixed_text`` as it was: every enabled rule run in every round."""
    try:
        result = fix_source(text, path, CFG, unsafe=unsafe, select=[code] if code else None)
    except (SourceError, RecursionError):
        return None
    if not result.changed or result.errors:
        return None
    if code is not None and not any(f.code == code for f in result.fixed):
        return None
    return result.source if isinstance(result.source, str) else None


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_resolve_fix_equals_the_fix_of_every_rule(path):
    text = path.read_text(encoding="utf-8")
    name = str(path)
    found = check_source(text, name, CFG)
    codes: List[str] = sorted({f.code for f in found if f.fix in (SAFE, UNSAFE)})
    for code in codes:
        unsafe = any(f.code == code and f.fix == UNSAFE for f in found)
        assert fixed_text(text, name, CFG, unsafe, code) == every_rule(text, name, unsafe, code), code
    for unsafe in (False, True):
        assert fixed_text(text, name, CFG, unsafe, None) == every_rule(text, name, unsafe, None), unsafe


def test_fixers_only_lists_the_fixing_rules_findings():
    src = (
        "import multiprocessing as mp\n"
        "import lmdb\n"
        "from torch.utils.data import Dataset\n\n"
        "class DS(Dataset):\n"
        "    def __init__(self, path):\n"
        "        self.env = lmdb.open(path)\n\n"
        "    def __getitem__(self, i):\n"
        "        return self.env.begin().get(b'%d' % i)\n\n"
        "p = mp.Process(target=print)\n"
        "p.start()\n"
    )
    whole = fix_source(src, "s.py", CFG, select=["FRK101"])
    only = fix_source(src, "s.py", CFG, select=["FRK101"], fixers_only=True)
    assert only.source == whole.source != src
    assert {f.code for f in whole.remaining} == {"FRK401"}
    assert only.remaining == [] and [f.code for f in only.fixed] == ["FRK101"]
