"""FRK302: CUDA used in code that runs inside DataLoader workers."""

from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    CallSite,
    FuncInfo,
    callable_target,
    calls_within,
    no_worker_processes,
)
from flake8_forksafe.families.cuda.facts import CudaUse, cuda_uses, where
from flake8_forksafe.model import Report, Rule

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory,
#            drop_last, timeout, worker_init_fn, ...)
WORKER_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))


class CudaInWorker(Rule):
    """``__getitem__`` / ``__iter__`` (and what they call), a ``collate_fn`` or a ``worker_init_fn``
    that moves data to the GPU, initialises CUDA or makes CUDA the default device runs in every
    DataLoader worker process: forked workers of a parent that already uses CUDA fail with
    "Cannot re-initialize CUDA in forked subprocess", and spawn workers each create their own
    CUDA context (hundreds of MiB of GPU memory each) and send tensors back through CUDA IPC."""

    code = "FRK302"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "cuda-in-worker"
    fix_applicability = None
    fix_title = ""

    VALID = [
        # CPU in the worker, GPU in the training loop
        """
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __getitem__(self, i):
        return torch.full((3,), float(i))

    def __len__(self):
        return 8

loader = DataLoader(DS(), batch_size=4, num_workers=2, pin_memory=True)
for batch in loader:
    batch = batch.cuda(non_blocking=True)
""",
        # num_workers=0: __getitem__ and collate_fn run in the main process
        """
import torch
from torch.utils.data import DataLoader, Dataset

def collate(batch):
    return torch.stack(batch).cuda()

class DS(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3, device="cuda")

    def __len__(self):
        return 8

loader = DataLoader(DS(), batch_size=4, num_workers=0, collate_fn=collate)
""",
    ]
    INVALID = [
        """
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __init__(self, device="cuda"):
        self.device = device

    def __getitem__(self, i):
        return torch.full((3,), float(i)).to(self.device)  # FRK302: 15

    def __len__(self):
        return 8
""",
        """
import functools
import torch
from torch.utils.data import DataLoader, default_collate

def collate(batch, half):
    batch = default_collate(batch)
    return batch.half().cuda(non_blocking=True) if half else batch.cuda()  # FRK302: 11 # FRK302: 61

def make_loader(ds):
    return DataLoader(ds, batch_size=8, num_workers=4, collate_fn=functools.partial(collate, half=True))
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for cls in a.dataset_classes:
            if no_worker_processes(a, cls):
                continue
            parent = {id(fn) for fn in a.parent_side(cls)}  # FRK301 reports what runs in __init__ too
            root = next((n for n in ("__getitem__", "__getitems__", "__iter__") if a.resolve_method(cls, n)), "__getitem__")
            collate = {}  # functions only a collate method reaches: named after it
            for name in a.collate_methods(cls):
                for f in a.closure(cls, [a.resolve_method(cls, name)]):
                    collate.setdefault(id(f), name)
            item = {id(f) for n in ("__getitem__", "__getitems__", "__iter__", "__next__") for f in a.closure(cls, [a.resolve_method(cls, n)])}
            for fn in a.worker_side(cls):
                if id(fn) in parent:
                    continue
                r = collate[id(fn)] if id(fn) in collate and id(fn) not in item else root
                for use in cuda_uses(a, fn, worker=True):
                    yield self.report(use.call, self.message(use, where(a, cls, fn, r)), fixable=False, data=use)
        for kind, fn, sites, partial in self.worker_callables(a):
            for use in cuda_uses(a, None, worker=True, sites=sites):
                name = f"{fn.name}()" if isinstance(fn, FuncInfo) else "lambda"
                yield self.report(use.call, self.message(use, f"the {kind} {name}"), fixable=False, data=use)

    @staticmethod
    def worker_callables(a: Analysis) -> Iterator[Tuple[str, Union[FuncInfo, cst.Lambda], List[CallSite], Optional[cst.Call]]]:
        """collate_fn / worker_init_fn of loaders that start workers, with the call sites they run
        (same-module functions they call included)."""
        seen: Set[int] = set()
        for lc in a.loader_calls:
            if lc.workers == "zero":
                continue
            for kw, index in WORKER_CALLABLES:
                target, partial = callable_target(a, lc.arg(kw, index), lc.site.func)
                if target is None or id(target) in seen:
                    continue
                seen.add(id(target))
                if isinstance(target, cst.Lambda):
                    sites = calls_within(a, target.body)
                else:
                    sites = [s for f in a.closure(a.owner_class(target), [target]) for s in f.calls]
                yield kw, target, sites, partial

    @staticmethod
    def message(use: CudaUse, where_: str) -> str:
        if use.kind == "default_device":
            what = f"{use.describe()} in {where_} makes tensors created in the DataLoader workers CUDA tensors"
        elif use.kind in ("torch_cuda", "helper"):
            what = f"{use.describe()} in {where_} initialises CUDA inside the DataLoader workers"
        else:
            what = f"{use.describe()} in {where_} moves data to the GPU inside the DataLoader workers"
        return (
            f"{what}: forked workers fail with 'Cannot re-initialize CUDA in forked subprocess' once the "
            f"parent uses CUDA, spawn workers each create a CUDA context; return CPU tensors, pass "
            f"pin_memory=True to the DataLoader and move each batch to the GPU in the training loop"
        )
