"""FRK404: the fork start method chosen in a module that uses CUDA."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, CallSite, keyword, positional, string_value
from flake8_forksafe.model import UNSAFE, Example, Report, Rule


def _method_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    kw = keyword(call, name)
    if kw is not None:
        return kw
    pos = positional(call)
    return pos[0] if pos else None


class ForkWithCuda(Rule):
    """``set_start_method("fork")``, ``get_context("fork")`` or ``DataLoader(...,
    multiprocessing_context="fork")`` in a module that also uses CUDA: a process that has
    initialised CUDA cannot give it to forked children ("Cannot re-initialize CUDA in forked
    subprocess"), and the CUDA runtime is not fork-safe."""

    code = "FRK404"
    ANCHORS = ("fork start method", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "fork-with-cuda"
    fix_applicability = UNSAFE
    fix_title = 'Use the "spawn" start method instead of "fork"'

    VALID = [
        # fork without CUDA in the module
        """
import multiprocessing as mp
from torch.utils.data import DataLoader

if __name__ == "__main__":
    mp.set_start_method("fork")
""",
        # spawn with CUDA
        """
import torch
import torch.multiprocessing as mp

if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = torch.nn.Linear(2, 2).cuda()
""",
    ]
    INVALID = [
        Example(
            """
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader

def main(ds):
    model = torch.nn.Linear(2, 2).cuda()
    loader = DataLoader(ds, num_workers=2, multiprocessing_context="fork", persistent_workers=True)  # FRK404: 43
    ctx = mp.get_context('fork')  # FRK404: 10
""",
            expected_fix="""
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader

def main(ds):
    model = torch.nn.Linear(2, 2).cuda()
    loader = DataLoader(ds, num_workers=2, multiprocessing_context="spawn", persistent_workers=True)  # FRK404: 43
    ctx = mp.get_context('spawn')  # FRK404: 10
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        if not a.uses_cuda:
            return
        for site, node, literal, what in self.fork_choices(a):
            yield self.report(
                node,
                f"{what} chooses the fork start method in a module that uses CUDA: a forked child cannot "
                f"use the CUDA the parent initialised ('Cannot re-initialize CUDA in forked subprocess'); "
                f'use "spawn" (or "forkserver"), with a picklable dataset and an if __name__ == "__main__": guard',
                fixable=literal is not None,
                data=literal,
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return _fix(a, [r.data for r in reports if r.data is not None])

    @staticmethod
    def fork_choices(a: Analysis) -> Iterator[Tuple[CallSite, cst.CSTNode, Optional[cst.SimpleString], str]]:
        """(call site, node to point at, the "fork" literal to rewrite or None, description)."""
        k = a.knowledge
        for site in a.calls:
            q = site.qname or ""
            if q in k.start_method_setters or q in k.get_context:
                arg = _method_arg(site.node, "method")
                if arg is not None:
                    literal = _fork_literal(a, arg.value, site)
                    if literal is not False:
                        yield site, site.node, literal, f"{q.rsplit('.', 1)[-1]}(\"fork\")"
            kw = keyword(site.node, "multiprocessing_context")
            if kw is not None:
                literal = _fork_literal(a, kw.value, site)
                if literal is not False:
                    yield site, kw, literal, 'multiprocessing_context="fork"'


def _fork_literal(a: Analysis, value: cst.BaseExpression, site: CallSite):
    """The "fork" string literal itself (rewritable), None for a name bound to "fork" elsewhere (not
    rewritten: the name may serve other purposes), False when the value is not "fork"."""
    if string_value(value) == "fork":
        return value
    if isinstance(value, cst.Name):
        vals = a.local_values(value.value, site.func)
        if vals and all(string_value(v) == "fork" for v in vals):
            return None
    return False


def spawn_literal(node: cst.SimpleString) -> cst.SimpleString:
    """``"fork"`` -> ``"spawn"`` keeping the prefix and quotes."""
    prefix = node.value[: len(node.prefix)]  # as written (libcst lower-cases .prefix)
    return node.with_changes(value=f"{prefix}{node.quote}spawn{node.quote}")


def _fix(a: Analysis, literals: List[cst.SimpleString]) -> cst.Module:
    ids = {id(n) for n in literals}

    class T(cst.CSTTransformer):
        def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
            return spawn_literal(updated_node) if id(original_node) in ids else updated_node

    return a.module.visit(T())
