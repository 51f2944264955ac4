"""Result objects of the runtime harness: plain dataclasses, JSON-serialisable, readable ``str()``.

No torch here: results are built in the harness subprocess and read back in the caller's process
(pytest, ``forksafe verify``), which may not have torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

CONTEXTS = ("fork", "spawn", "forkserver")

# Verdicts of one start method, worst first.
FAILS = "fails"  # the loader raised (pickling error, worker exception, worker died)
HANGS = "hangs"  # no result within the time limit (or DataLoader(timeout=) expired)
DIFFERS = "differs"  # items differ from the num_workers=0 baseline
FLAGGED = "flagged"  # items are right, but a probe caught the hazard (inherited descriptor, duplicate RNG)
OK = "ok"
NOT_RUN = "not run"  # could not be run here (no CUDA device, object not transportable, no /proc ...)
TIMEOUT = "timeout"  # the harness's own time limit passed twice (the case was rerun once): no verdict
ERROR = "error"  # the harness itself could not run the case (bad input, setup failure)

HAZARDS = (FAILS, HANGS, DIFFERS, FLAGGED)
VERDICTS = (FAILS, HANGS, DIFFERS, FLAGGED, OK, NOT_RUN, TIMEOUT, ERROR)

# Kinds of probe findings.
INHERITED_FD = "inherited_fd"  # a worker shares an open file description with the parent
OFFSET_MOVED = "parent_offset_moved"  # the parent's file offset moved while workers ran
DUPLICATE_RNG = "duplicate_rng"  # two workers of one epoch hold the same RNG state
REPLAYED_RNG = "replayed_rng"  # a worker starts every epoch from the same RNG state
REPLAYED_ITEMS = "replayed_items"  # a random dataset returns the same items every epoch
PARENT_CUDA_INIT = "parent_cuda_init"  # CUDA initialised in the parent before workers start


@dataclass
class ErrorInfo:
    """An exception, as ``type: message`` (the type qualified by its module unless builtin)."""

    type: str
    message: str
    where: str = ""  # e.g. "in DataLoader worker process 0"

    def __str__(self) -> str:
        s = f"{self.type}: {self.message}" if self.message else self.type
        return f"{s} ({self.where})" if self.where else s


@dataclass
class Finding:
    kind: str
    message: str
    detail: Dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


@dataclass
class ContextResult:
    """The outcome of ``DataLoader(ds, num_workers=N, multiprocessing_context=context)``."""

    context: str
    verdict: str
    device: str = "cpu"
    error: Optional[ErrorInfo] = None
    differing: List[int] = field(default_factory=list)  # indices (map-style) that differ, first 20
    n_differing: int = 0
    n_expected: int = 0
    n_got: int = 0
    findings: List[Finding] = field(default_factory=list)
    reason: str = ""  # why "not run" / "hangs" / "error", or what differs
    notes: List[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False  # the harness's time limit (not DataLoader(timeout=)) ended this run
    attempts: int = 1

    @property
    def hazard(self) -> bool:
        return self.verdict in HAZARDS

    @property
    def passed(self) -> bool:
        return self.verdict == OK

    def summary(self) -> str:
        """One line: the verdict and its cause."""
        parts: List[str] = []
        if self.error is not None:
            parts.append(str(self.error))
        if self.verdict == DIFFERS and self.reason:
            parts.append(self.reason)
        elif self.reason and self.verdict in (HANGS, NOT_RUN, TIMEOUT, ERROR):
            parts.append(self.reason)
        parts.extend(f.message for f in self.findings)
        cause = "; ".join(p for p in parts if p)
        return f"{self.context}: {self.verdict}" + (f" - {cause}" if cause else "")

    def __str__(self) -> str:
        lines = [self.summary()]
        lines.extend(f"    note: {n}" for n in self.notes)
        return "\n".join(lines)


@dataclass
class CaseResult:
    """Every start method tried for one dataset (or script)."""

    target: str
    kind: str = "map"  # "map" | "iterable" | "script"
    device: str = "cpu"
    contexts: List[ContextResult] = field(default_factory=list)
    error: str = ""  # the case could not be run at all (one line)
    findings: List[Finding] = field(default_factory=list)  # case-level (e.g. parent CUDA init)
    notes: List[str] = field(default_factory=list)
    nondeterministic: bool = False
    num_workers: int = 2
    seconds: float = 0.0
    torch: str = ""  # torch version of the harness process

    # ---------------------------------------------------------------- queries
    def __getitem__(self, context: str) -> ContextResult:
        for c in self.contexts:
            if c.context == context:
                return c
        raise KeyError(context)

    def verdicts(self) -> Dict[str, str]:
        return {c.context: c.verdict for c in self.contexts}

    @property
    def hazards(self) -> List[ContextResult]:
        return [c for c in self.contexts if c.hazard]

    @property
    def not_run(self) -> List[ContextResult]:
        return [c for c in self.contexts if c.verdict == NOT_RUN]

    @property
    def safe(self) -> bool:
        """True only when every context ran and passed (a "not run" context is never a pass)."""
        return not self.error and bool(self.contexts) and all(c.passed for c in self.contexts)

    # ---------------------------------------------------------------- text
    def __str__(self) -> str:
        head = f"{self.target} [{self.kind}, {self.device}, num_workers={self.num_workers}]"
        lines = [head]
        if self.error:
            lines.append(f"  error: {self.error}")
        for f in self.findings:
            lines.append(f"  {f.message}")
        for c in self.contexts:
            lines.extend("  " + ln for ln in str(c).splitlines())
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def failure_message(self) -> str:
        """The message of the AssertionError raised by ``assert_dataloader_safe``."""
        bad = [c for c in self.contexts if not c.passed and c.verdict != NOT_RUN]
        lines = [f"DataLoader is not multiprocessing-safe: {self.target}"]
        if self.error:
            lines.append(f"  error: {self.error}")
        for f in self.findings:
            lines.append(f"  {f.message}")
        for c in bad:
            lines.append("  " + c.summary())
        for c in self.not_run:
            lines.append("  " + c.summary())
        return "\n".join(lines)

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "CaseResult":
        d = dict(d)
        d["contexts"] = [context_from_dict(c) for c in d.get("contexts", [])]
        d["findings"] = [Finding(**f) for f in d.get("findings", [])]
        return cls(**d)


def context_from_dict(d: Dict[str, Any]) -> ContextResult:
    d = dict(d)
    if d.get("error") is not None:
        d["error"] = ErrorInfo(**d["error"])
    d["findings"] = [Finding(**f) for f in d.get("findings", [])]
    return ContextResult(**d)
