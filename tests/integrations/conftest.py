"""Fixtures of the integration tests: a hook repository pre-commit can install from, and
temporary git repositories to run pre-commit in."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Callable, Dict

import pytest

from tests.integrations._util import ROOT, HookRepo, clean_env, git, run


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> HookRepo:
    """This working tree as pre-commit sees a hook repository: a git repository whose HEAD holds
    every file of the checkout that git does not ignore, committed or not (``pre-commit try-repo``
    on the checkout itself would leave out new files that are not committed yet; in CI, where
    everything is committed, this is the same tree)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: pre-commit installs hooks from a git repository")
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    dest = tmp_path_factory.mktemp("hook-repo")
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    assert (dest / ".pre-commit-hooks.yaml").is_file()
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "snapshot of the working tree", cwd=dest)
    return HookRepo(dest, git("rev-parse", "HEAD", cwd=dest).strip())


@pytest.fixture(scope="session")
def precommit_env(tmp_path_factory) -> Dict[str, str]:
    """pre-commit's cache (hook environments) for this test session only."""
    return clean_env(PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")), PRE_COMMIT_COLOR="never")


@pytest.fixture
def git_project(tmp_path: Path) -> Callable[[Dict[str, str]], Path]:
    """A new git repository with the given files staged."""

    def make(files: Dict[str, str]) -> Path:
        repo = tmp_path / "project"
        repo.mkdir()
        git("init", "-q", cwd=repo)
        for name, text in files.items():
            p = repo / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        git("add", "-A", cwd=repo)
        return repo

    return make


@pytest.fixture
def pre_commit(precommit_env) -> Callable[..., "object"]:
    def call(*args: str, cwd: Path):
        return run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=precommit_env, timeout=900)

    return call

