"""FRK201/FRK202: a lambda or local function given to a function of the project that returns a
dataset built from its arguments: a library dataset (``return ImageFolder(root,
transform=transform)``, kept as the library's model says) as well as a project dataset class, the
function in another module or in the same file. A parameter the function does not hand on as it is,
or hands to an argument the library's model says is only used (``ImageFolder(is_valid_file=...)``),
is not kept (tmp-dir projects, checked with the real CLI)."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, positions, write

DATA = """\
    import os

    import pandas as pd
    from torch.utils.data import Dataset
    from torchvision import datasets
    from torchvision.datasets import ImageFolder


    class Rows(Dataset):
        def __init__(self, frame, fmt=None):
            self.frame = frame
            self.fmt = fmt

        def __getitem__(self, i):
            return self.fmt(self.frame[i])


    def image_folder(root, transform=None, is_valid=None):
        return ImageFolder(root, transform=transform, is_valid_file=is_valid)


    def by_module(root, target_transform=None):
        ds = datasets.ImageFolder(root, target_transform=target_transform)
        return ds


    def sorted_folder(root, key=None):
        names = sorted(os.listdir(root), key=key)
        return ImageFolder(names[0])


    def rows(frame, fmt=None):
        return Rows(frame, fmt=fmt)


    def table(frame, conv=None):
        return pd.DataFrame(frame).apply(conv)


    def count(frame, fmt=None):  # names a dataset class, makes none
        print(Rows.__name__, fmt(frame))
        return len(frame)
    """

TRAIN = """\
    from torch.utils.data import DataLoader

    from proj.data import by_module, image_folder, rows, sorted_folder, table


    def loaders(root, frame):
        a = image_folder(root, transform=lambda im: im.convert("RGB"))
        b = by_module(root, target_transform=lambda y: y + 1)
        c = image_folder(root, is_valid=lambda p: p.endswith(".png"))
        d = sorted_folder(root, key=lambda p: p.lower())
        e = table(frame, conv=lambda v: v * 2)

        def fmt(r):
            return str(r)

        f = rows(frame, fmt=fmt)
        return {
            "a": DataLoader(a, num_workers=2),
            "b": DataLoader(b, num_workers=2),
            "c": DataLoader(c, num_workers=2),
            "d": DataLoader(d, num_workers=2),
            "e": DataLoader(e, num_workers=2),
            "f": DataLoader(f, num_workers=2),
        }
    """

SAME_FILE = """\
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder


    def make(root, transform=None, is_valid=None):
        return ImageFolder(root, transform=transform, is_valid_file=is_valid)


    def loader(root):
        kept = make(root, transform=lambda im: im)
        used = make(root, is_valid=lambda p: True)
        return DataLoader(kept, num_workers=2), DataLoader(used, num_workers=2)


    def shadowed(root):
        def make(root, transform=None):  # a local function of the same name: not the module's
            return root

        return DataLoader(make(root, transform=lambda x: x), num_workers=2)
    """



def test_library_and_project_datasets_made_by_a_function_of_another_module(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "proj/train.py": TRAIN})
    r = forksafe(tmp_path, "proj/train.py", "--no-cache", "--select", "FRK201,FRK202")
    where = str(Path("proj/train.py"))
    # kept: transform (ImageFolder), target_transform (datasets.ImageFolder through a local), fmt (Rows);
    # not: is_valid_file (only used by ImageFolder), a key only the function uses, a DataFrame's argument
    assert positions(r) == [[f"{where}:7:38:", "FRK201"], [f"{where}:8:42:", "FRK201"], [f"{where}:13:5:", "FRK202"]]
    assert "lambda passed to the dataset constructor image_folder()" in r.stdout


def test_a_dataset_factory_of_the_same_file(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "train.py": SAME_FILE})
    r = forksafe(tmp_path, "train.py", "--no-cache", "--select", "FRK201,FRK202")
    assert positions(r) == [["train.py:10:33:", "FRK201"]]
    assert "lambda passed to the dataset constructor make()" in r.stdout


def test_without_the_index_a_same_file_factory_is_not_followed(tmp_path: Path) -> None:
    """Read from standard input there is no project: the same file reports nothing (the factory is
    resolved by the project index only)."""
    import subprocess
    import sys
    import textwrap

    r = subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "check", "--no-cache", "--select", "FRK201", "-"],
        input=textwrap.dedent(SAME_FILE), capture_output=True, text=True, cwd=tmp_path,
    )
    assert r.returncode == 0 and " FRK" not in r.stdout, r.stdout + r.stderr


FILLER = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(700))  # about 25,000 characters


def test_a_big_file_gives_the_same_findings(tmp_path: Path) -> None:
    """Over 20,000 characters the question for a file the gate rejects resolves the imported names
    before parsing the file: the findings are the same."""
    import textwrap

    assert len(FILLER) > 20_000
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "proj/train.py": TRAIN + textwrap.indent(FILLER, "    ")})
    r = forksafe(tmp_path, "proj/train.py", "--no-cache", "--select", "FRK201,FRK202")
    where = str(Path("proj/train.py"))
    assert positions(r) == [[f"{where}:7:38:", "FRK201"], [f"{where}:8:42:", "FRK201"], [f"{where}:13:5:", "FRK202"]]


def test_a_big_file_is_parsed_only_when_an_imported_name_makes_a_dataset(tmp_path: Path, monkeypatch) -> None:
    import ast
    import textwrap

    from flake8_forksafe.config import Config
    from flake8_forksafe.index import constructs_project_dataset, index_for

    other = textwrap.dedent("""\
        from proj.data import count


        def convert(frame):
            return count(frame, fmt=lambda v: v * 2)
        """)
    made = textwrap.dedent("""\
        from proj.data import rows


        def convert(frame):
            return rows(frame, fmt=lambda v: str(v))
        """)
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA})
    k = Config().knowledge
    parses = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **kw: parses.append(src) or real(src, *a, **kw))
    for name, text, expected, parsed in (
        ("big_other.py", other + FILLER, False, 0),  # count() makes no dataset: resolved, never parsed
        ("big_made.py", made + FILLER, True, 1),
        ("small_other.py", other, False, 1),  # a small file is parsed first (the names near a lambda)
    ):
        (tmp_path / "proj" / name).write_text(text)
        index = index_for(str(tmp_path / "proj" / name), k, use_cache=False)
        parses.clear()
        assert constructs_project_dataset(index, str(tmp_path / "proj" / name), k, text) is expected, name
        assert len([p for p in parses if p == text]) == parsed, name  # the file itself (summaries parse others)


WRAP = """\
    from torch.utils.data import Dataset

    from proj.data import image_folder


    class Wrapped(Dataset):
        def __init__(self, root):
            self.inner = image_folder(root, is_valid=lambda p: p.endswith(".png"))
            self.kept = image_folder(root, transform=lambda im: im)

        def __getitem__(self, i):
            return self.inner[i], self.kept[i]
    """


def test_a_dataset_keeping_what_a_factory_makes_of_a_library_dataset(tmp_path: Path) -> None:
    """A dataset keeps the library dataset a project function makes (``self.inner =
    image_folder(root, is_valid=lambda ...)``): a lambda the library's model says is only used
    (``ImageFolder(is_valid_file=...)``, handed on under another parameter name) is not kept; one
    handed to ``transform`` is. Session 15's notes: a false alarm the factory's model missed."""
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/data.py": DATA, "proj/wrap.py": WRAP})
    r = forksafe(tmp_path, "proj/wrap.py", "--no-cache", "--select", "FRK201,FRK202")
    where = str(Path("proj/wrap.py"))
    assert positions(r) == [[f"{where}:9:50:", "FRK201"]]
    assert "(self.kept)" in r.stdout
