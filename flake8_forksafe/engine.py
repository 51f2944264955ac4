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
from flake8_forksafe.noqa import file_noqa, noqa_ranges, suppressed
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


def project_anchor(index: Any, path: str, config: Config, text: str = "class ") -> bool:
    """The file defines a class whose base, defined in another module of the project (the index),
    is dataset-like: the pre-filter, which sees one file, cannot know."""
    if index is None or "class " not in text:
        return False
    from flake8_forksafe.index import has_project_dataset

    return has_project_dataset(index, path, config.knowledge, text)


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
    text: str, config: Config, path: str = "<string>", index: Any = None, interactive: bool = False
) -> Analysis:
    """``interactive``: the code runs in a ``__main__`` without a file (a notebook): FRK405 applies,
    FRK401 does not."""
    from flake8_forksafe.analysis import Analysis

    a = Analysis(parse(text, path), config.knowledge, path, index)
    a.interactive_main = interactive
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
) -> List[Finding]:
    """Check one file's source. Raises SourceError for a file that cannot be checked.

    Every file is reduced to the statements a finding of the enabled rules can involve before libcst
    parses it (``slicing.py``; ``slice_above``: only files over that many bytes are, for tests).
    ``verdict``: the gate's verdict when the caller has it (the flake8 plugin, from flake8's tree)."""
    from flake8_forksafe import slicing

    config = config or Config()
    text = decode(source, path)
    k = config.knowledge
    if prefilter and verdict is None:
        verdict = gate(text, config)
    project: Union[bool, Callable[[], bool]] = False
    if verdict is not None and not verdict.passes:
        if not project_anchor(index, path, config, text):
            return []
        project = True  # the anchor is a base class in another module: the slicer keeps such classes
    elif index is not None:  # asked only when the slicer would drop a class with an imported base
        project = lambda: project_anchor(index, path, config, text)  # noqa: E731
    rules = enabled_rules(config)
    if not rules:
        return []
    analysed, line_map = slicing.reduce(text, k, slice_above, verdict, gate_anchors(config), project)
    if len(analysed) > slicing.MAX_ANALYSED:
        raise SourceError(
            f"skipped: {len(analysed) / 1e6:.1f} MB of dataset and worker code is over the "
            f"{slicing.MAX_ANALYSED / 1e6:.0f} MB that are analysed per file"
        )
    if interactive is None:
        from flake8_forksafe.notebook import is_jupytext

        interactive = is_jupytext(text)
    tree = getattr(verdict, "tree", None)
    if index is not None and tree is not None:  # the analysis may ask the index about this very file
        index.offer_tree(path, tree, text)
        verdict.tree = None
    try:
        a = analyse(analysed, config, path, index, interactive)
        found = run_rules(a, rules)
    finally:
        if index is not None and tree is not None:
            index.offer_tree(None)
            del tree
    if not found:
        return []
    if line_map is not None and _plans_whole_module(found) and len(text) <= slicing.MAX_ANALYSED:
        # FRK401's fix plan weighs every top-level statement (what a moved statement may depend on):
        # its finding and fixability come from the whole file
        a = analyse(text, config, path, index, interactive)
        found, line_map = run_rules(a, rules), None
    return to_findings(a, found, path, text if noqa else None, line_map)


def _plans_whole_module(found: List[Tuple[Rule, Report]]) -> bool:
    declared = prefilter.declared_anchors()
    return any(prefilter.WORKER_START in declared.get(rule.code, (frozenset(), True))[0] for rule, _ in found)


def locate(
    a: Analysis,
    found: List[Tuple[Rule, Report]],
    path: str,
    text: Optional[str],
    line_map: Optional[List[int]] = None,
) -> List[Tuple[Finding, Rule, Report]]:
    """Give each report its position; drop the ones a ``# noqa`` comment suppresses (when text given).
    ``line_map`` gives the original line of each line of a reduced module (``slicing.reduce``)."""
    pos = positions(a.module)
    # the lines Python counts (str.splitlines also breaks at \f, \u2028...: the wrong line's noqa)
    lines = prefilter.split_lines(text) if text is not None else []
    if text is not None and file_noqa(lines):
        return []
    spans: List[dict] = []

    def ranges() -> dict:  # tokenized once, only when a finding's own line has no noqa for it
        if not spans:
            spans.append(noqa_ranges(text or ""))
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
