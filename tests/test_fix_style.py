"""Fixed code that the project's other linters accept, and handle fixes that keep working when
something assigns the attribute (a setter).

ruff: every fixture's fixed output passes `ruff check --select E,W,F,I` and `ruff format --check`
whenever its input did (a code the input already had is not counted): no fix adds a finding.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Dict, Set

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.fix import fix_source
from tests.conftest import tool
from tests.helpers import fixed_path, fixture_files, ran

ALL = Config(select=("FRK", "FRK501"))
FIXED = [p for p in fixture_files() if fixed_path(p).exists()]

def _ruff() -> str:
    r = tool("ruff")
    if shutil.which(r) is None and not Path(r).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return r


def _findings(ruff: str, folder: Path) -> Dict[str, Set[str]]:
    """file name -> ruff codes (E,W,F,I; FORMAT for `ruff format --check`)."""
    out: Dict[str, Set[str]] = defaultdict(set)
    r = subprocess.run(
        [ruff, "check", "--isolated", "--no-cache", "--select", "E,W,F,I", "--output-format", "json", "."],
        cwd=folder, capture_output=True, text=True,
    )
    for f in json.loads(r.stdout or "[]"):
        out[Path(f["filename"]).name].add(f["code"] or "syntax")
    r = subprocess.run([ruff, "format", "--isolated", "--no-cache", "--check", "."], cwd=folder,
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("Would reformat: "):
            out[Path(line[len("Would reformat: "):]).name].add("FORMAT")
    return out


@pytest.fixture(scope="module")
def ruff_results(tmp_path_factory):
    ruff = _ruff()
    before, after = tmp_path_factory.mktemp("before"), tmp_path_factory.mktemp("after")
    for p in FIXED:
        name = f"{p.parent.name}__{p.name}"
        shutil.copy(p, before / name)
        res = fix_source(p.read_bytes(), str(p), ALL, unsafe=True)
        out = res.source if isinstance(res.source, bytes) else res.source.encode()
        (after / name).write_bytes(out)
    return _findings(ruff, before), _findings(ruff, after)


@pytest.mark.parametrize("path", FIXED, ids=[f"{p.parent.name}/{p.name}" for p in FIXED])
def test_fixed_output_passes_ruff_when_input_did(path, ruff_results):
    before, after = ruff_results
    name = f"{path.parent.name}__{path.name}"
    key = f"{path.parent.name}/{path.name}"
    new = {c for c in after.get(name, set()) if c not in before.get(name, set())}
    if "FORMAT" in before.get(name, set()):
        new.discard("FORMAT")  # the input was not formatted either
    assert not new, f"{key}: ruff findings the fix added: {sorted(new)}"


def _fix(tmp_path: Path, rel: str, src: str, extra: Dict[str, str] = ()) -> str:
    for name, text in dict(extra).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(src))
    r = subprocess.run([tool("forksafe"), "fix", "--select", "FRK101", str(p)], capture_output=True, text=True)
    ran(r)
    return p.read_text()


DS = """\
    import os

    from base import Base
    from torch.utils.data import Dataset


    class Records(Base, Dataset):
        def __init__(self, path):
            super().__init__()
            self.fh = open(path, "rb")
            self.n = os.fstat(self.fh.fileno()).st_size // 4

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            self.fh.seek(4 * i)
            return self.fh.read(4)
"""
BASE = """\
    class Base:
        def __init__(self):
            self.fh = None
"""
STUB = {"torch/__init__.py": "", "torch/utils/__init__.py": "", "torch/utils/data.py": "class Dataset:\n    pass\n"}

RUN = """\
import pickle, sys
sys.path.insert(0, sys.argv[1])
from {mod} import Records
ds = Records(sys.argv[2])
items = [ds[i] for i in range(len(ds))]
back = pickle.loads(pickle.dumps(ds))
assert [back[i] for i in range(len(back))] == items
print(items)
"""


def _run(tmp_path: Path, mod: str) -> str:
    data = tmp_path / "data.bin"
    data.write_bytes(b"aaaabbbbcccc")
    r = subprocess.run([sys.executable, "-c", RUN.format(mod=mod), str(tmp_path), str(data)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_base_in_another_module_assigning_none_keeps_a_setter(tmp_path):
    """issue 13 item 5: the read-only property made the base's `self.fh = None` raise AttributeError."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    fixed = _fix(tmp_path, "ds.py", DS, {"base.py": BASE, **STUB})
    assert "self._fh_args = (path,)\n        self._fh_pid = None\n" in fixed
    assert "    @fh.setter\n    def fh(self, value):\n        self._fh, self._fh_pid = value, os.getpid()\n" in fixed
    assert _run(tmp_path, "ds") == "[b'aaaa', b'bbbb', b'cccc']"


def test_same_file_none_assignment_gets_a_setter_instead_of_no_fix(tmp_path):
    src = BASE + "\n\n" + DS.replace("    from base import Base\n", "")
    fixed = _fix(tmp_path, "one.py", src, STUB)
    assert "@fh.setter" in fixed and "self._fh = value" not in fixed
    assert _run(tmp_path, "one") == "[b'aaaa', b'bbbb', b'cccc']"


def test_public_class_in_a_package_gets_a_setter_private_or_loose_does_not(tmp_path):
    plain = DS.replace("Base, ", "").replace("    from base import Base\n", "")
    plain = plain.replace("            super().__init__()\n", "")
    pkg = _fix(tmp_path, "pkg/ds.py", plain, {"pkg/__init__.py": "", **STUB})
    assert "@fh.setter" in pkg
    loose = _fix(tmp_path, "loose.py", plain, STUB)
    assert "@property\n    def fh(self):" in loose and "setter" not in loose
    private = _fix(tmp_path, "pkg/priv.py", plain.replace("Records", "_Records"), STUB)
    assert "@property\n    def fh(self):" in private and "setter" not in private


LONG = """\
    import lmdb
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, root):
            self.env = lmdb.open(root, readonly=True, lock=False, readahead=False, meminit=False)

        def __getitem__(self, i):
            with self.env.begin() as txn:
                return txn.get(b"%d" % i)
"""


@pytest.mark.parametrize("config, width", [
    ("", 88),
    ("[tool.ruff]\nline-length = 79\n", 79),
    ("[tool.black]\nline-length = 120\n", 120),
])
def test_generated_lines_keep_the_project_line_length(tmp_path, config, width):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + config)
    fixed = _fix(tmp_path, "frames.py", LONG, STUB)
    assert "@property" in fixed
    longest = max(len(line) for line in fixed.splitlines())
    assert longest <= width
    call = "lmdb.open(*self._env_args, readonly=True, lock=False, readahead=False, meminit=False)"
    assert (call in fixed) == (width == 120)  # one line only where it fits


def test_flake8_max_line_length_in_setup_cfg(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 72\n")
    fixed = _fix(tmp_path, "frames.py", LONG, STUB)
    assert max(len(line) for line in fixed.splitlines()) <= 72
    assert "            self._env = lmdb.open(\n                *self._env_args,\n" in fixed


def test_a_computed_key_is_kept_and_the_derived_object_becomes_a_property(tmp_path):
    src = """\
        import h5py
        from torch.utils.data import Dataset


        class Split(Dataset):
            def __init__(self, path, split):
                self.f = h5py.File(path, "r")
                self.images = self.f[f"{split}/images"]

            def __len__(self):
                return self.images.shape[0]
    """
    fixed = _fix(tmp_path, "split.py", src, STUB)
    assert '        self._f_args = (path,)\n        self._images_key = f"{split}/images"\n' in fixed
    assert "    @property\n    def images(self):\n        return self.f[self._images_key]\n" in fixed


def test_a_cursor_is_made_once_per_connection_not_on_each_use(tmp_path):
    src = """\
        import sqlite3
        from torch.utils.data import Dataset


        class Rows(Dataset):
            def __init__(self, path):
                self.conn = sqlite3.connect(path)
                self.cur = self.conn.cursor()

            def __getitem__(self, i):
                self.cur.execute("SELECT v FROM t WHERE k = ?", (i,))
                return self.cur.fetchone()[0]
    """
    fixed = _fix(tmp_path, "rows.py", src, STUB)
    assert (
        "    @property\n    def cur(self):\n"
        '        if getattr(self, "_cur_of", None) is not self.conn:\n'
        "            self._cur_of, self._cur = self.conn, self.conn.cursor()\n"
        "        return self._cur\n"
    ) in fixed
    assert 'state.pop("_cur_of", None)\n        state.pop("_cur", None)\n' in fixed
    # the fixed class, run: execute then fetchone on the same cursor, the same rows after pickling
    db = tmp_path / "t.db"
    run = (
        "import pickle, sqlite3, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        f"c = sqlite3.connect({str(db)!r}); c.execute('CREATE TABLE t (k, v)')\n"
        "c.executemany('INSERT INTO t VALUES (?, ?)', [(i, i * i) for i in range(5)]); c.commit()\n"
        f"from rows import Rows\nds = Rows({str(db)!r})\n"
        "a = [ds[i] for i in range(5)]\nb = pickle.loads(pickle.dumps(ds))\n"
        "print(a, [b[i] for i in range(5)])\n"
    )
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 1, 4, 9, 16] [0, 1, 4, 9, 16]"


@pytest.mark.parametrize("name", ["FRK101_derived", "FRK101_h5py_split"])
def test_runtime_fixed_copy_is_the_fix_output(name):
    """The fixed copies the harness confirms under fork, spawn and forkserver are what `fix` writes."""
    root = Path(__file__).resolve().parent.parent / "fixtures" / "runtime"
    src = root / f"{name}.py"
    res = fix_source(src.read_text(), str(src), Config(select=("FRK101",)))
    assert res.source == (root / "fixed" / f"{name}.py").read_text()


# --------------------------------------------------------------------------------------------------
# imports, E402 and long lines: the fixes' own layout, checked with ruff where it is installed


def _ruff_new(tmp_path: Path, before: str, after: str) -> Set[str]:
    """ruff codes (E,W,F,I and FORMAT) ``after`` has that ``before`` has not."""
    ruff = _ruff()
    for name, text in (("before", before), ("after", after)):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "m.py").write_text(text)
    old = _findings(ruff, tmp_path / "before").get("m.py", set())
    return _findings(ruff, tmp_path / "after").get("m.py", set()) - old


def test_readme_example_fixed_passes_ruff(tmp_path):
    """The README's example: every fix (unsafe included), then ruff: nothing new. The start-method
    call goes under the guard with the loop (FRK401's fix first), not above the torch import."""
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "train_lmdb.py"
    src = example.read_text()
    out = fix_source(src, str(tmp_path / "train_lmdb.py"), ALL, unsafe=True).source
    assert 'if __name__ == "__main__":\n    mp.set_start_method("spawn")\n' in out
    assert "noqa" not in out
    assert _ruff_new(tmp_path, src, out) == set()


FRK402_SRC = """\
import os
import torch  # noqa: F401
from torch.utils.data import (  # data
    DataLoader,
)
import torch.multiprocessing as mp  # noqa

mp.set_start_method("spawn")
print(os.getpid(), DataLoader)
"""


def test_frk402_fix_marks_the_imports_after_the_call_and_passes_ruff(tmp_path):
    out = fix_source(FRK402_SRC, "job.py", Config(select=("FRK402",))).source
    assert out == (
        "import multiprocessing\n"
        "import os\n"
        "\n"
        'multiprocessing.set_start_method("spawn", force=True)\n'
        "\n"
        "import torch  # noqa: F401, E402\n"
        "from torch.utils.data import (  # data  # noqa: E402\n"
        "    DataLoader,\n"
        ")\n"
        "\n"
        "print(os.getpid(), DataLoader)\n"
    )
    assert _ruff_new(tmp_path, FRK402_SRC, out) == set()


def test_frk402_noqa_stops_at_the_first_statement_that_is_code():
    src = "import torch\nX = 1\nimport numpy\nimport multiprocessing as mp\nmp.set_start_method('spawn')\n"
    out = fix_source(src, "job.py", Config(select=("FRK402",))).source
    assert "import torch  # noqa: E402\nX = 1\nimport numpy\n" in out  # numpy came after code already


def test_a_local_import_left_unused_goes_one_still_used_stays(tmp_path):
    src = """\
from torch.utils.data import DataLoader


def make(ds):
    import math
    import numpy as np  # kept: a comment of its own

    import json, random

    print(math.pi, json.dumps(1))
    return DataLoader(ds, num_workers=2, collate_fn=lambda b: np.stack(b) * random.random())
"""
    out = fix_source(src, "t.py", Config(select=("FRK201",))).source
    assert out.endswith(
        "def make(ds):\n"
        "    import math\n"
        "    import numpy as np  # kept: a comment of its own\n"
        "\n"
        "    import json\n"
        "\n"
        "    print(math.pi, json.dumps(1))\n"
        "    return DataLoader(ds, num_workers=2, collate_fn=_collate_fn)\n"
    )
    assert "def _collate_fn(b):\n    import numpy as np\n    import random\n" in out


def test_an_import_that_was_unused_before_the_fix_is_left_alone():
    src = """\
from torch.utils.data import DataLoader


def make(ds):
    import numpy as np
    import os
    return DataLoader(ds, num_workers=2, collate_fn=lambda b: np.stack(b))
"""
    out = fix_source(src, "t.py", Config(select=("FRK201",))).source
    assert "def make(ds):\n    import os\n    return DataLoader" in out


@pytest.mark.parametrize("config, split", [("", True), ("[tool.ruff]\nline-length = 120\n", False)])
def test_a_line_the_fix_made_too_long_is_split_within_the_project_line_length(tmp_path, config, split):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + config)
    src = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def make(ds, pad):\n"
        "    return DataLoader(ds, num_workers=2, collate_fn=lambda b: [x + pad for x in b])\n"
    )
    out = fix_source(src, str(tmp_path / "m.py"), Config(select=("FRK201",))).source
    one = "    return DataLoader(ds, num_workers=2, collate_fn=functools.partial(_collate_fn, pad=pad))\n"
    wrapped = (
        "    return DataLoader(\n"
        "        ds, num_workers=2, collate_fn=functools.partial(_collate_fn, pad=pad)\n"
        "    )\n"
    )
    assert (wrapped if split else one) in out
    assert fix_source(out, str(tmp_path / "m.py"), Config(select=("FRK201",))).changed is False


def test_a_line_already_too_long_keeps_its_layout():
    src = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def make(ds, pad_value, a_rather_long_argument_name=None, another_long_one=None):\n"
        "    return DataLoader(ds, num_workers=2, collate_fn=lambda b: [x + pad_value for x in b], timeout=0)\n"
    )
    out = fix_source(src, "m.py", Config(select=("FRK201",))).source
    assert "    return DataLoader(ds, num_workers=2, collate_fn=functools.partial(_collate_fn, pad_value=pad_value), timeout=0)\n" in out
