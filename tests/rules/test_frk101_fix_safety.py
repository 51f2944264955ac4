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
