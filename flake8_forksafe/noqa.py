"""``# noqa`` comments, in flake8's own syntax (flake8/defaults.py), so both front ends agree."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Callable, Dict, Sequence, Tuple

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




_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


def merged_noqa(codes: Sequence[str], existing: str = "") -> str:
    """``# noqa: A, B`` with the codes of an existing ``# noqa: A`` first, each code once."""
    seen: list = []
    for c in [*_CODE.findall(existing), *codes]:
        if c.upper() not in (s.upper() for s in seen):
            seen.append(c)
    return "# noqa: " + ", ".join(seen)


def with_noqa(comment: str, codes: Sequence[str]) -> str:
    """A line's comment (``""``: none) with ``codes`` added to its ``# noqa``: merged into an existing
    ``# noqa: X``, appended after another comment; a bare ``# noqa`` already covers them."""
    match = NOQA_INLINE.search(comment)
    if match is not None and not match.group("codes"):
        return comment
    if match is not None:
        rest = comment[match.end():]
        if rest and not rest[0].isspace():
            rest = " " + rest  # the match took the space after the last code
        return comment[: match.start()] + merged_noqa(codes, match.group("codes")) + rest
    return (comment.rstrip() + "  " if comment.strip() else "") + merged_noqa(codes)


def noqa_ranges(text: str) -> Dict[int, Tuple[int, int]]:
    """Line -> (first, last) line of the range flake8 searches for that line's ``# noqa``, for the
    lines in a range of several lines: a string spanning lines, or a backslash continuation, is one
    range (flake8's FileProcessor._noqa_line_mapping). {} when the text does not tokenize."""
    out: Dict[int, Tuple[int, int]] = {}
    lo, hi = 1 << 60, -1
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            lo, hi = min(lo, tok.start[0]), max(hi, tok.end[0])
            if tok.type in (tokenize.NL, tokenize.NEWLINE):
                if hi > lo:
                    out.update(dict.fromkeys(range(lo, hi + 1), (lo, hi)))
                lo, hi = 1 << 60, -1
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    return out


def suppressing_ranges(text: str) -> Dict[int, Tuple[int, int]]:
    """``noqa_ranges(text)`` as far as ``suppressed`` needs it: {} without tokenizing when the text
    holds no ``# noqa`` at all (the lines of a range are a stretch of the text: none can hold one)."""
    return noqa_ranges(text) if NOQA_INLINE.search(text) else {}


def suppressed(lines: Sequence[str], line: int, code: str, ranges: Callable[[], Dict[int, Tuple[int, int]]]) -> bool:
    """A ``# noqa`` on the line, or in the range of lines flake8 joins for it (``noqa_ranges``,
    computed on first need through ``ranges``), silences ``code`` there."""
    if not 0 < line <= len(lines):
        return False
    if noqa_suppresses(lines[line - 1], code):
        return True
    span = ranges().get(line)
    return span is not None and noqa_suppresses("".join(lines[span[0] - 1: span[1]]), code)
