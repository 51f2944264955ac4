"""FRK201/FRK202 across modules: a function (or a static method) that returns a lambda or a local
function, itself or through another function of its module, whose result a dataset of another module
keeps on ``self`` on the parent side, is reported at the lambda or def in the function's module, naming
the dataset and where it keeps it (clean-fid's ``build_resizer`` / ``make_resizer``, session 11's
fourth holdout, seen: three misses there). tmp-dir projects checked with the real CLI and flake8."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from tests.helpers import ran
from tests.test_index import forksafe, write

RESIZE = """\
    import numpy as np


    def build_resizer(mode):
        if mode == "clean":
            return make_resizer("PIL", (299, 299))
        elif mode == "identity":
            return lambda x: x
        elif mode == "torch":
            return make_resizer("torch", (299, 299))
        raise ValueError(mode)


    def make_resizer(library, size):
        if library == "PIL":
            def func(x):
                return np.resize(x, size)
        elif library == "torch":
            def func(x):
                return np.asarray(x)[: size[0]]
        else:
            raise ValueError(library)
        return func


    def unused_helper(n):
        return lambda x: x * n
    """

DATA = """\
    import torch

    from imgs.resize import build_resizer


    class ResizeDataset(torch.utils.data.Dataset):
        def __init__(self, files, mode):
            self.files = files
            self.fn_resize = build_resizer(mode)

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            return self.fn_resize(self.files[i])
    """

FILES = {"imgs/__init__.py": "", "imgs/resize.py": RESIZE, "imgs/data.py": DATA}


def _run(tmp_path: Path, files: Dict[str, str], *args: str) -> List[str]:
    write(tmp_path, {"pyproject.toml": "", **files})
    r = forksafe(tmp_path, *(args or (".",)), "--no-cache", "--select", "FRK2")
    ran(r)
    return [line for line in r.stdout.splitlines() if " FRK" in line]


def test_lambda_and_local_functions_returned_to_a_dataset_of_another_module(tmp_path: Path) -> None:
    out = _run(tmp_path, FILES)
    resize = Path("imgs/resize.py")
    assert [line.split(" ", 2)[:2] for line in out] == [
        [f"{resize}:8:16:", "FRK201"],
        [f"{resize}:16:9:", "FRK202"],
        [f"{resize}:19:9:", "FRK202"],
    ]
    where = f"returned by build_resizer(), which dataset ResizeDataset keeps in self.fn_resize ({Path('imgs/data.py')}:9)"
    assert f"lambda {where}" in out[0]
    assert f"local function func() defined inside make_resizer() is {where}" in out[1]
    # only the function's module checked (flake8 style): the same findings
    assert _run(tmp_path, FILES, "imgs/resize.py") == out


def test_not_reported_when_no_dataset_keeps_the_result(tmp_path: Path) -> None:
    called = DATA.replace("self.fn_resize = build_resizer(mode)", "self.size = len(build_resizer(mode)(files))").replace(
        "return self.fn_resize(self.files[i])", "return self.files[i]")
    assert called != DATA
    assert _run(tmp_path, {**FILES, "imgs/data.py": called}) == []
    plain = DATA.replace("class ResizeDataset(torch.utils.data.Dataset):", "class ResizeDataset:")
    assert plain != DATA
    assert _run(tmp_path, {**FILES, "imgs/data.py": plain}) == []
    # built in the worker (a method __init__ does not reach): not kept on the parent side
    lazy = DATA.replace("self.fn_resize = build_resizer(mode)", "self.mode = mode").replace(
        "return self.fn_resize(self.files[i])", "return build_resizer(self.mode)(self.files[i])")
    assert _run(tmp_path, {**FILES, "imgs/data.py": lazy}) == []


def test_static_method_factory_and_flake8_plugin(tmp_path: Path) -> None:
    tools = """\
        class Transforms:
            @staticmethod
            def make(scale):
                def scaled(x):
                    return x * scale
                return scaled
        """
    data = """\
        from torch.utils.data import Dataset

        from aug.tools import Transforms


        class Scaled(Dataset):
            def __init__(self, xs):
                self.xs = xs
                self.t = Transforms.make(2)

            def __getitem__(self, i):
                return self.t(self.xs[i])
        """
    files = {"aug/__init__.py": "", "aug/tools.py": tools, "aug/data.py": data}
    out = _run(tmp_path, files)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('aug/tools.py')}:4:9:", "FRK202"]]
    assert "returned by make(), which dataset Scaled keeps in self.t" in out[0]
    r = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "FRK", "aug/tools.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 1, r.stderr
    assert [line.split(" ", 2)[:2] for line in r.stdout.splitlines()] == [["aug/tools.py:4:9:", "FRK202"]]


INTERFACE = """\
    from abc import ABC


    class DataInterface(ABC):
        @classmethod
        def get_crop_function(cls, size, random_location=True):
            if isinstance(size, int):
                crop_func = cls._fixed_crop(size)
                return crop_func
            return cls._area_crop(size)
    """

BLOSC = """\
    from .interface import DataInterface


    class BloscInterface(DataInterface):
        @staticmethod
        def _fixed_crop(size):
            def crop_func(batch):
                return batch[:size]

            return crop_func

        @staticmethod
        def _area_crop(size):
            return lambda batch: batch[: size // 2]
    """

BLOSC_DATA = """\
    from torch.utils.data import Dataset

    from .blosc import BloscInterface


    class BloscDataset(Dataset):
        def __init__(self, items, size=None):
            self.items = items
            self.crop_function = None
            if size is not None:
                self.crop_function = BloscInterface.get_crop_function(size)

        def __getitem__(self, i):
            return self.crop_function(self.items[i])
    """


def test_a_classmethod_of_a_base_dispatching_to_the_receiver_class(tmp_path: Path) -> None:
    """``BloscInterface.get_crop_function(size)``, a classmethod inherited from a base in another
    module, returns ``cls._fixed_crop(size)`` (through a local) or ``cls._area_crop(size)``: static
    methods of the receiver class that return a local function and a lambda. The dataset keeps the
    result: both are reported (pytorch-h5dataset's crop functions, misses of session 13's holdout:
    seen, then fixed)."""
    files = {"h5/__init__.py": "", "h5/interface.py": INTERFACE, "h5/blosc.py": BLOSC, "h5/data.py": BLOSC_DATA}
    out = _run(tmp_path, files)
    blosc = Path("h5/blosc.py")
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{blosc}:7:9:", "FRK202"], [f"{blosc}:14:16:", "FRK201"]]
    assert "which dataset BloscDataset keeps in self.crop_function" in out[0]
