"""``forksafe fix``: apply the rules' fixes in rounds, one analysis per round, until nothing fixable is left.

Each round parses the current text once (libcst), runs every enabled rule on that one analysis and
asks each rule with fixable findings for its rewrite of the module, rules taken in the order of their
earliest finding (the main-guard fix, FRK401, first: see ``FIX_FIRST``). The rewrites are compared
with the round's text line by line: every rewrite whose changed lines touch top-level statements
that no rewrite taken before it in this round touches is applied in this round (ruff's non-overlap rule: an insertion between two statements touches both
neighbours); the others wait for the next round. The findings of the first round are the file's
findings before the fix, those of the last round the findings that remain.

A round's result is validated by compiling it (CPython) and by the next round's libcst parse: when
it does not parse, the round is undone and redone with its first rewrite alone; a rule whose rewrite
does not parse or does not change the text is not asked again (one line in ``notes``), a rule whose
fix raises is not asked again either (one line in ``errors``). So a file with one fixable rule costs
two libcst parses. Encoding, BOM and line endings of the input are kept; files are written atomically.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Sequence, Set, Tuple, Union

from flake8_forksafe.config import Config
from flake8_forksafe.edit import drop_orphaned_local_imports, retarget_imports
from flake8_forksafe.engine import (
    analyse,
    check_source,
    could_have_findings,
    enabled_rules,
    locate,
    project_anchor,
    run_rules,
)
from flake8_forksafe.families.style import line_length
from flake8_forksafe.model import SAFE, UNSAFE, Finding, Rule, SourceError
from flake8_forksafe.prefilter import common_ends, split_lines
from flake8_forksafe.source import decode, encode, encoding_of

MAX_ROUNDS = 12
# fixes taken before the others in a round: the main-guard fix moves whole statements into the
# guard, where the start-method rules no longer apply (FRK402 would first move a `set_start_method`
# call above the torch import, with noqa comments for E402 on the imports after it, only for FRK401
# to move it into the guard in the next round, leaving those comments and a split import block)
FIX_FIRST = ("FRK401",)


@dataclass
class FixResult:
    source: Union[str, bytes]  # the fixed source, same type as the input
    fixed: List[Finding] = field(default_factory=list)  # findings of the input that are gone
    remaining: List[Finding] = field(default_factory=list)  # findings of the output
    changed: bool = False
    errors: List[str] = field(default_factory=list)  # one line per fixer that failed
    notes: List[str] = field(default_factory=list)  # one line each: why findings were left (not a failure)


def applicable(fix: Optional[str], unsafe: bool) -> bool:
    return fix == SAFE or (unsafe and fix == UNSAFE)


Edit = Tuple[int, int, List[str]]  # replace lines [i1, i2) of the round's text with these lines


class _Round:
    """One analysis of one text: its findings and what its rules want to fix."""

    def __init__(
        self,
        text: str,
        path: str,
        config: Config,
        rules: Sequence[Rule],
        interactive: Optional[bool] = None,
        parser: Any = None,
        index: Any = None,
    ) -> None:
        self.text = text
        self.findings: List[Finding] = []
        self.todo: List[Tuple[Rule, List]] = []  # (rule, its fixable reports), by earliest finding
        self.analysis = None
        # the gate only spares an analysis that finds nothing (it over-approximates every rule): the
        # language server's rounds (a ``parser`` given) fix a text its lint found something in
        if not rules or (
            parser is None and not (could_have_findings(text, config) or project_anchor(index, path, config, text))
        ):
            return
        from flake8_forksafe.notebook import is_jupytext

        # raises SourceError: the caller decides; a jupytext notebook gets no FRK401 guard
        a = analyse(
            text, config, path, index, interactive=is_jupytext(text) if interactive is None else interactive, parser=parser
        )
        self.analysis = a
        located = locate(a, run_rules(a, rules), path, text)
        self.findings = [f for f, _, _ in located]
        self._located = located

    def release(self) -> None:
        """Free the round's analysis now (``Analysis.release``): its records and the libcst tree go by
        reference counting, not by the cyclic collector; the text and the findings stay."""
        if self.analysis is not None:
            self.analysis.release()
            self.analysis = None
        self._located = []

    def fixable(self, unsafe: bool, fixers: Set[str]) -> List[Tuple[Rule, List]]:
        order: List[Rule] = []
        reports: dict = {}
        for f, rule, rep in getattr(self, "_located", ()):
            if rule.code in fixers and rep.fixable and applicable(f.fix, unsafe):
                if rule.code not in reports:
                    order.append(rule)
                    reports[rule.code] = []
                reports[rule.code].append(rep)
        order.sort(key=lambda r: r.code not in FIX_FIRST)  # stable: the others by earliest finding
        return [(r, reports[r.code]) for r in order]


def _statement_spans(a) -> List[Tuple[int, int]]:
    """0-based [start, end) line spans of the module's top-level statements (leading lines included)."""
    spans = []
    line = len(a.module.header)
    for code in a.statement_codes:  # each statement's code_for_node (computed once per analysis)
        n = len(split_lines(code))
        spans.append((line, line + n))
        line += n
    return spans


def _edits(old: List[str], new: List[str]) -> List[Edit]:
    """The replaced line runs, found by difflib between the lines the two texts share at their
    start and at their end (a fix rewrites a few statements of a long file)."""
    p, q = common_ends(old, new)
    sm = difflib.SequenceMatcher(None, old[p : len(old) - q], new[p : len(new) - q], autojunk=False)
    return [(p + i1, p + i2, new[p + j1 : p + j2]) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]


def _touched(edits: Sequence[Edit], spans: Sequence[Tuple[int, int]]) -> Set[int]:
    """The top-level statements (indexes; -1: before the first, len: after the last) the edits touch."""
    out: Set[int] = set()
    for i1, i2, repl in edits:
        lo, hi = i1, i2
        if i2 == i1:  # an insertion touches both neighbours, unless indented: the end of the block above
            first = next((line for line in repl if line.strip()), "")
            lo, hi = (i1 - 1, i1) if first[:1] in (" ", "\t") and i1 > 0 else (i1 - 1, i1 + 1)
        hit = False
        for k, (s, e) in enumerate(spans):
            if s < max(hi, lo + 1) and lo < e:
                out.add(k)
                hit = True
        if not hit or lo < (spans[0][0] if spans else 0):
            out.add(-1 if not spans or lo < spans[0][0] else len(spans))
    return out


def _apply(lines: List[str], edits: Sequence[Edit]) -> str:
    out = list(lines)
    for i1, i2, repl in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out[i1:i2] = repl
    return "".join(out)


def _compiles(text: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():  # the user's own warnings, not worth a line under a fake name
            warnings.simplefilter("ignore")
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except Exception:
        return False
    return True


def _declined(rule: Rule, text: str, notes: Optional[List[str]]) -> None:
    if notes is not None:  # declined, never silently
        mixed = " (the file mixes tabs and spaces in its indentation)" if _mixed_indent(text) else ""
        notes.append(f"{rule.code} not fixed: the rewritten file would not compile{mixed}; finding left as is")


def fix_rounds(
    text: str,
    path: str,
    config: Config,
    unsafe: bool,
    select: Optional[Iterable[str]] = None,
    errors: Optional[List[str]] = None,
    notes: Optional[List[str]] = None,
    interactive: Optional[bool] = None,
    fixers_only: bool = False,
    parser: Any = None,
    index: Any = None,
) -> Tuple[str, List[Finding], List[Finding]]:
    """The fixing loop on decoded text (no BOM): (fixed text, findings before, findings remaining).
    ``select``: code prefixes; only the selected codes found in the text before are fixed.
    ``interactive``: the text is a notebook's code (None: a jupytext notebook is one).
    ``fixers_only``: only the rules that could fix something (a fix, and selected) are run, so the
    findings before and remaining are theirs only; the fixed text is the same (a rule that does
    not fix never changes it, and each rule checks on its own): the language server's resolve.
    ``parser``: parses each round's text (``engine.analyse``; the language server's SpliceParser).
    ``index``: the file's project index (``forksafe check``'s): the findings that depend on other
    modules of the project are found, and fixed, as ``check`` reports them (the index keeps the
    file's summary as it was: a fix does not change what other modules' questions read of it).
    Raises SourceError when ``text`` itself cannot be analysed."""
    rules = enabled_rules(config)
    if select is not None:
        select = tuple(select)
    if fixers_only:
        rules = [r for r in rules if r.fix_applicability and (select is None or r.code.startswith(select))]
    rnd = _Round(text, path, config, rules, interactive, parser, index)
    before = rnd.findings
    fixers = {r.code for r in rules if r.fix_applicability}
    if select is not None:
        fixers &= {f.code for f in before if f.code.startswith(select)}
    width = line_length(path)
    for _ in range(MAX_ROUNDS):
        todo = rnd.fixable(unsafe, fixers)
        if not todo:
            break
        old = split_lines(rnd.text)
        spans = _statement_spans(rnd.analysis)
        taken: List[Tuple[Rule, List[Edit], str]] = []
        used: Set[int] = set()
        for rule, reports in todo:
            try:
                # added code uses the names its imports really have; a local import whose uses the
                # fix moved away (with their own copy of it) goes (ruff F401)
                # and the lines it made too long are split
                module = rnd.analysis.module
                fixed = retarget_imports(module, rule.fix(rnd.analysis, reports))
                fixed = drop_orphaned_local_imports(module, fixed)
                new_text = _wrapped(rnd.text, fixed, width) if fixed is not module else rnd.text
            except NotImplementedError:
                fixers.discard(rule.code)
                continue
            except Exception as exc:  # a bug in one fixer: keep going, say so
                fixers.discard(rule.code)
                if errors is not None:
                    errors.append(
                        f"internal error in the {rule.code} fix ({type(exc).__name__}: {exc}); finding left as is"
                    )
                continue
            if new_text == rnd.text:
                fixers.discard(rule.code)
                continue
            edits = _edits(old, split_lines(new_text))
            touched = _touched(edits, spans)
            if touched & used:
                continue  # overlaps a rewrite taken in this round: next round
            used |= touched
            taken.append((rule, edits, new_text))
            if len(taken) == 1 and not _compiles(new_text):
                fixers.discard(rule.code)
                _declined(rule, rnd.text, notes)
                taken, used = [], set()
        if not taken:
            continue
        nxt = None
        if len(taken) > 1:
            merged = _apply(old, [e for _, edits, _ in taken for e in edits])
            if _compiles(merged):
                nxt = _next(merged, path, config, rules, interactive, parser, index)
        if nxt is None:  # one rewrite, or the merged ones do not parse: the first alone (it compiles)
            rule, _, new_text = taken[0]
            nxt = _next(new_text, path, config, rules, interactive, parser, index)
            if nxt is None:
                fixers.discard(rule.code)
                _declined(rule, rnd.text, notes)
                continue
        rnd, done = nxt, rnd
        done.release()
    rnd.release()
    return rnd.text, before, rnd.findings


def _wrapped(old_text: str, fixed, width: int) -> str:
    """The code of the rewritten module ``fixed`` with the lines the rewrite made longer than the
    project's line length split (ruff E501): lines it added or changed where the lines they replace
    were all within the width (a line that was too long already keeps the user's layout)."""
    from flake8_forksafe.edit import wrap_long_lines

    text = fixed.code
    lines = split_lines(text)
    if all(len(line.rstrip("\r\n")) <= width for line in lines):
        return text
    old = split_lines(old_text)
    changed: Set[int] = set()
    sm = difflib.SequenceMatcher(None, old, lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or any(len(line.rstrip("\r\n")) > width for line in old[i1:i2]):
            continue
        changed.update(n + 1 for n in range(j1, j2) if len(lines[n].rstrip("\r\n")) > width)
    if not changed:
        return text
    wrapped = wrap_long_lines(fixed, changed, width)
    return wrapped if wrapped == text or _compiles(wrapped) else text


def _next(
    text: str,
    path: str,
    config: Config,
    rules: Sequence[Rule],
    interactive: Optional[bool] = None,
    parser: Any = None,
    index: Any = None,
) -> Optional[_Round]:
    try:
        return _Round(text, path, config, rules, interactive, parser, index)
    except SourceError:
        return None




def _mixed_indent(text: str) -> bool:
    indents = {line[: len(line) - len(line.lstrip(" \t"))] for line in text.splitlines()}
    return any("\t" in i for i in indents) and any(" " in i for i in indents)


def fix_source(
    source: Union[str, bytes],
    path: str = "<string>",
    config: Optional[Config] = None,
    *,
    unsafe: bool = False,
    select: Optional[Iterable[str]] = None,
    fixers_only: bool = False,
    parser: Any = None,
    index: Any = None,
) -> FixResult:
    """Fix one file's source. Raises SourceError for a file that cannot be checked.
    ``fixers_only``: see ``fix_rounds`` (``fixed`` and ``remaining`` list the fixing rules' findings only).
    ``parser``, ``index``: see ``fix_rounds``."""
    config = config or Config()
    unsafe = unsafe or config.unsafe_fixes
    encoding, bom = encoding_of(source)
    text = decode(source, path)
    from flake8_forksafe import slicing

    errors: List[str] = []
    notes: List[str] = []
    new_text = text
    if len(text) > slicing.MAX_ANALYSED:
        # a fix rewrites the whole module: libcst would need ~400x the file's size in memory
        before = remaining = check_source(text, path, config, index=index)
        if before:
            notes.append(
                f"not fixed: {len(text) / 1e6:.1f} MB is over the {slicing.MAX_ANALYSED / 1e6:.0f} MB that a fix "
                f"rewrites per file; its findings are listed below"
            )
    else:
        new_text, before, remaining = fix_rounds(
            text, path, config, unsafe, select, errors, notes, fixers_only=fixers_only, parser=parser, index=index
        )
    fixed = _gone(before, remaining)
    out = encode(new_text, source, encoding, bom) if new_text != text else source
    return FixResult(source=out, fixed=fixed, remaining=remaining, changed=new_text != text, errors=errors, notes=notes)


def _gone(before: Sequence[Finding], after: Sequence[Finding]) -> List[Finding]:
    left = Counter(f.code for f in after)
    out = []
    for f in before:
        if left[f.code] > 0:
            left[f.code] -= 1
        else:
            out.append(f)
    return out
