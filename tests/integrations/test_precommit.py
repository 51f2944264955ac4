"""The pre-commit hooks (``.pre-commit-hooks.yaml``) run by the real ``pre-commit``: it clones this
repository, installs the package into a fresh virtualenv with pip (from PyPI), and runs the hooks
in a temporary git repository.

Slow (the first test of a session builds the hook environment).
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.integrations._util import CLEAN, HAZARD, git, hazard_spans, precommit_config

pytestmark = pytest.mark.slow

MODULE_HANDLE = textwrap.dedent(
    """\
    import lmdb
    from torch.utils.data import Dataset

    ENV = lmdb.open("/data/frames.lmdb", readonly=True)


    class Frames(Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            with ENV.begin() as txn:
                return txn.get(str(i).encode())
    """
)


def hook_line(out: str, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}\.+(Passed|Failed|\(no files to check\)Skipped)$", out, re.M)
    assert m, f"no result line for {name!r} in:\n{out}"
    return m.group(1)


def expected_lines(path: str, text: str):
    from flake8_forksafe.frontends.terminal import marker, short_message

    return [
        f"{path}:{f.line}:{f.col + 1}: {f.code} {marker(f, False)}{short_message(f.message)}"
        for f in check_source(text, path)
    ]


def test_hook_manifest_is_what_pre_commit_expects(hook_repo, pre_commit):
    import yaml

    r = pre_commit("validate-manifest", ".pre-commit-hooks.yaml", cwd=hook_repo.path)
    assert r.returncode == 0, r.stdout + r.stderr

    hooks = {h["id"]: h for h in yaml.safe_load((hook_repo.path / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"forksafe", "forksafe-fix"}
    for h in hooks.values():
        assert h["language"] == "python" and h["types_or"] == ["python", "jupyter"] and "types" not in h
    assert hooks["forksafe"]["entry"] == "forksafe check --force-exclude"
    assert hooks["forksafe-fix"]["entry"] == "forksafe fix --force-exclude"


def test_check_hook_fails_and_names_the_findings(hook_repo, git_project, pre_commit):
    repo = git_project(
        {
            "pkg/data.py": HAZARD,
            "pkg/clean.py": CLEAN,
            "pkg/module_handle.py": MODULE_HANDLE,
            "notes.txt": HAZARD,  # not Python: `types: [python]` keeps it away from the hook
        }
    )
    r = pre_commit("try-repo", str(hook_repo.path), "forksafe", "--ref", hook_repo.rev, "--all-files", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe") == "Failed"
    reported = [line for line in r.stdout.splitlines() if re.match(r"^\S+:\d+:\d+: FRK\d{3} ", line)]
    assert sorted(reported) == sorted(
        expected_lines("pkg/data.py", HAZARD) + expected_lines("pkg/module_handle.py", MODULE_HANDLE)
    )
    assert [(int(line.split(":")[1]), int(line.split(":")[2])) for line in reported if line.startswith("pkg/data.py")] == [
        (s["line"], s["start"] + 1) for s in hazard_spans()
    ]
    assert "notes.txt" not in r.stdout


def test_check_hook_passes_on_a_clean_repository(hook_repo, git_project, pre_commit):
    repo = git_project({"pkg/clean.py": CLEAN, "README.md": "hello\n"})
    r = pre_commit("try-repo", str(hook_repo.path), "forksafe", "--ref", hook_repo.rev, "--all-files", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe") == "Passed"


def test_check_hook_honours_the_project_configuration(hook_repo, git_project, pre_commit):
    repo = git_project(
        {
            ".pre-commit-config.yaml": precommit_config(hook_repo, [{"id": "forksafe"}]),
            "pyproject.toml": '[tool.flake8-forksafe]\nignore = ["FRK101"]\n',
            "pkg/data.py": HAZARD,
        }
    )
    r = pre_commit("run", "--all-files", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe") == "Passed"


def test_fix_hook_rewrites_the_hazards_and_fails_because_it_changed_files(hook_repo, git_project, pre_commit):
    repo = git_project(
        {
            ".pre-commit-config.yaml": precommit_config(hook_repo, [{"id": "forksafe-fix"}, {"id": "forksafe"}]),
            "pkg/data.py": HAZARD,
            "pkg/clean.py": CLEAN,
        }
    )
    r = pre_commit("run", "--all-files", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe (fix)") == "Failed"
    assert "files were modified by this hook" in r.stdout
    # the same rewrite as `forksafe fix`, and nothing left for the check hook that ran after it
    assert (repo / "pkg" / "data.py").read_text(encoding="utf-8") == fix_source(HAZARD, "pkg/data.py").source
    assert (repo / "pkg" / "clean.py").read_text(encoding="utf-8") == CLEAN
    assert hook_line(r.stdout, "forksafe") == "Passed"
    # once the fixes are staged, the commit goes through
    git("add", "-A", cwd=repo)
    again = pre_commit("run", "--all-files", cwd=repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert hook_line(again.stdout, "forksafe (fix)") == "Passed"


def test_fix_hook_fails_on_findings_it_cannot_fix_and_leaves_the_file(hook_repo, git_project, pre_commit):
    repo = git_project(
        {
            ".pre-commit-config.yaml": precommit_config(hook_repo, [{"id": "forksafe-fix"}]),
            "pkg/module_handle.py": MODULE_HANDLE,
        }
    )
    r = pre_commit("run", "--all-files", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe (fix)") == "Failed"
    assert "files were modified by this hook" not in r.stdout
    assert (repo / "pkg" / "module_handle.py").read_text(encoding="utf-8") == MODULE_HANDLE
    for line in expected_lines("pkg/module_handle.py", MODULE_HANDLE):
        assert line in r.stdout


NOTEBOOK = json.dumps(
    {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Trying a dataset\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["%matplotlib inline\n", "import torch\n", "from torch.utils.data import DataLoader, Dataset"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["class Squares(Dataset):\n", "    def __len__(self):\n", "        return 8\n", "\n",
                        "    def __getitem__(self, i):\n", "        return i * i"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["loader = DataLoader(Squares(), num_workers=2)\n", "for b in loader:\n", "    print(b)"]},
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    },
    indent=1,
)


def test_check_hook_reports_a_staged_notebook_by_cell(hook_repo, git_project, pre_commit):
    repo = git_project({"explore.ipynb": NOTEBOOK, "pkg/clean.py": CLEAN})
    r = pre_commit("try-repo", str(hook_repo.path), "forksafe", "--ref", hook_repo.rev, "--all-files", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert hook_line(r.stdout, "forksafe") == "Failed"
    reported = [line for line in r.stdout.splitlines() if " FRK" in line]
    assert [line.split(" class Squares ")[0] for line in reported] == ["explore.ipynb:cell 3:1:1: FRK405"]
