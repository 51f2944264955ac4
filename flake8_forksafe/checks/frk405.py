"""FRK405: a class, function or lambda defined in a notebook that DataLoader workers must unpickle."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, LoaderCall, loaders_of, string_value
from flake8_forksafe.families.pickling.facts import Keeper, dataset_constructor, loader_sites
from flake8_forksafe.model import Report, Rule

WORKER_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))
MAX_DEPTH = 6
Definition = Union[FuncInfo, ClassInfo, cst.Lambda]


class NotebookDefinitionReachesWorkers(Rule):
    """In a notebook (``.ipynb``, or a jupytext ``.py`` notebook): a dataset class, a ``collate_fn``,
    a ``worker_init_fn``, or a function, class or lambda kept on a dataset, defined in the notebook
    and reaching a DataLoader whose ``num_workers`` is not 0. The notebook's code lives in a
    ``__main__`` module without a file; spawn and forkserver workers (macOS, Windows, Linux from
    Python 3.14, or an explicit context) unpickle the dataset and these callables by name in their
    own ``__main__`` and cannot find them: ``AttributeError: Can't get attribute 'MyDataset' on
    <module '__main__' (built-in)>``. No automatic fix: move the definitions into a module next to
    the notebook and import them."""

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
        loaders = [lc for lc in loader_sites(a) if lc.workers != "zero"]
        if not loaders or global_fork(a):
            return
        live = [lc for lc in loaders if not fork_context(a, lc)]
        if not live:
            return
        found: Dict[int, Tuple[cst.CSTNode, str]] = {}

        def add(d: Definition, what: str) -> None:
            node = d if isinstance(d, cst.Lambda) else d.node
            if id(node) not in found:
                found[id(node)] = (node, _message(d, what))

        # 1. dataset classes of the notebook whose instances reach a loader with workers
        bases = {id(b) for c in a.dataset_classes for b in a.mro(c)[1:]}
        for cls in a.dataset_classes:
            if cls.in_function is not None or _sampler(cls):
                continue  # a local class: FRK202
            named = loaders_of(a, cls)
            if named:
                if any(lc in live for lc in named) and any(lc.dataset_class is cls for lc in named):
                    add(cls, "its instances are sent to DataLoader workers")
            elif id(cls) not in bases:
                add(cls, "its instances are sent to DataLoader workers")
        # 2. collate_fn / worker_init_fn of a loader with workers
        keeper = Keeper(a)
        for lc in live:
            for kw, index in WORKER_CALLABLES:
                value = lc.arg(kw, index)
                if value is not None:
                    for d in definitions(a, keeper, value, lc.site.func):
                        add(d, f"passed as {kw} to a DataLoader whose num_workers is not 0")
        # 3. functions, classes and lambdas kept on a dataset: constructor arguments, self.x = ...
        for site in a.calls:
            name = dataset_constructor(a, site)
            if name is None or not _reaches(a, site, live):
                continue
            for arg in site.node.args:
                for d in definitions(a, keeper, arg.value, site.func):
                    add(d, f"kept by the dataset {name}()")
        for cls in a.dataset_classes:
            if _sampler(cls) or cls.in_function is not None or not _class_reaches(a, cls, live):
                continue
            for fn in cls.methods.values():
                for sa in fn.self_assigns:
                    if sa.value is None or sa.kind == "del":
                        continue
                    for d in definitions(a, keeper, sa.value, fn):
                        add(d, f"kept on dataset {cls.name} (self.{sa.attr})")
        for node, message in found.values():
            yield self.report(node, message, fixable=False)


def _message(d: Definition, what: str) -> str:
    if isinstance(d, cst.Lambda):
        shown, ref = "a lambda", "<lambda>"
    elif isinstance(d, ClassInfo):
        shown, ref = f"class {d.name}", d.name
    else:
        shown, ref = f"function {d.name}()", d.name
    return (
        f"{shown} is defined in the notebook and {what}: spawn/forkserver workers (macOS, Windows, "
        f"Linux from Python 3.14) cannot find it (\"Can't get attribute '{ref}' on <module '__main__' "
        f"(built-in)>\"); move it into a module next to the notebook and import it"
    )


def _sampler(cls: ClassInfo) -> bool:
    return any((q or "").rsplit(".", 1)[-1].endswith("Sampler") for q in cls.base_qnames)


def _class_reaches(a: Analysis, cls: ClassInfo, live: List[LoaderCall]) -> bool:
    named = loaders_of(a, cls)
    return any(lc in live for lc in named) if named else bool(live)


def _reaches(a: Analysis, site, live: List[LoaderCall]) -> bool:
    """The dataset ``site`` builds reaches a live loader (when no loader names it: any live loader)."""
    mine = []
    for lc in loader_sites(a):
        ds = lc.arg("dataset", 0)
        if ds is site.node or (
            isinstance(ds, cst.Name) and any(v is site.node for v in a.local_values(ds.value, lc.site.func))
        ):
            mine.append(lc)
    return any(lc in live for lc in mine) if mine else bool(live)


def definitions(
    a: Analysis, keeper: Keeper, expr: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0
) -> List[Definition]:
    """The module-level functions and classes of this notebook, and the lambdas, whose objects
    ``expr`` keeps (through calls that wrap their arguments, containers and module variables)."""
    out: List[Definition] = []
    if expr is None or depth > MAX_DEPTH:
        return out
    go = lambda e, s=scope: definitions(a, keeper, e, s, depth + 1)  # noqa: E731
    if isinstance(expr, cst.Lambda):
        out.append(expr)
    elif isinstance(expr, cst.Name):
        name = expr.value
        if scope is not None and (name in scope.params or name in scope.local_assigns):
            for v in scope.local_assigns.get(name, ()):
                out += go(v)
            return out
        if name in a.aliases:
            return out  # imported: pickled by its module's name
        fn = a.module_functions.get(name)
        if fn is not None:
            out.append(fn)
            return out
        cls = a.module_classes.get(name)
        if cls is not None and cls.in_function is None:
            out.append(cls)
            return out
        for v in a.module_assigns.get(name, ()):
            out += go(v, None)
    elif isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Lambda) or keeper.is_transient(expr):
            return out
        if isinstance(expr.func, cst.Name) and expr.func.value not in a.aliases:
            cls = a.module_classes.get(expr.func.value)
            if cls is not None and cls.in_function is None and cls not in a.dataset_classes:
                out.append(cls)  # an instance of a notebook class (a callable transform, a collator)
        for arg in expr.args:
            out += go(arg.value)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for el in expr.elements:
            out += go(el.value)
    elif isinstance(expr, cst.Dict):
        for el in expr.elements:
            out += go(el.value)
    elif isinstance(expr, cst.IfExp):
        out += go(expr.body) + go(expr.orelse)
    elif isinstance(expr, cst.BooleanOperation):
        out += go(expr.left) + go(expr.right)
    return out


def _fork_value(a: Analysis, expr: Optional[cst.BaseExpression]) -> bool:
    if expr is None:
        return False
    if string_value(expr) == "fork":
        return True
    if isinstance(expr, cst.Call) and a.qualify(expr.func) in a.knowledge.get_context and expr.args:
        return string_value(expr.args[0].value) == "fork"
    if isinstance(expr, cst.Name):
        vals = a.module_assigns.get(expr.value, ())
        return len(vals) == 1 and _fork_value(a, vals[0])
    return False


def fork_context(a: Analysis, lc: LoaderCall) -> bool:
    """The loader's ``multiprocessing_context`` is ``"fork"`` or ``get_context("fork")``."""
    return _fork_value(a, lc.arg("multiprocessing_context"))


def global_fork(a: Analysis) -> bool:
    """``set_start_method("fork")`` in the notebook: every loader forks."""
    for site in a.calls:
        if site.qname in a.knowledge.start_method_setters and site.node.args:
            first = site.node.args[0]
            if first.keyword is None or first.keyword.value == "method":
                if string_value(first.value) == "fork":
                    return True
    return False
