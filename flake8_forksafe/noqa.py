"""``# noqa`` comments, in flake8's own syntax (flake8/defaults.py), so both front ends agree."""

from __future__ import annotations

import re
from typing import Sequence

NOQA_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa(?!:)", re.IGNORECASE)


def noqa_suppresses(line_text: str, code: str) -> bool:
    match = NOQA_INLINE.search(line_text)
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    wanted = {c for c in re.split(r"[,\s]+", codes.strip()) if c}
    return code in wanted or code.startswith(tuple(wanted))


def file_noqa(lines: Sequence[str]) -> bool:
    return any(NOQA_FILE.match(line) for line in lines)


