"""FRK103: a lazily opened handle that the parent side opens, without a PID check or a ``__getstate__``."""

from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, KeptHandle, SelfAssign, kept_handles
from flake8_forksafe.families.handles.facts import (
    getstate_leaves_out,
    helper_handles,
    is_lazy,
    reopens_per_process,
)
from flake8_forksafe.families.handles.pid import PidPlan, apply_pid, plan_pid
from flake8_forksafe.model import SAFE, Example, Report, Rule


class LazyHandleOpenedByParent(Rule):
    """A handle opened lazily (``if self.env is None: self.env = lmdb.open(...)``) but reachable
    from ``__init__``, ``__len__`` or a property they use: the parent opens it, so forked workers
    inherit it unless each process reopens it (PID check), and spawn workers cannot unpickle the
    dataset unless ``__getstate__`` drops it."""

    code = "FRK103"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "lazy-handle-opened-by-parent"
    fix_applicability = SAFE
    fix_title = "Reopen the lazy handle when the process changes and drop it when pickling"

    VALID = [
        # lazy, and only the workers open it
        """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path, n):
        self.path, self.n, self.env = path, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        with self.env.begin() as txn:
            return txn.get(str(i).encode())
""",
        # the parent opens it, but it is PID-checked and dropped when pickled
        """
import os
import h5py
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.path, self.f, self.pid = path, None, None

    def _file(self):
        if self.f is None or self.pid != os.getpid():
            self.f = h5py.File(self.path, "r")
            self.pid = os.getpid()
        return self.f

    def __len__(self):
        return len(self._file()["x"])

    def __getitem__(self, i):
        return self._file()["x"][i]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["f"] = None
        return state
""",
    ]
    INVALID = [
        Example(
            """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None

    def _txn(self):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)  # FRK103: 23
        return self.env.begin()

    def __len__(self):
        return self._txn().stat()["entries"]

    def __getitem__(self, i):
        return self._txn().get(str(i).encode())
""",
            """
import os

import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None

    def _txn(self):
        if self.env is None or getattr(self, "_env_pid", None) != os.getpid():
            if self.env is not None:
                self.env.close()  # inherited through fork: close it before reopening
            self.env = lmdb.open(self.path, readonly=True, lock=False)  # FRK103: 23
            self._env_pid = os.getpid()
        return self.env.begin()

    def __len__(self):
        return self._txn().stat()["entries"]

    def __getitem__(self, i):
        return self._txn().get(str(i).encode())

    def __getstate__(self):
        state = self.__dict__.copy()
        state["env"] = None
        state.pop("_env_pid", None)
        return state
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        groups: Dict[int, List[Tuple[ClassInfo, FuncInfo, SelfAssign, KeptHandle]]] = {}
        seeds = set()
        for cls in a.dataset_classes:
            members = []
            for fn in a.parent_side(cls):
                for sa in fn.self_assigns:
                    if sa.kind != "assign" or sa.value is None:
                        continue
                    kept = [k for k in kept_handles(a, sa, fn) + helper_handles(a, sa, fn) if not k.container]
                    if kept:
                        members.append((cls, fn, sa, kept[0]))
                        if kept[0].direct and is_lazy(a, cls, fn, sa):
                            seeds.add(id(kept[0].call))
            # a lazily opened handle, with every object derived from it that the parent side keeps
            for m in members:
                group = groups.setdefault(id(m[3].call), [])
                if not any(g[2] is m[2] for g in group):
                    group.append(m)
        groups = {k: v for k, v in groups.items() if k in seeds}
        for group in groups.values():
            cls = group[0][0]
            attrs = [g[2].attr for g in group]
            pid_ok = any(reopens_per_process(a, cls, attr) for attr in attrs)
            drop_ok = all(getstate_leaves_out(a, cls, attr) for attr in attrs)
            if pid_ok and drop_ok:
                continue
            direct = [g for g in group if g[3].direct]
            main = direct[0] if direct else group[0]
            _, fn, sa, k = main
            if direct:
                derived = [g[2] for g in group if g is not main]
                plan = plan_pid(a, cls, fn, sa, k.factory.close, not pid_ok, not drop_ok, derived)
            else:
                plan = "only an object derived from the handle is kept"
            yield self.report(
                k.call,
                self.message(cls.name, sa.attr, k.factory.name, pid_ok, drop_ok, plan),
                fixable=isinstance(plan, PidPlan),
                data=plan,
            )

    @staticmethod
    def message(cls_name: str, attr: str, what: str, pid_ok: bool, drop_ok: bool, plan) -> str:
        if not pid_ok and not drop_ok:
            why = (
                "forked workers inherit the parent's handle (no os.getpid() check) and spawn workers "
                "cannot pickle it (no __getstate__ drops it); reopen it per process and drop it when pickling"
            )
        elif not pid_ok:
            why = "forked workers inherit the parent's handle (no os.getpid() check); reopen it when the PID changes"
        else:
            why = "spawn workers cannot pickle it (no __getstate__ drops it); drop it in __getstate__"
        tail = "" if isinstance(plan, PidPlan) else f" (no automatic fix: {plan})"
        return (
            f"lazy {what}() in self.{attr} is opened on the parent side of {cls_name} "
            f"(__init__, __len__ or a property they use): {why}{tail}"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return apply_pid(a, [r.data for r in reports if isinstance(r.data, PidPlan)])
