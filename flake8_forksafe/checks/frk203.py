"""FRK203: an unpicklable or fork-unsafe object (lock, queue, thread, generator, module) kept on a dataset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    ClassInfo,
    FuncInfo,
    SelfAssign,
    bound_in_scope,
    container_elements,
    no_worker_processes,
    param_default,
    self_attr,
)
from flake8_forksafe.families.handles.facts import (
    getstate_leaves_out,
    is_lazy,
    reads_attr,
    recreated_on_unpickle,
    reopens_per_process,
)
from flake8_forksafe.families.handles.iterators import consumed_at_once, generator_call
from flake8_forksafe.families.handles.lazy import LazyPlan, apply_lazy, plan_lazy
from flake8_forksafe.families.handles.materialise import (
    MaterialisePlan,
    apply_materialise,
    plan_lazy_generator,
    plan_materialise,
)
from flake8_forksafe.model import SAFE, UNSAFE, Example, Report, Rule

ADVICE = {
    "lazy": "create it lazily in each worker process",
    "worker": "start threads and pools in the process that uses them, not in the dataset's __init__",
    "generator": "keep the iterable (a list, a path) and create the generator in __iter__ or __getitem__",
    "module": "import the module where it is used instead of storing it on self",
}


@dataclass(eq=False)
class Hit:
    node: cst.CSTNode  # the constructor call, generator expression or module name
    label: str  # "threading.Lock()", "a generator", "the module h5py"
    kind: str  # "lazy", "thread", "generator", "module"
    direct: bool  # the kept value is the constructor call itself, assigned with =
    qname: str = ""  # the constructor's qualified name (a ``rules/unpicklable.toml`` object)


def _classify(a: Analysis, value: Optional[cst.BaseExpression], fn: FuncInfo, depth: int = 0) -> List[Hit]:
    if value is None or depth > 3:
        return []
    if isinstance(value, cst.Call):
        q = a.qualify(value.func)
        if q is not None and q in a.knowledge.unpicklable:
            return [Hit(value, f"{q}()", "lazy" if a.knowledge.unpicklable[q] else "worker", True, q)]
        gen = generator_call(a, value, fn)  # the library model's generator calls (one routine)
        if gen is not None:
            return [Hit(value, gen, "generator", False)]
        target = None
        if isinstance(value.func, cst.Name) and value.func.value not in a.aliases:
            target = a.function_named(value.func.value, fn)
        elif isinstance(value.func, cst.Attribute) and fn.self_name and self_attr(value.func, fn.self_name):
            cls = a.owner_class(fn)
            if cls is not None:
                target = a.resolve_method(cls, value.func.attr.value)
        if target is not None and target.is_generator:
            return [Hit(value, f"the generator {target.name}()", "generator", False)]
        return []
    if isinstance(value, cst.GeneratorExp):
        return [Hit(value, "a generator expression", "generator", False)]
    if isinstance(value, (cst.IfExp, cst.BooleanOperation)):
        # ``queue.Queue(n) if prefetch else None``: either branch may be the one that runs
        parts = (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value.left, value.right)
        return [Hit(h.node, h.label, h.kind, False, h.qname) for part in parts for h in _classify(a, part, fn, depth + 1)]
    if isinstance(value, cst.Name):
        name = value.value
        if name in fn.params or name in fn.local_assigns:
            out = []
            for v in fn.local_assigns.get(name, []):
                out += [Hit(h.node, h.label, h.kind, False, h.qname) for h in _classify(a, v, fn, depth + 1)]
            default = param_default(fn, name) if name not in fn.local_assigns else None
            if isinstance(default, cst.Name) and a.is_module_object(default):
                # ``def __init__(self, pickler=pickle): self.pickler = pickler``: kept unless given
                out.append(Hit(value, f"the module {a.aliases.get(default.value, default.value)} (the default of {name})", "module", False))
            return out
        if a.is_module_object(value) and not bound_in_scope(fn, name):
            return [Hit(value, f"the module {a.aliases.get(name, name)}", "module", False)]
        return []
    out = []
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):  # `[*p.glob("*.pt")]` unpacks it at once
        elements: Optional[List[cst.BaseExpression]] = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
    else:
        elements = container_elements(value)
    for el in elements or []:  # a generator expression was answered above
        out += [Hit(h.node, h.label, h.kind, False, h.qname) for h in _classify(a, el, fn, depth + 1)]
    return out


def _with_referenced_methods(a: Analysis, cls: ClassInfo, fns: List[FuncInfo]) -> List[FuncInfo]:
    """``fns`` plus the methods they pass around as ``self.method`` (a thread's ``target=``) and
    what those call: code the parent side starts, not only code it calls."""
    refs = []
    for fn in fns:
        for name in fn.self_reads:
            m = a.resolve_method(cls, name)
            if m is not None:
                refs.append(m)
    return a.closure(cls, list(fns) + refs)


class UnpicklableObjectOnDataset(Rule):
    """A ``threading`` lock, event, semaphore, condition or thread, a ``queue.Queue``, a generator or
    a module object created on the parent side and kept on a dataset: spawn workers cannot unpickle
    the dataset, and fork copies the object into every worker in whatever state it is in (a lock a
    parent thread holds at fork is held forever)."""

    code = "FRK203"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "unpicklable-object-on-dataset"
    fix_applicability = SAFE
    fix_title = (
        "Create the lock or queue lazily in each worker process and drop it when pickling; "
        "materialise an iterated generator in __init__ (unsafe), or build one that reads a handle "
        "lazily in each process"
    )

    VALID = [
        # multiprocessing primitives are made to cross processes
        """
import multiprocessing as mp
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, n):
        self.n = n
        self.lock = mp.Lock()
        self.counter = mp.Value("i", 0)

    def __getitem__(self, i):
        with self.lock:
            self.counter.value += 1
        return i
""",
        # created lazily in the worker
        """
import threading
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self):
        self.lock = None

    def __getitem__(self, i):
        if self.lock is None:
            self.lock = threading.Lock()
        with self.lock:
            return i
""",
    ]
    INVALID = [
        Example(
            """
import threading
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, items):
        self.items = items
        self.lock = threading.Lock()  # FRK203: 20

    def __getitem__(self, i):
        with self.lock:
            return self.items[i]
""",
            """
import os
import threading
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, items):
        self.items = items
        self._lock = self._lock_pid = None  # FRK203: 20

    def __getitem__(self, i):
        with self.lock:
            return self.items[i]

    # forksafe: one threading.Lock() object per process (PID-checked), not pickled
    @property
    def lock(self):
        if getattr(self, "_lock_pid", None) != os.getpid():
            self._lock = threading.Lock()
            self._lock_pid = os.getpid()
        return self._lock

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state.pop("_lock_pid", None)
        return state
""",
        ),
        # a generator function's generator (it reads a file): built on first use in each process
        Example(
            """
from torch.utils.data import IterableDataset


def read_rows(path):
    with open(path) as fh:
        for line in fh:
            yield line.split(",")


class Rows(IterableDataset):
    def __init__(self, path):
        self.rows = read_rows(path)  # FRK203: 20

    def __iter__(self):
        yield from self.rows
""",
            """
import os

from torch.utils.data import IterableDataset


def read_rows(path):
    with open(path) as fh:
        for line in fh:
            yield line.split(",")


class Rows(IterableDataset):
    def __init__(self, path):
        self._rows_args = (path,)  # FRK203: 20

    def __iter__(self):
        yield from self.rows

    # forksafe: one read_rows() generator per process (PID-checked), not pickled
    @property
    def rows(self):
        if getattr(self, "_rows_pid", None) != os.getpid():
            self._rows = read_rows(*self._rows_args)
            self._rows_pid = os.getpid()
        return self._rows

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_rows", None)
        state.pop("_rows_pid", None)
        return state
""",
        ),
        """
import h5py
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.path = path
        self.h5py = h5py  # FRK203: 20

    def __getitem__(self, i):
        with self.h5py.File(self.path, "r") as f:
            return f["x"][i]
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for cls in a.dataset_classes:  # a base class in another module of the project
            for fact in a.project_init_kept(cls, ("generator",)):
                yield self.report(
                    cls.node,
                    f"a generator kept in self.{fact.attr} is created on the parent side (in base class "
                    f"{fact.where.label}, {fact.path}:{fact.line}): spawn workers cannot pickle a generator "
                    f"and forked workers each replay a copy of it; {ADVICE['generator']}",
                    fixable=False,
                )
        done = set()
        for cls in a.dataset_classes:
            if no_worker_processes(a, cls):
                continue  # every loader of the module that can get it has num_workers=0: never pickled
            parent = a.parent_side(cls)
            for fn in parent:
                for sa in fn.self_assigns:
                    if sa.kind == "del" or sa.value is None:
                        continue
                    if sa.kind == "container" and consumed_at_once(sa.stmt, sa.value):
                        continue  # self.files.extend(p.glob("*")): the items are kept, not the generator
                    hits = _classify(a, sa.value, fn)
                    if not hits or is_lazy(a, cls, fn, sa):
                        continue
                    for hit in hits:
                        if id(hit.node) in done:
                            continue
                        if getstate_leaves_out(a, cls, sa.attr) and (
                            hit.kind == "module"
                            or reopens_per_process(a, cls, sa.attr)
                            or (  # only pickling is the hazard, and an unpickled copy makes its own
                                hit.qname in a.knowledge.unpicklable_fork_safe
                                and recreated_on_unpickle(a, cls, sa.attr)
                            )
                        ):
                            continue
                        done.add(id(hit.node))
                        plan = self._plan(a, cls, fn, sa, hit, parent)
                        rep = self.report(
                            hit.node,
                            self.message(cls, fn, sa, hit, plan),
                            fixable=isinstance(plan, (LazyPlan, MaterialisePlan)),
                            data=plan,
                        )
                        if isinstance(plan, MaterialisePlan) or (isinstance(plan, LazyPlan) and plan.unsafe):
                            # materialised: a second pass now sees the items again; a generator expression
                            # built lazily: its source (open(p), os.scandir) opens on first use
                            rep.applicability = UNSAFE
                        yield rep

    @staticmethod
    def _plan(a: Analysis, cls: ClassInfo, fn: FuncInfo, sa: SelfAssign, hit: Hit, parent: List[FuncInfo]):
        if hit.kind == "generator":
            plan = plan_materialise(a, cls, fn, sa, hit.node)
            if isinstance(plan, MaterialisePlan):
                return plan
            reads = reads_attr(_with_referenced_methods(a, cls, parent), sa.attr)
            lazy = plan_lazy_generator(a, fn, sa, hit.node, reads)
            return plan if lazy is None else lazy
        if hit.kind != "lazy":
            return "threads, pools and modules are not recreated automatically"
        if isinstance(sa.value, (cst.IfExp, cst.BooleanOperation)) and sa.kind == "assign":
            return "it is kept under a condition"
        if not hit.direct or sa.kind != "assign":
            return "it is not assigned directly to an attribute"
        if reads_attr(_with_referenced_methods(a, cls, parent), sa.attr):
            return f"the parent side uses self.{sa.attr}: a fresh object per process would lose its state"
        assert isinstance(hit.node, cst.Call)
        return plan_lazy(a, fn, sa, hit.node, hit.label, None)

    @staticmethod
    def message(cls: ClassInfo, fn: FuncInfo, sa: SelfAssign, hit: Hit, plan) -> str:
        owner = fn.cls.name if fn.cls is not None else cls.name
        where = "__init__" if fn.name == "__init__" else f"{fn.name}() on the parent side"
        conditional = isinstance(sa.value, (cst.IfExp, cst.BooleanOperation))
        in_container = sa.kind == "container" or (sa.value is not hit.node and not isinstance(sa.value, cst.Name) and not conditional)
        kept = f"a container on self.{sa.attr}" if in_container else f"self.{sa.attr}"
        if hit.kind == "module":
            why = "spawn workers cannot pickle a module"
        elif hit.kind == "worker":
            why = "spawn workers cannot pickle it and forked workers get a copy whose threads do not run"
        elif hit.kind == "generator":
            why = "spawn workers cannot pickle a generator and forked workers each replay a copy of it"
        else:
            why = "spawn workers cannot pickle it and fork copies it into every worker in its current state"
        tail = ADVICE[hit.kind]
        if isinstance(plan, MaterialisePlan):
            tail += " (unsafe fix: materialise it in __init__; a second pass then sees the items again)"
        elif isinstance(plan, LazyPlan) and plan.generator:
            tail = "create it in the process that iterates it"
            if plan.unsafe:
                tail += (" (unsafe fix: a PID-checked property builds it on first use in each process and pickling "
                         "leaves it out; its source is then opened on first use, not in __init__)")
            else:
                tail += " (fix: a PID-checked property builds it on first use in each process; pickling leaves it out)"
        elif not isinstance(plan, LazyPlan) and hit.kind in ("lazy", "generator"):
            tail += f" (no automatic fix: {plan})"
        verb = "stored" if hit.kind == "module" else "created"
        return f"{hit.label} {verb} in {owner}.{where} and kept in {kept}: {why}; {tail}"

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        lazy = [r.data for r in reports if isinstance(r.data, LazyPlan)]
        mats = [r.data for r in reports if isinstance(r.data, MaterialisePlan)]
        if not lazy or not mats:
            return apply_lazy(a, lazy) if lazy else apply_materialise(a.module, mats)
        # both: materialise, then plan the lazy attributes again on that module (no parse: the same round)
        b = Analysis(apply_materialise(a.module, mats), a.knowledge, a.path, a.index)
        try:
            wanted = {(p.owner.name, p.attr) for p in lazy}
            again = [r.data for r in self.check(b) if isinstance(r.data, LazyPlan)
                     and (r.data.owner.name, r.data.attr) in wanted]
            return apply_lazy(b, again)
        finally:
            b.release()
