"""``forksafe verify`` end to end: the whole matrix with the live autofixer (one case per rule, so
pytest-xdist spreads them), and a broken fixer on two fixtures.

The per-rule cases partition the runtime fixtures (``test_the_rule_cases_partition_the_fixtures``), so
together they are exactly ``forksafe verify`` without ``--select``: every fixture, unsafe and fixed, under
fork, spawn and forkserver. The verdict expected in each cell comes from the fixture's ``EXPECT``, which
``test_runtime_fixtures.py`` pins against its own independent table.
"""

import io
import json
import re
import shutil
import types

import pytest

import flake8_forksafe.fix
from flake8_forksafe.harness import CONTEXTS
from flake8_forksafe.harness.verify import ACCELERATORS, discover, run_verify

from .conftest import RUNTIME, has_proc

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

FIXTURES = discover(RUNTIME)
BY_RULE = {}
for _m in FIXTURES:
    BY_RULE.setdefault(str(_m["RULE"]), []).append(_m)
# Most fixtures first: xdist hands out the long cases before the short ones.
RULES = sorted(BY_RULE, key=lambda r: (-len(BY_RULE[r]), r))


def _device(meta):
    """The matrix's device column: ``cuda`` for a fixture that needs an accelerator."""
    return "cuda" if any(d in ACCELERATORS for d in meta.get("DEVICES") or ("cpu",)) else "cpu"


GPU_RULES = [r for r in RULES if any(_device(m) != "cpu" for m in BY_RULE[r])]


def _gpu_runner():
    return torch.cuda.is_available()


def _cell(meta, version, ctx, gpu):
    """(regex of the cell as the matrix prints it, its status) for this runner."""
    if _device(meta) != "cpu" and not gpu:
        return "not run", "not run"
    if version == "fixed":
        return re.escape("confirmed (ok)"), "confirmed"
    exp = (meta.get("EXPECT") or {}).get(ctx, "ok")
    exp = tuple(exp) if isinstance(exp, (list, tuple)) else (exp,)
    if "any" in exp:
        return r"- \([a-z ]+\)", "-"
    return r"confirmed \((?:%s)\)" % "|".join(map(re.escape, exp)), "confirmed"


def _check_rule(rule, gpu):
    metas = BY_RULE[rule]
    if not has_proc() and any("inherited_fd" in kinds for m in metas
                              for kinds in (m.get("EXPECT_FINDINGS") or {}).values()):
        pytest.skip("the inherited-descriptor probe needs /proc")
    out = io.StringIO()
    rc = run_verify(out=out, select=[rule], jobs=1)
    text = out.getvalue()
    lines = text.splitlines()
    runner = "cpu" if not gpu else "(?:cuda|rocm)"
    assert re.match(rf"forksafe verify: {len(metas)} runtime fixtures on {runner} \(torch \S+, Python \S+\), "
                    r"start methods fork, spawn, forkserver$", lines[0]), text
    assert re.search(r"(?m)^rule\s+fixture\s+device\s+version\s+fork\s+spawn\s+forkserver$", text), text
    counts = {"confirmed": 0, "not run": 0, "-": 0}
    for m in metas:
        row = {}
        for version in ("unsafe", "fixed"):
            cells = []
            for ctx in CONTEXTS:
                pattern, status = _cell(m, version, ctx, gpu)
                cells.append(pattern)
                counts[status] += 1
            row[version] = r"\s+".join(cells)
        pattern = (rf"(?m)^{re.escape(rule)}\s+{re.escape(m['name'])}\s+{_device(m)}\s+unsafe\s+{row['unsafe']}\n"
                   rf"\s+fixed\s+{row['fixed']}$")
        assert re.search(pattern, text), f"{m['name']}:\n{text}"
    hazard_only = [m for m in metas if m.get("FIX", True) is False]
    for m in hazard_only:
        # no automatic fix: the fixer leaves the file alone and the fixed row runs the hand-written copy
        assert re.search(rf"(?m)^  {re.escape(m['name'])}: hazard only: no automatic fix; the fixed row runs "
                         rf"the hand-written fixed/{re.escape(m['name'])}\.py$", text), text
        assert "has no automatic fix, yet the autofixer changed" not in text, text
    if (all(_device(m) == "cpu" for m in metas) or gpu) and not hazard_only:
        assert "\ndetails:" not in text, text
    for m in metas:
        if _device(m) != "cpu" and not gpu and m.get("KIND") == "script":
            assert re.search(rf"(?m)^  {re.escape(m['name'])}: a CUDA script: not run, its cells need a CUDA/ROCm "
                             "device", text), text
        elif _device(m) != "cpu" and not gpu:
            # never a pass: the cells are "not run", and the details say what the hook saw in the parent
            name = re.escape(m["name"])
            assert re.search(rf"(?m)^  {name}: unsafe: the parent initialises CUDA at \S*{name}\.py:\d+ in "
                             r"\w+ \(torch\.cuda\._lazy_init hook\)$", text), text
            assert re.search(rf"(?m)^  {name}: fixed: no CUDA initialisation in the parent; passes on cpu "
                             r"under fork, spawn, forkserver$", text), text
    extra = f", {counts['-']} observed without a claim" if counts["-"] else ""
    summary = f"summary: {counts['confirmed']} confirmed, 0 not confirmed, {counts['not run']} not run{extra}"
    assert lines[-1] == summary, text
    assert rc == 0, text


def test_the_rule_cases_partition_the_fixtures():
    """``--select RULE`` per case picks exactly that rule's fixtures, and the cases cover them all."""
    assert RULES and sorted(m["name"] for m in FIXTURES) == sorted(p.stem for p in RUNTIME.glob("[!_]*.py"))
    seen = []
    for rule in RULES:
        picked = [m["name"] for m in discover(RUNTIME, [rule])]
        assert picked == [m["name"] for m in BY_RULE[rule]], rule
        seen += picked
    assert sorted(seen) == sorted(m["name"] for m in FIXTURES)


@pytest.mark.parametrize("rule", RULES)
def test_verify_confirms_every_cell(rule):
    """``forksafe verify --select RULE`` on this runner: exit status 0, every cell of every fixture of
    the rule confirmed with the verdict its fixture expects; CUDA fixtures "not run" without a GPU."""
    gpu = _gpu_runner()
    if gpu and rule in GPU_RULES:
        pytest.skip("this runner has a CUDA/ROCm device: see test_verify_confirms_the_cuda_cells_on_a_gpu")
    _check_rule(rule, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("rule", GPU_RULES)
def test_verify_confirms_the_cuda_cells_on_a_gpu(rule):
    if not _gpu_runner():
        pytest.skip("no CUDA/ROCm device")
    _check_rule(rule, True)


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


def test_a_cuda_script_is_not_run_without_a_gpu(tmp_path, monkeypatch):
    """On a runner without CUDA, FRK404's script is never started (it could only fail for want of a
    GPU): its six cells are "not run", exit status 0; a CPU fixture beside it still runs."""
    if _gpu_runner():
        pytest.skip("this runner has a CUDA/ROCm device")
    import flake8_forksafe.harness.verify as verify

    for name in ("FRK404_fork_cuda", "FRK201_collate_lambda"):
        shutil.copy(RUNTIME / f"{name}.py", tmp_path / f"{name}.py")
    ran = []
    real = verify.check_fixture

    def spy(path, **kw):
        ran.append(path.name)
        return real(path, **kw)

    monkeypatch.setattr(verify, "check_fixture", spy)
    out = io.StringIO()
    rc = run_verify(True, out=out, fixtures=tmp_path, jobs=1)
    doc = json.loads(out.getvalue())
    assert rc == 0, doc
    assert sorted(ran) == ["FRK201_collate_lambda.py", "FRK201_collate_lambda.py"]
    rows = {f["name"]: f for f in doc["fixtures"]}
    cuda = rows["FRK404_fork_cuda"]
    assert {(v, c, cell["status"]) for v, cells in cuda["cells"].items() for c, cell in cells.items()} == {
        (v, c, "not run") for v in ("unsafe", "fixed") for c in CONTEXTS}
    assert cuda["results"] == {"unsafe": None, "fixed": None}
    assert any(n.startswith("a CUDA script: not run") for n in cuda["notes"]), cuda["notes"]
    assert doc["summary"] == {"confirmed": 6, "not confirmed": 0, "not run": 6, "-": 0}
