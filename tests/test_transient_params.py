"""A callable given to a dataset constructor that its ``__init__`` only calls (``label_fn(path)`` while
building the targets) is not kept, so it is no FRK201/FRK202 hazard: the ``__init__`` may be in the
same file, a same-file base, or a class of another module of the project (the index's
``Method.transient``). Anything that may keep it (stored, passed on, captured by a nested scope or a
generator expression, ``locals()``) keeps the finding. The catalyst shape (PathsDataset) came from
the labelled real-world corpus."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from flake8_forksafe.analysis import Analysis
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.families.pickling.facts import transient_params
from flake8_forksafe.index import transient_params_of_ast as index_transient_params
from flake8_forksafe.knowledge import default_knowledge
from tests.test_index import forksafe, write

CFG = Config(select=("FRK201", "FRK202"))

HEAD = """\
from torch.utils.data import DataLoader, Dataset


class Paths(Dataset):
    def __init__(self, files, label_fn, transform=None):
        {body}
        self.transform = transform

    def __getitem__(self, i):
        return self.items[i]


"""


def findings(body: str, tail: str):
    src = HEAD.replace("{body}", body) + textwrap.dedent(tail)
    return [(f.line, f.code) for f in check_source(src, "m.py", CFG)]


CALLS = "ds = Paths(['a'], label_fn=lambda f: f[0])\nDataLoader(ds, num_workers=2)\n"
POSITIONAL = "ds = Paths(['a'], lambda f: f[0])\nDataLoader(ds, num_workers=2)\n"
LOCAL_DEF = "def make():\n    def label(f):\n        return f[0]\n    return DataLoader(Paths(['a'], label), num_workers=2)\n"


@pytest.mark.parametrize("tail", [CALLS, POSITIONAL, LOCAL_DEF])
@pytest.mark.parametrize(
    "body",
    [
        "self.items = [(f, label_fn(f)) for f in files]",
        "self.items = {f: label_fn(f) for f in files}",
        "self.items = []\n        for f in files:\n            self.items.append((f, label_fn(f)))",
        "self.items = list(files)  # label_fn is accepted and never read",
    ],
)
def test_only_called_is_not_kept(body, tail):
    assert findings(body, tail) == []


@pytest.mark.parametrize(
    "body",
    [
        "self.items = list(files)\n        self.label_fn = label_fn",  # stored
        "self.items = list(files)\n        self.fns = [label_fn]",  # kept in a container
        "self.items = (label_fn(f) for f in files)",  # a generator expression keeps it
        "self.items = list(files)\n        self.get = lambda i: label_fn(files[i])",  # captured by a lambda
        "self.items = list(files)\n        self.items = keep(label_fn)",  # passed on
        "self.items = list(files)\n        self.__dict__.update(locals())",  # locals() keeps them all
        "label_fn = label_fn or str\n        self.items = [label_fn(f) for f in files]",  # rebound
    ],
)
def test_kept_or_maybe_kept_stays_a_finding(body):
    got = findings(body, CALLS)
    assert got and all(code == "FRK201" for _, code in got), got


def test_base_constructor_in_the_same_file():
    src = HEAD.replace("{body}", "self.items = [(f, label_fn(f)) for f in files]") + textwrap.dedent("""\
        class Folder(Paths):
            def __init__(self, root):
                super().__init__([root], label_fn=lambda f: f[0], transform=lambda x: x)
        """)
    # the transform is kept by Paths (self.transform = transform): that lambda is still flagged
    got = [(f.line, f.col, f.code) for f in check_source(src, "m.py", CFG)]
    assert got == [(15, 68, "FRK201")]


def test_the_two_readings_agree():
    """The libcst reading (same-file ``__init__``) and the index's CPython reading give the same
    parameters on every fixture and the corpus of this repository."""
    root = Path(__file__).resolve().parent.parent
    files = sorted(root.glob("fixtures/FRK*/*.py")) + sorted((root / "tests" / "corpus").glob("*.py"))
    k = default_knowledge()
    compared = 0
    for p in files:
        a = Analysis(cst.parse_module(p.read_text(encoding="utf-8")), k, str(p))
        for fn in a.functions:
            if fn.name != "__init__" or fn.cls is None or fn.self_name is None:
                continue
            code = textwrap.dedent(cst.Module(body=[]).code_for_node(fn.node))
            node = ast.parse(code).body[0]
            params = [q for q in fn.params if q != fn.self_name]
            assert set(index_transient_params(node, params)) == set(transient_params(fn)), (p, fn.cls.name)
            compared += 1
    assert compared > 50


CROSS_BASE = """\
    from torch.utils.data import Dataset


    class ListDataset(Dataset):
        def __init__(self, list_data, open_fn, dict_transform=None):
            self.data = list_data
            self.open_fn = open_fn
            self.dict_transform = dict_transform

        def __getitem__(self, i):
            return self.open_fn(self.data[i])


    class PathsDataset(ListDataset):
        def __init__(self, filenames, open_fn, label_fn, **list_dataset_params):
            list_data = [{"features": f, "targets": label_fn(f)} for f in filenames]
            super().__init__(list_data=list_data, open_fn=open_fn, **list_dataset_params)
    """

CROSS_SUB = """\
    from pathlib import Path

    from torch.utils.data import DataLoader

    from data.base import PathsDataset


    class ImageFolderDataset(PathsDataset):
        def __init__(self, root, classes):
            super().__init__(
                filenames=list(Path(root).iterdir()),
                open_fn=str,
                label_fn=lambda fn: classes[Path(fn).parent.name],
                dict_transform=lambda d: d,
            )


    def make(root, classes):
        ds = PathsDataset(list(root), open_fn=lambda p: p, label_fn=lambda p: p[0])
        return DataLoader(ds, num_workers=2), DataLoader(ImageFolderDataset(root, classes), num_workers=2)
    """


def test_a_constructor_in_another_module_of_the_project(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "data/__init__.py": "", "data/base.py": CROSS_BASE, "data/folders.py": CROSS_SUB})
    r = forksafe(tmp_path, "data/folders.py", "--no-cache", "--select", "FRK201")
    assert r.returncode == 1, r.stderr
    got = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]
    sub = Path("data/folders.py")
    # label_fn is only called by PathsDataset.__init__; open_fn and dict_transform are kept (ListDataset)
    assert got == [[f"{sub}:14:28:", "FRK201"], [f"{sub}:19:43:", "FRK201"]], r.stdout
