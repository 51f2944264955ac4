"""``forksafe fix`` writes through the path, as black and ruff do (issue 13): symlinks, hard links,
owner and mode survive; a file the user may not write is refused with one line and not counted."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from flake8_forksafe.frontends.writes import NotWritable, write_through
from tests.conftest import tool

BAD = (
    "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
    "    def __init__(self, p):\n        self.f = open(p)\n"
)


def fix(*args, cwd, **kw):
    return subprocess.run([tool("forksafe"), "fix", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=300, **kw)


def test_symlink_stays_a_link_and_its_target_is_fixed(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "ds.py"
    target.write_text(BAD)
    os.symlink("real/ds.py", tmp_path / "link.py")
    r = fix("link.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.readlink(tmp_path / "link.py") == "real/ds.py"
    assert "self.f = open(p)" not in target.read_text()
    assert not list((tmp_path / "real").glob(".forksafe-*"))


def test_hard_links_keep_sharing_the_inode(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(BAD)
    os.link(a, tmp_path / "b.py")
    ino = a.stat().st_ino
    r = fix("a.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert a.stat().st_ino == ino == (tmp_path / "b.py").stat().st_ino
    assert a.stat().st_nlink == 2
    assert (tmp_path / "b.py").read_text() == a.read_text() != BAD
    assert not list(tmp_path.glob(".forksafe-*"))


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755, 0o2775])
def test_mode_is_kept(tmp_path, mode):
    a = tmp_path / "a.py"
    a.write_text(BAD)
    os.chmod(a, mode)
    assert fix("a.py", cwd=tmp_path).returncode == 0
    assert a.stat().st_mode & 0o7777 == mode and a.read_text() != BAD


def test_owner_is_kept(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    a = tmp_path / "a.py"
    a.write_text(BAD)
    os.chown(a, 4321, 4322)
    assert fix("a.py", cwd=tmp_path).returncode == 0
    st = a.stat()
    assert (st.st_uid, st.st_gid) == (4321, 4322) and a.read_text() != BAD


def _fix_as_nobody(d: Path, *args: str):
    """``forksafe fix ARGS`` run in ``d`` as user 65534 (nobody): a forked child of this (root)
    process drops its uid and runs the CLI in-process, since the interpreter's own files may not
    be readable by another user. Returns (exit code, stdout, stderr); skips where impossible."""
    if os.geteuid() != 0 or not hasattr(os, "fork"):
        pytest.skip("needs root to run the fix as another user")
    # everything the run imports, loaded before the uid changes
    import difflib  # noqa: F401

    import flake8_forksafe.analysis  # noqa: F401
    import flake8_forksafe.frontends.files  # noqa: F401
    import flake8_forksafe.fix  # noqa: F401
    import flake8_forksafe.frontends.isolation  # noqa: F401
    import flake8_forksafe.frontends.writes  # noqa: F401
    from flake8_forksafe.checks import ALL_RULES  # noqa: F401
    from flake8_forksafe.frontends.cli import main

    out, err = d / ".out", d / ".err"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            with open(out, "w") as o, open(err, "w") as e:
                os.dup2(o.fileno(), 1)
                os.dup2(e.fileno(), 2)
                os.setgid(65534)
                os.setuid(65534)
                os.chdir(d)
                import sys

                sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
                code = main(["fix", "--no-cache", *args])
                sys.stdout.flush()
                sys.stderr.flush()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    result = rc, out.read_text(), err.read_text()
    out.unlink()
    err.unlink()
    if rc == 3:
        pytest.skip(f"cannot run as another user here: {result[2][-300:]}")
    return result


def test_read_only_file_is_refused_for_a_non_root_user():
    d = Path(tempfile.mkdtemp(prefix="forksafe-uid-", dir="/tmp"))
    try:
        os.chmod(d, 0o777)
        ro = d / "ro.py"
        ro.write_text(BAD)
        os.chmod(ro, 0o444)
        rw = d / "rw.py"
        rw.write_text(BAD)
        os.chmod(rw, 0o666)
        (d / ".out").touch(mode=0o666)
        (d / ".err").touch(mode=0o666)
        os.chmod(d / ".out", 0o666)
        os.chmod(d / ".err", 0o666)
        rc, stdout, stderr = _fix_as_nobody(d, "ro.py", "rw.py")
        assert rc == 2, stderr
        assert stderr.splitlines() == ["forksafe: error: ro.py: not written: the file is read-only for this user (mode 0444)"]
        assert ro.read_text() == BAD
        assert rw.read_text() != BAD and rw.stat().st_uid == 0  # the owner kept, even by another user's fix
        # the summary counts only what was written; the unwritten finding is still listed
        assert stdout.splitlines()[0] == "Fixed 1 finding in 1 file."
        assert "ro.py:5:18: FRK101" in stdout
        assert not list(d.glob(".forksafe-*"))
    finally:
        shutil.rmtree(d)


def test_write_through_refuses_what_the_user_cannot_write(tmp_path, monkeypatch):
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(NotWritable, match=r"not written: the file is read-only for this user"):
        write_through(str(a), b"x = 2\n")
    assert a.read_text() == "x = 1\n"


def test_write_through_in_a_directory_that_is_not_writable_keeps_the_inode(tmp_path, monkeypatch):
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    ino = a.stat().st_ino
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if os.fspath(path) == str(tmp_path) else real_access(path, mode))
    write_through(str(a), b"x = 22\n")
    assert a.read_bytes() == b"x = 22\n" and a.stat().st_ino == ino
