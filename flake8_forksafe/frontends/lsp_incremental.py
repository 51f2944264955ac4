"""The language server's per-document memory: re-analyse only what an edit can change.

Runs where the lints run (the server's isolated child, ``isolation.IsolatedLinter``): the memory of
each open document lives in that process, keyed by URI, and is lost with it (a crash costs one
run and the memory; the next run starts afresh).

What is kept per document, and when it is used:

* **The gate's per-statement facts** (``prefilter.stmt_fact``), keyed by the statement's own text:
  after an edit, the pre-filter's verdict and the slicer's plan come from one ``ast`` parse and a
  walk of the statements whose text changed only.
* **The text libcst analysed and its findings.** The document is always reduced to the statements
  a finding can involve (``slicing.reduce`` at any size; ``tests/test_slicing.py`` proves reduced
  and whole give the same findings). When the reduced text of the new version is the one analysed
  before (the edit touched only statements no finding can involve: an unrelated function, a
  comment between them, blank lines), the previous findings are reused, their lines moved through
  the two line maps: no libcst parse, no analysis.
* When the gate says no finding is possible, the answer is empty without libcst (as ``check_source``).

Anything else (an edit inside a dataset class, in module-level code, in an import...) is a full
``engine.check_source`` of the reduced text, whose libcst parses (the reduced text, and the whole
text when FRK401 plans on it) re-use the top-level statements the edit did not touch
(``SpliceParser``: only the edited statements are parsed; their positions are kept too).

Reuse also needs the same configuration, path, ``# flake8: noqa`` state and jupytext state, a
document that is not tied to another module of the project through a base class
(``engine.project_anchor``: then the document is analysed whole, as ``check_source`` does), and
no character ``str.splitlines`` counts as a line break where Python does
not (the engine's ``# noqa`` lookup counts lines that way). ``full=True`` (open, save) never reuses.

``tests/integrations/test_lsp_incremental.py`` edits documents at random and compares every
version's answer with a fresh ``check_source``.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from flake8_forksafe import prefilter, slicing
from flake8_forksafe.model import Finding

MAX_DOCUMENTS = 32  # documents remembered (least recently used first out)
PARSED_DOCUMENTS = 4  # of which the libcst trees of the last texts (SpliceParser) are kept
_ODD_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")

StmtKey = Tuple[str, int, int]
# top-level statements whose change can change what the project index says of the module's classes
_SUMMARISED = (ast.ClassDef, ast.Import, ast.ImportFrom)


class Memo:
    """What is remembered of one document between two lints."""

    __slots__ = (
        "key", "facts", "analysed", "line_map", "findings", "context", "classes_changed", "text", "order", "deps", "parser",
        "planned_whole",
    )

    def __init__(self, key: Any) -> None:
        self.key = key  # (path, config): anything else starts a new memo
        self.facts: Dict[StmtKey, Tuple[prefilter.StmtFact, Dict[str, set], bool]] = {}
        self.classes_changed = True  # the last facts() saw a top-level class or import added, removed or edited
        self.text: Optional[str] = None  # the text of ``order``
        self.order: List[Tuple[StmtKey, prefilter.StmtFact, Dict[str, set], bool]] = []  # its statements, in order
        self.analysed: Optional[str] = None  # the (reduced) text libcst analysed last; None: no reuse
        self.line_map: Optional[List[int]] = None
        self.findings: List[Finding] = []
        self.context: Any = None  # (interactive, file noqa) of that analysis
        self.deps: Optional[str] = None  # the index's digest of the modules its classes build on
        self.parser = SpliceParser()  # libcst parses of its last texts, re-used statement by statement
        self.planned_whole = False  # the last analysis had a finding of a rule that plans on the whole text (FRK401)


_MEMOS: "OrderedDict[str, Memo]" = OrderedDict()
STATS: Dict[str, int] = {
    "gate": 0, "reused": 0, "analysed": 0, "facts_reused": 0, "facts_walked": 0, "one_statement": 0, "spliced": 0,
}


def forget(uri: str) -> None:
    _MEMOS.pop(uri, None)


def _memo(uri: str, key: Any) -> Memo:
    memo = _MEMOS.get(uri)
    if memo is None or memo.key != key:
        memo = Memo(key)
        _MEMOS[uri] = memo
    _MEMOS.move_to_end(uri)
    while len(_MEMOS) > MAX_DOCUMENTS:
        _MEMOS.popitem(last=False)
    for other in list(_MEMOS.values())[:-PARSED_DOCUMENTS]:
        other.parser.recent, other.parser.positions = [], {}  # big: only the documents edited last keep them
    return memo


def _moved(f: prefilter.StmtFact, start: int) -> prefilter.StmtFact:
    """The same statement's facts, starting at line ``start``."""
    if f.start == start:
        return f
    g = prefilter.StmtFact.__new__(prefilter.StmtFact)
    for slot in prefilter.StmtFact.__slots__:
        setattr(g, slot, getattr(f, slot))
    g.end = f.end + (start - f.start)
    g.start = start
    return g


def facts(text: str, k: Any, memo: Memo) -> Optional[prefilter.Facts]:
    """``prefilter.facts_of_text(text, k)``, walking only the statements whose text is new."""
    from flake8_forksafe.guard import too_deep

    memo.classes_changed = True
    if len(text) > prefilter.CHUNK_ABOVE:
        memo.facts = {}
        return prefilter.facts_of_text(text, k)  # parsed in groups: memory first
    quick = _one_statement_changed(text, k, memo)
    if quick is not None:
        return quick
    memo.text, memo.order = None, []
    if too_deep(text):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = prefilter.split_lines(text)
    old, new = memo.facts, {}
    changed = not old
    order: List[Tuple[StmtKey, prefilter.StmtFact, Dict[str, set], bool]] = []
    stmts: List[prefilter.StmtFact] = []
    imports: Dict[str, set] = {}
    for st in tree.body:
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
        end = st.end_lineno or st.lineno
        key = ("".join(lines[start - 1 : end]), st.col_offset, st.end_col_offset or 0)
        hit = new.get(key) or old.get(key)
        if hit is None:
            own: Dict[str, set] = {}
            hit = (prefilter.stmt_fact(st, 0, own), own, isinstance(st, _SUMMARISED))
            STATS["facts_walked"] += 1
            changed = changed or hit[2]
        else:
            STATS["facts_reused"] += 1
        new[key] = hit
        fact, own, summarised = hit
        stmts.append(_moved(fact, start))
        order.append((key, stmts[-1], own, summarised))
        for name, targets in own.items():
            imports.setdefault(name, set()).update(targets)
    changed = changed or any(v[2] for key, v in old.items() if key not in new)
    memo.facts, memo.classes_changed = new, changed
    memo.text, memo.order = text, order
    return prefilter.Facts(stmts, imports, prefilter._names(k))


def _one_statement_changed(text: str, k: Any, memo: Memo) -> Optional[prefilter.Facts]:
    """The facts of ``text`` when it differs from the last text only inside one top-level
    statement (alone on its lines), which still parses alone as one statement spanning the same
    lines: only that statement is parsed and walked; the others keep their facts, moved by the
    lines the edit added. None: not such an edit (the caller parses the whole text)."""
    from flake8_forksafe.guard import too_deep

    old_text, order = memo.text, memo.order
    if old_text is None or not order:
        return None
    if old_text == text:  # checked again (a save): the same facts
        memo.classes_changed = False
        return _facts_of_order(order, k)
    old = prefilter.split_lines(old_text)
    new = prefilter.split_lines(text)
    p, q = prefilter.common_ends(old, new)
    first, last = p, len(old) - q  # old lines [first, last) (0-based) were replaced
    delta = len(new) - len(old)
    i = next((j for j, o in enumerate(order) if o[1].start - 1 <= first and last <= o[1].end), None)
    if i is None:
        return None
    key, fact = order[i][0], order[i][1]
    if key[1] != 0 or (i and order[i - 1][1].end >= fact.start) or (i + 1 < len(order) and order[i + 1][1].start <= fact.end):
        return None  # shares a line with another statement (``a = 1; b = 2``)
    seg_lines = new[fact.start - 1 : fact.end + delta]
    if not seg_lines:
        return None
    seg = "".join(seg_lines)
    if "__future__" in seg or too_deep(seg):
        return None  # a future import's place, the depth limit: the whole text decides
    try:
        tree = ast.parse(seg)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1:
        return None
    st = tree.body[0]
    start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
    if start != 1 or st.col_offset != 0 or (st.end_lineno or st.lineno) != len(seg_lines):
        return None
    new_key = (seg, 0, st.end_col_offset or 0)
    hit = memo.facts.get(new_key)
    if hit is None:
        own: Dict[str, set] = {}
        hit = (prefilter.stmt_fact(st, fact.start - 1, own), own, isinstance(st, _SUMMARISED))
        STATS["facts_walked"] += 1
    new_order = order[:i] + [(new_key, _moved(hit[0], fact.start), hit[1], hit[2])]
    new_order += [(kk, _moved(f, f.start + delta), o, c) for kk, f, o, c in order[i + 1 :]]
    STATS["facts_reused"] += len(order) - 1
    STATS["one_statement"] += 1
    memo.facts = {kk: (f, o, c) for kk, f, o, c in new_order}
    memo.classes_changed = order[i][3] or hit[2]
    memo.text, memo.order = text, new_order
    return _facts_of_order(new_order, k)


def _facts_of_order(order: List[Tuple[StmtKey, prefilter.StmtFact, Dict[str, set], bool]], k: Any) -> prefilter.Facts:
    imports: Dict[str, set] = {}
    for _key, _fact, own, _summarised in order:
        for name, targets in own.items():
            imports.setdefault(name, set()).update(targets)
    return prefilter.Facts([f for _, f, _, _ in order], imports, prefilter._names(k))


def gate(text: str, k: Any, memo: Memo) -> prefilter.Gate:
    """``prefilter.gate(text, k)`` with the remembered facts."""
    if not prefilter.text_gate(text, k):
        memo.classes_changed = True  # not looked at: the index's summary is brought up to date
        return prefilter.Gate(False)
    f = facts(text, k, memo)
    if f is None:
        return prefilter.Gate(True, None, parsed=True)
    return prefilter.Gate(f.could_have_findings(), f, parsed=True)


def _context(text: str) -> Any:
    from flake8_forksafe.noqa import file_noqa
    from flake8_forksafe.notebook import is_jupytext

    return (is_jupytext(text), file_noqa(text.splitlines()))


def _deps(index: Any, path: str) -> Optional[str]:
    """What the findings read of other modules: the digest of the modules the document's classes
    build on (``ProjectIndex.dependency_digest``, the CLI cache's key for the same question)."""
    if index is None:
        return ""
    try:
        return index.dependency_digest(path)
    except Exception:  # the index cannot say: no reuse
        return None


def _remap(found: List[Finding], old_map: Optional[List[int]], new_map: Optional[List[int]]) -> Optional[List[Finding]]:
    """The findings of the same reduced text, on the lines of the new document."""
    where = {line: i for i, line in enumerate(old_map)} if old_map is not None else None
    out = []
    for f in found:
        lines = []
        for line in (f.line, f.end_line):
            i = where.get(line) if where is not None else line - 1
            if i is None or (new_map is not None and i >= len(new_map)):
                return None
            lines.append(new_map[i] if new_map is not None else i + 1)
        out.append(f if lines == [f.line, f.end_line] else replace(f, line=lines[0], end_line=lines[1]))
    return out


def check(
    uri: str, text: str, path: str, cfg: Any, index: Any = None, full: bool = False, refresh: Optional[Callable[[], None]] = None
) -> Tuple[List[Finding], str]:
    """(findings of ``text``, how: "gate" | "reused" | "analysed"); the same findings as
    ``engine.check_source(text, path, cfg, index=index)``. Raises what check_source raises.

    ``refresh`` brings the index's summary of this module up to ``text`` (``update_text``); it
    is called before anything reads the index, except when only the gate's project anchor reads it
    and no top-level class or import changed (nothing the anchor reads of this module changed):
    then (reuse, or the gate's "no finding possible") the caller may defer it."""
    from flake8_forksafe.engine import check_source, project_anchor, whole_planning_codes
    from flake8_forksafe.source import decode

    text = decode(text, path)
    memo = _memo(uri, (path, cfg))
    k = cfg.knowledge
    verdict = gate(text, k, memo)
    refreshed = False
    if index is not None and refresh is not None and (full or memo.classes_changed):
        refresh()
        refreshed = True
    # a document the gate passes is sliced by check_source without the holder question (which would
    # summarise the whole document again on every edit)
    anchored = index is not None and project_anchor(index, path, cfg, text, holders=not verdict.passes)
    if not verdict.passes and not anchored:
        memo.analysed = None
        STATS["gate"] += 1
        return [], "gate"  # read of the index: only the project anchor, as on reuse
    plan = None
    if verdict.passes and not anchored and verdict.facts is not None and not any(c in text for c in _ODD_BREAKS):
        plan = slicing.reduce(text, k, 0, verdict)
        context = _context(text)
        if (
            not full
            and memo.analysed is not None
            and plan[0] == memo.analysed
            and context == memo.context
            and memo.deps is not None
            and _deps(index, path) == memo.deps
        ):
            moved = _remap(memo.findings, memo.line_map, plan[1])
            if moved is not None:
                memo.line_map, memo.findings = plan[1], moved
                STATS["reused"] += 1
                return moved, "reused"
    memo.analysed = None
    if index is not None and refresh is not None and not refreshed:
        refresh()
    found = check_source(
        text, path, cfg, index=index, slice_above=0, verdict=verdict, parser=memo.parser, plan_on_whole=memo.planned_whole
    )
    memo.planned_whole = any(f.code in whole_planning_codes() for f in found)
    if plan is not None:
        memo.analysed, memo.line_map, memo.findings, memo.context = plan[0], plan[1], found, _context(text)
        memo.deps = _deps(index, path)
    STATS["analysed"] += 1
    return found, "analysed"


def parser_for(uri: str, path: str, cfg: Any) -> Optional["SpliceParser"]:
    """A parser that starts from the document's last parsed texts (for a fix's rounds: the
    document's own parser keeps its texts), or None when nothing is remembered of it."""
    memo = _MEMOS.get(uri)
    if memo is None or memo.key != (path, cfg) or not memo.parser.recent:
        return None
    return memo.parser.fork()


def statement_span(uri: str, text: str, line: int) -> Optional[Tuple[int, int]]:
    """(first, last) line of the top-level statement holding ``line`` in the document's last
    checked text, when that is ``text`` and the statement is alone on its lines; else None."""
    memo = _MEMOS.get(uri)
    if memo is None or memo.text != text:
        return None
    order = memo.order
    for i, (key, fact, _own, _summarised) in enumerate(order):
        if fact.start <= line <= fact.end:
            if key[1] != 0 or (i and order[i - 1][1].end >= fact.start) or (i + 1 < len(order) and order[i + 1][1].start <= fact.end):
                return None
            return fact.start, fact.end
    return None


def stats() -> Dict[str, int]:
    return dict(STATS)




class _Parsed:
    """One text libcst parsed, with the code of each top-level statement (once known)."""

    __slots__ = ("text", "module", "codes", "starts")

    def __init__(self, text: str, module: Any, codes: Optional[List[str]] = None) -> None:
        self.text, self.module = text, module
        self.codes: Optional[List[str]] = codes
        self.starts: Optional[List[int]] = None  # 0-based line where each statement's code starts, then the end

    def spans(self) -> List[int]:
        if self.starts is None:
            if self.codes is None:
                self.codes = [self.module.code_for_node(s) for s in self.module.body]
            starts = [len(self.module.header)]
            for code in self.codes:
                starts.append(starts[-1] + len(prefilter.split_lines(code)))
            self.starts = starts
        return self.starts


class SpliceParser:
    """libcst parses of one document's texts (its whole text and its reduced text), re-using the
    top-level statements an edit did not touch: when a new text differs from a text parsed before
    only inside top-level statements (not the first, not the last; the changed lines by difflib
    when they are not one run), only those statements' lines are parsed, and the new statements
    replace the old ones in the module. The result is the module
    ``libcst.parse_module`` gives for the whole text (``tests/integrations/test_lsp_incremental.py``
    compares them, ``deep_equals``, on random edits): each statement's lines parse alone as exactly
    one statement with nothing after it, with the module's indentation and line ending; the
    module's indentation was decided before it (an indented block above it) and its line ending
    too (not the first statement); and the leading lines of the statement and of the next one are
    blank lines and comments at the left edge (an indented one could belong to a block ending the
    statement before it). Anything else is a whole parse (``source.parse``: its errors too). The
    nesting guards (``source.parse``'s) read the parsed statements only: the others passed them
    when the text they come from was parsed."""

    KEEP = 2  # texts remembered: the whole text and the reduced one (a fix: the last two rounds)

    def __init__(self) -> None:
        self.recent: List[_Parsed] = []
        # engine.report_positions' positions of statements of these modules, by the statement object
        self.positions: Dict[Any, Any] = {}

    def __call__(self, text: str, path: str) -> Any:
        from flake8_forksafe.source import parse

        got = None
        for old in self.recent:
            if old.text == text:
                got = old
                break
        for by_diff in (False, True):  # one run of changed lines first (cheap), then difflib's runs
            if got is not None:
                break
            for old in self.recent:
                got = self._splice(old, text, by_diff)
                if got is not None:
                    STATS["spliced"] += 1
                    break
        if got is None:
            got = _Parsed(text, parse(text, path))
        self.recent = [got] + [p for p in self.recent if p is not got][: self.KEEP - 1]
        live = {id(st) for p in self.recent for st in p.module.body}
        for key in [key for key in self.positions if key[0] not in live]:
            del self.positions[key]  # in place: an analysis of the other text holds this dict
        return got.module

    def fork(self) -> "SpliceParser":
        """A parser that knows this one's texts, and remembers its own."""
        other = SpliceParser()
        other.recent = list(self.recent)
        other.positions = dict(self.positions)
        return other

    def codes(self, module: Any) -> Optional[List[str]]:
        """The statement codes of a module this parser returned, when known without generating them."""
        for p in self.recent:
            if p.module is module:
                return p.codes
        return None

    def learn_codes(self, module: Any, codes: List[str]) -> None:
        for p in self.recent:
            if p.module is module and p.codes is None:
                p.codes = codes

    def _splice(self, old: _Parsed, text: str, by_diff: bool) -> Optional[_Parsed]:
        import libcst as cst

        from flake8_forksafe.guard import too_deep
        from flake8_forksafe.source import MAX_NESTING, nesting_depth

        body = old.module.body
        n = len(body)
        if n < 3:
            return None
        old_lines = prefilter.split_lines(old.text)
        new_lines = prefilter.split_lines(text)
        if "".join(new_lines) != text or "".join(old_lines) != old.text:
            return None  # characters no line holds (none: a safety net)
        starts = old.spans()
        hunks = _hunks(old_lines, new_lines, by_diff)
        if hunks is None:
            return None
        delta_of: Dict[int, int] = {}  # edited statement -> lines it gained
        for i1, i2, j1, j2 in hunks:
            k = next((k for k in range(1, n - 1) if starts[k] <= i1 and i2 <= starts[k + 1]), None)
            if k is None:
                return None  # the first or last statement, the header or footer, or across statements
            delta_of[k] = delta_of.get(k, 0) + (j2 - j1) - (i2 - i1)
        first = min(delta_of)
        if not any(isinstance(getattr(st, "body", None), cst.IndentedBlock) for st in body[:first]):
            return None  # the module's indentation may be decided in an edited statement
        new_body = list(body)
        codes = list(old.codes) if old.codes is not None else None
        new_starts = list(starts)
        shift = 0
        for k in range(n):
            new_starts[k] = starts[k] + shift
            if k not in delta_of:
                continue
            if k + 1 not in delta_of and not _flush_left(body[k + 1].leading_lines):
                return None  # an indented comment: a block ending the statement would take it
            seg = "".join(new_lines[starts[k] + shift : starts[k + 1] + shift + delta_of[k]])
            if nesting_depth(seg) > MAX_NESTING or too_deep(seg):
                return None  # the whole parse says why (the other statements passed when ``old`` was parsed)
            node = _one_statement(seg, old.module)
            if node is None:
                return None
            new_body[k] = node
            if codes is not None:
                codes[k] = seg
            shift += delta_of[k]
        new_starts[n] = starts[n] + shift
        got = _Parsed(text, old.module.with_changes(body=tuple(new_body)), codes)
        got.starts = new_starts
        return got


def _hunks(old: List[str], new: List[str], by_diff: bool) -> Optional[List[Tuple[int, int, int, int]]]:
    """The replaced line ranges (old i1:i2 by new j1:j2): the one between the common prefix and
    suffix, or (``by_diff``) difflib's runs in it (None: no change, or nothing difflib would add)."""
    p, q = prefilter.common_ends(old, new)
    if p == len(old) == len(new):
        return None
    first, last = p, len(old) - q
    import difflib

    whole = (first, last, first, len(new) - q)
    small = last - first <= 2 and len(new) - q - first <= 2
    if not by_diff:
        return [whole]
    if small:
        return None  # a line or two: one run, tried already
    sm = difflib.SequenceMatcher(None, old[first:last], new[first : len(new) - q], autojunk=False)
    return [(first + i1, first + i2, first + j1, first + j2) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def _one_statement(seg: str, module: Any) -> Any:
    """The one top-level statement ``seg`` holds, parsed alone as it would be in ``module`` (its
    indentation and line ending, nothing after it, leading lines at the left edge); else None."""
    import libcst as cst

    if not seg.endswith(("\n", "\r")):
        return None
    try:
        m = cst.parse_module(seg)
    except Exception:  # noqa: BLE001 - the whole parse decides (and says why)
        return None
    if (
        len(m.body) != 1
        or m.footer
        or not m.has_trailing_newline
        or m.default_newline != module.default_newline
        or m.default_indent != module.default_indent
        or m.encoding != module.encoding
    ):
        return None
    node = m.body[0]
    if m.header:
        node = node.with_changes(leading_lines=(*m.header, *node.leading_lines))
    if not _flush_left(node.leading_lines):
        return None  # an indented comment: a block ending the statement above would take it
    return node


def _flush_left(lines: Sequence[Any]) -> bool:
    """Blank lines and comments at the left edge only (no line a block above could own)."""
    return all(e.indent and not e.whitespace.value for e in lines)
