"""Bad input: one clear line or a skip, never a traceback, never a half-written file."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from flake8_forksafe.engine import check_source
from flake8_forksafe.model import SourceError
from flake8_forksafe.fix import fix_source
from tests.conftest import tool

DATASET = (
    "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
    "    def __init__(self, p):\n        self.f = open(p)\n"
)


def forksafe(*args, cwd):
    return subprocess.run([tool("forksafe"), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "name,data,finding",
    [
        ("py2.py", b"print 'hello'\nclass D(Dataset): pass\n", f"py2.py:1:{1 if sys.version_info >= (3, 10) else 7}: FRK000 syntax error (Missing parentheses"),  # 3.9 points at the string
        ("broken.py", b"from torch.utils.data import Dataset\ndef f(:\n", "broken.py:2:7: FRK000 syntax error ("),
        ("parens.py", b"Dataset = " + b"(" * 300 + b"1" + b")" * 300 + b"\n", "parens.py:1:"),
    ],
)
def test_a_file_that_does_not_parse_is_a_finding(tmp_path, name, data, finding):
    (tmp_path / name).write_bytes(data)
    r = forksafe("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == "", r.stderr
    assert r.stdout.startswith(finding) and " FRK000 syntax error (" in r.stdout, r.stdout
    # ignorable like a rule: on the command line and per file
    assert forksafe("check", "--no-cache", "--ignore", "FRK000", ".", cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text(f'[tool.flake8-forksafe]\nper-file-ignores = {{ "{name}" = ["FRK0"] }}\n')
    assert forksafe("check", "--no-cache", ".", cwd=tmp_path).returncode == 0
    # fix counts it as a finding that remains, and leaves the file as it was
    (tmp_path / "pyproject.toml").unlink()
    f = forksafe("fix", name, cwd=tmp_path)
    assert f.returncode == 1 and f"{name}:" in f.stdout and "FRK000" in f.stdout
    assert (tmp_path / name).read_bytes() == data


@pytest.mark.parametrize(
    "name,data,needle",
    [
        ("latin.py", b"x = '\xe9\xe8'  # Dataset\n", "skipped: cannot decode: invalid or missing encoding declaration"),
        ("badcookie.py", b"# -*- coding: klingon -*-\nDataset\n", "skipped: cannot decode"),
        (
            "deep.py",  # CPython compiles it (under its 200 levels), the libcst guard skips it
            b"from torch.utils.data import Dataset\nclass D(Dataset):\n    x = " + b"(" * 180 + b"1" + b")" * 180 + b"\n",
            "skipped: nesting deeper than",
        ),
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
    # the column of a SyntaxError is the parser's: 8 on Python 3.10+, 7 on 3.9
    assert re.search(r"broken\.py:2:[78]: E999", r.stdout), r.stdout


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
    (tmp_path / "a.py").write_bytes(b"\x00\x01\x02Dataset")  # null bytes: CPython does not compile it
    (tmp_path / "b.py").write_bytes(b"\xff\xfe\x00D\x00a\x00t\x00a")
    r = forksafe("check", ".", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.startswith("a.py:1:") and ": FRK000 syntax error" in r.stdout.splitlines()[0]  # the column is 3.9's or 3.10+'s
    assert r.stderr.splitlines() == ["forksafe: b.py: skipped: cannot decode: invalid or missing encoding declaration"]


def test_frk000_only_where_the_parser_runs_and_never_twice_under_flake8(tmp_path):
    """README: a file that does not parse is FRK000 in `forksafe check` when it reaches the parser (it
    mentions a dataset, loader or multiprocessing word: the text pre-filter reads nothing else); a
    file the pre-filter keeps out is not parsed, so it yields nothing. Under flake8 the plugin adds
    nothing: flake8 reports the file as its own E999 (the language server keeps the last findings
    of a document that does not parse: tests/integrations/test_lsp.py)."""
    (tmp_path / "anchored.py").write_bytes(b"from torch.utils.data import DataLoader\ndef f(:\n    pass\n")
    (tmp_path / "plain.py").write_bytes(b"import os\ndef f(:\n    pass\n")
    r = forksafe("check", "--no-cache", "plain.py", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = forksafe("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1
    found = [line for line in r.stdout.splitlines() if " FRK" in line]
    assert len(found) == 1 and found[0].startswith("anchored.py:2:7: FRK000 syntax error ("), r.stdout
    flake8 = tool("flake8")
    r = subprocess.run([flake8, "--select", "FRK,E999", "anchored.py", "plain.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert sorted(line.split(": ")[1].split()[0] for line in r.stdout.splitlines()) == ["E999", "E999"]
    assert "FRK000" not in r.stdout
