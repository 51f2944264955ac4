"""Bad input: one clear line or a skip, never a traceback, never a half-written file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from flake8_forksafe.engine import SourceError, check_source
from flake8_forksafe.fix import fix_source
from tests.conftest import tool

DATASET = (
    "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
    "    def __init__(self, p):\n        self.f = open(p)\n"
)


def forksafe(*args, cwd):
    return subprocess.run([tool("forksafe"), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "name,data,needle",
    [
        ("py2.py", b"print 'hello'\nclass D(Dataset): pass\n", "skipped: syntax error at line 1"),
        ("broken.py", b"from torch.utils.data import Dataset\ndef f(:\n", "skipped: syntax error at line 2"),
        ("latin.py", b"x = '\xe9\xe8'  # Dataset\n", "skipped: cannot decode: invalid or missing encoding declaration"),
        ("badcookie.py", b"# -*- coding: klingon -*-\nDataset\n", "skipped: cannot decode"),
        ("deep.py", b"Dataset = " + b"(" * 300 + b"1" + b")" * 300 + b"\n", "skipped: nesting deeper than"),
    ],
)
def test_unreadable_files_are_skipped_with_one_line(tmp_path, name, data, needle):
    (tmp_path / name).write_bytes(data)
    (tmp_path / "ok.py").write_text(DATASET)
    r = forksafe("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1  # the good file's finding still counts
    assert "ok.py:5:18: FRK101" in r.stdout
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"forksafe: {name}: ") and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    # fix leaves the unreadable file byte for byte as it was
    f = forksafe("fix", name, cwd=tmp_path)
    assert "Traceback" not in f.stderr and (tmp_path / name).read_bytes() == data


def test_flake8_does_not_crash_on_bad_files(tmp_path):
    (tmp_path / "broken.py").write_bytes(b"from torch.utils.data import Dataset\ndef f(:\n")
    (tmp_path / "deep.py").write_bytes(b"Dataset = " + b"(" * 300 + b"1" + b")" * 300 + b"\n")
    r = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "FRK,E999", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in r.stderr and "FRK" not in r.stdout
    assert "broken.py:2:8: E999" in r.stdout


@pytest.mark.parametrize("data", [b"", b"\n", b"\xef\xbb\xbf", b"# just a comment", b"\r\n\r\n"])
def test_empty_like_files(data):
    assert check_source(data, "e.py") == []
    assert fix_source(data, "e.py").source == data


def test_bom_and_crlf_positions():
    src = DATASET.replace("\n", "\r\n").encode()
    want = [("FRK101", 5, 17)]
    assert [(f.code, f.line, f.col) for f in check_source(src, "a.py")] == want
    assert [(f.code, f.line, f.col) for f in check_source(b"\xef\xbb\xbf" + src, "a.py")] == want


def test_deep_block_nesting_is_skipped_not_crashed():
    src = "from torch.utils.data import Dataset\n"
    for i in range(200):
        src += "    " * i + "if x:\n"
    src += "    " * 200 + "pass\n"
    with pytest.raises(SourceError) as exc:
        check_source(src, "deep.py")
    assert "nesting deeper than" in exc.value.message


def test_large_file_is_checked(tmp_path):
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40000))
    src = DATASET + body
    (tmp_path / "big.py").write_text(src)
    assert (tmp_path / "big.py").stat().st_size > 1_000_000
    r = forksafe("check", "--no-cache", "big.py", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("big.py:5:18: FRK101")


def test_directory_of_only_bad_files_never_crashes(tmp_path):
    (tmp_path / "a.py").write_bytes(b"\x00\x01\x02Dataset")
    (tmp_path / "b.py").write_bytes(b"\xff\xfe\x00D\x00a\x00t\x00a")
    r = forksafe("check", ".", cwd=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 2
