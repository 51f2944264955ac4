"""FRK201: a lambda kept on a dataset or given to a DataLoader that starts worker processes.

Where a lambda ends up pickled (the sinks) and what an expression keeps is the pickling family's
(``families/pickling/facts.py``); moving it to module level is ``families/pickling/plans.py`` + ``hoist.py``.
"""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.families.pickling.facts import LOADER_CALLABLES, SPAWN_HINT, collect, lambda_tops
from flake8_forksafe.families.pickling.notebook import notebook_definitions
from flake8_forksafe.families.pickling.plans import lambda_plan
from flake8_forksafe.model import SAFE, Example, Report, Rule


# --------------------------------------------------------------------------------------------------
# the rule


class LambdaInDataset(Rule):
    """A lambda kept on a dataset (an attribute, a stored default argument, inside
    ``transforms.Lambda``/``Compose`` kept on self), passed into a dataset constructor, or given to a
    DataLoader with worker processes as ``collate_fn``/``worker_init_fn`` (a sampler runs in the parent).
    Fork copies it, but spawn and forkserver workers receive the dataset and these callables pickled,
    and a lambda cannot be pickled."""

    code = "FRK201"
    # what the pre-filter must find for this rule (prefilter.ANCHORS)
    ANCHORS = ("dataset class", "loader call", "lambda or local def near a dataset constructor")
    name = "lambda-in-dataset"
    fix_applicability = SAFE
    fix_title = "Move the lambda to a module-level function (functools.partial for captured values)"

    VALID = [
        # transient lambdas: the result kept is not a callable
        """
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, files):
        self.files = sorted(files, key=lambda p: p.stem)
        self.sizes = list(map(lambda p: p.stat().st_size, self.files))
        self.largest = max(self.files, key=lambda p: p.stat().st_size)

    def __getitem__(self, i):
        return self.files[i]
""",
        # every loader has num_workers=0
        """
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __init__(self):
        self.transform = lambda x: x * 2

    def __getitem__(self, i):
        return self.transform(i)

loader = DataLoader(DS(), batch_size=4, num_workers=0, collate_fn=lambda b: b)
""",
        # functools.partial of a module-level function
        """
import functools
from torch.utils.data import DataLoader

def pad_collate(batch, pad):
    return batch

def make(ds):
    return DataLoader(ds, num_workers=4, collate_fn=functools.partial(pad_collate, pad=0))
""",
    ]
    INVALID = [
        Example(
            """
import torchvision.transforms as T
from torch.utils.data import Dataset


class DS(Dataset):
    def __init__(self, scale):
        self.transform = T.Lambda(lambda x: x * scale)  # FRK201: 34

    def __getitem__(self, i):
        return self.transform(i)
""",
            """
import functools

import torchvision.transforms as T
from torch.utils.data import Dataset


def _transform_lambda(x, *, scale):
    return x * scale


class DS(Dataset):
    def __init__(self, scale):
        self.transform = T.Lambda(
            functools.partial(_transform_lambda, scale=scale)
        )  # FRK201: 34

    def __getitem__(self, i):
        return self.transform(i)
""",
        ),
        Example(
            """
from torch.utils.data import DataLoader


def make_loader(ds):
    return DataLoader(ds, num_workers=2, collate_fn=lambda b: b)  # FRK201: 52
""",
            """
from torch.utils.data import DataLoader


def _collate_fn(b):
    return b


def make_loader(ds):
    return DataLoader(ds, num_workers=2, collate_fn=_collate_fn)  # FRK201: 52
""",
        ),
        # self captured: reported, no automatic fix
        """
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, mean):
        self.mean = mean
        self.norm = lambda x: x - self.mean  # FRK201: 20

    def __getitem__(self, i):
        return self.norm(i)
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        if not a.lambdas:
            return
        found = collect(a, ("lambda",), [k for k, _ in LOADER_CALLABLES], extra=("attribute_stores",))
        if found and a.interactive_main:
            # one finding per hazard: in a notebook a lambda that reaches workers is FRK405's (a
            # module-level def in the notebook would be just as unreachable for spawn workers)
            in_notebook = notebook_definitions(a)
            found = [lw for lw in found if id(lw[0].node) not in in_notebook]
        if not found:
            return
        order = {id(lam): i for i, (lam, _, _) in enumerate(a.lambdas)}
        found.sort(key=lambda lw: order.get(id(lw[0].node), 0))
        from flake8_forksafe.families.pickling.hoist import locate

        locs = locate(a.module, [leaf.node for leaf, _ in found], lambda_tops(a))
        for leaf, what in found:
            plan = lambda_plan(a, leaf.node, locs.get(id(leaf.node)))
            yield self.report(
                leaf.node,
                f"lambda {what}: {SPAWN_HINT}; use a module-level function (functools.partial to bind values)",
                fixable=plan.problem is None,
                data=leaf,
            )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        from flake8_forksafe.families.pickling import hoist

        module = a.module
        locs = hoist.locate(module, [r.node for r in reports], lambda_tops(a))
        hoisted = {id(r.node) for r in reports}
        names = hoist.NameAllocator(module)
        partial_ref, need_import = hoist.partial_reference(module)
        h = hoist.Hoister()
        for r in reports:
            lam, leaf, loc = r.node, r.data, locs.get(id(r.node))
            if loc is None or any(id(s) in hoisted for s in loc.scopes):
                continue  # inside another lambda moved now: the next round takes it
            plan = lambda_plan(a, lam, loc)
            if plan.problem is not None:
                continue
            name = names.fresh(hoist.function_name(leaf.hint, leaf.in_lambda_call))
            h.add(loc.index, hoist.lambda_to_def(lam, name, plan, module))
            if plan.partial:
                h.replace[id(lam)] = hoist.partial_call(name, plan.partial, partial_ref)
                h.need_functools = h.need_functools or need_import
            else:
                h.replace[id(lam)] = cst.Name(name)
        return module.visit(h)


