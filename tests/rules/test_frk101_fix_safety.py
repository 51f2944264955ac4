"""FRK101's lazy-handle fix closes the handle at the end of ``__init__`` and reopens it in each
process. That is only behaviour-preserving when nothing made from the handle in ``__init__`` outlives
it, and (for a file) when no method relies on the position ``__init__``'s reads left it at.

These tests run the original and the fixed classes on a real file and compare what they return, so
the safety classification (no fix / unsafe / safe) is checked against execution, not only text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "FRK101" / "pos_value_outlives_init.py"
CFG = Config(select=("FRK101",))

pytest.importorskip("torch")
pytest.importorskip("lmdb")


def _by_class(src: bytes):
    """class name -> (applicability, message) of its FRK101 finding."""
    text = src.decode()
    lines = text.splitlines()
    out = {}
    for f in check_source(src, str(FIXTURE), CFG):
        owner = next(ln.split()[1].split("(")[0] for ln in reversed(lines[: f.line]) if ln.startswith("class "))
        out[owner] = (f.fix, f.message)
    return out


def test_applicability_per_shape():
    got = _by_class(FIXTURE.read_bytes())
    assert {k: v[0] for k, v in got.items()} == {
        "Rows": None,
        "Records": None,
        "Numbered": None,
        "Counted": "safe",
        "Headed": "unsafe",
        "Keys": "safe",
    }
    assert "(no automatic fix: the result of iter(...) made from self.fh in __init__ would outlive" in got["Rows"][1]
    # through a local alias: f = self.fh; self.reader = csv.reader(f)
    assert "(no automatic fix: the result of csv.reader(...) made from self.fh in __init__" in got["Records"][1]
    assert "(no automatic fix: the result of zip(...) made from self.src" in got["Numbered"][1]
    assert "(unsafe fix: each process reopens it at its start" in got["Headed"][1]


def _load(src: bytes) -> dict:
    ns: dict = {"__name__": "fixture_module"}
    exec(compile(src, str(FIXTURE), "exec"), ns)
    return ns


@pytest.fixture()
def data(tmp_path):
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("".join(f"{i},{i * i}\n" for i in range(12)))
    import lmdb

    env = lmdb.open(str(tmp_path / "db"), map_size=1 << 20)
    with env.begin(write=True) as txn:
        for i in range(5):
            txn.put(f"k{i}".encode(), f"v{i}".encode())
    env.close()
    return str(csv_path), str(tmp_path / "db")


def _items(ns: dict, name: str, path: str, n: int):
    ds = ns[name](path)
    return [ds[i] for i in range(n)]


def test_safe_fix_returns_the_same_items(data):
    csv_path, db = data
    src = FIXTURE.read_bytes()
    res = fix_source(src, str(FIXTURE), CFG, unsafe=False)
    assert res.changed
    # only the safe fixes were applied: Counted and Keys; the others are left as they were
    assert {k: v[0] for k, v in _by_class(res.source).items()} == {
        "Rows": None,
        "Records": None,
        "Numbered": None,
        "Headed": "unsafe",
    }
    before, after = _load(src), _load(res.source)
    assert _items(after, "Counted", csv_path, 3) == _items(before, "Counted", csv_path, 3)
    assert _items(after, "Keys", db, 5) == _items(before, "Keys", db, 5) == [f"v{i}".encode() for i in range(5)]
    assert len(after["Counted"](csv_path)) == 11  # sum() over the file after next() read the header
    # the declined shapes still work as written (they were not touched)
    assert _items(after, "Rows", csv_path, 2) == ["0,0\n", "1,1\n"]


def test_unsafe_fix_is_unsafe_for_a_reason(data):
    """Headed reads the header in __init__ and rows in __getitem__ without seeking: the reopened
    file starts at the header again, so the fixed class returns other items (why it is unsafe)."""
    csv_path, _ = data
    src = FIXTURE.read_bytes()
    res = fix_source(src, str(FIXTURE), CFG, unsafe=True)
    before, after = _load(src), _load(res.source)
    assert _items(before, "Headed", csv_path, 2) == [["1", "1\n"], ["2", "4\n"]]
    assert _items(after, "Headed", csv_path, 2) == [["0", "0\n"], ["1", "1\n"]]


def test_old_behaviour_would_have_broken_rows(data):
    """What the declined fix would have done to Rows: close the file under the iterator."""
    csv_path, _ = data
    handle = open(csv_path)
    rows = iter(handle)
    handle.close()
    with pytest.raises(ValueError, match="closed file"):
        next(rows)


# --------------------------------------------------------------------------------------------------
# the open mode: the fix reopens the handle in each process

MODES = [
    ('open(path)', "safe", ""),
    ('open(path, "rb")', "safe", ""),
    ('h5py.File(path, mode="r")', "safe", ""),
    ('os.open(path, os.O_RDONLY)', "safe", ""),
    ('pd.HDFStore(path, mode="r")', "safe", ""),
    ('open(path, mode="a")', "unsafe", "(unsafe fix: it is opened for writing (mode 'a'): each process opens it"),
    ('open(path, "r+")', "unsafe", "(unsafe fix: it is opened for writing (mode 'r+')"),
    ('pd.HDFStore(path)', "unsafe", "(unsafe fix: it is opened for writing (mode 'a')"),  # HDFStore's default
    ('open(path, "w")', None, "(no automatic fix: it is opened with mode 'w', which each process's reopening"),
    ('h5py.File(path, "w-")', None, "(no automatic fix: it is opened with mode 'w-'"),
    ('gzip.open(path, "xt")', None, "(no automatic fix: it is opened with mode 'xt'"),
    (
        'os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)',
        None,
        "(no automatic fix: it is opened with flags O_CREAT | O_TRUNC | O_WRONLY",
    ),
    ('open(path, self.mode)', None, "(no automatic fix: its open mode is not a literal)"),
    ('open(*self.args)', None, "(no automatic fix: its open mode is not a literal)"),
]


@pytest.mark.parametrize("call, fix, says", MODES, ids=[m[0] for m in MODES])
def test_open_mode_decides_the_fix(call, fix, says):
    src = f"""\
import gzip
import os

import h5py
import pandas as pd
from torch.utils.data import Dataset


class D(Dataset):
    mode, args = "r", ("x",)

    def __init__(self, path):
        self.h = {call}

    def __getitem__(self, i):
        return self.h
"""
    (f,) = check_source(src.encode(), "ds.py", CFG)
    assert (f.line, f.fix) == (13, fix)
    assert says in f.message


FD_DS = '''\
import os

from torch.utils.data import Dataset


class Raw(Dataset):
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size

    def __len__(self):
        return self.size // 4

    def __getitem__(self, i):
        return os.pread(self.fd, 4, i * 4)
'''

FD_RUNNER = '''\
import sys

from torch.utils.data import DataLoader

import fd_ds

if __name__ == "__main__":
    path = sys.argv[1]
    with open(path, "wb") as f:
        f.write(bytes(range(48)))
    ds = fd_ds.Raw(path)
    ds[0]
    base = list(DataLoader(ds, batch_size=None, num_workers=0))
    for ctx in ("fork", "spawn", "forkserver"):
        got = list(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=ctx))
        assert got == base, (ctx, got, base)
        print("ok", ctx, flush=True)
'''


@pytest.mark.slow
def test_os_open_descriptor_fix_runs_in_workers(tmp_path):
    """An ``os.open`` descriptor is an int: the fix releases it with ``os.close(fd)`` (a method call,
    ``fd.close()``, failed in every forked worker, which inherits the parent's int)."""
    from tests.rules._support import run_with_modules

    res = fix_source(FD_DS.encode(), "fd_ds.py", CFG)
    assert not res.remaining and res.changed
    text = res.source.decode()
    assert "os.close(self._fd)" in text and "self._fd.close()" not in text
    proc = run_with_modules(tmp_path, {"fd_ds": text}, FD_RUNNER, tmp_path / "data.bin", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.split() == ["ok", "fork", "ok", "spawn", "ok", "forkserver"]
