"""Facts of the processes family about start-method setters (FRK402, FRK403): which calls run at
import time, where they sit, and whether they pass ``force=True``."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, CallSite, imports_torch, is_main_guard, keyword, positional
from flake8_forksafe.families.processes.start_method import ancestors


def module_level_setters(a: Analysis, names) -> Iterator[CallSite]:
    """Calls of ``names`` that run when the module is imported: module level (class bodies too),
    outside every ``if __name__ == "__main__":`` block."""
    for site in a.calls:
        if site.qname not in names or site.func is not None or site.top is None:
            continue
        if a.is_guarded(site.top):
            continue
        yield site


def path_of(site: CallSite) -> List[cst.CSTNode]:
    return ancestors(site.top, site.node) or [site.top, site.node]


def under_guard(path: List[cst.CSTNode]) -> bool:
    return any(is_main_guard(n) for n in path)


def force_missing(call: cst.Call) -> bool:
    """No ``force=``, or ``force=False`` (an unknown value counts as given)."""
    arg = keyword(call, "force")
    value: Optional[cst.BaseExpression] = arg.value if arg is not None else None
    if value is None:
        pos = positional(call)
        if len(pos) >= 2:
            value = pos[1].value
        elif any(a.star for a in call.args):
            return False
        else:
            return True
    return isinstance(value, cst.Name) and value.value == "False"


# setters FRK402's fix may rewrite as stdlib calls (torch.multiprocessing re-exports the stdlib's global
# context); `multiprocess` (dill's fork of multiprocessing) has a context of its own
STDLIB_SHARED = ("multiprocessing.", "torch.multiprocessing.")


def late_setters(a: Analysis) -> Iterator[Tuple[CallSite, bool]]:
    """FRK402's sites: setters at module level, outside the guard, after ``import torch``; with
    whether the call is a whole statement of a stdlib-shared setter (what the fix can move)."""
    ti = a.torch_import_index
    if ti is None:
        return
    names = a.knowledge.start_method_setters | a.knowledge.forkserver_preload
    for site in module_level_setters(a, names):
        idx = a.body_index(site.top)
        if idx is None or idx < ti:
            continue
        if under_guard(path_of(site)):
            continue
        if idx == ti and not _after_torch_on_line(site):
            continue
        top = site.top
        whole = (
            idx > ti
            and isinstance(top, cst.SimpleStatementLine)
            and len(top.body) == 1
            and isinstance(top.body[0], cst.Expr)
            and top.body[0].value is site.node
            and (site.qname or "").startswith(STDLIB_SHARED)
        )
        yield site, whole


def _after_torch_on_line(site: CallSite) -> bool:
    """``import torch; mp.set_start_method(...)`` on one line: the call comes after the import."""
    top = site.top
    if not isinstance(top, cst.SimpleStatementLine):
        return False
    for small in top.body:
        if imports_torch(cst.SimpleStatementLine(body=[small])):
            return True
        if isinstance(small, cst.Expr) and small.value is site.node:
            return False
    return False
