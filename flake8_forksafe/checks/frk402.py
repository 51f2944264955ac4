"""FRK402: the start method set at module level after ``import torch``."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis, imports_torch
from flake8_forksafe.checks.frk403 import module_level_setters, path_of, under_guard
from flake8_forksafe.engine import SAFE, Example, Report, Rule
from flake8_forksafe.fixes.start_method import move_above_torch

# setters the fix may rewrite as stdlib calls (torch.multiprocessing re-exports the stdlib's global
# context); `multiprocess` (dill's fork of multiprocessing) has a context of its own
STDLIB_SHARED = ("multiprocessing.", "torch.multiprocessing.")


class StartMethodAfterTorchImport(Rule):
    """``set_start_method(...)`` (or ``set_forkserver_preload``) at module level after ``import torch``,
    outside the ``__main__`` guard: torch and the libraries it imports can already have used the
    default context, and spawned children re-run the call while re-importing the module."""

    code = "FRK402"
    name = "start-method-after-torch-import"
    fix_applicability = SAFE
    fix_title = "Set the start method with multiprocessing.set_start_method(..., force=True) before importing torch"

    VALID = [
        # before torch
        """
import multiprocessing

multiprocessing.set_start_method("spawn", force=True)

import torch
""",
        # inside the guard
        """
import torch
import torch.multiprocessing as mp

if __name__ == "__main__":
    mp.set_start_method("spawn")
""",
        # in a function
        """
import torch
import multiprocessing as mp

def main():
    mp.set_start_method("spawn", force=True)
""",
    ]
    INVALID = [
        Example(
            """
import os

import torch
import torch.multiprocessing as mp

mp.set_start_method("spawn", force=True)  # FRK402: 0
print(os.getpid(), torch.__version__)
""",
            """
import os

import multiprocessing
multiprocessing.set_start_method("spawn", force=True)  # FRK402: 0
import torch

print(os.getpid(), torch.__version__)
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        ti = a.torch_import_index
        if ti is None:
            return
        names = a.knowledge.start_method_setters | a.knowledge.forkserver_preload
        for site in module_level_setters(a, names):
            idx = a.body_index(site.top)
            if idx is None or idx < ti:
                continue
            path = path_of(site)
            if under_guard(path):
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
            what = "set_forkserver_preload()" if site.last == "set_forkserver_preload" else "set_start_method()"
            yield self.report(
                site.node,
                f"{what} runs at module level after `import torch`: the start method must be chosen "
                f"before torch (and what it imports) uses multiprocessing, and spawned workers re-run "
                f"it; call multiprocessing.set_start_method(..., force=True) above the first torch "
                f"import, or inside `if __name__ == \"__main__\":`",
                fixable=whole,
                data=top,
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        reports = [r for r in reports if r.fixable]
        return move_above_torch(a, [r.data for r in reports], [r.node for r in reports])


def _after_torch_on_line(site) -> bool:
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
