"""``forksafe verify`` end to end: the live autofixer on one fixture, and a broken fixer on two."""

import io
import json
import re
import shutil
import types

import pytest

import flake8_forksafe.fix
from flake8_forksafe.harness.verify import run_verify

from .conftest import RUNTIME

pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def test_verify_with_the_live_fixer_confirms_hazard_and_fix():
    out = io.StringIO()
    rc = run_verify(out=out, select=["FRK202"])
    text = out.getvalue()
    assert rc == 0, text
    assert text.splitlines()[0].startswith("forksafe verify: 1 runtime fixtures on cpu (torch ")
    assert re.search(r"(?m)^rule\s+fixture\s+device\s+version\s+fork\s+spawn\s+forkserver$", text), text
    assert re.search(r"(?m)^FRK202\s+FRK202_local_collate\s+cpu\s+unsafe\s+confirmed \(ok\)\s+confirmed \(fails\)\s+"
                     r"confirmed \(fails\)$", text), text
    assert re.search(r"(?m)^\s+fixed\s+confirmed \(ok\)\s+confirmed \(ok\)\s+confirmed \(ok\)$", text), text
    assert text.rstrip().endswith("summary: 6 confirmed, 0 not confirmed, 0 not run")


def test_verify_json_reports_a_fixer_that_changes_nothing_or_crashes(tmp_path, monkeypatch):
    for name in ("FRK201_collate_lambda", "FRK202_local_collate"):
        shutil.copy(RUNTIME / f"{name}.py", tmp_path / f"{name}.py")

    def fake_fix_source(source, path="<string>", config=None, *, unsafe=False):
        assert unsafe is True
        if path.startswith("FRK202"):
            raise RuntimeError("fixer exploded")
        return types.SimpleNamespace(source=source, fixed=[], remaining=[])

    monkeypatch.setattr(flake8_forksafe.fix, "fix_source", fake_fix_source)
    out = io.StringIO()
    rc = run_verify(True, out=out, fixtures=tmp_path, jobs=2)
    doc = json.loads(out.getvalue())
    assert rc == 1 and doc["exit_code"] == 1
    rows = {f["name"]: f for f in doc["fixtures"]}
    unchanged = rows["FRK201_collate_lambda"]
    assert unchanged["notes"] == ["the autofixer changed nothing"]
    assert {c: v["status"] for c, v in unchanged["cells"]["unsafe"].items()} == {
        "fork": "confirmed", "spawn": "confirmed", "forkserver": "confirmed"}
    fixed = unchanged["cells"]["fixed"]
    assert fixed["fork"] == {"status": "confirmed", "verdict": "ok", "summary": "fork: ok"}
    assert fixed["spawn"]["status"] == "not confirmed" and fixed["spawn"]["verdict"] == "fails"
    assert re.search(r"Can't pickle local object 'make_loader\.<locals>\.<lambda>'", fixed["spawn"]["summary"])
    assert unchanged["results"]["fixed"]["contexts"][1]["error"]["type"] == "AttributeError"
    crashed = rows["FRK202_local_collate"]
    assert crashed["notes"] == ["the autofixer raised RuntimeError: fixer exploded"]
    assert {c["status"] for c in crashed["cells"]["fixed"].values()} == {"not confirmed"}
    assert crashed["results"]["fixed"] is None and crashed["results"]["unsafe"]["target"].startswith("FRK202")
    assert doc["summary"] == {"confirmed": 7, "not confirmed": 5, "not run": 0, "-": 0}
