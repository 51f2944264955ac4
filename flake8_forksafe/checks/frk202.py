"""FRK202: a function or class defined inside a function, where spawn/forkserver workers must
unpickle it."""

from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo, loaders_of, no_worker_processes, positional, string_value
from flake8_forksafe.families.pickling.facts import collect, in_test, is_dataset_base_expr, local_duck_dataset, qualname
from flake8_forksafe.families.pickling.plans import (
    Renamer,
    definition_plan,
    definition_tops,
    prepend_statements,
)
from flake8_forksafe.model import SAFE, Example, Report, Rule

WORKER_CALLABLES = ("collate_fn", "worker_init_fn")
FIX_TEXT = "define it at module level"


class LocalFunctionInDataset(Rule):
    """A function or class defined inside another function and stored on a dataset, passed into a
    dataset constructor or given to a DataLoader with worker processes as ``collate_fn`` /
    ``worker_init_fn``; or a dataset class itself defined inside a function or built with ``type()``.
    Pickle stores functions and classes by their importable name, which a local one does not have,
    so spawn and forkserver workers cannot receive it (fork copies it and hides the problem)."""

    code = "FRK202"
    # what the pre-filter must find for this rule (prefilter.ANCHORS)
    ANCHORS = ("dataset class", "loader call", "lambda or local def near a dataset constructor")
    name = "local-function-in-dataset"
    fix_applicability = SAFE
    fix_title = "Move the local function or class to module level"

    VALID = [
        # module-level functions, and a local one used only in the parent process
        """
from torch.utils.data import DataLoader, default_collate

def collate(batch):
    return default_collate(batch)

def make(ds):
    def describe(b):
        return len(b)
    print(describe([1, 2]))
    return DataLoader(ds, num_workers=4, collate_fn=collate)
""",
        # every loader has num_workers=0
        """
from torch.utils.data import DataLoader

def make(ds):
    def collate(batch):
        return batch
    return DataLoader(ds, num_workers=0, collate_fn=collate)
""",
        # a local dataset class that pickles itself through a module-level factory
        """
from torch.utils.data import Dataset

def build(n):
    return Local(n)

def make(n):
    class Local(Dataset):
        def __init__(self, n):
            self.n = n
        def __reduce__(self):
            return (build, (self.n,))
        def __getitem__(self, i):
            return i
    return Local(n)
""",
    ]
    INVALID = [
        Example(
            """
from torch.utils.data import DataLoader


def make_loader(ds):
    def collate(batch):  # FRK202: 4
        return [x * 2 for x in batch]

    return DataLoader(ds, num_workers=2, collate_fn=collate)
""",
            """
from torch.utils.data import DataLoader


def collate(batch):  # FRK202: 4
    return [x * 2 for x in batch]


def make_loader(ds):
    return DataLoader(ds, num_workers=2, collate_fn=collate)
""",
        ),
        # closes over a local: reported, no automatic fix
        """
from torch.utils.data import DataLoader

def make_loader(ds, pad):
    def collate(batch):  # FRK202: 4
        return batch + [pad]
    return DataLoader(ds, num_workers=2, collate_fn=collate)
""",
        # a dataset class defined inside a function
        """
from torch.utils.data import Dataset

def make(items):
    class ListDataset(Dataset):  # FRK202: 4
        def __init__(self, items):
            self.items = items
        def __getitem__(self, i):
            return self.items[i]
    return ListDataset(items)
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        found: Dict[int, Tuple[cst.CSTNode, str, bool]] = {}
        local_classes = [c for c in a.classes if c.in_function is not None]
        if a.nested_functions or local_classes:
            for leaf, what in collect(a, ("def", "class"), WORKER_CALLABLES):
                info = self._info(a, leaf.node)
                outer = qualname(info.parent if isinstance(info, FuncInfo) else info.in_function)
                kind = "function" if isinstance(leaf.node, cst.FunctionDef) else "class"
                shown = f"{leaf.node.name.value}()" if kind == "function" else leaf.node.name.value
                found[id(leaf.node)] = (
                    leaf.node,
                    f"local {kind} {shown} defined inside {outer}() is {what}: spawn/forkserver workers "
                    f"cannot pickle it (\"Can't pickle local object '{outer}.<locals>.{leaf.node.name.value}'\"); "
                    f"{FIX_TEXT}",
                    True,
                )
        for cls in local_classes:
            if id(cls.node) in found or not (cls in a.dataset_classes or local_duck_dataset(a, cls)):
                continue
            if any(c.defines_reduce for c in a.mro(cls)) or no_worker_processes(a, cls):
                continue
            if in_test(cls.in_function) and not loaders_of(a, cls) and not any(
                lc.workers != "zero" for lc in a.loader_calls
            ):
                continue  # a test's dataset that no loader of the file with workers is given
            outer = qualname(cls.in_function)
            found[id(cls.node)] = (
                cls.node,
                f"dataset class {cls.name} is defined inside {outer}(): spawn/forkserver workers cannot pickle "
                f"its instances (\"Can't pickle local object '{outer}.<locals>.{cls.name}'\"); {FIX_TEXT}",
                True,
            )
        if not a.all_loaders_zero:
            for site, message in self._type_classes(a):
                found[id(site.node)] = (site.node, message, False)
        if not found:
            return
        from flake8_forksafe.families.pickling import hoist

        locs = hoist.locate(a.module, [n for n, _, fixable in found.values() if fixable], definition_tops(a))
        for node, message, fixable in found.values():
            if fixable:
                fixable = definition_plan(a, node, locs.get(id(node))).problem is None
            yield self.report(node, message, fixable=fixable)

    @staticmethod
    def _info(a: Analysis, node: cst.CSTNode):
        for f in a.nested_functions:
            if f.node is node:
                return f
        for c in a.classes:
            if c.node is node:
                return c
        raise LookupError(node)  # pragma: no cover - leaves come from the analysis

    @staticmethod
    def _type_classes(a: Analysis) -> Iterator[Tuple[object, str]]:
        """``type("Name", (Dataset,), {...})`` inside a function, or bound to another name."""
        for site in a.calls:
            if site.qname not in ("type", "builtins.type"):
                continue
            args = positional(site.node)
            if len(args) != 3 or len(site.node.args) != 3:
                continue
            bases = args[1].value
            if not isinstance(bases, (cst.Tuple, cst.List)):
                continue
            if not any(is_dataset_base_expr(a, el.value, site.func) for el in bases.elements):
                continue
            ns = args[2].value
            if isinstance(ns, cst.Dict) and any(
                isinstance(el, cst.DictElement) and string_value(el.key) in ("__reduce__", "__reduce_ex__")
                for el in ns.elements
            ):
                continue
            name = string_value(args[0].value)
            if site.func is not None:
                shown = f"dataset class {name}" if name else "a dataset class"
                yield site, (
                    f"{shown} is built with type() inside {qualname(site.func)}(): spawn/forkserver "
                    f"workers cannot unpickle its instances (pickle finds a class by its module-level name); "
                    f"define it with a class statement at module level"
                )
                continue
            stmt = site.stmt
            bound = (
                isinstance(stmt, cst.Assign)
                and stmt.value is site.node
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0].target, cst.Name)
                and stmt.targets[0].target.value == name
            )
            if not bound and name:
                yield site, (
                    f"dataset class {name} is built with type() but not bound to the module-level name {name!r}: "
                    f"spawn/forkserver workers cannot unpickle its instances (pickle finds a class by its name); "
                    f"define it with a class statement at module level"
                )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        from flake8_forksafe.families.pickling import hoist

        module = a.module
        nodes = [r.node for r in reports if isinstance(r.node, (cst.FunctionDef, cst.ClassDef))]
        locs = hoist.locate(module, nodes, definition_tops(a))
        moving = {id(n) for n in nodes}
        names = hoist.NameAllocator(module)
        h = hoist.Hoister()
        for node in nodes:
            loc = locs.get(id(node))
            if loc is None or any(id(s) in moving for s in loc.scopes):
                continue  # inside another definition moved now: the next round takes it
            plan = definition_plan(a, node, loc)
            if plan.problem is not None:
                continue
            old = node.name.value
            new = names.keep(old)
            renames: Dict[int, str] = {}
            if new != old:
                for ref in hoist.reference_nodes(loc.scopes[-1].body, old):
                    renames[id(ref)] = new
                renames[id(node.name)] = new
                h.rename.update(renames)
            moved = node.visit(Renamer(renames)) if renames else node
            if plan.imports:
                moved = prepend_statements(moved, plan.imports)
            h.remove.add(id(node))
            h.add(loc.index, moved)
        return module.visit(h)


