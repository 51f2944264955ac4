"""FRK403: ``set_start_method(...)`` without ``force=True`` where spawned children re-run it."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.families.processes.setters import (
    force_missing,
    late_setters,
    module_level_setters,
    path_of,
    under_guard,
)
from flake8_forksafe.families.processes.start_method import protected, with_force
from flake8_forksafe.model import SAFE, Example, Report, Rule


class StartMethodWithoutForce(Rule):
    """``multiprocessing.set_start_method(...)`` at module level, outside the ``__main__`` guard and
    without ``force=True``: every spawned child re-imports the module after its start method is
    already set, and the call raises ``RuntimeError: context has already been set``."""

    code = "FRK403"
    ANCHORS = ("module-level start-method setter",)  # what the pre-filter must find for this rule (prefilter.ANCHORS)
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
        # one finding per hazard: a call FRK402 reports and can fix is its finding alone (its fix adds
        # force=True); where FRK402 has no fix (a call inside an `if`), adding force=True stays this rule's
        frk402 = {id(site.node) for site, whole in late_setters(a) if whole}
        for site in module_level_setters(a, a.knowledge.start_method_setters):
            if not force_missing(site.node) or id(site.node) in frk402:
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
