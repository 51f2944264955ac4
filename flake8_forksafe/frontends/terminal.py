"""What ``forksafe check`` and ``forksafe fix`` print on a terminal: the short message of a finding,
fix markers, colour, ``--show-source``, ``--show-fixes``, ``--statistics`` and the summary line.

A finding's message is ``what: why; what to do``. The line of a finding shows ``what`` (the short
message); ``--show-source``, ``forksafe explain`` and the JSON/SARIF/GitHub formats keep all of it.

Markers: ``[*]`` a fix that ``forksafe fix`` applies; ``[~]`` a fix that needs ``--unsafe-fixes``
(shown as ``[*]`` when unsafe fixes are enabled).

Colour: ``--color always|never|auto``; ``auto`` colours a terminal only, and is turned off by a
non-empty ``NO_COLOR`` and on by a non-empty ``FORCE_COLOR`` (NO_COLOR wins), as https://no-color.org
and https://force-color.org describe.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from typing import IO, Dict, List, Optional, Sequence

from flake8_forksafe.model import SAFE, UNSAFE, Finding

COLOR_CHOICES = ("auto", "always", "never")

_CODES = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "dim": "2"}


def use_color(choice: Optional[str], stream: Optional[IO]) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if stream is None or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        return "\x1b[" + ";".join(_CODES[s] for s in styles) + "m" + text + "\x1b[0m"


def short_message(message: str) -> str:
    """The message up to its first ``": "`` outside backticks, quotes, and brackets: the ``what`` of
    ``what: why; what to do``. Messages without such a colon are cut at ``"; "`` or kept whole."""
    for sep in (": ", "; "):
        depth = 0
        tick = False
        for i, ch in enumerate(message):
            if ch == "`":
                tick = not tick
            elif tick:
                continue
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(0, depth - 1)
            elif depth == 0 and message.startswith(sep, i) and i >= 12:
                return message[:i]
    return message


def fixable(f: Finding, unsafe_enabled: bool) -> bool:
    """``forksafe fix`` (with the given ``--unsafe-fixes``) would fix it."""
    return f.fix == SAFE or (unsafe_enabled and f.fix == UNSAFE)


def marker(f: Finding, unsafe_enabled: bool) -> str:
    if fixable(f, unsafe_enabled):
        return "[*] "
    if f.fix == UNSAFE:
        return "[~] "
    return ""


def finding_line(f: Finding, unsafe_enabled: bool, style: Style) -> str:
    cell = f"cell {f.cell}{style(':', 'cyan')}" if f.cell else ""
    where = f"{style(f.path, 'bold')}{style(':', 'cyan')}{cell}{f.line}{style(':', 'cyan')}{f.col + 1}{style(':', 'cyan')}"
    mark = marker(f, unsafe_enabled)
    if mark:
        mark = style(mark.strip(), "cyan") + " "
    return f"{where} {style(f.code, 'bold', 'red')} {mark}{short_message(f.message)}\n"


def source_block(f: Finding, lines: Optional[Sequence[str]], style: Style) -> str:
    """The reported line with a caret under the finding's columns, then the full message."""
    out = []
    if lines is not None and 0 < f.line <= len(lines):
        text = lines[f.line - 1].rstrip("\r\n").expandtabs(1)
        num = str(f.line)
        pad = " " * len(num)
        width = 1
        if f.end_line == f.line and f.end_col > f.col:
            width = f.end_col - f.col
        width = max(1, min(width, max(1, len(text) - f.col)))
        out.append(f"{pad} {style('|', 'cyan')}\n")
        out.append(f"{style(num, 'cyan')} {style('|', 'cyan')} {text}\n")
        out.append(f"{pad} {style('|', 'cyan')} {' ' * f.col}{style('^' * width, 'red', 'bold')} {style(f.code, 'red')}\n")
        out.append(f"{pad} {style('|', 'cyan')}\n")
        lead = f"{pad} "
    else:
        lead = "  "
    out.append(f"{lead}{style('=', 'cyan')} {style('help', 'bold')}: {f.message}\n")
    if f.fix == SAFE:
        out.append(f"{lead}{style('=', 'cyan')} {style('fix', 'bold')}: `forksafe fix`\n")
    elif f.fix == UNSAFE:
        out.append(f"{lead}{style('=', 'cyan')} {style('fix', 'bold')}: `forksafe fix --unsafe-fixes` (changes behaviour; review it)\n")
    out.append("\n")
    return "".join(out)


def report_text(
    findings: Sequence[Finding],
    unsafe_enabled: bool,
    style: Style,
    show_source: bool = False,
    sources: Optional[Dict[str, List[str]]] = None,
) -> str:
    out = []
    for f in findings:
        out.append(finding_line(f, unsafe_enabled, style))
        if show_source:
            out.append(source_block(f, (sources or {}).get(f.path), style))
    return "".join(out)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(findings: Sequence[Finding], unsafe_enabled: bool) -> str:
    """``Found 10 findings. 5 fixable with `forksafe fix` (4 more with `--unsafe-fixes`).``"""
    if not findings:
        return ""
    n = len(findings)
    fix_cmd = "`forksafe fix --unsafe-fixes`" if unsafe_enabled else "`forksafe fix`"
    ready = sum(1 for f in findings if fixable(f, unsafe_enabled))
    hidden = sum(1 for f in findings if f.fix == UNSAFE and not unsafe_enabled)
    text = f"Found {_plural(n, 'finding')}."
    if ready:
        text += f" {ready} fixable with {fix_cmd}"
        text += f" ({hidden} more with `--unsafe-fixes`)." if hidden else "."
    elif hidden:
        text += f" {hidden} fixable with `forksafe fix --unsafe-fixes`."
    return text + "\n"


def statistics(findings: Sequence[Finding], unsafe_enabled: bool) -> str:
    """One line per code: count, code, fix marker, rule name (flake8's ``--statistics`` order: by code)."""
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    marks: Dict[str, str] = {}
    for f in findings:
        m = marker(f, unsafe_enabled).strip()
        if m and marks.get(f.code) != "[*]":
            marks[f.code] = m
    width = max([5] + [len(str(n)) for n in counts.values()])
    return "".join(
        f"{n:<{width}} {code:<6} {marks.get(code, ''):<3} {names.get(code, '')}".rstrip() + "\n"
        for code, n in sorted(counts.items())
    )


def fixes_by_file(findings: Sequence[Finding], title: str) -> str:
    """``--show-fixes``: per file, how many findings of each code are (or would be) fixed."""
    if not findings:
        return ""
    per: Dict[str, Counter] = defaultdict(Counter)
    names: Dict[str, str] = {}
    applicability: Dict[str, Optional[str]] = {}
    for f in findings:
        per[f.path][f.code] += 1
        names[f.code] = f.name
        applicability[f.code] = f.fix
    out = [f"{title}:\n"]
    for path in sorted(per):
        out.append(f"- {path}:\n")
        for code, n in sorted(per[path].items()):
            unsafe = " (unsafe)" if applicability.get(code) == UNSAFE else ""
            out.append(f"    {n} \u00d7 {code} ({names.get(code, '')}){unsafe}\n")
    return "".join(out)
