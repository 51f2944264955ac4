"""The engine: decode, pre-filter, parse once, analyse once, run every enabled rule, apply noqa.

Rules are classes in ``flake8_forksafe/checks/`` registered in one list (``checks.ALL_RULES``).
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING, Any, Callable, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

from flake8_forksafe import prefilter
from flake8_forksafe.prefilter import gate as prefilter_gate
from flake8_forksafe.config import Config
from flake8_forksafe.model import Finding, Report, Rule, SourceError
from flake8_forksafe.noqa import file_noqa, suppressed, suppressing_ranges
from flake8_forksafe.source import decode, parse

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from flake8_forksafe.analysis import Analysis

# libcst (~0.3 s to import), the analysis and the rule classes are imported by the functions that
# parse (lazily, for start-up speed, not to break an import loop: checks import ``model``, never
# this module), so that a run whose files all fail the pre-filter never loads them.


def gate_anchors(config: Config) -> FrozenSet[str]:
    """The union of the anchors the enabled rules declare (``ANCHORS`` on each check class)."""
    out: Set[str] = set()
    for code, (anchors, default_on) in prefilter.declared_anchors().items():
        if config.is_enabled(code, default_on):
            out |= anchors
    return frozenset(out)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """No cyclic garbage collection while one file is parsed and analysed: the parsers allocate
    millions of acyclic objects, and the collections their allocations trigger traverse every live
    object (a quarter of a check's time on dataset-heavy code) to find nothing. The collector is on
    again afterwards (what it was before), and collects the file's cycles then."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def gate(text: str, config: Config, keep_tree: bool = False) -> prefilter.Gate:
    """The pre-filter's verdict for the enabled rules (their anchors only), with its facts.
    ``keep_tree``: keep the gate's ast for the project index (``check_source`` offers it)."""
    with no_gc():
        return prefilter_gate(text, config.knowledge, gate_anchors(config), keep_tree)


def could_have_findings(text: str, config: Config) -> bool:
    return gate(text, config).passes


def project_anchor(
    index: Any, path: str, config: Config, text: str = "class ", holders: bool = True, tree: Any = None
) -> bool:
    """The file defines a class whose base, defined in another module of the project (the index),
    is dataset-like, or (``holders``) a class whose objects such a dataset keeps (``holder_anchor``):
    the pre-filter, which sees one file, cannot know. The holder question matters only for a file the
    gate rejects (``check_source`` analyses such a file whole); it summarises the file itself, so a
    caller asking about a file that passes the gate leaves it out. ``tree``: the file's ast when the
    caller has it (the gate's, flake8's): the constructor question, which looks only at the calls
    near a lambda or a nested def, does not parse the file again."""
    if index is None:
        return False
    from flake8_forksafe.index import (
        constructs_project_dataset,
        has_project_dataset,
        iterates_project_loader,
        returns_kept_callable,
    )

    if "class " in text and has_project_dataset(index, path, config.knowledge, text):
        return True
    if config.is_enabled("FRK201", True) or config.is_enabled("FRK202", True):
        if constructs_project_dataset(index, path, config.knowledge, text, tree):
            return True
        if returns_kept_callable(index, path, text, tree):
            return True
    if config.is_enabled("FRK401", True) and iterates_project_loader(index, path, config.knowledge, text, tree):
        return True
    return holders and "class " in text and holder_anchor(index, path, config, text)


def holder_anchor(index: Any, path: str, config: Config, text: str) -> bool:
    """The file defines a class that keeps a handle (or an RNG object) in ``__init__`` whose objects
    a dataset in another module of the project keeps (the index): FRK101 (FRK601) reports it there."""
    if index is None or "class " not in text or not (config.is_enabled("FRK101", True) or config.is_enabled("FRK601", True)):
        return False
    from flake8_forksafe.index import has_kept_holder

    return has_kept_holder(index, path, config.knowledge, text)


def enabled_rules(config: Config) -> List[Rule]:
    from flake8_forksafe.checks import ALL_RULES

    return [r() for r in ALL_RULES if config.is_enabled(r.code, r.default_enabled)]


def run_rules(a: Analysis, rules: Sequence[Rule]) -> List[Tuple[Rule, Report]]:
    out: List[Tuple[Rule, Report]] = []
    for rule in rules:
        seen = set()
        for rep in rule.check(a):
            if id(rep.node) in seen:  # one finding per node (e.g. a base __init__ shared by subclasses)
                continue
            seen.add(id(rep.node))
            out.append((rule, rep))
    return out


def positions(module: cst.Module) -> Any:
    from libcst.metadata import MetadataWrapper, PositionProvider

    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


class _StatementPositions:
    """``positions(module)[node]`` for the nodes of a few top-level statements, without generating
    the positions of the whole module: each statement that holds a wanted node gets libcst's
    PositionProvider alone (a module of that statement, the module's indentation and newline), moved
    down by the lines the statements above it generate (``code_for_node``, lines counted as the
    PositionProvider counts them). A node found in no statement (e.g. in the module's header) gets
    the whole module's positions."""

    _NEWLINE = None

    def __init__(
        self,
        module: cst.Module,
        nodes: Sequence[cst.CSTNode],
        tops: Any = None,
        codes: Optional[Callable[[], List[str]]] = None,
        memo: Optional[dict] = None,
    ) -> None:
        self.module = module
        self.codes = codes  # each statement's code_for_node, when the caller has them
        # a statement's own positions by the statement object (and what its code depends on), kept
        # by the caller across modules that share statements (the language server's SpliceParser)
        self.memo = memo
        self.owner: dict = {}  # id(node) -> index of its top-level statement
        self.shift: dict = {}  # statement index -> (its positions, lines above it)
        self.whole: Any = None
        self.starts: List[int] = [len(module.header)]
        body = module.body
        index = {id(s): i for i, s in enumerate(body)}
        known = tops or {}
        wanted = set()
        for n in nodes:
            i = index.get(id(n))
            if i is None:
                top = known.get(id(n))
                i = index.get(id(top)) if top is not None else None
            if i is None:
                wanted.add(id(n))
            else:
                self.owner[id(n)] = i
        if wanted:
            self._search(wanted)
        import libcst as cst

        for n in nodes:  # a def or class points at its name's line: the name is in the same statement
            if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and id(n) in self.owner:
                self.owner[id(n.name)] = self.owner[id(n)]

    def _search(self, wanted: set) -> None:
        """Each top-level statement's nodes, depth first, until every wanted node is placed."""
        from flake8_forksafe.analysis import push_children

        for i, stmt in enumerate(self.module.body):
            stack = [stmt]
            while stack:
                n = stack.pop()
                if id(n) in wanted:
                    self.owner[id(n)] = i
                    wanted.discard(id(n))
                push_children(n, stack)
            if not wanted:
                return

    def _of(self, i: int) -> Any:
        got = self.shift.get(i)
        if got is None:
            import re

            from libcst.metadata import MetadataWrapper, PositionProvider

            if _StatementPositions._NEWLINE is None:
                _StatementPositions._NEWLINE = re.compile(r"\r\n?|\n")  # libcst's PositionProvider's
            module, body = self.module, self.module.body
            starts = self.starts  # line before each statement, as far as needed so far
            code_for = module.code_for_node
            codes = self.codes() if self.codes is not None else None
            newline = _StatementPositions._NEWLINE
            while len(starts) <= i:
                j = len(starts) - 1
                starts.append(starts[-1] + len(newline.findall(codes[j] if codes is not None else code_for(body[j]))))
            above = starts[i]
            last = i == len(body) - 1 and not module.footer  # only there a missing final newline shows
            trailing = module.has_trailing_newline if last else True
            key = (id(body[i]), trailing, module.default_indent, module.default_newline)
            kept = self.memo.get(key) if self.memo is not None else None
            if kept is not None and kept[0] is body[i]:
                pos = kept[1]
            else:
                alone = module.with_changes(header=(), body=(body[i],), footer=(), has_trailing_newline=trailing)
                pos = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
                if self.memo is not None:
                    self.memo[key] = (body[i], pos)
            got = self.shift[i] = (pos, above)
        return got

    def __getitem__(self, node: cst.CSTNode) -> Any:
        i = self.owner.get(id(node))
        if i is None:
            if self.whole is None:
                self.whole = positions(self.module)
            return self.whole[node]
        pos, above = self._of(i)
        rng = pos[node]
        if not above:
            return rng
        from libcst.metadata import CodePosition, CodeRange

        return CodeRange(
            CodePosition(rng.start.line + above, rng.start.column), CodePosition(rng.end.line + above, rng.end.column)
        )




def report_positions(a: Analysis, nodes: Sequence[cst.CSTNode]) -> Any:
    """The positions of the reported nodes (and of a def's or class's name), computed for the
    top-level statements that hold them only (``_StatementPositions``)."""
    tops = {id(c.node): c.top for c in a.calls if c.top is not None}
    tops.update(a.tops)  # lambdas, defs, classes
    return _StatementPositions(a.module, nodes, tops, lambda: a.statement_codes, getattr(a, "position_memo", None))


def node_start(pos: Any, node: cst.CSTNode) -> Tuple[int, int, int, int]:
    """(line, col, end_line, end_col); defs point at the ``def``/``class`` keyword, not a decorator."""
    import libcst as cst

    rng = pos[node]
    line, col = rng.start.line, rng.start.column
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        name_rng = pos[node.name]
        line = name_rng.start.line
        # the def line's own indentation equals the node's start column
    return line, col, rng.end.line, rng.end.column


def analyse(
    text: str,
    config: Config,
    path: str = "<string>",
    index: Any = None,
    interactive: bool = False,
    parser: Any = None,
) -> Analysis:
    """``interactive``: the code runs in a ``__main__`` without a file (a notebook): FRK405 applies,
    FRK401 does not. ``parser``: parses ``(text, path)`` as ``source.parse`` does (the language
    server's ``lsp_incremental.SpliceParser``, which re-uses the statements an edit did not touch and
    may know each top-level statement's code: the analysis's ``statement_codes`` then; and it keeps
    the positions of the statements it re-uses: ``report_positions``)."""
    from flake8_forksafe.analysis import Analysis

    module = parse(text, path) if parser is None else parser(text, path)
    a = Analysis(module, config.knowledge, path, index)
    a.interactive_main = interactive
    codes = parser.codes(module) if parser is not None else None
    if codes is not None:
        a.__dict__["statement_codes"] = codes  # the cached property's value: the same strings
    if parser is not None:
        a.position_memo = getattr(parser, "positions", None)  # report_positions: unchanged statements' positions
    return a


@no_gc()  # a context manager made by contextlib works as a decorator, anew on each call
def check_source(
    source: Union[str, bytes],
    path: str = "<string>",
    config: Optional[Config] = None,
    *,
    prefilter: bool = True,
    noqa: bool = True,
    slice_above: Optional[int] = None,
    index: Any = None,
    interactive: Optional[bool] = None,
    verdict: Any = None,
    parser: Any = None,
    plan_on_whole: bool = False,
) -> List[Finding]:
    """Check one file's source. Raises SourceError for a file that cannot be checked.

    Every file is reduced to the statements a finding of the enabled rules can involve before libcst
    parses it (``slicing.py``; ``slice_above``: only files over that many bytes are, for tests).
    ``verdict``: the gate's verdict when the caller has it (the flake8 plugin, from flake8's tree).
    ``parser``: see ``analyse`` (the language server's). ``plan_on_whole``: the caller expects a
    finding of a rule that plans over the whole module (FRK401: the language server's last lint of
    the document had one), so that rule runs on the whole text only, not first on the reduced one
    too (the same findings: a reduced file has one of them exactly when the whole file has)."""
    from flake8_forksafe import slicing

    config = config or Config()
    text = decode(source, path)
    k = config.knowledge
    if prefilter and verdict is None:
        verdict = gate(text, config)
    project: Union[bool, Callable[[], bool]] = False
    whole = False
    gate_tree = getattr(verdict, "tree", None)
    if verdict is not None and not verdict.passes:
        if not project_anchor(index, path, config, text, tree=gate_tree):
            return []
        project = True  # the anchor is a base class in another module: the slicer keeps such classes
        # or a class whose objects a dataset of another module keeps: nothing is sliced
        whole = holder_anchor(index, path, config, text)
    elif index is not None:  # asked only when the slicer would drop a class with an imported base
        project = lambda: project_anchor(index, path, config, text, holders=False, tree=gate_tree)  # noqa: E731
    rules = enabled_rules(config)
    if not rules:
        return []
    analysed, line_map = (text, None) if whole else slicing.reduce(text, k, slice_above, verdict, gate_anchors(config), project)
    if len(analysed) > slicing.MAX_ANALYSED:
        raise SourceError(
            f"skipped: {len(analysed) / 1e6:.1f} MB of dataset and worker code is over the "
            f"{slicing.MAX_ANALYSED / 1e6:.0f} MB that are analysed per file"
        )
    if interactive is None:
        from flake8_forksafe.notebook import is_jupytext

        interactive = is_jupytext(text)
    if index is not None and gate_tree is not None:  # the analysis may ask the index about this very file
        index.offer_tree(path, gate_tree, text)
        verdict.tree = None
    try:
        a = analyse(analysed, config, path, index, interactive, parser)
        a.reduced = line_map is not None and len(text) <= slicing.MAX_ANALYSED  # then FRK401 plans on the whole
        plan_on_whole = plan_on_whole and a.reduced
        found = run_rules(a, [r for r in rules if not _plans_whole_module(r)] if plan_on_whole else rules)
    finally:
        if index is not None and gate_tree is not None:
            index.offer_tree(None)
            del gate_tree
    try:
        return _located(a, found, rules, text, config, path, index, interactive, noqa, line_map, parser, plan_on_whole)
    finally:
        a.release()  # the libcst tree is freed now, not by the cyclic collector (it traverses all of it)


def _located(
    a: Analysis,
    found: List[Tuple[Rule, Report]],
    rules: List[Rule],
    text: str,
    config: Config,
    path: str,
    index: Any,
    interactive: bool,
    noqa: bool,
    line_map: Optional[List[int]],
    parser: Any = None,
    plan_on_whole: bool = False,
) -> List[Finding]:
    """``check_source``'s findings from the reduced file's analysis ``a`` and its reports
    (``plan_on_whole``: the rules that plan over the whole module have not run on ``a``)."""
    if not found and not plan_on_whole:
        return []
    if plan_on_whole or (a.reduced and any(_plans_whole_module(rule) for rule, _ in found)):
        # FRK401's fix plan weighs every top-level statement (what a moved statement may depend on):
        # its finding and fixability come from the whole file; the other rules' findings are the
        # reduced file's (the same: tests/test_slicing.py)
        whole = [r for r in rules if _plans_whole_module(r)]
        w = analyse(text, config, path, index, interactive, parser)
        kept = text if noqa else None
        spans: List[dict] = []  # the text's noqa ranges, tokenized once for both
        located = locate(a, [(r, rep) for r, rep in found if not _plans_whole_module(r)], path, kept, line_map, spans)
        try:
            located += locate(w, run_rules(w, whole), path, kept, None, spans)
        finally:
            w.release()
        located.sort(key=lambda t: (t[0].line, t[0].col, t[0].code))
        return [f for f, _, _ in located]
    return to_findings(a, found, path, text if noqa else None, line_map)


_WHOLE_PLANNERS: List[FrozenSet[str]] = []


def whole_planning_codes() -> FrozenSet[str]:
    """The rules that plan over every top-level statement (the WORKER_START anchor: FRK401); read
    once per process (every rule of every checked file asks)."""
    if not _WHOLE_PLANNERS:
        declared = prefilter.declared_anchors()
        _WHOLE_PLANNERS.append(
            frozenset(code for code, (anchors, _on) in declared.items() if prefilter.WORKER_START in anchors)
        )
    return _WHOLE_PLANNERS[0]


def _plans_whole_module(rule: Rule) -> bool:
    return rule.code in whole_planning_codes()


def locate(
    a: Analysis,
    found: List[Tuple[Rule, Report]],
    path: str,
    text: Optional[str],
    line_map: Optional[List[int]] = None,
    spans: Optional[List[dict]] = None,
) -> List[Tuple[Finding, Rule, Report]]:
    """Give each report its position; drop the ones a ``# noqa`` comment suppresses (when text given).
    ``line_map`` gives the original line of each line of a reduced module (``slicing.reduce``).
    ``spans``: a list shared by calls on the same ``text`` (its ``# noqa`` ranges, tokenized once)."""
    # the lines Python counts (str.splitlines also breaks at \f, \u2028...: the wrong line's noqa)
    lines = prefilter.split_lines(text) if text is not None else []
    if text is not None and file_noqa(lines):
        return []
    pos = report_positions(a, [rep.node for _, rep in found])
    if spans is None:
        spans = []

    def ranges() -> dict:  # tokenized once, only when a finding's own line has no noqa for it
        if not spans:
            spans.append(suppressing_ranges(text or ""))
        return spans[0]

    out = []
    for rule, rep in found:
        line, col, end_line, end_col = node_start(pos, rep.node)
        if line_map is not None:
            line, end_line = line_map[line - 1], line_map[end_line - 1]
        if text is not None and suppressed(lines, line, rule.code, ranges):
            continue
        finding = Finding(
            path=path,
            line=line,
            col=col,
            code=rule.code,
            message=rep.message,
            end_line=end_line,
            end_col=end_col,
            fix=(rep.applicability or rule.fix_applicability) if rep.fixable else None,
            name=rule.name,
        )
        out.append((finding, rule, rep))
    out.sort(key=lambda t: (t[0].line, t[0].col, t[0].code))
    return out


def to_findings(
    a: Analysis,
    found: List[Tuple[Rule, Report]],
    path: str,
    text: Optional[str],
    line_map: Optional[List[int]] = None,
) -> List[Finding]:
    return [f for f, _, _ in locate(a, found, path, text, line_map)]
