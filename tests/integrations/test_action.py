"""The composite GitHub Action (``action.yml``): its inputs and steps, its check step's script run
as the runner runs it, and the workflow example of docs/github-action.md."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.integrations._util import HAZARD, ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def steps():
    return ACTION["runs"]["steps"]


def test_action_is_a_composite_that_uploads_the_report_it_writes():
    assert ACTION["runs"]["using"] == "composite"
    upload = [s for s in steps() if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(upload) == 1
    assert upload[0]["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    check = next(s for s in steps() if s.get("id") == "check")
    assert check["env"]["SARIF"] == "${{ inputs.sarif-file }}"
    assert "check --format sarif --output \"$SARIF\"" in check["run"]
    # every ${{ inputs.X }} used is declared
    used = set(re.findall(r"inputs\.([\w-]+)", (ROOT / "action.yml").read_text(encoding="utf-8")))
    assert used <= set(ACTION["inputs"]), used - set(ACTION["inputs"])
    for name, spec in ACTION["inputs"].items():
        assert spec.get("description"), name


def run_check_step(tmp_path: Path, files, args=""):
    """The check step's script under bash, with the runner's variables; the action's venv is this one."""
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "forksafe-venv").mkdir()
    os.symlink(Path(sys.executable).parent, tmp_path / "runner" / "forksafe-venv" / "bin")
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    out = tmp_path / "github_output"
    out.write_text("")
    check = next(s for s in steps() if s.get("id") == "check")
    env = dict(os.environ, RUNNER_TEMP=str(tmp_path / "runner"), GITHUB_OUTPUT=str(out),
               PATHS=".", ARGS=args, SARIF="forksafe.sarif")
    r = subprocess.run(["bash", "-e", "-c", check["run"]], cwd=work, env=env, capture_output=True, text=True)
    return r, work, out.read_text()


def test_check_step_writes_sarif_and_counts_findings_without_failing_before_the_upload(tmp_path):
    r, work, output = run_check_step(tmp_path, {"data.py": HAZARD})
    assert r.returncode == 0, r.stderr
    sarif = json.loads((work / "forksafe.sarif").read_text())
    n = len(sarif["runs"][0]["results"])
    assert n > 0 and output == f"findings={n}\n"
    assert {res["ruleId"] for res in sarif["runs"][0]["results"]} <= {f"FRK{i}" for i in range(100, 700)}


def test_check_step_fails_on_a_usage_error(tmp_path):
    r, _, output = run_check_step(tmp_path, {"data.py": HAZARD}, args="--jobs 0")
    assert r.returncode == 2 and output == ""
    assert "::error::forksafe check failed (exit status 2)" in r.stdout


def test_docs_workflow_uses_the_action_with_declared_inputs():
    page = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    wf = yaml.safe_load(block)
    assert wf["permissions"]["security-events"] == "write"
    from flake8_forksafe import __version__

    (step,) = [s for s in wf["jobs"]["forksafe"]["steps"] if "flake8-forksafe/flake8-forksafe@" in s.get("uses", "")]
    assert step["uses"] == f"flake8-forksafe/flake8-forksafe@v{__version__}"
    assert set(step["with"]) <= set(ACTION["inputs"])
    for name in ACTION["inputs"]:
        assert f"| `{name}` |" in page, f"input {name} is not documented"
