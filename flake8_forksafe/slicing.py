"""Keep libcst's memory bounded on big files: analyse only the statements a finding can involve.

libcst's tree costs about 400 bytes of memory per byte of source (a 1.4 MB file took ~1 GB), and its
parse and the analysis cost time per statement, so a file over ``SLICE_ABOVE`` is reduced before
libcst sees it (``engine.check_source`` keeps a file whole when a class's dataset base is in another
module of the project: the slicer, which sees one file, cannot know it). Every top-level ``def`` /
``class`` that cannot take part in a finding is removed, whole lines at a time: the columns of the
rest are unchanged and a line map gives back each original line (positions and ``# noqa`` stay
exact). Kept are:

- all module-level code that is not a ``def`` / ``class`` (except long literal-only containers);
- a ``def`` / ``class`` holding an anchor of the rules: an import, a ``global`` statement, a lambda
  or a local function or class, a dataset / loader / process base, a loader, dataset,
  worker-starting, ``get_context`` or start-method call, a three-argument ``type()``, a
  ``worker_init_fn=`` / ``multiprocessing_context=`` keyword;
- and, repeatedly, every ``def`` / ``class`` a kept statement names, and every one that names a
  kept ``def`` / ``class`` (a subclass of a kept dataset, a function building it).

A file holding the string ``"fork"`` is not reduced (FRK404 asks whether anything in the module uses
CUDA). The facts are the pre-filter's (``prefilter.gate`` returns them with its verdict; without one,
``prefilter.facts_of_text``), which parses a very big file one group of statements at a time. tests/test_slicing.py checks that reduced and whole files give the same
findings.
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

from flake8_forksafe.knowledge import Knowledge
from flake8_forksafe.prefilter import Facts, Gate, StmtFact, facts_of_text, split_lines

SLICE_ABOVE = 200_000  # bytes of source; smaller files are analysed whole
MAX_ANALYSED = 1_000_000  # bytes of (reduced) source libcst may parse (~400 MB of memory)
LITERAL_LINES = 20  # module-level literal-only containers at least this long are dropped


def _anchored(facts: Facts, s: StmtFact) -> bool:
    if s.imports or s.lambdas or s.local_defs or s.globals:
        return True
    if any(facts.base_anchor(b) or facts.process_base(b) for bases in s.bases for b in bases):
        return True
    n = facts.n
    for c in s.calls:
        if facts.call_anchor(c) or facts.starts(c) or facts.qualified(c.func) & (n.setters | n.starters):
            return True
    return False


def dropped_spans(facts: Facts) -> List[Tuple[int, int]]:
    """1-based inclusive line spans of the top-level statements no finding can involve."""
    if facts.fork:
        return []
    drop: List[Tuple[int, int]] = []
    units: List[StmtFact] = []
    kept_refs: Set[str] = set()
    for s in facts.stmts:
        if s.name:
            units.append(s)
        elif s.literal and s.end - s.start + 1 >= LITERAL_LINES:
            drop.append((s.start, s.end))
        else:
            kept_refs |= s.names | s.attrs
    live = [_anchored(facts, u) for u in units]
    kept_names: Set[str] = set()
    for u, on in zip(units, live):
        if on:
            kept_names.add(u.name)
            kept_refs |= u.names | u.attrs
    changed = True
    while changed:
        changed = False
        for i, u in enumerate(units):
            if not live[i] and (u.name in kept_refs or (u.names | u.attrs) & kept_names):
                live[i] = True
                kept_names.add(u.name)
                kept_refs |= u.names | u.attrs
                changed = True
    dropped = {id(u) for u, on in zip(units, live) if not on}
    stmts = facts.stmts
    for i, s in enumerate(stmts):
        if id(s) in dropped:
            # the blank and comment lines up to the next statement go too (libcst keeps a node each)
            end = stmts[i + 1].start - 1 if i + 1 < len(stmts) else s.end
            drop.append((s.start, max(s.end, end)))
    return sorted(drop)


def reduce(
    text: str, k: Knowledge, above: Optional[int] = None, gate: Optional[Gate] = None
) -> Tuple[str, Optional[List[int]]]:
    """The text libcst should analyse and, when it is not ``text`` itself, the original line number
    of each of its lines. A file over ``above`` bytes loses the top-level statements no finding
    can involve (whole lines: every column of the rest is unchanged). ``gate``: the pre-filter's
    verdict on this text, whose facts are used instead of parsing it again."""
    if len(text) <= (SLICE_ABOVE if above is None else above):
        return text, None
    facts = gate.facts if gate is not None and gate.parsed else facts_of_text(text, k)
    if facts is None:
        return text, None  # the real parser gives the one-line error
    spans = dropped_spans(facts)
    if not spans:
        return text, None
    lines = split_lines(text)
    keep = [True] * len(lines)
    for start, end in spans:
        for i in range(start - 1, min(end, len(lines))):
            keep[i] = False
    line_map = [i + 1 for i, on in enumerate(keep) if on]
    return "".join(line for line, on in zip(lines, keep) if on), line_map
