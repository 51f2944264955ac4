"""FRK301: CUDA used on the parent side of a dataset (``__init__``, ``__len__`` and what they call)."""

from __future__ import annotations

from typing import Iterator, List

import libcst as cst

from flake8_forksafe.analysis import Analysis, no_worker_processes
from flake8_forksafe.families.cuda.facts import CudaUse, cuda_uses, keep_on_cpu, where
from flake8_forksafe.model import UNSAFE, Example, Report, Rule


class CudaInDatasetInit(Rule):
    """A dataset that moves tensors or a model to the GPU, or initialises CUDA, in ``__init__``
    (or ``__len__``, or a method, helper or same-file base ``__init__`` they call) makes the
    parent process a CUDA process before the DataLoader starts its workers: forked workers cannot
    use CUDA ("Cannot re-initialize CUDA in forked subprocess"), and spawn workers each create a
    CUDA context and receive the tensors through CUDA IPC."""

    code = "FRK301"
    ANCHORS = ("dataset class", "loader call")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "cuda-in-dataset-init"
    fix_applicability = UNSAFE
    fix_title = "Keep the dataset's tensors on the CPU (drop .cuda() / the CUDA .to(), device= -> CPU)"

    VALID = [
        # CPU tensors; the training loop moves batches
        """
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, x):
        self.x = torch.as_tensor(x, dtype=torch.float32)
        self.use_amp = torch.cuda.is_available()

    def __getitem__(self, i):
        return self.x[i]
""",
        # every loader of the dataset has num_workers=0: no worker process ever starts
        """
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __init__(self, x):
        self.x = torch.as_tensor(x).cuda()

    def __getitem__(self, i):
        return self.x[i]

loader = DataLoader(DS([1, 2]), batch_size=2, num_workers=0)
""",
        # a device that is not known to be CUDA (a parameter without a default)
        """
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, x, device):
        self.x = torch.as_tensor(x).to(device)

    def __getitem__(self, i):
        return self.x[i]
""",
    ]
    INVALID = [
        Example(
            """
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, x):
        self.x = torch.as_tensor(x).cuda()  # FRK301: 17

    def __getitem__(self, i):
        return self.x[i]
""",
            expected_fix="""
import torch
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, x):
        self.x = torch.as_tensor(x)  # FRK301: 17

    def __getitem__(self, i):
        return self.x[i]
""",
        ),
        Example(
            """
import torch
from torch.utils.data import Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class DS(Dataset):
    def __init__(self, n):
        self.mask = torch.ones(n, device=DEVICE)  # FRK301: 20
        self.emb = torch.load("emb.pt", map_location=DEVICE)  # FRK301: 19
        torch.cuda.set_device(0)  # FRK301: 8

    def __getitem__(self, i):
        return self.emb[i] * self.mask[i]
""",
            expected_fix="""
import torch
from torch.utils.data import Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class DS(Dataset):
    def __init__(self, n):
        self.mask = torch.ones(n)  # FRK301: 20
        self.emb = torch.load("emb.pt", map_location="cpu")  # FRK301: 19
        torch.cuda.set_device(0)  # FRK301: 8

    def __getitem__(self, i):
        return self.emb[i] * self.mask[i]
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        for cls in a.dataset_classes:
            if no_worker_processes(a, cls):
                continue
            root = "__init__" if a.resolve_method(cls, "__init__") is not None else "__len__"
            for fn in a.parent_side(cls):
                in_class = a.owner_class(fn) is not None
                for use in cuda_uses(a, fn):
                    yield self.report(
                        use.call,
                        self.message(use, where(a, cls, fn, root)),
                        fixable=use.fixable_kind and in_class,
                        data=use,
                    )
        for cls in a.dataset_classes:  # a base class in another module of the project
            if no_worker_processes(a, cls):
                continue
            for fact in a.project_init_kept(cls, ("cuda",)):
                yield self.report(
                    cls.node,
                    f"a CUDA value kept in self.{fact.attr} is made on the parent side (in base class "
                    f"{fact.where.label}, {fact.path}:{fact.line}): forked DataLoader workers cannot "
                    "re-initialise CUDA; keep the dataset's tensors on the CPU, pass pin_memory=True to the "
                    "DataLoader and move each batch to the GPU in the training loop (no automatic fix: the "
                    "code is in another module)",
                    fixable=False,
                )

    @staticmethod
    def message(use: CudaUse, where_: str) -> str:
        if use.kind in ("torch_cuda", "helper"):
            what = f"{use.describe()} in {where_} initialises CUDA in the parent process"
            todo = "keep CUDA out of the dataset and set the device in the training script"
        else:
            what = f"{use.describe()} in {where_} puts data on the GPU in the parent process"
            todo = (
                "keep the dataset's tensors on the CPU, pass pin_memory=True to the DataLoader and move "
                "each batch to the GPU in the training loop"
            )
        return (
            f"{what}: forked DataLoader workers fail with 'Cannot re-initialize CUDA in forked subprocess' "
            f"and spawn workers each create a CUDA context; {todo}"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        return keep_on_cpu(a, [r.data for r in reports])
