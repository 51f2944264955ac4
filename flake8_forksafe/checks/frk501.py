"""FRK501: a DataLoader with spawn / forkserver workers that are restarted every epoch."""

from __future__ import annotations

from typing import Iterator, List, Optional

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo, LoaderCall, has_star_kwargs, keyword, string_value
from flake8_forksafe.model import UNSAFE, Example, Report, Rule
from flake8_forksafe.families.processes.start_method import set_keyword_in

RESTARTED = ("spawn", "forkserver")


def context_method(a: Analysis, expr: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0) -> Optional[str]:
    """The start method an explicit context names: ``"spawn"``, ``get_context("forkserver")``, or a
    name bound to either; None when unknown."""
    if expr is None or depth > 4:
        return None
    s = string_value(expr)
    if s is not None:
        return s
    if isinstance(expr, cst.Call) and a.qualify(expr.func) in a.knowledge.get_context:
        arg = keyword(expr, "method")
        value = arg.value if arg is not None else (expr.args[0].value if expr.args and expr.args[0].keyword is None else None)
        return string_value(value)
    if isinstance(expr, cst.Name):
        values = a.local_values(expr.value, scope)
        methods = {context_method(a, v, scope, depth + 1) for v in values}
        if len(methods) == 1:
            return methods.pop()
    return None


def context_from_kwargs(lc: LoaderCall) -> bool:
    """The loader's ``multiprocessing_context`` is not a keyword of the call but may be in its
    ``**kwargs`` dict (``LoaderCall.given`` reads one the module builds)."""
    return lc.arg("multiprocessing_context", 11) is None and has_star_kwargs(lc.node)


def restarted_workers(a: Analysis, lc: LoaderCall) -> Optional[str]:
    """The spawn-like method of a loader whose workers are restarted each epoch, else None."""
    if a.module_classes.get(lc.site.qname or "") is not None:
        return None  # a same-file DataLoader subclass may set persistent_workers itself
    if lc.arg("num_workers", 5) is None or lc.workers == "zero":
        return None
    flowed = context_from_kwargs(lc)
    method = context_method(a, lc.given("multiprocessing_context", 11), lc.site.func)
    if method not in RESTARTED:
        return None
    pw = keyword(lc.node, "persistent_workers")
    if pw is not None and not (isinstance(pw.value, cst.Name) and pw.value.value == "False"):
        return None  # True, or a value only known at run time
    if pw is None and any(arg.star == "**" for arg in lc.node.args):
        if not flowed or lc.given("persistent_workers") is not None:
            return None  # maybe in **kwargs
        # the context came through a ``**kwargs`` dict this module builds (``kwargs =
        # {}; kwargs["multiprocessing_context"] = "forkserver"``) that sets no persistent_workers
    return method


class SpawnWorkersNotPersistent(Rule):
    """A DataLoader given a spawn or forkserver context and worker processes, without
    ``persistent_workers=True``: every epoch starts new workers, each re-importing the main module
    and unpickling the dataset. Off by default: a performance hint."""

    code = "FRK501"
    ANCHORS = ("loader call", "dataset class")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "spawn-workers-not-persistent"
    default_enabled = False
    fix_applicability = UNSAFE
    fix_title = "Pass persistent_workers=True to the DataLoader"

    VALID = [
        """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=2, multiprocessing_context="spawn", persistent_workers=True)
""",
        # fork workers are cheap to restart
        """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=2, multiprocessing_context="fork")
""",
        # no workers
        """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=0, multiprocessing_context="spawn")
""",
    ]
    INVALID = [
        Example(
            """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=2, multiprocessing_context="spawn")  # FRK501: 9
""",
            """
from torch.utils.data import DataLoader

loader = DataLoader(range(10), num_workers=2, multiprocessing_context="spawn", persistent_workers=True)  # FRK501: 9
""",
        ),
        Example(
            """
import multiprocessing as mp
import torch.utils.data as tud

ctx = mp.get_context("forkserver")


def make(ds, workers):
    return tud.DataLoader(  # FRK501: 11
        ds,
        batch_size=32,
        num_workers=workers,
        multiprocessing_context=ctx,
    )
""",
            """
import multiprocessing as mp
import torch.utils.data as tud

ctx = mp.get_context("forkserver")


def make(ds, workers):
    return tud.DataLoader(  # FRK501: 11
        ds,
        batch_size=32,
        num_workers=workers,
        multiprocessing_context=ctx,
        persistent_workers=True,
    )
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for lc in a.loader_calls:
            method = restarted_workers(a, lc)
            if method is None:
                continue
            flowed = context_from_kwargs(lc)
            yield self.report(
                lc.node,
                f"DataLoader with {method} workers{' (multiprocessing_context from a **kwargs dict)' if flowed else ''} "
                f"but without persistent_workers=True: every epoch starts new workers, each re-importing the main "
                f"module and unpickling the dataset; pass persistent_workers=True"
                + (" (no automatic fix: the dict may gain the key elsewhere)" if flowed else ""),
                fixable=not flowed,
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return set_keyword_in(a.module, [r.node for r in reports], "persistent_workers", "True")
