"""FRK102: a handle opened at module level and used by a dataset in DataLoader workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo, _is_data_slice, bound_in_scope, factory_of
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


class _NameLoads(cst.CSTVisitor):
    """Names a function body reads (attribute names, keywords and parameters excluded)."""

    def __init__(self) -> None:
        self.names: Set[str] = set()
        self.globals_assigned: Set[str] = set()
        self._globals: Set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self._globals.update(n.name.value for n in node.names)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        if isinstance(node.target, cst.Name):
            if node.target.value in self._globals:
                self.globals_assigned.add(node.target.value)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _reads(fn: FuncInfo) -> _NameLoads:
    v = _NameLoads()
    fn.node.body.visit(v)
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
