"""Handles opened on the parent side outside a dataset and given to a dataset constructor that keeps
them (``f = h5py.File(p); ds = Sen4Map(f, keys)`` where ``Sen4Map.__init__`` does ``self.h5data =
h5file``): the dataset holds the parent's handle as surely as if its ``__init__`` had opened it.
What the constructor keeps comes from ``families.constructors`` (the same reading FRK201 uses for a
lambda given to a constructor: same-file classes, classes and dataset factories of other modules of
the project through the index)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set

import libcst as cst

from flake8_forksafe.analysis import Analysis, CallSite, FuncInfo, chain_root, factory_of, handle_source
from flake8_forksafe.families.constructors import constructor_stores, dataset_constructor


@dataclass
class PassedHandle:
    call: cst.Call  # the factory call (where the finding points)
    factory: "object"  # knowledge.Factory
    site: CallSite  # the dataset constructor call
    dataset: str  # the class (or dataset factory) it calls
    param: str  # the parameter of its ``__init__`` that receives the handle and keeps it
    fn: FuncInfo  # where both calls are
    where: str  # `` (kept by X.__init__, data/x.py:12)`` for a constructor in another module, else ""


def handles_passed_to_datasets(a: Analysis) -> List[PassedHandle]:
    """Handle factory calls (directly or through a local name) passed, in a function that is not a
    dataset's worker-side code, to a dataset constructor whose ``__init__`` keeps that parameter on
    ``self`` as it is. Not: a handle closed in the function (``f.close()``) or opened by a ``with``;
    a module where every loader has ``num_workers=0``."""
    if a.all_loaders_zero:
        return []
    # a handle given to a constructor comes from a factory call in the calling function or one
    # around it: only those functions' calls are looked at (most modules open nothing)
    opening: Set[int] = {id(site.func) for site in a.calls if site.func is not None and factory_of(a, site.node)}
    if not opening:
        return []
    worker: Set[int] = set()
    for cls in a.dataset_classes:
        parent = {id(f) for f in a.parent_side(cls)}
        worker |= {id(f) for f in a.worker_side(cls) if id(f) not in parent}
    out: List[PassedHandle] = []
    for site in a.calls:
        fn = site.func
        if fn is None or id(fn) in worker or not site.node.args:
            continue
        f: Optional[FuncInfo] = fn
        while f is not None and id(f) not in opening:
            f = f.parent
        if f is None:
            continue
        if not any(handle_source(a, arg.value, fn) for arg in site.node.args if not arg.star):
            continue  # cheap first: most constructor calls get no handle
        name = dataset_constructor(a, site)
        if name is None:
            continue
        params, kept, where = constructor_stores(a, site, None)
        pos = -1
        for arg in site.node.args:
            if arg.star:
                if arg.keyword is None and arg.star == "*":
                    pos = len(params)  # positions after ``*args`` are unknown
                continue
            if arg.keyword is None:
                pos += 1
            param = arg.keyword.value if arg.keyword is not None else (params[pos] if pos < len(params) else None)
            if param is None or param not in kept:
                continue
            hit = handle_source(a, arg.value, fn)
            if hit is None:
                continue
            root = chain_root(arg.value)
            if isinstance(root, cst.Name) and root.value in fn.closed:
                continue  # f.close() in the function: a closed handle is kept, not an open one
            out.append(PassedHandle(hit[0], hit[1], site, name, param, fn, where))
    return out
