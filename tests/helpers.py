"""Shared test helpers: the fixture annotation syntax and the fixture list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# `# FRK101: 19` on the offending line: code and 0-based column (flake8-bugbear style).
EXPECT = re.compile(r"#\s*(FRK\d{3}):\s*(\d+)")


def expected(text: str) -> List[Tuple[str, int, int]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for code, col in EXPECT.findall(line):
            out.append((code, lineno, int(col)))
    return sorted(out)


def fixture_files() -> List[Path]:
    return sorted(
        p
        for p in FIXTURES.glob("FRK*/*.py")
        if not p.name.endswith(".fixed.py")
    )


def fixed_path(p: Path) -> Path:
    return p.with_name(p.name[: -len(".py")] + ".fixed.py")


def ran(proc, *, codes=(0, 1)) -> None:
    """A tool's subprocess ended as a finished run: an expected exit status and no traceback (a crash
    at import exits 1 too, which "findings remain" would otherwise hide)."""
    out = (proc.stdout or "") + (proc.stderr or "")
    assert proc.returncode in codes and "Traceback (most recent call last)" not in out, out
