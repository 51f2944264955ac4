"""The engine: decode, pre-filter, parse once, analyse once, run every enabled rule, apply noqa.

Rules are classes in ``flake8_forksafe/checks/`` registered in one list (``checks.ALL_RULES``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from flake8_forksafe import prefilter
from flake8_forksafe.config import Config

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from flake8_forksafe.analysis import Analysis

# libcst (~0.3 s to import) and the analysis are imported by the functions that parse, so that a
# run whose files all fail the pre-filter never loads them.

SAFE = "safe"
UNSAFE = "unsafe"
DOCS_URL = "https://github.com/flake8-forksafe/flake8-forksafe/blob/main/docs/rules/{code}.md"

# flake8's own inline-noqa syntax (flake8/defaults.py), so both front ends agree.
NOQA_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa(?!:)", re.IGNORECASE)
MAX_NESTING = 150  # bracket / block depth beyond which a file is skipped (libcst recursion)


class SourceError(Exception):
    """The file cannot be checked (undecodable, syntax error, too deep). ``message`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(eq=False)
class Report:
    """What a rule's ``check`` yields: the node to point at and the one-line message."""

    node: cst.CSTNode
    message: str
    fixable: bool = True
    data: Any = None


@dataclass(frozen=True)
class Example:
    """An INVALID example: source, and optionally the exact fixed source."""

    code: str
    expected_fix: Optional[str] = None


class Rule:
    """Base class of every check. One subclass per file in ``checks/``; see FRK101 for the model.

    ``fix_applicability`` is ``"safe"`` (``forksafe fix`` applies it), ``"unsafe"`` (only with
    ``--unsafe-fixes``) or None (no automatic fix: the message says what to do).
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    default_enabled: ClassVar[bool] = True
    fix_applicability: ClassVar[Optional[str]] = None
    fix_title: ClassVar[str] = ""
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[Union[str, Example]]] = ()

    def check(self, a: Analysis) -> Iterator[Report]:  # pragma: no cover - abstract
        raise NotImplementedError

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        """Return the module with every fixable report of this rule fixed."""
        raise NotImplementedError(f"{self.code} has no automatic fix")

    def report(self, node: cst.CSTNode, detail: str = "", fixable: bool = True, data: Any = None) -> Report:
        return Report(node, detail, fixable, data)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    col: int  # 0-based, as flake8 reports them
    code: str
    message: str  # without the code
    end_line: int = 0
    end_col: int = 0
    fix: Optional[str] = None  # "safe" / "unsafe" / None
    name: str = ""

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["url"] = DOCS_URL.format(code=self.code)
        return d


@dataclass
class Parsed:
    text: str
    module: Optional[cst.Module]
    analysis: Optional[Analysis]
    lines: List[str] = field(default_factory=list)


def decode(source: Union[str, bytes], path: str = "<string>") -> str:
    """Decode bytes as Python does (BOM, coding cookie, UTF-8 default); one-line error otherwise."""
    if isinstance(source, str):
        return source[1:] if source.startswith("\ufeff") else source
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        raise SourceError(f"skipped: cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        text = source.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"skipped: cannot decode as {encoding}: {_one_line(exc)[:160]}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def nesting_depth(text: str) -> int:
    """Cheap upper bound of syntactic nesting: brackets plus indentation levels."""
    depth = best = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            if depth > best:
                best = depth
        elif ch in ")]}":
            depth -= 1
    indent = 0
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and not stripped.startswith("#"):
            width = len(line) - len(stripped)
            if width > indent:
                indent = width
    return max(best, indent // 4 if indent else 0)


def parse(text: str, path: str = "<string>") -> cst.Module:
    import libcst as cst

    if nesting_depth(text) > MAX_NESTING:
        raise SourceError(f"skipped: nesting deeper than {MAX_NESTING} levels")
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceError(_syntax_message(text, exc)) from None
    except cst.CSTValidationError as exc:  # e.g. identifiers newer than this Python's Unicode tables
        raise SourceError(f"skipped: syntax not supported: {_one_line(exc)[:160]}") from None
    except RecursionError:
        raise SourceError("skipped: nesting too deep to parse") from None
    except (ValueError, MemoryError) as exc:
        raise SourceError(f"skipped: syntax error: {_one_line(exc)[:160]}") from None


def _syntax_message(text: str, exc: cst.ParserSyntaxError) -> str:
    """Python's own wording and position (as flake8's E999), computed only for broken files."""
    try:
        compile(text, "<checked>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        return f"skipped: syntax error at line {err.lineno}, column {err.offset or 0}: {err.msg}"
    except (RecursionError, MemoryError, ValueError):
        return "skipped: syntax error: nesting too deep"
    first = (exc.message or "invalid syntax").splitlines()[0]
    return f"skipped: syntax not supported by the parser at line {exc.raw_line}: {first[:160]}"


def could_have_findings(text: str, config: Config) -> bool:
    return prefilter.could_have_findings(text, config.knowledge)


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


def analyse(text: str, config: Config, path: str = "<string>") -> Analysis:
    from flake8_forksafe.analysis import Analysis

    return Analysis(parse(text, path), config.knowledge, path)


def check_source(
    source: Union[str, bytes],
    path: str = "<string>",
    config: Optional[Config] = None,
    *,
    prefilter: bool = True,
    noqa: bool = True,
    slice_above: Optional[int] = None,
) -> List[Finding]:
    """Check one file's source. Raises SourceError for a file that cannot be checked.

    A big file is reduced to the statements a finding can involve before libcst parses it
    (``slicing.py``; ``slice_above`` overrides the size from which it is, for tests)."""
    from flake8_forksafe import slicing

    config = config or Config().with_knowledge()
    text = decode(source, path)
    if prefilter and not could_have_findings(text, config):
        return []
    rules = enabled_rules(config)
    if not rules:
        return []
    analysed, line_map = slicing.reduce(text, config.knowledge, slice_above)
    if len(analysed) > slicing.MAX_ANALYSED:
        raise SourceError(
            f"skipped: {len(analysed) / 1e6:.1f} MB of dataset and worker code is over the "
            f"{slicing.MAX_ANALYSED / 1e6:.0f} MB that are analysed per file"
        )
    a = analyse(analysed, config, path)
    found = run_rules(a, rules)
    if not found:
        return []
    return to_findings(a, found, path, text if noqa else None, line_map)


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
    lines = text.splitlines() if text is not None else []
    if text is not None and file_noqa(lines):
        return []
    out = []
    for rule, rep in found:
        line, col, end_line, end_col = node_start(pos, rep.node)
        if line_map is not None:
            line, end_line = line_map[line - 1], line_map[end_line - 1]
        if text is not None and 0 < line <= len(lines) and noqa_suppresses(lines[line - 1], rule.code):
            continue
        finding = Finding(
            path=path,
            line=line,
            col=col,
            code=rule.code,
            message=rep.message,
            end_line=end_line,
            end_col=end_col,
            fix=rule.fix_applicability if rep.fixable else None,
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
