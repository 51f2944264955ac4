"""Output and adoption options of `forksafe` (issue 14): markers, summary, colour, --show-source,
--show-fixes, --statistics, --output-file, --exit-zero, per-file-ignores, --add-noqa,
--stdin-filename, FRK000, non-Python files, one finding per hazard. Real subprocess runs."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from tests.conftest import tool

SAFE_SHORT = "lmdb.open() opened in Frames.__init__ and kept in self.env"
# FRK101 (safe fix), FRK602 (unsafe fix, two seeding calls: one finding), FRK102 (no fix)
MIXED = textwrap.dedent(
    """\
    import lmdb
    import numpy as np
    import random
    from torch.utils.data import DataLoader, Dataset

    ENV = lmdb.open("/data/db", readonly=True)


    class Frames(Dataset):
        def __init__(self, path):
            self.env = lmdb.open(path, readonly=True, lock=False)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return ENV.begin().get(str(i).encode())


    def seed_worker(worker_id):
        np.random.seed(worker_id)
        random.seed(worker_id)


    def make(ds):
        return DataLoader(ds, num_workers=2, worker_init_fn=seed_worker)
    """
)
START = textwrap.dedent(
    """\
    import torch
    import torch.multiprocessing as mp

    mp.set_start_method("spawn")
    print(torch.__version__)
    """
)


def forksafe(*args, cwd, stdin=None, env=None):
    full_env = dict(os.environ)
    for k in ("NO_COLOR", "FORCE_COLOR"):
        full_env.pop(k, None)
    full_env.update(env or {})
    return subprocess.run(
        [tool("forksafe"), *args], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120, env=full_env
    )


@pytest.fixture
def mixed(tmp_path):
    (tmp_path / "m.py").write_text(MIXED)
    return tmp_path


def test_short_messages_markers_and_summary(mixed):
    r = forksafe("check", "--no-cache", "m.py", cwd=mixed)
    assert r.returncode == 1 and r.stderr == ""
    assert r.stdout.splitlines() == [
        "m.py:6:7: FRK102 lmdb.open() opened at module level and kept in ENV is used by Frames.__getitem__ in DataLoader workers",
        f"m.py:11:20: FRK101 [*] {SAFE_SHORT}",
        "m.py:21:5: FRK602 [~] worker_init_fn seed_worker() seeds from constants and the worker id only (2 seeding calls)",
        "Found 3 findings. 1 fixable with `forksafe fix` (1 more with `--unsafe-fixes`).",
    ]
    u = forksafe("check", "--no-cache", "--unsafe-fixes", "m.py", cwd=mixed)
    assert "FRK602 [*] worker_init_fn" in u.stdout
    assert u.stdout.splitlines()[-1] == "Found 3 findings. 2 fixable with `forksafe fix --unsafe-fixes`."


def test_machine_formats_keep_the_full_message_and_the_fix(mixed):
    rows = json.loads(forksafe("check", "--no-cache", "--format", "json", "m.py", cwd=mixed).stdout)
    frk101 = next(r for r in rows if r["code"] == "FRK101")
    assert frk101["message"].startswith(SAFE_SHORT + ": forked DataLoader workers") and frk101["fix"] == "safe"
    doc = json.loads(forksafe("check", "--no-cache", "--format", "sarif", "m.py", cwd=mixed).stdout)
    fixes = {res["ruleId"]: res["properties"]["fix"] for res in doc["runs"][0]["results"]}
    assert fixes == {"FRK101": "safe", "FRK102": "none", "FRK602": "unsafe"}


@pytest.mark.parametrize(
    "args,env,coloured",
    [
        ((), {}, False),  # not a terminal
        (("--color", "always"), {}, True),
        (("--color", "always"), {"NO_COLOR": "1"}, True),  # the explicit option wins
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour(mixed, args, env, coloured):
    r = forksafe("check", "--no-cache", *args, "m.py", cwd=mixed, env=env)
    assert ("\x1b[" in r.stdout) == coloured
    assert r.returncode == 1


def test_show_source(mixed):
    r = forksafe("check", "--no-cache", "--show-source", "--select", "FRK101", "m.py", cwd=mixed)
    lines = r.stdout.splitlines()
    assert lines[0] == f"m.py:11:20: FRK101 [*] {SAFE_SHORT}"
    assert lines[2] == "11 |         self.env = lmdb.open(path, readonly=True, lock=False)"
    assert lines[3] == "   |" + " " * 20 + "^" * len("lmdb.open(path, readonly=True, lock=False)") + " FRK101"
    assert lines[5].startswith(f"   = help: {SAFE_SHORT}: forked DataLoader workers share")
    assert lines[6] == "   = fix: `forksafe fix`"


def test_statistics_show_fixes_output_file_and_exit_zero(mixed):
    r = forksafe("check", "--no-cache", "--statistics", "--show-fixes", "--exit-zero", "-o", "report.txt", "m.py", cwd=mixed)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    report = (mixed / "report.txt").read_text().splitlines()
    assert report[3:] == [
        "1     FRK101 [*] handle-opened-in-init",
        "1     FRK102     module-level-handle",
        "1     FRK602 [~] constant-worker-seed",
        "Found 3 findings. 1 fixable with `forksafe fix` (1 more with `--unsafe-fixes`).",
        "Fixes available:",
        "- m.py:",
        "    1 \u00d7 FRK101 (handle-opened-in-init)",
        "    1 \u00d7 FRK602 (constant-worker-seed) (unsafe)",
    ]
    assert forksafe("check", "--no-cache", "--output-file", "r2.txt", "m.py", cwd=mixed).returncode == 1
    assert (mixed / "r2.txt").read_text().startswith("m.py:6:7: FRK102")


def test_fix_show_fixes_and_one_finding_per_worker_init_fn(mixed):
    r = forksafe("fix", "--no-cache", "--unsafe-fixes", "--show-fixes", "m.py", cwd=mixed)
    assert r.returncode == 1  # FRK102 has no automatic fix
    assert "Fixed:\n- m.py:\n    1 \u00d7 FRK101 (handle-opened-in-init)\n    1 \u00d7 FRK602 (constant-worker-seed) (unsafe)\n" in r.stdout
    text = (mixed / "m.py").read_text()
    # the one FRK602 finding's fix rewrote both seeding calls
    assert "np.random.seed(torch.initial_seed() % 2**32)" in text and "random.seed(torch.initial_seed() % 2**32)" in text


def test_start_method_after_torch_without_force_is_one_finding(tmp_path):
    (tmp_path / "s.py").write_text(START)
    r = forksafe("check", "--no-cache", "s.py", cwd=tmp_path)
    assert r.stdout.splitlines()[0] == "s.py:4:1: FRK402 [*] set_start_method() runs at module level after `import torch`"
    assert "FRK403" not in r.stdout
    f = forksafe("fix", "--no-cache", "s.py", cwd=tmp_path)
    assert f.returncode == 0
    assert 'multiprocessing.set_start_method("spawn", force=True)' in (tmp_path / "s.py").read_text()


def test_per_file_ignores(mixed):
    (mixed / "tests").mkdir()
    (mixed / "tests" / "t.py").write_text(MIXED)
    (mixed / "pyproject.toml").write_text(
        '[tool.flake8-forksafe]\nper-file-ignores = { "tests/*" = ["FRK1"], "m.py" = ["FRK602"] }\n'
        'extend-per-file-ignores = { "!tests/*" = ["FRK102"] }\n'
    )
    r = forksafe("check", "--no-cache", ".", cwd=mixed)
    got = sorted(line.split(" ")[0:2] and tuple(line.split(" ")[0:2]) for line in r.stdout.splitlines()[:-1])
    assert got == [("m.py:11:20:", "FRK101"), ("tests/t.py:21:5:", "FRK602")]
    # a fix follows the same per-file config: FRK602 in m.py is left alone even with --unsafe-fixes
    forksafe("fix", "--no-cache", "--unsafe-fixes", "m.py", cwd=mixed)
    assert "np.random.seed(worker_id)" in (mixed / "m.py").read_text()
    # stdin takes the per-file rules of the name it is given
    s = forksafe("check", "--stdin-filename", "tests/x.py", cwd=mixed, stdin=MIXED)
    assert [line.split(" ")[1] for line in s.stdout.splitlines()[:-1]] == ["FRK602"]
    (mixed / "pyproject.toml").write_text('[tool.flake8-forksafe]\nper-file-ignores = { "x.py" = ["FRK999"] }\n')
    bad = forksafe("check", ".", cwd=mixed)
    assert bad.returncode == 2 and "unknown rule code or prefix" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_stdin_filename_without_dash(mixed):
    r = forksafe("check", "--stdin-filename", "pkg/loader.py", cwd=mixed, stdin=MIXED)
    assert r.returncode == 1 and r.stdout.startswith("pkg/loader.py:6:7: FRK102")
    f = forksafe("fix", "--stdin-filename", "pkg/loader.py", cwd=mixed, stdin=MIXED)
    assert "self._env_args = " in f.stdout or "def env(self)" in f.stdout  # the fixed source on stdout
    assert "Fixed 1 finding in 1 file." in f.stderr


def test_non_python_file_named_is_an_error_and_scripts_are_checked(mixed):
    (mixed / "notes.txt").write_text("DataLoader\n")
    r = forksafe("check", "--no-cache", "notes.txt", "m.py", cwd=mixed)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "forksafe: error: notes.txt: not a Python file (.py, .pyi, or a script with a python #! line)"
    ]
    assert "m.py:11:20: FRK101" in r.stdout  # the other files are still checked
    (mixed / "train").write_text("#!/usr/bin/env python3\n" + MIXED)
    s = forksafe("check", "--no-cache", "train", cwd=mixed)
    assert s.returncode == 1 and "train:12:20: FRK101" in s.stdout
    (mixed / "nb.ipynb").write_text('{"cells": []}')
    n = forksafe("check", "--no-cache", "nb.ipynb", cwd=mixed)
    assert n.returncode == 0 and n.stderr == ""  # a notebook is checked cell by cell (no hazard in it)


NOQA_CASES = textwrap.dedent(
    """\
    # -*- coding: latin-1 -*-
    import lmdb
    from torch.utils.data import Dataset

    NAME = "caf\xe9"


    class A(Dataset):
        def __init__(self, p):
            self.env = lmdb.open(p)  # noqa: E501 keep this note

    class B(Dataset):
        def __init__(self, p):
            self.env = lmdb.open(p)  # a comment

    class C(Dataset):
        def __init__(self, p):
            self.env = lmdb.open(\"\"\"/data
    /db\"\"\")

    class D(Dataset):
        def __init__(self, p):
            self.env = lmdb.open(
                p, readonly=True)

    class E(Dataset):
        def __init__(self, p):
            self.env = lmdb.open(p, \\
                readonly=True)
    """
)


def test_add_noqa_counts_lines_as_python_does_and_flake8_agrees(tmp_path):
    """A form feed (a page break) or U+2028 inside a line is not a line break for Python: the
    comment goes on the reported line, and `check` reads that line's noqa (str.splitlines counted
    them as breaks: the comment went on a blank line and the finding stayed)."""
    src = (
        "from torch.utils.data import Dataset\nimport h5py\n\x0c\n# a page\x0cbreak and \u2028 here\n\n"
        "class A(Dataset):\n    def __init__(self, p):\n        self.f = h5py.File(p, 'r')\n"
    )
    (tmp_path / "ff.py").write_text(src, encoding="utf-8")
    r = forksafe("check", "--no-cache", "--add-noqa", "ff.py", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "Added 1 noqa comment to 1 file.\n")
    new = (tmp_path / "ff.py").read_text(encoding="utf-8")
    assert new == src.replace("h5py.File(p, 'r')\n", "h5py.File(p, 'r')  # noqa: FRK101\n")
    assert forksafe("check", "--no-cache", "ff.py", cwd=tmp_path).returncode == 0
    r = subprocess.run([tool("flake8"), "--select", "FRK", "ff.py"], cwd=tmp_path, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, "")


def test_add_noqa(tmp_path):
    data = NOQA_CASES.replace("\n", "\r\n").encode("latin-1")
    (tmp_path / "n.py").write_bytes(data)
    r = forksafe("check", "--no-cache", "--add-noqa", "n.py", cwd=tmp_path)
    assert r.stdout == "Added 5 noqa comments to 1 file.\n"
    assert (r.stderr, r.returncode) == ("", 0)
    new = (tmp_path / "n.py").read_bytes()
    assert new.count(b"\r\n") == data.count(b"\r\n") and b"caf\xe9" in new  # line endings, encoding kept
    lines = new.decode("latin-1").split("\r\n")
    assert lines[9] == "        self.env = lmdb.open(p)  # noqa: E501, FRK101 keep this note"
    assert lines[13] == "        self.env = lmdb.open(p)  # a comment  # noqa: FRK101"
    # a line ending inside a string or after a backslash: the comment ends the lines flake8 (and
    # check) read together with it, the string's last line, the continuation's last line
    assert lines[17] == '        self.env = lmdb.open("""/data' and lines[18] == '/db""")  # noqa: FRK101'
    assert lines[27].endswith("\\") and lines[28] == "            readonly=True)  # noqa: FRK101"
    assert lines[22] == "        self.env = lmdb.open(  # noqa: FRK101"
    after = forksafe("check", "--no-cache", "n.py", cwd=tmp_path)
    assert (after.returncode, after.stdout) == (0, "")
    again = forksafe("check", "--no-cache", "--add-noqa", "n.py", cwd=tmp_path)
    assert again.stdout == "Added 0 noqa comments to 0 files.\n"
    assert (tmp_path / "n.py").read_bytes() == new  # idempotent


def test_add_noqa_then_check_is_clean(mixed):
    (mixed / "s.py").write_text(START)
    assert forksafe("check", "--no-cache", "--add-noqa", ".", cwd=mixed).returncode == 0
    r = forksafe("check", "--no-cache", ".", cwd=mixed)
    assert (r.returncode, r.stdout) == (0, "")
    assert "mp.set_start_method(\"spawn\")  # noqa: FRK402\n" in (mixed / "s.py").read_text()
