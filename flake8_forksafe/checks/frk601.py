"""FRK601: an RNG object created on the parent side of a dataset and drawn from in the workers."""

from __future__ import annotations

from typing import Dict, Iterator, List, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, no_worker_processes, self_attr
from flake8_forksafe.model import UNSAFE, Example, Report, Rule
from flake8_forksafe.families.rng.facts import (
    KeptRng,
    RngPlan,
    apply_rng,
    group_fixable,
    kept_rngs,
    plan_rng,
    renewed_worker_side,
    transform_classes,
    worker_init_renewal,
)


# Library functions that draw from a generator argument and do not keep it (torch.randperm(n, generator=g)).
DRAWING_MODULES = ("torch.", "numpy.", "random.")


class _PassedOn(cst.CSTVisitor):
    """``self.<attr>`` used other than as the receiver of a method call or attribute (``self.rng.normal``),
    as an argument of a numpy / torch / random function, or as an assignment target: the RNG object
    itself is handed to something (``Jitter(self.rng)``) that may keep it."""

    def __init__(self, a: Analysis, self_name: str) -> None:
        self.a = a
        self.self_name = self_name
        self.receivers: Set[int] = set()
        self.targets: Set[int] = set()
        self.passed: Set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        q = self.a.qualify(node.func) or ""
        if q.startswith(DRAWING_MODULES):
            for arg in node.args:
                self.receivers.add(id(arg.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self.targets.add(id(t.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.targets.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.receivers.add(id(node.value))
        if id(node) in self.targets or id(node) in self.receivers:
            return
        attr = self_attr(node, self.self_name)
        if attr:
            self.passed.add(attr)


def passed_on(a: Analysis, fn: FuncInfo, node: cst.CSTNode) -> Set[str]:
    if not fn.self_name:
        return set()
    v = _PassedOn(a, fn.self_name)
    node.visit(v)
    return v.passed


class RngCreatedInInit(Rule):
    """An RNG object (``np.random.default_rng``, ``np.random.RandomState``, ``random.Random``,
    ``torch.Generator``) created in ``__init__`` (or what it calls), kept on the dataset and drawn
    from in ``__getitem__`` / ``__iter__``: every DataLoader worker gets a copy of the same
    generator state (fork copies the process, spawn pickles the dataset), so all workers produce
    the same "random" augmentations, and every epoch replays them. The global ``np.random``,
    ``random`` and ``torch`` RNGs do not have this problem: the DataLoader reseeds them in each
    worker."""

    code = "FRK601"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "rng-created-in-init"
    fix_applicability = UNSAFE
    fix_title = "Create the RNG lazily in each worker process, seeded from the worker's seed"

    VALID = [
        # the global RNGs are reseeded per worker by the DataLoader
        """
import numpy as np
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return np.random.normal(size=3)
""",
        # a datapipe re-seeds its RNG in set_seed(), which the DataLoader calls in each worker with a
        # new seed every epoch (rules/libraries.toml: the datapipes' worker hooks)
        """
import random
from torch.utils.data import IterDataPipe

class Shuffler(IterDataPipe):
    def __init__(self, source):
        self.source = source
        self._rng = random.Random()

    def set_seed(self, seed):
        self._rng.seed(seed)
        return self

    def __iter__(self):
        items = list(self.source)
        self._rng.shuffle(items)
        yield from items
""",
        # created in the worker from the worker's seed
        """
import numpy as np
import torch
from torch.utils.data import IterableDataset

class Stream(IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng(info.seed if info is not None else 0)
        while True:
            yield rng.normal(size=3)
""",
        # re-created per worker by the worker_init_fn
        """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __getitem__(self, i):
        return self.rng.normal(size=3)

    def __len__(self):
        return 8

def worker_init_fn(worker_id):
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)

loader = DataLoader(DS(), num_workers=2, worker_init_fn=worker_init_fn)
""",
    ]
    INVALID = [
        Example(
            """
import numpy as np
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, n, seed=0):
        self.n = n
        self.rng = np.random.default_rng(seed)  # FRK601: 19

    def __getitem__(self, i):
        return self.rng.normal(size=3)
""",
            expected_fix='''
import os

import numpy as np
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, n, seed=0):
        self.n = n
        self._rng_seed = seed  # FRK601: 19

    def __getitem__(self, i):
        return self.rng.normal(size=3)

    @property
    def rng(self):
        """np.random.default_rng() of this process, seeded per DataLoader worker."""
        if getattr(self, "_rng_pid", None) != os.getpid():
            info = torch.utils.data.get_worker_info()
            seed = self._rng_seed if info is None else info.seed
            self._rng = np.random.default_rng(seed)
            self._rng_pid = os.getpid()
        return self._rng

    @rng.setter
    def rng(self, value):
        self._rng = value
        self._rng_pid = os.getpid()

    def __getstate__(self):
        """Pickle without the per-process RNGs: each worker process builds its own."""
        state = self.__dict__.copy()
        state.pop("_rng", None)
        state.pop("_rng_pid", None)
        return state
''',
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        found: List[Tuple[ClassInfo, FuncInfo, object, KeptRng, str]] = []
        renewal = None
        transforms = {id(c): c for c in transform_classes(a)}
        for cls in [*a.dataset_classes, *transforms.values()]:
            if id(cls) in transforms:  # transform_classes: __call__ resolves
                worker = a.closure(cls, [a.resolve_method(cls, "__call__")])
            elif no_worker_processes(a, cls):
                continue
            else:
                worker = a.worker_side(cls)
            if not worker:
                continue
            parent = a.parent_side(cls)
            # cheap first: most datasets keep no RNG object, and the visitors below are not cheap
            if not any(
                kept_rngs(a, sa, fn) for fn in parent for sa in fn.self_assigns if sa.kind in ("assign", "container")
            ):
                continue
            if renewal is None:
                renewal = worker_init_renewal(a)
            drawn: Set[str] = set()
            for fn in worker:
                drawn |= fn.self_reads
            renewed = renewed_worker_side(a, worker) | renewal.attrs
            hooks = [m for m in (a.resolve_method(cls, name) for name in renewal.methods) if m is not None]
            if hooks:
                renewed |= renewed_worker_side(a, a.closure(cls, hooks))
            handed: Dict[str, bool] = {}  # attr -> the RNG object is passed to something on the parent side
            for fn in parent:
                for sa in fn.self_assigns:
                    if sa.value is not None and sa.attr in drawn:
                        for attr in passed_on(a, fn, sa.value):
                            drawn.add(attr)  # self.aug = Augment(rng=self.rng): drawn through self.aug
                for attr in passed_on(a, fn, fn.node.body):
                    handed[attr] = True
            for fn in parent:
                for sa in fn.self_assigns:
                    if sa.kind not in ("assign", "container") or sa.attr not in drawn or sa.attr in renewed:
                        continue
                    for kept in kept_rngs(a, sa, fn):
                        found.append((cls, fn, sa, kept, "passed" if handed.get(sa.attr) else ""))
        plans: Dict[int, object] = {}
        groups: Dict[Tuple[int, str], List[RngPlan]] = {}
        for cls, fn, sa, kept, passed in found:
            if passed or not kept.direct or id(cls) in transforms:
                continue  # a transform's RNG: no automatic fix (where its workers come from is not seen)
            plan = plan_rng(a, fn, sa, kept)
            plans[id(kept.ctor)] = plan
            if isinstance(plan, RngPlan):
                groups.setdefault((id(plan.owner.node), plan.attr), []).append(plan)
        for cls, fn, sa, kept, passed in found:
            plan = plans.get(id(kept.ctor))
            fixable = isinstance(plan, RngPlan) and group_fixable(groups[(id(plan.owner.node), plan.attr)])
            msg = self.message(cls, fn, sa.attr, kept, transform=id(cls) in transforms, via=a.kept_by.get(id(cls), ""))
            yield self.report(kept.ctor, msg, fixable=fixable, data=plan)
        for cls in a.dataset_classes:  # made by a base class in another module of the project
            if no_worker_processes(a, cls):
                continue
            facts = a.project_init_kept(cls, ("rng",))
            if not facts:
                continue
            worker = a.worker_side(cls)
            drawn: Set[str] = set()
            for fn in worker:
                drawn |= fn.self_reads
            renewed = renewed_worker_side(a, worker) | worker_init_renewal(a).attrs
            for fact in facts:
                if fact.attr not in drawn or fact.attr in renewed:
                    continue
                what = fact.detail.replace("numpy.", "np.", 1) or "an RNG"
                yield self.report(
                    cls.node,
                    f"{what}() kept in self.{fact.attr} is created on the parent side (in base class "
                    f"{fact.where.label}, {fact.path}:{fact.line}) and copied into every DataLoader worker: all "
                    "workers draw the same numbers, every epoch; create it lazily in each worker, seeded from "
                    "torch.utils.data.get_worker_info().seed (no automatic fix: the code is in another module)",
                    fixable=False,
                )

    @staticmethod
    def message(cls: ClassInfo, fn: FuncInfo, attr: str, kept: KeptRng, transform: bool = False, via: str = "") -> str:
        owner = fn.cls.name if fn.cls is not None else cls.name
        if via:  # a helper a dataset keeps (Analysis.kept_by): its objects go to the workers with it
            attr = f"{attr} ({cls.name} is not a dataset, but {via})"
        in_ = f"{owner}.__init__" if fn.name == "__init__" else f"{owner}.{fn.name}() on the parent side"
        where = f"a container on self.{attr}" if kept.container else f"self.{attr}"
        what = kept.qname.replace("numpy.", "np.", 1)
        runs = f" that runs this transform ({cls.name}.__call__ draws from it)" if transform else ""
        made = f"returned by {kept.helper}, called in {in_}," if kept.helper else f"created in {in_}"
        return (
            f"{what}() {made} and kept in {where} is copied into every DataLoader worker{runs} (fork "
            f"copies it, spawn pickles it): all workers draw the same numbers, every epoch; create it "
            f"lazily in each worker, seeded from torch.utils.data.get_worker_info().seed"
            + (" (no automatic fix for a transform)" if transform else "")
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return apply_rng(a, [r.data for r in reports if isinstance(r.data, RngPlan)])
