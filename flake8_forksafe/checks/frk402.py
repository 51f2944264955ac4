"""FRK402: the start method set at module level after ``import torch``."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.families.processes.setters import late_setters
from flake8_forksafe.families.processes.start_method import move_above_torch
from flake8_forksafe.model import SAFE, Example, Report, Rule


class StartMethodAfterTorchImport(Rule):
    """``set_start_method(...)`` (or ``set_forkserver_preload``) at module level after ``import torch``,
    outside the ``__main__`` guard: torch and the libraries it imports can already have used the
    default context, and spawned children re-run the call while re-importing the module."""

    code = "FRK402"
    ANCHORS = ("module-level start-method setter",)  # what the pre-filter must find for this rule (prefilter.ANCHORS)
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
import multiprocessing
import os

multiprocessing.set_start_method("spawn", force=True)  # FRK402: 0

import torch  # noqa: E402

print(os.getpid(), torch.__version__)
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for site, whole in late_setters(a):
            what = "set_forkserver_preload()" if site.last == "set_forkserver_preload" else "set_start_method()"
            yield self.report(
                site.node,
                f"{what} runs at module level after `import torch`: the start method must be chosen "
                f"before torch (and what it imports) uses multiprocessing, and spawned workers re-run "
                f"it; call multiprocessing.set_start_method(..., force=True) above the first torch "
                f"import, or inside `if __name__ == \"__main__\":`",
                fixable=whole,
                data=site.top,
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        reports = [r for r in reports if r.fixable]
        return move_above_torch(a, [r.data for r in reports], [r.node for r in reports])

