"""The types every part shares: rules, what they report, findings, fix applicability, SourceError.

Types only: no parsing, no analysis. A check imports these, the analysis and its own family.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Dict, Iterator, List, Optional, Sequence, Union

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from flake8_forksafe.analysis import Analysis

SAFE = "safe"
UNSAFE = "unsafe"
DOCS_URL = "https://github.com/flake8-forksafe/flake8-forksafe/blob/main/docs/rules/{code}.md"



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
    applicability: Optional[str] = None  # this finding's fix, when it differs from the rule's (SAFE/UNSAFE)


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
    cell: int = 0  # notebooks: the 1-based cell (line / end_line are lines of that cell); 0 otherwise

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["url"] = DOCS_URL.format(code=self.code)
        return d


