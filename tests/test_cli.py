"""The `forksafe` command and the flake8 plugin, driven as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import tool

HAZARD = textwrap.dedent(
    """\
    import lmdb
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path):
            self.env = lmdb.open(path, readonly=True, lock=False)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            with self.env.begin() as txn:
                return txn.get(str(i).encode())
    """
)
SHORT = "lmdb.open() opened in Frames.__init__ and kept in self.env"
MSG = (
    f"{SHORT}: forked DataLoader workers share the "
    "parent's handle and spawn workers cannot pickle it; open it lazily in each worker process"
)
SUMMARY = "Found 1 finding. 1 fixable with `forksafe fix`."


def forksafe(*args, cwd, stdin=None):
    return subprocess.run(
        [tool("forksafe"), *args], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120
    )


def flake8(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "data.py").write_text(HAZARD)
    (tmp_path / "clean.py").write_text("import os\nprint(os.getcwd())\n")
    return tmp_path


def test_check_reports_path_line_col_code_message_and_exits_1(proj):
    r = forksafe("check", "--no-cache", cwd=proj)
    assert r.returncode == 1
    assert r.stdout == f"data.py:7:20: FRK101 [*] {SHORT}\n{SUMMARY}\n"
    assert r.stderr == ""


def test_check_clean_exits_0(proj):
    r = forksafe("check", "clean.py", cwd=proj)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_flake8_reports_the_same(proj):
    r = flake8("--isolated", "--select", "FRK", "data.py", "clean.py", cwd=proj)
    assert r.returncode == 1
    assert r.stdout == f"data.py:7:20: FRK101 {SHORT}\n"  # the short message, without the fix marker


def test_json_format(proj):
    r = forksafe("check", "--format", "json", "data.py", cwd=proj)
    rows = json.loads(r.stdout)
    assert rows == [
        {
            "path": "data.py",
            "line": 7,
            "column": 20,
            "end_line": 7,
            "end_column": 62,
            "code": "FRK101",
            "name": "handle-opened-in-init",
            "message": MSG,
            "fix": "safe",
            "url": "https://github.com/flake8-forksafe/flake8-forksafe/blob/main/docs/rules/FRK101.md",
        }
    ]


@pytest.mark.parametrize(
    "comment,reported",
    [
        ("  # noqa", False),
        ("  # noqa: FRK101", False),
        ("  # NOQA:FRK1", False),
        ("  # noqa: E501,FRK101", False),
        ("  # noqa: FRK102", True),
        ("  # noqa: E501", True),
    ],
)
def test_noqa_in_both_front_ends(tmp_path, comment, reported):
    src = HAZARD.replace("lock=False)", "lock=False)" + comment)
    (tmp_path / "d.py").write_text(src)
    a = forksafe("check", "--no-cache", "d.py", cwd=tmp_path)
    b = flake8("--isolated", "--select", "FRK", "d.py", cwd=tmp_path)
    assert a.returncode == b.returncode == (1 if reported else 0)
    assert ("FRK101" in a.stdout) == reported == ("FRK101" in b.stdout)


def test_file_level_noqa(tmp_path):
    (tmp_path / "d.py").write_text("# flake8: noqa\n" + HAZARD)
    assert forksafe("check", "d.py", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(
    "args,code",
    [
        (["--select", "FRK1"], 1),
        (["--select", "FRK2"], 0),
        (["--ignore", "FRK101"], 0),
        (["--ignore", "FRK"], 0),
        (["--select", "FRK", "--ignore", "FRK10"], 0),
        (["--ignore", "FRK1", "--extend-select", "FRK101"], 1),
    ],
)
def test_select_ignore(proj, args, code):
    assert forksafe("check", *args, "data.py", cwd=proj).returncode == code


def test_pyproject_config(proj):
    (proj / "pyproject.toml").write_text('[tool.flake8-forksafe]\nignore = ["FRK101"]\n')
    assert forksafe("check", "--no-cache", cwd=proj).returncode == 0


def test_pyproject_extra_handle_factory(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.flake8-forksafe]\nextra-handle-factories = ["mylib.store.open_store"]\n'
    )
    (tmp_path / "d.py").write_text(
        "from mylib.store import open_store\nfrom torch.utils.data import Dataset\n\n"
        "class D(Dataset):\n    def __init__(self, p):\n        self.s = open_store(p)\n"
    )
    r = forksafe("check", "--no-cache", cwd=tmp_path)
    assert r.returncode == 1 and "d.py:6:18: FRK101 [*] mylib.store.open_store() opened" in r.stdout


def test_flake8_config_extra_dataset_base(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nforksafe-extra-dataset-bases = mylib.Base\nselect = FRK\n")
    (tmp_path / "d.py").write_text(
        "from mylib import Base\n\nclass D(Base):\n    def __init__(self, p):\n        self.f = open(p)\n"
    )
    r = flake8("d.py", cwd=tmp_path)
    assert r.returncode == 1 and "d.py:5:18: FRK101" in r.stdout
    (tmp_path / "setup.cfg").write_text("[flake8]\nselect = FRK\n")
    assert flake8("d.py", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(
    "content,needle",
    [
        ('[tool.flake8-forksafe]\nbogus = 1\n', "unknown key bogus"),
        ('[tool.flake8-forksafe]\nselect = ["FRK999"]\n', "unknown rule code or prefix in select: FRK999"),
        ('[tool.flake8-forksafe]\nselect = 3\n', "select must be a list"),
        ('[tool.flake8-forksafe\n', "cannot read config"),
    ],
)
def test_bad_config_is_one_line_exit_2(proj, content, needle):
    (proj / "pyproject.toml").write_text(content)
    r = forksafe("check", cwd=proj)
    assert r.returncode == 2
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_unknown_option_and_code(proj):
    r = forksafe("check", "--frobnicate", cwd=proj)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    r = forksafe("check", "--select", "FRK9", cwd=proj)
    assert r.returncode == 2 and "unknown rule code or prefix in select: FRK9" in r.stderr


def test_missing_path(proj):
    r = forksafe("check", "nope.py", "data.py", cwd=proj)
    assert r.returncode == 2
    assert r.stderr == "forksafe: error: nope.py: no such file or directory\n"
    assert "FRK101" in r.stdout  # the files that exist are still checked


def test_no_python_files(tmp_path):
    (tmp_path / "README.md").write_text("hi\n")
    r = forksafe("check", cwd=tmp_path)
    assert r.returncode == 0 and "no Python files" in r.stderr


def test_directory_walk_skips_venvs_and_excludes(tmp_path):
    for d in ("pkg", ".git", "build", "myenv", "third"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "d.py").write_text(HAZARD)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-forksafe]\nextend-exclude = ["third"]\n')
    r = forksafe("check", "--no-cache", ".", cwd=tmp_path)
    assert r.stdout.splitlines() == [f"pkg/d.py:7:20: FRK101 [*] {SHORT}", SUMMARY]


def test_explicit_file_is_checked_even_if_excluded(tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "d.py").write_text(HAZARD)
    assert forksafe("check", "build/d.py", cwd=tmp_path).returncode == 1


def test_stdin(proj):
    r = forksafe("check", "-", "--stdin-filename", "x/y.py", cwd=proj, stdin=HAZARD)
    assert r.returncode == 1 and r.stdout.startswith("x/y.py:7:20: FRK101")


def test_jobs_give_the_same_result(tmp_path):
    for i in range(40):
        (tmp_path / f"m{i:02d}.py").write_text(HAZARD if i % 3 == 0 else "x = 1\n")
    one = forksafe("check", "--no-cache", "--jobs", "1", ".", cwd=tmp_path)
    two = forksafe("check", "--no-cache", "--jobs", "2", ".", cwd=tmp_path)
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout and one.stdout.count("FRK101") == 14


def test_cache_round_trip(proj):
    first = forksafe("check", "data.py", cwd=proj)
    assert (proj / ".forksafe_cache").is_dir()
    second = forksafe("check", "data.py", cwd=proj)
    assert first.stdout == second.stdout and second.returncode == 1
    # a changed file is re-checked, not served from the cache
    (proj / "data.py").write_text(HAZARD.replace("lock=False)", "lock=False)  # noqa: FRK101"))
    assert forksafe("check", "data.py", cwd=proj).returncode == 0


def test_explain_and_rules(proj):
    r = forksafe("explain", "frk101", cwd=proj)
    assert r.returncode == 0 and r.stdout.startswith("# FRK101")
    r = forksafe("rules", cwd=proj)
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("FRK101  handle-opened-in-init")
    rows = json.loads(forksafe("rules", "--format", "json", cwd=proj).stdout)
    assert rows[0]["code"] == "FRK101" and rows[0]["fix"] == "safe"
    assert any(r["code"] == "FRK501" and r["default"] is False for r in rows) or all(
        r["code"] != "FRK501" for r in rows
    )


def test_explain_unknown(proj):
    r = forksafe("explain", "FRK999", cwd=proj)
    assert r.returncode == 2 and r.stderr == "forksafe: error: unknown rule code: FRK999 (see `forksafe rules`)\n"


def test_fix_diff_writes_nothing_and_exits_1(proj):
    before = (proj / "data.py").read_bytes()
    r = forksafe("fix", "--diff", "data.py", cwd=proj)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a/data.py\n+++ b/data.py\n")
    assert (proj / "data.py").read_bytes() == before
    assert "Would fix 1 finding in 1 file." in r.stderr


def test_fix_writes_and_recheck_is_clean(proj):
    os.chmod(proj / "data.py", 0o640)
    r = forksafe("fix", "data.py", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Fixed 1 finding in 1 file." in r.stdout
    assert forksafe("check", "--no-cache", "data.py", cwd=proj).returncode == 0
    assert (os.stat(proj / "data.py").st_mode & 0o777) == 0o640
    again = forksafe("fix", "data.py", cwd=proj)
    assert again.returncode == 0 and "Nothing to fix." in again.stdout
    assert not [p for p in proj.iterdir() if p.name.startswith(".forksafe-")]  # no temp files left


def test_fix_exits_1_when_findings_remain(tmp_path):
    (tmp_path / "d.py").write_text(
        "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
        "    def __init__(self, paths):\n        self.fs = [open(p) for p in paths]\n"
    )
    r = forksafe("fix", "d.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "1 finding remains:" in r.stdout and "d.py:5:20: FRK101" in r.stdout


def test_force_exclude_applies_to_named_files(tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "d.py").write_text(HAZARD)
    r = forksafe("check", "--force-exclude", "build/d.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""
    (tmp_path / "pyproject.toml").write_text('[tool.flake8-forksafe]\nforce-exclude = true\nextend-exclude = ["gen_*.py"]\n')
    (tmp_path / "gen_a.py").write_text(HAZARD)
    assert forksafe("check", "--no-cache", "gen_a.py", cwd=tmp_path).returncode == 0


def test_readme_and_docs_cover_every_rule():
    from flake8_forksafe.checks import ALL_RULES
    from tests.helpers import ROOT

    readme = (ROOT / "README.md").read_text()
    for r in ALL_RULES:
        assert f"[{r.code}](docs/rules/{r.code}.md)" in readme
        doc = (ROOT / "docs" / "rules" / f"{r.code}.md").read_text()
        assert doc.startswith(f"# {r.code}")
        for section in ("## What it does", "## Why is this bad", "## Example", "## Fix safety"):
            assert section in doc, f"{r.code}.md lacks {section}"
