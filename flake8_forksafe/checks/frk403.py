"""FRK403: ``set_start_method(...)`` without ``force=True`` where spawned children re-run it."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from flake8_forksafe.analysis import Analysis, CallSite, is_main_guard, keyword, positional
from flake8_forksafe.engine import SAFE, Example, Report, Rule
from flake8_forksafe.fixes.start_method import ancestors, protected, with_force


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


class StartMethodWithoutForce(Rule):
    """``multiprocessing.set_start_method(...)`` at module level, outside the ``__main__`` guard and
    without ``force=True``: every spawned child re-imports the module after its start method is
    already set, and the call raises ``RuntimeError: context has already been set``."""

    code = "FRK403"
    name = "start-method-without-force"
    fix_applicability = SAFE
    fix_title = "Pass force=True to set_start_method()"

    VALID = [
        # inside the guard: PyTorch's documented pattern
        """
import torch.multiprocessing as mp

if __name__ == "__main__":
    mp.set_start_method("spawn")
""",
        # forced
        """
import multiprocessing

multiprocessing.set_start_method("spawn", force=True)
""",
        # the RuntimeError is caught
        """
import multiprocessing as mp

try:
    mp.set_start_method("spawn")
except RuntimeError:
    pass
""",
        # inside a function
        """
import multiprocessing as mp

def setup():
    mp.set_start_method("spawn")
""",
    ]
    INVALID = [
        Example(
            """
import multiprocessing as mp

mp.set_start_method("spawn")  # FRK403: 0
""",
            """
import multiprocessing as mp

mp.set_start_method("spawn", force=True)  # FRK403: 0
""",
        ),
        Example(
            """
import sys
import torch.multiprocessing as mp

if sys.platform != "win32":
    mp.set_start_method("forkserver", force=False)  # FRK403: 4
""",
            """
import sys
import torch.multiprocessing as mp

if sys.platform != "win32":
    mp.set_start_method("forkserver", force=True)  # FRK403: 4
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for site in module_level_setters(a, a.knowledge.start_method_setters):
            if not force_missing(site.node):
                continue
            path = path_of(site)
            if under_guard(path) or protected(a, path):
                continue
            yield self.report(
                site.node,
                "set_start_method() without force=True at module level: spawned workers re-import this "
                "module with the start method already set and fail with 'RuntimeError: context has "
                "already been set'; pass force=True or call it under `if __name__ == \"__main__\":`",
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return a.module.visit(_Force({id(r.node) for r in reports}))


class _Force(cst.CSTTransformer):
    def __init__(self, ids) -> None:
        self.ids = ids

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        return with_force(updated_node) if id(original_node) in self.ids else updated_node
