"""FRK405: a class, function or lambda defined in a notebook that DataLoader workers must unpickle."""

from __future__ import annotations

from typing import Iterator

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.families.pickling.notebook import notebook_definitions
from flake8_forksafe.model import Report, Rule


class NotebookDefinitionReachesWorkers(Rule):
    """In a notebook (``.ipynb``, or a jupytext ``.py`` notebook): a dataset class, a ``collate_fn``,
    a ``worker_init_fn``, or a function, class or lambda kept on a dataset, defined in the notebook
    and reaching a DataLoader whose ``num_workers`` is not 0. The notebook's code lives in a
    ``__main__`` module without a file; spawn and forkserver workers (macOS, Windows, Linux from
    Python 3.14, or an explicit context) unpickle the dataset and these callables by name in their
    own ``__main__`` and cannot find them: ``AttributeError: Can't get attribute 'MyDataset' on
    <module '__main__' (built-in)>`` (from Python 3.12: ``(<class '_frozen_importlib.BuiltinImporter'>)``).
    No automatic fix: move the definitions into a module next to the notebook and import them."""

    code = "FRK405"
    # what the pre-filter must find for this rule (prefilter.ANCHORS)
    ANCHORS = ("dataset class", "loader call", "lambda or local def near a dataset constructor")
    name = "notebook-definition-reaches-workers"
    fix_applicability = None

    EXAMPLES_AS_NOTEBOOK = True  # tests/test_rule_examples.py checks the examples as notebook code
    VALID = [
        # the dataset and collate function come from a module file next to the notebook
        """
from torch.utils.data import DataLoader
from mydata import ImageDataset, pad_collate

loader = DataLoader(ImageDataset("data/"), batch_size=8, num_workers=4, collate_fn=pad_collate)
for batch in loader:
    pass
""",
        # num_workers=0: everything stays in the notebook's process
        """
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return i * i

loader = DataLoader(Squares(), batch_size=4, num_workers=0, collate_fn=lambda b: b)
""",
        # the loader uses the fork context explicitly: workers inherit the notebook's namespace
        """
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return i * i

loader = DataLoader(Squares(), num_workers=2, multiprocessing_context="fork")
""",
        # a sampler runs in the parent process: never pickled for workers
        """
from torch.utils.data import DataLoader, Sampler
from mydata import ImageDataset

class EvenSampler(Sampler):
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return iter(range(0, self.n, 2))
    def __len__(self):
        return self.n // 2

loader = DataLoader(ImageDataset("data/"), sampler=EvenSampler(100), num_workers=2)
""",
    ]
    INVALID = [
        """
import torch
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):  # FRK405: 0
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return torch.tensor(i * i)

loader = DataLoader(Squares(), batch_size=4, num_workers=2)
for batch in loader:
    print(batch)
""",
        """
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

def to_array(img):  # FRK405: 0
    return img

def pad_collate(batch):  # FRK405: 0
    return batch

ds = ImageFolder("data/", transform=to_array)
loader = DataLoader(ds, batch_size=8, num_workers=4, collate_fn=pad_collate)
""",
        """
import random
from torch.utils.data import DataLoader
from mydata import ImageDataset

loader = DataLoader(ImageDataset("data/"), num_workers=4, worker_init_fn=lambda i: random.seed(i))  # FRK405: 73
""",
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        if not a.interactive_main:
            return
        for node, message in notebook_definitions(a).values():
            yield self.report(node, message, fixable=False)
