"""Rule documentation: ``docs/rules/FRKxxx.md`` (shipped in the wheel as ``flake8_forksafe/_docs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional


def docs_dir() -> Optional[Path]:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_docs", here.parent / "docs" / "rules"):
        if candidate.is_dir():
            return candidate
    return None


def rule_doc(code: str) -> Optional[str]:
    d = docs_dir()
    if d is None:
        return None
    p = d / f"{code}.md"
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


def rule_summary(rule) -> str:
    """The first sentence of the rule's docstring, on one line."""
    doc = " ".join((rule.__doc__ or rule.name).split())
    end = doc.find(". ")
    return doc if end < 0 else doc[: end + 1]
