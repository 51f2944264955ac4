"""FRK102: a handle opened at module level and used by a dataset in DataLoader workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo, _is_data_slice, bound_in_scope, factory_of, push_children
from flake8_forksafe.model import Report, Rule


@dataclass(eq=False)
class ModuleHandle:
    name: str
    call: cst.Call
    factory: object


def module_handles(a: Analysis) -> Dict[str, ModuleHandle]:
    """Module-level names bound to a handle (``ENV = lmdb.open(...)``) or to an object derived from
    one (``TXN = ENV.begin()``, ``IMAGES = h5py.File(p)["images"]``)."""
    out: Dict[str, ModuleHandle] = {}
    for _ in range(3):  # derived names may refer to names bound later in the dict order
        for name, values in a.module_assigns.items():
            if name in out:
                continue
            for v in values:
                hit = _module_handle(a, v, out, 0)
                if hit is not None:
                    out[name] = ModuleHandle(name, hit[0], hit[1])
                    break
    return out


def _module_handle(a: Analysis, v: Optional[cst.BaseExpression], known: Dict[str, ModuleHandle], depth: int):
    if v is None or depth > 6:
        return None
    if isinstance(v, cst.Call):
        f = factory_of(a, v)
        if f is not None:
            return v, f
        if isinstance(v.func, cst.Attribute):
            inner = _module_handle(a, v.func.value, known, depth + 1)
            if inner is not None and v.func.attr.value in inner[1].derived:
                return inner
        return None
    if isinstance(v, cst.Subscript):
        if _is_data_slice(v):
            return None
        inner = _module_handle(a, v.value, known, depth + 1)
        if inner is not None and inner[1].subscript:
            return inner
        return None
    if isinstance(v, cst.Name) and v.value in known:
        return known[v.value].call, known[v.value].factory
    return None


class _NameLoads:
    """Names a function body reads (attribute names, keywords and parameters excluded), and the
    names it assigns after declaring them ``global``."""

    __slots__ = ("names", "globals_assigned")

    def __init__(self) -> None:
        self.names: Set[str] = set()
        self.globals_assigned: Set[str] = set()


def _reads(fn: FuncInfo) -> _NameLoads:
    """One depth-first walk of the body in source order (``push_children``, not libcst's visitor,
    which rebuilds every node it passes): a ``global`` counts for the assignments after it."""
    got = fn.__dict__.get("_frk102_reads")
    if got is not None:
        return got
    v = _NameLoads()
    names = v.names
    declared: Set[str] = set()
    stack: List[cst.CSTNode] = [fn.node.body]
    kids: List[cst.CSTNode] = []
    while stack:
        n = stack.pop()
        t = type(n)
        if t is cst.Name:
            names.add(n.value)
            continue
        if t is cst.Attribute or t is cst.Arg:
            stack.append(n.value)
            continue
        if t is cst.Param:
            continue
        if t is cst.Global:
            declared.update(item.name.value for item in n.names)
        elif t is cst.AssignTarget and type(n.target) is cst.Name:
            if n.target.value in declared:
                v.globals_assigned.add(n.target.value)
            continue
        push_children(n, kids)
        kids.reverse()
        stack += kids
        kids.clear()
    fn.__dict__["_frk102_reads"] = v
    return v


class ModuleLevelHandle(Rule):
    """A file, LMDB env, HDF5 file or connection opened at module level and used in
    ``__getitem__``/``__iter__``, a method they call, a ``collate_fn`` or a ``worker_init_fn``:
    every forked worker shares the parent's handle (its file offset, its LMDB reader slots)."""

    code = "FRK102"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "module-level-handle"
    fix_applicability = None
    fix_title = ""

    VALID = [
        # only used on the parent side
        """
import json
import torch
from torch.utils.data import Dataset

LOG = open("train.log", "a")

class DS(Dataset):
    def __init__(self, items):
        self.items = items
        LOG.write(f"{len(items)} items\\n")

    def __getitem__(self, i):
        return torch.tensor(self.items[i])
""",
        # reopened per process through `global`
        """
import lmdb
from torch.utils.data import Dataset, get_worker_info

ENV = lmdb.open("data.lmdb", readonly=True, lock=False)

def worker_init_fn(worker_id):
    global ENV
    ENV = lmdb.open("data.lmdb", readonly=True, lock=False)

class DS(Dataset):
    def __getitem__(self, i):
        with ENV.begin() as txn:
            return txn.get(str(i).encode())
""",
    ]
    INVALID = [
        """
import lmdb
from torch.utils.data import Dataset

ENV = lmdb.open("data.lmdb", readonly=True, lock=False)  # FRK102: 6

class DS(Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        with ENV.begin() as txn:
            return txn.get(str(i).encode())
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        handles = module_handles(a)
        if not handles:
            return
        reopened: Set[str] = set()
        for fn in a.functions:
            if fn.has_global:  # a nested def's ``global`` is its own
                reopened |= _reads(fn).globals_assigned
        users: List[Tuple[str, FuncInfo]] = []
        for cls in a.dataset_classes:
            worker = a.worker_side(cls)
            for fn in worker:
                users.append((f"{cls.name}.{fn.name}" if fn.cls is not None else f"{fn.name}()", fn))
            # stored on self on the parent side and read by the workers
            worker_attrs = set()
            for fn in worker:
                worker_attrs |= fn.self_reads
            for fn in a.class_functions(cls):
                for sa in fn.self_assigns:
                    if (
                        isinstance(sa.value, cst.Name)
                        and sa.value.value in handles
                        and sa.attr in worker_attrs
                        and sa.value.value not in fn.local_assigns
                        and sa.value.value not in fn.params
                    ):
                        users.append((f"self.{sa.attr} of {cls.name}", fn))
        for fn in a.worker_functions:
            users.append((f"{fn.name}()", fn))
        reported: Set[str] = set()
        for where, fn in users:
            loads = _reads(fn).names
            for name in sorted(loads & set(handles)):
                if name in reported or name in reopened or bound_in_scope(fn, name):
                    continue
                reported.add(name)
                h = handles[name]
                yield self.report(
                    h.call,
                    f"{h.factory.name}() opened at module level and kept in {name} is used by {where} in DataLoader "  # type: ignore[attr-defined]
                    f"workers: forked workers share the parent's handle; open it per process "
                    f"(lazily in the dataset, PID-checked, or in worker_init_fn)",
                    fixable=False,
                )
