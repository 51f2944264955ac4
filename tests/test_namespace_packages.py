"""Namespace packages (PEP 420): a top directory without ``__init__.py`` above the regular packages
(``texar/torch/...``, imported as ``texar.torch...``). The index names the modules as their own code
imports them, so a base class or a keeping constructor in another module of the namespace package
is found (texar-pytorch's data classes were misses of session 13's holdout: seen, then fixed)."""

from __future__ import annotations

from pathlib import Path

from flake8_forksafe.config import Config
from flake8_forksafe.index import ProjectIndex
from tests.test_index import forksafe, write

BASE = """\
    from torch.utils.data import Dataset


    class FilterSource:
        def __init__(self, source, filter_fn):
            self._source = source
            self._filter_fn = filter_fn


    class DatasetBase(Dataset):
        def __init__(self, source, hparams=None):
            self._source = source
            self.hparams = hparams

        def __getitem__(self, i):
            return self._source[i]
    """

PAIRED = """\
    from ns.tp.data.base import DatasetBase, FilterSource


    class PairedData(DatasetBase):
        def __init__(self, source, max_len=None):
            data_source = source
            if max_len is not None:
                def filter_fn(ex):
                    return len(ex) <= max_len

                data_source = FilterSource(data_source, filter_fn)
            super().__init__(data_source)
    """


def tree(root: Path, init: str = "from ns.tp.data.base import DatasetBase\n") -> Path:
    return write(
        root,
        {
            "pyproject.toml": "",
            "ns/tp/__init__.py": init,
            "ns/tp/data/__init__.py": "",
            "ns/tp/data/base.py": BASE,
            "ns/tp/data/paired.py": PAIRED,
        },
    )


def test_a_base_class_in_another_module_of_a_namespace_package(tmp_path: Path) -> None:
    tree(tmp_path)
    r = forksafe(tmp_path, "ns/tp/data/paired.py", "--no-cache", "--select", "FRK202")
    out = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]
    assert out == [[f"{Path('ns/tp/data/paired.py')}:8:13:", "FRK202"]], r.stdout + r.stderr


def test_module_names_start_with_the_namespace_the_code_imports(tmp_path: Path) -> None:
    tree(tmp_path)
    ix = ProjectIndex(tmp_path, Config().knowledge)
    assert ix.module_for(str(tmp_path / "ns/tp/data/paired.py")) == ("ns.tp.data.paired", False)
    assert ix.module_for(str(tmp_path / "ns/tp/__init__.py")) == ("ns.tp", True)
    assert "ns" in ix.top_packages()
    assert ix.path_for("ns.tp.data.base") == tmp_path / "ns/tp/data/base.py"


def test_a_directory_the_code_does_not_import_through_is_no_namespace(tmp_path: Path) -> None:
    """``src/tp/...`` imported as ``tp...`` (a src layout): the modules are ``tp...``."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "src/tp/__init__.py": "from tp.data import base\n",
            "src/tp/data/__init__.py": "",
            "src/tp/data/base.py": BASE,
        },
    )
    ix = ProjectIndex(tmp_path, Config().knowledge)
    assert ix.module_for(str(tmp_path / "src/tp/data/base.py")) == ("tp.data.base", False)
    assert "src" not in ix.top_packages()
