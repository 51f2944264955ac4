"""FRK101: handle opened on the parent side of a dataset and kept on the instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    ClassInfo,
    FuncInfo,
    KeptHandle,
    SelfAssign,
    chain_root,
    kept_handles,
    released_in,
    self_attr,
)
from flake8_forksafe.families.handles.facts import (
    closed_by_with,
    getstate_leaves_out,
    helper_handles,
    is_lazy,
    lazy_open_calls,
    recreated_on_unpickle,
    reopens_per_process,
    worker_uses_attr,
)
from flake8_forksafe.families.handles.chains import SplitPlan, apply_split, plan_split
from flake8_forksafe.families.handles.lazy import LazyPlan, apply_lazy, plan_derived, plan_lazy
from flake8_forksafe.families.handles.passed import handles_passed_to_datasets
from flake8_forksafe.model import SAFE, UNSAFE, Example, Report, Rule


@dataclass(eq=False)
class Kept:
    cls: ClassInfo
    fn: FuncInfo
    sa: SelfAssign
    handle: KeptHandle
    via: str = ""  # why ``cls`` reaches workers when it is not a dataset itself (Analysis.kept_by)


def parent_kept_handles(a: Analysis, cls: ClassInfo) -> List[Kept]:
    """Handles a dataset opens eagerly on the parent side and keeps (lazy ones are FRK103's)."""
    out: List[Kept] = []
    parent = a.parent_side(cls)
    module_level = {id(site.node) for site in a.calls if site.func is None}
    lazy_calls = lazy_open_calls(a, cls)  # objects derived from a lazy handle are FRK103's
    for fn in parent:
        for sa in fn.self_assigns:
            if sa.kind == "del" or sa.value is None:
                continue
            kept = kept_handles(a, sa, fn) or helper_handles(a, sa, fn)
            if not kept or is_lazy(a, cls, fn, sa):
                continue
            if _closed_local(fn, sa.value):
                continue  # f = h5py.File(p); self.x = f["x"]; f.close(): nothing open is kept
            for k in kept:
                if id(k.call) in module_level or id(k.call) in lazy_calls:
                    continue  # opened at module level (FRK102) or lazily (FRK103)
                if not k.container and (released_in(parent, sa.attr) or closed_by_with(parent, sa.attr)):
                    continue
                if getstate_leaves_out(a, cls, sa.attr) and reopens_per_process(a, cls, sa.attr):
                    continue
                # spawn: the unpickled copy makes it anew, itself or one object away (the datasets
                # keeping the reader rebuild it); fork: workers never touch the inherited handle
                # (opened only to build a read-only mmap the workers read)
                if not worker_uses_attr(a, cls, sa.attr) and (
                    _rebuilt_on_unpickle(a, cls, sa.attr) or _keepers_rebuild(a, cls)
                ):
                    continue
                out.append(Kept(cls, fn, sa, k, a.kept_by.get(id(cls), "")))
    return out


def _keepers_rebuild(a: Analysis, cls: ClassInfo) -> bool:
    """``cls`` reaches workers only because datasets of this module keep its objects, and every one
    of them leaves that attribute out of its pickled state and makes it anew in ``__setstate__``
    (megatron's ``IndexedDataset.bin_reader``, a reader that opens its file only to memory-map it)."""
    keepers = a.kept_in.get(id(cls))
    return bool(keepers) and all(_rebuilt_on_unpickle(a, k, attr) for k, attr in keepers)


def _rebuilt_on_unpickle(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """Pickling ``cls`` leaves ``self.attr`` out and ``__setstate__`` makes it anew."""
    return getstate_leaves_out(a, cls, attr) and recreated_on_unpickle(a, cls, attr)


def _closed_local(fn: FuncInfo, value: cst.BaseExpression) -> bool:
    root = chain_root(value)
    return isinstance(root, cst.Name) and root.value in fn.closed


def _derives(a: Analysis, value: Optional[cst.BaseExpression], me: str, attr: str, factory) -> bool:
    """``value`` is a handle derived from ``self.attr`` (``self.env.begin()``, ``self.f["x"]``)."""
    depth = 0
    while value is not None and depth < 8:
        depth += 1
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value not in factory.derived:
                return False
            value = value.func.value
        elif isinstance(value, cst.Subscript):
            from flake8_forksafe.analysis import _is_data_slice

            if not factory.subscript or _is_data_slice(value):
                return False
            value = value.value
        else:
            return self_attr(value, me) == attr
        if self_attr(value, me) == attr:
            return True
    return False


class HandleOpenedInInit(Rule):
    """A file, LMDB env, HDF5 file, database connection or video reader opened in ``__init__``
    (or a method, helper or base ``__init__`` it calls) and kept on the dataset is shared by every
    forked worker and cannot be pickled for spawn workers."""

    code = "FRK101"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "handle-opened-in-init"
    fix_applicability = SAFE
    fix_title = "Open the handle lazily in each worker process (PID-checked) and drop it when pickling"

    VALID = [
        # opened lazily on the worker side
        """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None

    def __getitem__(self, i):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True)
        return self.env
""",
        # a with block
        """
import h5py
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.n = len(f["x"])
""",
        # closed before __init__ returns
        """
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.f = open(path, "rb")
        self.header = self.f.read(16)
        self.f.close()
""",
        # memory maps are not handles
        """
import numpy as np
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.x = np.load(path, mmap_mode="r")
        self.y = np.memmap(path + ".y", dtype="float32", mode="r")
""",
        # not a dataset
        """
import sqlite3

class Index:
    def __init__(self, path):
        self.db = sqlite3.connect(path)
""",
    ]
    INVALID = [
        Example(
            """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.env = lmdb.open(path, readonly=True)  # FRK101: 19

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return txn.get(str(i).encode())
""",
            """
import os

import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self._env_args = (path,)  # FRK101: 19

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return txn.get(str(i).encode())

    # forksafe: one lmdb.open() handle per process (PID-checked), not pickled
    @property
    def env(self):
        if getattr(self, "_env_pid", None) != os.getpid():
            if getattr(self, "_env", None) is not None:
                self._env.close()
            self._env = lmdb.open(*self._env_args, readonly=True)
            self._env_pid = os.getpid()
        return self._env

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_env", None)
        state.pop("_env_pid", None)
        return state
""",
        ),
        # a transaction derived from a handle opened into a local: the handle is named on self (one fix
        # round), then opened per process with the transaction as a property of it (the next round)
        Example(
            """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        env = lmdb.open(path, readonly=True)  # FRK101: 14
        self.txn = env.begin()

    def __getitem__(self, i):
        return self.txn.get(str(i).encode())
""",
            """
import os

import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self._env_args = (path,)  # FRK101: 14

    def __getitem__(self, i):
        return self.txn.get(str(i).encode())

    # forksafe: one lmdb.open() handle per process (PID-checked), not pickled
    @property
    def _env(self):
        if getattr(self, "_env_pid", None) != os.getpid():
            if getattr(self, "_env_local", None) is not None:
                self._env_local.close()
            self._env_local = lmdb.open(*self._env_args, readonly=True)
            self._env_pid = os.getpid()
        return self._env_local

    @property
    def txn(self):
        if getattr(self, "_txn_of", None) is not self._env:
            self._txn_of, self._txn = self._env, self._env.begin()
        return self._txn

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_env_local", None)
        state.pop("_env_pid", None)
        state.pop("_txn_of", None)
        state.pop("_txn", None)
        return state
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        found: List[Kept] = []
        for cls in a.dataset_classes:
            found += parent_kept_handles(a, cls)
        by_call: Dict[int, List[Kept]] = {}
        for k in found:
            by_call.setdefault(id(k.handle.call), []).append(k)
        # one finding per factory call: a helper called by several keepers has one factory call, so
        # its keepers' plans are made first; the finding is fixable only when every keeper's is (a
        # fix leaves no finding behind), else it gives the reason of a keeper that has none
        by_site: Dict[int, List[Tuple[Kept, object]]] = {}
        for k in found:
            group = by_call[id(k.handle.call)]
            if group[0] is k:
                by_site.setdefault(id(k.handle.site), []).append((k, self._plan(a, k, group)))
        for planned in by_site.values():
            k, fix = next((p for p in planned if not isinstance(p[1], (LazyPlan, SplitPlan))), planned[0])
            also = sorted({f"self.{o.sa.attr}" for o, _ in planned if o.sa.attr != k.sa.attr})
            rep = self.report(
                k.handle.site,
                self.message(k, fix, also),
                fixable=isinstance(fix, (LazyPlan, SplitPlan)),
                data=fix,
            )
            if isinstance(fix, LazyPlan) and fix.unsafe:
                rep.applicability = UNSAFE
            yield rep

        for cls in a.dataset_classes:  # returned by a function of another module and kept
            parent = a.parent_side(cls)
            for fn in parent:
                for sa in fn.self_assigns:
                    got = a.project_returned_handle(sa.value)
                    if got is None or released_in(parent, sa.attr) or closed_by_with(parent, sa.attr):
                        continue
                    factory, func, path, line = got
                    yield self.report(
                        sa.value,
                        f"{factory}() returned by {func} ({path}:{line}) is kept in self.{sa.attr} of "
                        f"{cls.name}, opened on the parent side: forked DataLoader workers share the "
                        "parent's handle and spawn workers cannot pickle it; open it lazily in each worker "
                        "process (no automatic fix: the code is in another module)",
                        fixable=False,
                    )

        for cls in a.dataset_classes:  # opened by a base class's method in another module
            for fact in a.project_init_handles(cls):
                yield self.report(
                    cls.node,
                    f"{fact.detail}() kept in self.{fact.attr} is opened on the parent side "
                    f"(opened in base class {fact.where.label}, {fact.path}:{fact.line}): forked "
                    "DataLoader workers share the parent's handle and spawn workers cannot pickle it; "
                    "open it lazily in each worker process (no automatic fix: the code is in another module)",
                    fixable=False,
                )

        reported = {id(k.handle.site) for k in found}
        for p in handles_passed_to_datasets(a):  # opened outside the dataset, given to its constructor
            if id(p.call) in reported:
                continue
            reported.add(id(p.call))
            owner = f"{p.fn.cls.name}.{p.fn.name}()" if p.fn.cls is not None else f"{p.fn.name}()"
            yield self.report(
                p.call,
                f"{p.factory.name}() opened in {owner} is passed to the dataset constructor {p.dataset}() as "
                f"{p.param}, which keeps it{p.where.replace(' (kept by ', ' (in ', 1)}: forked DataLoader workers share the parent's handle and "
                "spawn workers cannot pickle it; pass what opens it (a path) and open it lazily in each worker "
                "process (no automatic fix)",
                fixable=False,
            )

    def _plan(self, a: Analysis, k: Kept, group: List[Kept]):
        h = k.handle
        if h.container:
            return "the handle is kept in a container"
        if h.captured:
            return f"the handle is captured by {h.captured}, kept on the instance"
        if h.conditional:
            return "the handle is kept under a condition"
        if not h.direct:
            return self._plan_split(a, k, group)
        others = sorted({g.sa.attr for g in group if g.sa.attr != k.sa.attr})
        me = k.fn.self_name or "self"
        derived = []
        for fn in a.parent_side(k.cls):
            for sa in fn.self_assigns:
                if sa is not k.sa and _derives(a, sa.value, fn.self_name or me, k.sa.attr, h.factory):
                    derived.append((fn, sa))
        # objects derived from self.<attr> (self.images = self.file["images"]) can become properties
        # of it; one derived from the handle some other way (env = ...; self.txn = env.begin()) cannot
        via_attr = {id(sa) for _, sa in derived}
        props = None
        if all(id(g.sa) in via_attr for g in group if g.sa.attr != k.sa.attr):
            props = plan_derived(a, k.fn, k.sa, derived) if derived else []
        if props is None:
            return f"self.{others[0] if others else derived[0][1].attr} keeps an object derived from it"
        return plan_lazy(a, k.fn, k.sa, h.call, f"{h.factory.name}()", h.factory.close, props, factory=h.factory)

    def _plan_split(self, a: Analysis, k: Kept, group: List[Kept]):
        """``self.x = h5py.File(p)["data"]`` / ``hf = h5py.File(p); self.x = hf.get("data")``: the
        handle is first named on self (``chains.py``); offered only when the lazy-handle fix of the
        next round is planned on the split module."""
        why = "an object derived from the handle is kept"
        split = plan_split(a, k.fn, k.sa, k.handle.call, k.handle.factory.name)
        if isinstance(split, str):
            return f"{why} ({split})"
        try:
            b = Analysis(apply_split(a.module, [split]), a.knowledge, a.path, a.index)
        except Exception:  # noqa: BLE001 - a split that does not analyse is not offered
            return why
        try:
            i = next((n for n, c in enumerate(a.classes) if c is k.cls), None)
            if i is None or i >= len(b.classes) or b.classes[i].name != k.cls.name:
                return why
            found = [x for x in parent_kept_handles(b, b.classes[i]) if x.sa.attr == split.handle_attr]
            if len(found) != 1 or not found[0].handle.direct:
                return why
            nxt = self._plan(b, found[0], [x for x in found if x.handle.call is found[0].handle.call])
            if not isinstance(nxt, LazyPlan):
                return f"{why} ({nxt})"
            return split
        finally:
            b.release()

    @staticmethod
    def message(k: Kept, fix, also: Sequence[str] = ()) -> str:
        what = k.handle.factory.name
        where = "a container on " if k.handle.container else ""
        fn = k.fn
        in_ = "__init__" if fn.name == "__init__" else f"{fn.name}() on the parent side"
        owner = fn.cls.name if fn.cls is not None else k.cls.name
        tail = "open it lazily in each worker process"
        if isinstance(fix, str):  # a plan (lazy, or split then lazy) is a fix, not a reason
            tail += f" (no automatic fix: {fix})"
        elif isinstance(fix, LazyPlan) and fix.unsafe:
            tail += f" (unsafe fix: {fix.why_unsafe})"
        via = f" ({owner} is not a dataset, but {k.via})" if k.via else ""
        opened = f"opened in {owner}.{in_}"
        if k.handle.helper:
            opened = f"returned by {k.handle.helper}(), called in {owner}.{in_},"
        if k.handle.captured:
            via = f" (captured by {'the local function ' if k.handle.captured != 'a lambda' else ''}{k.handle.captured}){via}"
        if also:
            via += f" (also kept in {', '.join(also)})"
        return (
            f"{what}() {opened} and kept in {where}self.{k.sa.attr}{via}: forked DataLoader "
            f"workers share the parent's handle and spawn workers cannot pickle it; {tail}"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        lazy = [r.data for r in reports if isinstance(r.data, LazyPlan)]
        splits = [r.data for r in reports if isinstance(r.data, SplitPlan)]
        if not splits:
            return apply_lazy(a, lazy)
        # name the split handles on self, then plan every selected handle again on that module (no parse:
        # the same round), so a split never stays half done and the file is rewritten once
        b = Analysis(apply_split(a.module, splits), a.knowledge, a.path, a.index)
        try:
            wanted = {(p.owner.name, p.attr) for p in lazy} | {(p.fn.cls.name, p.handle_attr) for p in splits if p.fn.cls}
            again = [r.data for r in self.check(b) if isinstance(r.data, LazyPlan)
                     and (r.data.owner.name, r.data.attr) in wanted]
            return apply_lazy(b, again)
        finally:
            b.release()
