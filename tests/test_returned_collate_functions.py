"""FRK201/FRK202: a lambda or local function that a function, method or property of the project
returns, when a DataLoader with workers is given what it returns as ``collate_fn`` /
``worker_init_fn`` (``collate_fn=ds.batch_padding_collator``, a property; ``collate_fn=Batch.collate()``;
``collate_fn=make_collate(pad)``), in the same file or in another one: the package's own modules, or
its ``tests`` / ``examples`` / ``scripts`` directories. Reported at the lambda or def, the message
naming the loader. Shapes of rapidnlp-datasets (session 16's holdout, seen: five misses there).
tmp-dir projects checked with the real CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_index import forksafe, positions, write

DATA = """\
    import torch
    from torch.utils.data import Dataset


    def make_collate(pad):
        def collate(batch):
            return torch.stack(batch) + pad

        return collate


    def make_unused(pad):
        return lambda batch: batch


    class Rows(Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return torch.tensor(i)

        @property
        def batch_padding_collator(self):
            def _collate_fn(batch):
                return torch.stack(batch)

            return _collate_fn

        @property
        def fixed_padding_collator(self):
            def _collate_fn(batch):
                return torch.stack(batch)

            return _collate_fn

        @staticmethod
        def collate():
            return lambda b: torch.stack(b)

        def collate_bound(self):
            return lambda b: torch.stack(b)


    class Texts(Rows):
        pass
    """

TESTS = """\
    from torch.utils.data import DataLoader

    from proj.data import Rows, Texts, make_collate, make_unused


    def test_loaders():
        ds = Texts(4)
        a = DataLoader(ds, num_workers=2, collate_fn=ds.batch_padding_collator)
        b = DataLoader(ds, num_workers=2, collate_fn=Rows.collate())
        collate = make_collate(1)
        c = DataLoader(ds, num_workers=2, collate_fn=collate)
        d = DataLoader(ds, collate_fn=ds.fixed_padding_collator)  # no workers
        e = DataLoader(ds, num_workers=2, collate_fn=ds.collate_bound)  # the bound method itself
        f = DataLoader(ds, num_workers=0, collate_fn=make_unused(2))
        return a, b, c, d, e, f
    """



def test_returned_by_the_package_given_to_a_loader_in_its_tests(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "tests/test_loaders.py": TESTS})
    r = forksafe(tmp_path, "proj/data.py", "--no-cache", "--select", "FRK201,FRK202")
    where = str(Path("proj/data.py"))
    # make_collate's collate (called), the property's _collate_fn (read on a subclass instance),
    # Rows.collate's lambda (called); not fixed_padding_collator (no workers), not collate_bound
    # (the method itself is given, not what it returns), not make_unused (num_workers=0)
    assert positions(r) == [[f"{where}:6:5:", "FRK202"], [f"{where}:28:9:", "FRK202"], [f"{where}:42:16:", "FRK201"]]
    loader = str(Path("tests/test_loaders.py"))
    assert f"returned by property Rows.batch_padding_collator, passed as collate_fn to a DataLoader whose num_workers is not 0 ({loader}:8)" in r.stdout
    assert f"returned by make_collate(), passed as collate_fn to a DataLoader whose num_workers is not 0 ({loader}:11)" in r.stdout


def test_the_same_file(tmp_path: Path) -> None:
    """The loaders in the module that defines the property and the functions."""
    same = DATA + "\n\n" + TESTS.split("\n\n\n", 1)[1].replace("def test_loaders", "def loaders")
    write(tmp_path, {"pyproject.toml": "", "data.py": same})
    r = forksafe(tmp_path, "data.py", "--no-cache", "--select", "FRK201,FRK202")
    assert positions(r) == [["data.py:6:5:", "FRK202"], ["data.py:28:9:", "FRK202"], ["data.py:42:16:", "FRK201"]]


def test_the_test_file_itself_reports_nothing(tmp_path: Path) -> None:
    """The loaders' file holds no lambda or def of its own: nothing is reported there."""
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "tests/test_loaders.py": TESTS})
    r = forksafe(tmp_path, "tests/test_loaders.py", "--no-cache", "--select", "FRK201,FRK202")
    assert positions(r) == []


def test_the_tests_directory_is_read_once_while_unchanged(tmp_path: Path, monkeypatch) -> None:
    """The language server asks again after every edit (an edit forgets the index's answers): the
    tests directory's files are read again only when one of them changed on disk."""
    from flake8_forksafe.config import Config
    from flake8_forksafe.index import ProjectIndex

    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "tests/test_loaders.py": TESTS})
    ix = ProjectIndex(tmp_path, Config().knowledge)
    ix.summary_of_path(str(tmp_path / "proj" / "data.py"))
    reads: list = []
    real = ProjectIndex._read_text
    monkeypatch.setattr(ProjectIndex, "_read_text", staticmethod(lambda p: reads.append(p) or real(p)))
    q = "proj.data.Rows.batch_padding_collator"
    assert ix.loader_callable_user(q, "attr") == ("collate_fn", str(Path("tests/test_loaders.py")), 8)
    first = sum(1 for p in reads if p.name == "test_loaders.py")
    assert first == 1
    ix._memo.clear()  # what an edit does
    assert ix.loader_callable_user(q, "attr") is not None
    assert sum(1 for p in reads if p.name == "test_loaders.py") == 1
    (tmp_path / "tests" / "test_loaders.py").write_text(textwrap.dedent(TESTS).replace("num_workers=2, collate_fn=ds.batch", "num_workers=0, collate_fn=ds.batch"))
    ix._memo.clear()
    ix.update_text(str(tmp_path / "tests" / "test_loaders.py"), (tmp_path / "tests" / "test_loaders.py").read_text())
    assert ix.loader_callable_user(q, "attr") is None
    assert sum(1 for p in reads if p.name == "test_loaders.py") == 2
