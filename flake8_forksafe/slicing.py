"""Analyse only the statements a finding can involve: every file is reduced before libcst sees it.

libcst's parse and the analysis cost time per statement (and about 400 bytes of memory per byte of
source: a 1.4 MB file took ~1 GB), so every file that passes the pre-filter is reduced first. Every
top-level ``def`` / ``class`` that cannot take part in a finding is removed, whole lines at a time:
the columns of the rest are unchanged and a line map gives back each original line (positions and
``# noqa`` stay exact). Kept are:

- all module-level code that is not a ``def`` / ``class`` (except long literal-only containers);
- a ``def`` / ``class`` holding a ``global`` statement, or an import that changes what kept code's
  names mean (``_imports_matter``), or an anchor that one of the
  enabled rules declares (``ANCHORS`` on each check class, tested as the gate tests them,
  ``_anchored``): for the dataset and loader anchors a lambda or local function or class, a dataset
  / loader base, a loader or dataset call, a three-argument ``type()``, a ``worker_init_fn=`` /
  ``multiprocessing_context=`` keyword, a ``get_worker_info()`` call; for the multiprocessing anchors a process base, a
  worker-starting, ``get_context`` or start-method call;
- with a project index whose classes make one of the file's classes a dataset (``project``),
  every class with an imported base; with any project index, a class that makes an RNG object (a
  helper a dataset of another module may keep: FRK601);
- and, repeatedly, every ``def`` / ``class`` a kept statement names, and every one that names a
  kept ``def`` / ``class`` (a subclass of a kept dataset, a function building it).

A file holding the string ``"fork"`` is not reduced while FRK404 (the FORK anchor) is enabled: it
asks whether anything in the module uses CUDA. The facts are the pre-filter's (``prefilter.gate``
returns them with its verdict; without one, ``prefilter.facts_of_text``), which parses a very big
file one group of statements at a time. A finding whose rule plans over every top-level statement
(FRK401's main-guard fix: the WORKER_START anchor) makes ``engine.check_source`` analyse the file
whole again for that rule alone; fixes (``fix.py``) always analyse whole files. tests/test_slicing.py checks that reduced
and whole files give the same findings.
"""

from __future__ import annotations

from typing import Callable, FrozenSet, List, Optional, Set, Tuple, Union

from flake8_forksafe.knowledge import Knowledge
from flake8_forksafe.prefilter import (
    ALL_ANCHORS,
    DATASET_CLASS,
    FORK,
    LOADER_CALL,
    LOCAL_CALLABLE,
    MP_ANCHORS,
    Facts,
    Gate,
    StmtFact,
    facts_of_text,
    split_lines,
)

SLICE_ABOVE = -1  # bytes of source; smaller files are analysed whole (-1: every file is reduced)
MAX_ANALYSED = 1_000_000  # bytes of (reduced) source libcst may parse (~400 MB of memory)
LITERAL_LINES = 20  # module-level literal-only containers at least this long are dropped
_DATA = frozenset({DATASET_CLASS, LOADER_CALL, LOCAL_CALLABLE})


def _anchored(facts: Facts, s: StmtFact, anchors: FrozenSet[str] = ALL_ANCHORS) -> bool:
    """A ``def`` / ``class`` holding one of ``anchors`` (the enabled rules' declarations, as the gate
    tests them), or a ``global`` statement (a function rebinding a module-level name). Its imports
    alone do not anchor it (``_imports_matter``)."""
    if s.globals:
        return True
    data = bool(anchors & _DATA)
    if data and (s.lambdas or s.local_defs):
        return True
    if s.loader_stores and LOADER_CALL in anchors:
        return True
    if s.callable_class and DATASET_CLASS in anchors and facts.makes_rng(s):
        return True
    mp = bool(anchors & MP_ANCHORS)
    if s.bases and (data or mp):
        for bases in s.bases:
            for b in bases:
                if (data and facts.base_anchor(b)) or (mp and facts.process_base(b)):
                    return True
    if not s.calls:
        return False
    n = facts.n
    for c in s.calls:
        if data and facts.call_anchor(c):
            return True
        # worker-side code reaching the worker's dataset copy (``get_worker_info().dataset``): a
        # function that renews an RNG there is not named by anything, yet FRK601 reads it
        if data and (c.attr == "get_worker_info" or "get_worker_info" in facts.lasts(c.func)):
            return True
        if mp and (facts.starts(c) or facts.qualified(c.func) & (n.setters | n.starters)):
            return True
    return False


def _imports_matter(facts: Facts, s: StmtFact, kept_refs: Set[str], kept_binds: Set[str]) -> bool:
    """The analysis counts an import anywhere in the file as a binding of its name (local imports
    included, the last one in source order winning): dropping a ``def`` / ``class`` that imports
    changes what the kept code's names mean only when one of its names is imported with another
    target elsewhere in the file, or when kept code uses a name nothing kept imports (or a star
    import). Otherwise its imports are dropped with it."""
    imports = facts.imports
    for name in s.imports:
        if name == "*" or len(imports.get(name, ())) > 1 or (name in kept_refs and name not in kept_binds):
            return True
    return False


def _imported_base(facts: Facts, s: StmtFact) -> bool:
    """A class with a base bound by an import: with a project index, such a base may be a dataset
    class of another module of the project, which the file's facts cannot tell."""
    return any(b is not None and b.split(".", 1)[0] in facts.imports for bases in s.bases for b in bases)


def dropped_spans(
    facts: Facts, anchors: FrozenSet[str] = ALL_ANCHORS, project: Union[bool, Callable[[], bool]] = False
) -> List[Tuple[int, int]]:
    """1-based inclusive line spans of the top-level statements no finding of the rules declaring
    ``anchors`` can involve. ``project``: a class of the file derives from a dataset base of another
    module of the project (``engine.project_anchor``): every class with an imported base is kept (a
    callable is asked only when such a class would otherwise be dropped)."""
    if facts.fork and FORK in anchors:
        return []
    drop: List[Tuple[int, int]] = []
    units: List[StmtFact] = []
    kept_refs: Set[str] = set()
    kept_binds: Set[str] = set()  # names the kept statements import
    for s in facts.stmts:
        if s.name:
            units.append(s)
        elif s.literal and s.end - s.start + 1 >= LITERAL_LINES:
            drop.append((s.start, s.end))
        else:
            kept_refs |= s.names | s.attrs
            kept_binds.update(s.imports)
    live = [_anchored(facts, u, anchors) for u in units]
    if project:
        imported = [not on and bool(u.bases) and _imported_base(facts, u) for u, on in zip(units, live)]
        # a class making an RNG object may be a helper a dataset of another module keeps (FRK601:
        # ``Analysis.kept_by`` through the index): kept whenever there is a project
        rng = [not on and bool(u.bases) and DATASET_CLASS in anchors and facts.makes_rng(u) for u, on in zip(units, live)]
        if any(imported) and (project() if callable(project) else True):
            live = [on or imp for on, imp in zip(live, imported)]
        live = [on or r for on, r in zip(live, rng)]
    kept_names: Set[str] = set()
    for u, on in zip(units, live):
        if on:
            kept_names.add(u.name)
            kept_refs |= u.names | u.attrs
            kept_binds.update(u.imports)
    changed = True
    while changed:
        changed = False
        for i, u in enumerate(units):
            if not live[i] and (
                u.name in kept_refs
                or (u.names | u.attrs) & kept_names
                or (u.imports and _imports_matter(facts, u, kept_refs, kept_binds))
            ):
                live[i] = True
                kept_names.add(u.name)
                kept_refs |= u.names | u.attrs
                kept_binds.update(u.imports)
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
    text: str,
    k: Knowledge,
    above: Optional[int] = None,
    gate: Optional[Gate] = None,
    anchors: Optional[FrozenSet[str]] = None,
    project: Union[bool, Callable[[], bool]] = False,
) -> Tuple[str, Optional[List[int]]]:
    """The text libcst should analyse and, when it is not ``text`` itself, the original line number
    of each of its lines. A file over ``above`` bytes (default ``SLICE_ABOVE``: every file) loses
    the top-level statements no finding can involve (whole lines: every column of the rest is
    unchanged). ``gate``: the pre-filter's verdict on this text, whose facts and anchors are used
    instead of parsing it again; ``anchors``: the enabled rules' (default: the gate's, else all);
    ``project``: see ``dropped_spans``."""
    if len(text) <= (SLICE_ABOVE if above is None else above):
        return text, None
    facts = gate.facts if gate is not None and gate.parsed else facts_of_text(text, k)
    if facts is None:
        return text, None  # the real parser gives the one-line error
    if anchors is None:
        anchors = gate.anchors if gate is not None else ALL_ANCHORS
    spans = dropped_spans(facts, anchors, project)
    if not spans:
        return text, None
    lines = split_lines(text)
    keep = [True] * len(lines)
    for start, end in spans:
        for i in range(start - 1, min(end, len(lines))):
            keep[i] = False
    line_map = [i + 1 for i, on in enumerate(keep) if on]
    return "".join(line for line, on in zip(lines, keep) if on), line_map
