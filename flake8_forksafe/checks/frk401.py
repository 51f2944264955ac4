"""FRK401: module top-level code that starts worker processes outside ``if __name__ == "__main__":``."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.families.processes.workers import WorkerStarts
from flake8_forksafe.model import SAFE, UNSAFE, Example, Report, Rule


GUARD = 'if __name__ == "__main__":'


class MissingMainGuard(Rule):
    """Top-level code of a script that starts DataLoader workers or processes outside an
    ``if __name__ == "__main__":`` guard. Under spawn / forkserver every worker re-imports the script
    and would start workers again while bootstrapping."""

    code = "FRK401"
    # what the pre-filter must find for this rule (prefilter.ANCHORS)
    ANCHORS = ("module-level worker start", "loader call", "dataset class")
    name = "missing-main-guard"
    fix_applicability = SAFE
    fix_title = 'Move the script code under an `if __name__ == "__main__":` guard'

    VALID = [
        # the documented pattern
        """
import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=2, num_workers=2)

def main():
    for batch in loader:
        print(batch)

if __name__ == "__main__":
    main()
""",
        # no worker processes
        """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=2, num_workers=0)
for batch in loader:
    print(batch)
""",
        # an explicit fork context: workers do not re-import the script
        """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=2, multiprocessing_context="fork")
print(next(iter(loader)))
""",
        # threads, not processes
        """
import threading

t = threading.Thread(target=print)
t.start()
""",
    ]
    INVALID = [
        Example(
            """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), batch_size=2, num_workers=2)
for batch in loader:  # FRK401: 0
    print(batch)
""",
            """
from torch.utils.data import DataLoader

if __name__ == "__main__":
    loader = DataLoader(range(10), batch_size=2, num_workers=2)
    for batch in loader:  # FRK401: 0
        print(batch)
""",
        ),
        Example(
            """
import multiprocessing as mp


def work(i):
    print(i)


def main():
    with mp.Pool(2) as pool:
        pool.map(work, range(4))


main()  # FRK401: 0
""",
            """
import multiprocessing as mp


def work(i):
    print(i)


def main():
    with mp.Pool(2) as pool:
        pool.map(work, range(4))


if __name__ == "__main__":
    main()  # FRK401: 0
""",
        ),
        """
import multiprocessing as mp

p = mp.Process(target=print, args=("hi",))
p.start()  # FRK401: 0
p.join()
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        if a.is_package_main or a.interactive_main:  # notebooks: no guard helps (FRK405)
            return
        hits = WorkerStarts(a).top_level()
        if not hits:
            return
        from flake8_forksafe.families.processes.main_guard import GuardPlan, importers_reason, plan_main_guard

        if a.reduced:  # the engine analyses the whole file for the plan (its findings are those)
            plan = GuardPlan(False, reason="planned on the whole file")
        else:
            plan = plan_main_guard(a, [stmt for stmt, _ in hits])
        why_unsafe = importers_reason(a) if plan.fixable else ""
        for stmt, hit in hits:
            node = hit.start_call if hit.start_call is not None else stmt
            message = self.message(hit.why) + (f" (unsafe fix: {why_unsafe})" if why_unsafe else "")
            rep = self.report(node, message, fixable=plan.fixable, data=plan)
            if why_unsafe:
                rep.applicability = UNSAFE
            yield rep

    @staticmethod
    def message(why: str) -> str:
        return (
            f"module-level code {why} outside `{GUARD}`: spawn/forkserver workers "
            f"re-import this module and fail with a bootstrapping RuntimeError; move the script code "
            f"under the guard"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        from flake8_forksafe.families.processes.main_guard import apply_main_guard

        return apply_main_guard(a, reports[0].data)
