"""FRK301/FRK302: a device that is a module-level name of another module of the project
(``DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"`` in ``constants.py``, imported as
a parameter default or read as ``constants.DEFAULT_DEVICE``) may be CUDA; the message names where it
is set. A ``super().__init__(device=device)`` whose base ``__init__`` only stores the device is no
CUDA work in the parent, also when the base has a classmethod (whose body is not followed). Shapes
of slakh-dataset (session 16's holdout, seen: a miss there). tmp-dir projects checked with the real
CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.test_index import forksafe, positions, write

CONSTANTS = """\
    import os

    import torch

    DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    RANK_DEVICE = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    CPU = "cpu"
    """

DATA = """\
    import torch
    from torch.utils.data import Dataset

    from pkg import constants
    from pkg.constants import CPU, DEFAULT_DEVICE


    class Audio(Dataset):
        def __init__(self, root, device=DEFAULT_DEVICE):
            self.root = root
            self.device = device

        @classmethod
        def groups(cls):
            return ["train"]

        def __getitem__(self, i):
            return torch.zeros(3).to(self.device)


    class Slices(Audio):
        def __init__(self, root, device=DEFAULT_DEVICE):
            super().__init__(root, device=device)


    class OnCpu(Dataset):
        def __init__(self, device=CPU):
            self.device = device

        def __getitem__(self, i):
            return torch.zeros(3).to(self.device), torch.ones(2, device=constants.RANK_DEVICE)
    """



def test_a_device_constant_of_another_module(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/constants.py": CONSTANTS, "pkg/data.py": DATA})
    r = forksafe(tmp_path, "pkg/data.py", "--no-cache", "--select", "FRK3")
    where = str(Path("pkg/data.py"))
    # Audio's move (the default is DEFAULT_DEVICE), OnCpu's torch.ones(device=constants.RANK_DEVICE);
    # not OnCpu's move (CPU), not Slices' super().__init__(device=device) (Audio.__init__ only stores it)
    assert positions(r) == [[f"{where}:18:16:", "FRK302"], [f"{where}:31:48:", "FRK302"]]
    shown = str(Path("pkg/constants.py"))
    assert f".to(self.device) (DEFAULT_DEVICE may be a CUDA device: {shown}:5)" in r.stdout
    assert f"(constants.RANK_DEVICE may be a CUDA device: {shown}:6)" in r.stdout


def test_a_base_init_that_moves_the_device_still_counts(tmp_path: Path) -> None:
    """The same ``super().__init__(device=device)`` when the base ``__init__`` moves a tensor to
    the device: CUDA work in the parent (FRK301)."""
    data = DATA.replace("            self.device = device\n\n        @classmethod",
                        "            self.device = device\n            self.table = torch.zeros(3).to(device)\n\n        @classmethod", 1)
    assert data != DATA
    write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/constants.py": CONSTANTS, "pkg/data.py": data})
    r = forksafe(tmp_path, "pkg/data.py", "--no-cache", "--select", "FRK301")
    where = str(Path("pkg/data.py"))
    assert positions(r) == [[f"{where}:12:22:", "FRK301"], [f"{where}:24:9:", "FRK301"]]


def test_without_a_project_an_imported_name_is_not_followed(tmp_path: Path) -> None:
    """Read from standard input there is no project index: an imported device name is not known."""
    r = subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "check", "--no-cache", "--select", "FRK3", "-"],
        input=textwrap.dedent(DATA), capture_output=True, text=True, cwd=tmp_path,
    )
    assert r.returncode == 0 and " FRK" not in r.stdout, r.stdout + r.stderr
