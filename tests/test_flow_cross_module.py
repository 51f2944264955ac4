"""Facts from a base class ``__init__`` in another module of the project reach FRK203, FRK301 and
FRK601, and the message names the other module (tmp-dir projects, checked with the real CLI)."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, write

BASE = """\
    import numpy as np
    import torch


    class SpeechBase:
        def __init__(self, root, seed=0):
            self.root = root
            self.rng = np.random.default_rng(seed)
            self.pending = (p for p in root)
            self.mean = torch.zeros(80, device="cuda")
    """

SUB = """\
    from torch.utils.data import DataLoader, Dataset

    from speech.base import SpeechBase


    class Clips(SpeechBase, Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.rng.normal() + float(next(self.pending))


    def make(root):
        return DataLoader(Clips(root), batch_size=2, num_workers={workers})
    """


def test_base_class_in_another_module_feeds_frk203_301_601(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "speech/__init__.py": "", "speech/base.py": BASE,
                     "speech/clips.py": SUB.replace("{workers}", "2")})
    r = forksafe(tmp_path, "speech/clips.py", "--no-cache", "--select", "FRK203,FRK301,FRK601")
    assert r.returncode == 1, r.stderr
    base = Path("speech/base.py")
    where = f"{Path('speech/clips.py')}:6:1:"
    out = [line for line in r.stdout.splitlines() if " FRK" in line]  # findings, not the summary
    assert [line.split(" ", 2)[:2] for line in out] == [
        [where, "FRK203"], [where, "FRK301"], [where, "FRK601"],
    ]
    assert f"self.pending is created on the parent side (in base class SpeechBase.__init__, {base}:9)" in out[0]
    assert f"self.mean is made on the parent side (in base class SpeechBase.__init__, {base}:10)" in out[1]
    assert out[2].split(" ", 2)[2].startswith(
        f"np.random.default_rng() kept in self.rng is created on the parent side (in base class "
        f"SpeechBase.__init__, {base}:8)"
    )


def test_base_class_facts_need_workers_and_the_project(tmp_path: Path, tmp_path_factory) -> None:
    write(tmp_path, {"pyproject.toml": "", "speech/__init__.py": "", "speech/base.py": BASE,
                     "speech/clips.py": SUB.replace("{workers}", "0")})
    r = forksafe(tmp_path, "speech/clips.py", "--no-cache", "--select", "FRK301,FRK601")
    assert r.returncode == 0 and r.stdout == "", r.stdout
    # the subclass alone, outside its project: the base is unknown, nothing to report
    alone = write(tmp_path_factory.mktemp("alone"), {"clips.py": SUB.replace("{workers}", "2")})
    r = forksafe(alone, "clips.py", "--no-cache")
    assert r.returncode == 0 and r.stdout == "", r.stdout
