"""FRK101: handle opened on the parent side of a dataset and kept on the instance."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    getstate_drops,
    has_pid_check,
    kept_handles,
    released_in,
)
from flake8_forksafe.engine import SAFE, Example, Report, Rule


class HandleOpenedInInit(Rule):
    """A file, LMDB env, HDF5 file, database connection or video reader opened in ``__init__``
    (or a method, helper or base ``__init__`` it calls) and kept on the dataset is shared by every
    forked worker and cannot be pickled for spawn workers."""

    code = "FRK101"
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
"""
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for cls in a.dataset_classes:
            drops = getstate_drops(a, cls)
            if drops is not None and has_pid_check(a, cls):
                continue  # already drops the handle when pickled and reopens per process
            parent = a.parent_side(cls)
            for fn in parent:
                for sa in fn.self_assigns:
                    if sa.attr in fn.lazy_attrs:
                        continue  # lazy open: FRK103's business
                    for kept in kept_handles(a, sa, fn):
                        if not kept.container and released_in(parent, sa.attr):
                            continue
                        yield self.report(
                            kept.call,
                            self.message(cls.name, fn, sa.attr, kept),
                            fixable=kept.direct and not kept.container,
                            data=(cls, fn, sa, kept),
                        )

    @staticmethod
    def message(cls_name: str, fn, attr: str, kept) -> str:
        what = kept.factory.name
        where = "a container on " if kept.container else ""
        in_ = "__init__" if fn.name == "__init__" else f"{fn.name}() on the parent side"
        return (
            f"{what}() opened in {cls_name}.{in_} and kept in {where}self.{attr}: forked DataLoader "
            f"workers share it and spawn cannot pickle it; open it lazily per worker process"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        from flake8_forksafe.fixes.lazy_handle import apply_lazy_handles

        return apply_lazy_handles(a, [(r.data[0], r.data[2].attr, r.data[3].call) for r in reports])
