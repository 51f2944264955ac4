"""``forksafe check --add-noqa``: a ``# noqa: CODE`` on the line of every current finding (a baseline).

A comment goes at the end of the reported line when that line ends where a comment may start: not
inside a (multi-line) string and not after a ``\\`` continuation. Otherwise it goes at the end of
the last line of the lines flake8 reads together for a ``# noqa`` (the string's or continuation's
last line; ``check`` reads them the same way), and a finding with no such line is listed as
skipped. An existing ``# noqa: X`` on the line gets the new codes merged in; other comments stay. Encoding, BOM and line endings are kept, the file
is written atomically, and a second run changes nothing (every finding is then suppressed).
"""

from __future__ import annotations

import codecs
import io
import sys
import tokenize
from collections import defaultdict
from typing import Dict, List, Sequence, Set, Tuple

from flake8_forksafe.config import SYNTAX_ERROR
from flake8_forksafe.model import Finding, SourceError
from flake8_forksafe.noqa import merged_noqa, noqa_ranges, with_noqa
from flake8_forksafe.prefilter import split_lines
from flake8_forksafe.source import decode

def commentable_lines(text: str) -> Tuple[Set[int], Dict[int, tokenize.TokenInfo]]:
    """(lines whose end cannot take a comment, the comment token of each line that has one)."""
    blocked: Set[int] = set()
    comments: Dict[int, tokenize.TokenInfo] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok
        elif tok.start[0] < tok.end[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
            blocked.update(range(tok.start[0], tok.end[0]))  # a string spanning lines: no comment inside
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if i not in comments and line.rstrip().endswith("\\"):
            blocked.add(i)  # a backslash continuation: nothing may follow it
    return blocked, comments


def add_noqa_text(text: str, findings: Sequence[Finding]) -> Tuple[str, int, List[Tuple[Finding, str]]]:
    """(new text, comments added or extended, [(finding, why it was skipped)])."""
    by_line: Dict[int, List[str]] = defaultdict(list)
    skipped: List[Tuple[Finding, str]] = []
    try:
        blocked, comments = commentable_lines(text)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text, 0, [(f, "the file does not tokenize") for f in findings]
    ranges = noqa_ranges(text)
    for f in findings:
        line = f.line
        if line in blocked and line in ranges:
            # the line ends inside a string or after a backslash: the comment goes at the end of
            # the lines flake8 (and `check`) read together with it for a noqa
            line = ranges[line][1]
        if f.code == SYNTAX_ERROR:
            skipped.append((f, "a syntax error is not baselined; fix the file"))
        elif line in blocked:
            skipped.append((f, "the line ends inside a string or after a backslash; a comment would change the code"))
        elif f.code not in by_line[line]:
            by_line[line].append(f.code)
    lines = split_lines(text)  # the lines Python counts: not str.splitlines (\f, \u2028...)
    changed = 0
    for line_no, codes in sorted(by_line.items()):
        if not (0 < line_no <= len(lines)):
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        tok = comments.get(line_no)
        if tok is not None:
            col = tok.start[1]
            new_body = body[:col] + with_noqa(body[col:], codes)
        else:
            new_body = body.rstrip() + "  " + merged_noqa(codes)
        if new_body != body:
            lines[line_no - 1] = new_body + ending
            changed += 1
    return "".join(lines), changed, skipped


def add_noqa_source(data: bytes, findings: Sequence[Finding], path: str) -> Tuple[bytes, int, List[Tuple[Finding, str]]]:
    """The bytes with noqa comments added, in the file's own encoding, BOM and line endings."""
    bom = data.startswith(codecs.BOM_UTF8)
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    text = decode(data, path)
    new, changed, skipped = add_noqa_text(text, findings)
    if not changed:
        return data, 0, skipped
    return (codecs.BOM_UTF8 if bom else b"") + new.encode(encoding), changed, skipped


def add_noqa_command(findings: Sequence[Finding], stdin: bool, failed: bool) -> int:
    """Write the comments; one line per skipped finding; exit 1 if any finding is left unsuppressed."""
    from flake8_forksafe.frontends.writes import write_through

    if stdin:
        print("forksafe: error: --add-noqa rewrites files; it cannot take standard input", file=sys.stderr)
        return 2
    per_file: Dict[str, List[Finding]] = defaultdict(list)
    for f in findings:
        per_file[f.path].append(f)
    added = files = 0
    left = 0
    for path, found in per_file.items():
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            new, changed, skipped = add_noqa_source(data, found, path)
        except (OSError, SourceError, SyntaxError) as exc:
            print(f"forksafe: error: {path}: cannot add noqa: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
            failed = True
            continue
        for f, why in skipped:
            print(f"forksafe: {f.path}:{f.line}:{f.col + 1}: {f.code} not baselined: {why}", file=sys.stderr)
        left += len(skipped)
        if changed:
            try:
                write_through(path, new)
            except OSError as exc:
                print(f"forksafe: error: {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
                failed = True
                continue
            added += changed
            files += 1
    print(f"Added {added} noqa comment{'s' if added != 1 else ''} to {files} file{'s' if files != 1 else ''}.")
    if failed:
        return 2
    return 1 if left else 0
