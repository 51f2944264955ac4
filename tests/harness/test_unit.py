"""Harness pieces that need no DataLoader workers: results, parsing, input errors, verify's judging."""

import ast
import importlib.util
import io
import json
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.harness import (
    CONTEXTS,
    CaseResult,
    ContextResult,
    ErrorInfo,
    Finding,
    HarnessError,
    NotRunError,
    assert_dataloader_safe,
    check_dataset,
    check_module,
    check_script,
    fixture_meta,
)
from flake8_forksafe.harness._child import error_info
from flake8_forksafe.harness.runner import _last_error_line, raise_for
from flake8_forksafe.harness.verify import judge_fixed, judge_unsafe, run_verify

from .conftest import FIXED, ROOT, RUNTIME


requires_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


def _case(**verdicts):
    res = CaseResult(target="demo.py:make_dataset")
    for ctx, v in verdicts.items():
        res.contexts.append(ContextResult(ctx, v))
    return res


# ----------------------------------------------------------------------------------- results


def test_result_json_round_trip_and_text():
    res = CaseResult(target="m.py:make_dataset", kind="map", device="cpu")
    res.contexts = [
        ContextResult("fork", "flagged", findings=[Finding("inherited_fd", "workers 0, 1 still share ...", {"fd": 3})]),
        ContextResult("spawn", "fails", error=ErrorInfo("TypeError", "cannot pickle '_io.BufferedReader' object")),
        ContextResult("forkserver", "differs", differing=[1, 2], n_differing=2, reason="2 of 4 items differ"),
    ]
    back = CaseResult.from_dict(json.loads(res.to_json()))
    assert back == res
    text = str(back)
    assert "fork: flagged - workers 0, 1 still share ..." in text
    assert "spawn: fails - TypeError: cannot pickle '_io.BufferedReader' object" in text
    assert "forkserver: differs - 2 of 4 items differ" in text
    assert back.verdicts() == {"fork": "flagged", "spawn": "fails", "forkserver": "differs"}
    assert not back.safe and [c.context for c in back.hazards] == ["fork", "spawn", "forkserver"]
    assert back["spawn"].error.type == "TypeError"
    with pytest.raises(KeyError):
        back["threads"]


def test_not_run_is_never_safe():
    assert _case(fork="ok", spawn="ok", forkserver="ok").safe
    assert not _case(fork="ok", spawn="not run").safe
    assert not CaseResult(target="x").safe  # nothing ran


def test_raise_for_names_every_failing_context():
    res = _case(fork="ok", spawn="fails", forkserver="hangs")
    res["spawn"].error = ErrorInfo("AttributeError", "Can't pickle local object 'f.<locals>.<lambda>'")
    res["forkserver"].reason = "no result after 60 s"
    with pytest.raises(AssertionError) as ei:
        raise_for(res)
    msg = str(ei.value)
    assert msg.splitlines()[0] == "DataLoader is not multiprocessing-safe: demo.py:make_dataset"
    assert re.search(r"^  spawn: fails - AttributeError: Can't pickle local object 'f\.<locals>\.<lambda>'$", msg, re.M)
    assert re.search(r"^  forkserver: hangs - no result after 60 s$", msg, re.M)
    assert "fork: ok" not in msg


def test_raise_for_skips_when_something_could_not_run():
    res = _case(fork="ok", spawn="not run")
    res["spawn"].reason = "no CUDA device"
    with pytest.raises(pytest.skip.Exception, match="spawn: not run - no CUDA device"):
        raise_for(res)
    assert raise_for(_case(fork="ok")) is not None


# ----------------------------------------------------------------------------------- parsing


def test_error_info_unwraps_worker_exceptions():
    msg = ("Caught ReadersFullError in DataLoader worker process 1.\nOriginal Traceback (most recent call last):\n"
           '  File "x.py", line 3, in __getitem__\n    with self.env.begin() as txn:\n'
           "lmdb.ReadersFullError: mdb_txn_begin: MDB_READERS_FULL: Environment maxreaders limit reached\n")
    info = error_info(RuntimeError(msg))
    assert info == {"type": "lmdb.ReadersFullError",
                    "message": "mdb_txn_begin: MDB_READERS_FULL: Environment maxreaders limit reached",
                    "where": "in DataLoader worker process 1"}
    assert error_info(TypeError("cannot pickle 'Environment' object")) == {
        "type": "TypeError", "message": "cannot pickle 'Environment' object", "where": ""}
    assert error_info(pickle.PicklingError("x"))["type"] == "pickle.PicklingError"


def test_last_error_line_of_a_script():
    err = textwrap.dedent("""\
        Traceback (most recent call last):
          File "s.py", line 9, in <module>
            for x in loader:
        RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly
        """)
    assert _last_error_line(err) == ErrorInfo("RuntimeError", "DataLoader worker (pid(s) 4242) exited unexpectedly")
    assert _last_error_line("all fine\n") is None


# ----------------------------------------------------------------------------------- fixtures


def test_fixture_meta_reads_constants_without_importing(tmp_path):
    p = tmp_path / "FRK999_boom.py"
    p.write_text('"""Doc line."""\nRULE = "FRK999"\nKIND = "script"\nEXPECT = {"fork": ("ok",)}\n'
                 'raise SystemExit("imported!")\n')
    meta = fixture_meta(p)
    assert meta["RULE"] == "FRK999" and meta["KIND"] == "script" and meta["EXPECT"] == {"fork": ("ok",)}
    assert meta["doc"] == "Doc line." and meta["DEVICES"] == ("cpu",)


def test_every_runtime_fixture_declares_its_expectations_and_has_a_fixed_copy():
    names = sorted(p.stem for p in RUNTIME.glob("*.py"))
    assert len(names) >= 13
    for name in names:
        meta = fixture_meta(RUNTIME / f"{name}.py")
        assert re.fullmatch(r"FRK\d{3}", meta["RULE"]) and name.startswith(meta["RULE"]), name
        assert set(meta["EXPECT"]) == set(CONTEXTS), name
        for exp in meta["EXPECT"].values():
            exp = exp if isinstance(exp, tuple) else (exp,)
            assert set(exp) <= {"ok", "fails", "hangs", "differs", "flagged", "any"}, name
        assert (FIXED / f"{name}.py").is_file(), name
        src = (RUNTIME / f"{name}.py").read_text()
        if meta["RULE"] == "FRK401":
            tree = ast.parse(src)
            assert not any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body), name
        elif meta["KIND"] != "script":
            assert "def make_dataset(" in src and "def build_data(" in src


# ----------------------------------------------------------------------------------- bad input


@requires_torch
def test_bad_input_gives_one_line_errors(tmp_path):
    cases = [
        (lambda: check_dataset(RUNTIME / "FRK101_file.py", contexts=["fork", "threads"]),
         r"unknown start method threads: use fork, spawn or forkserver"),
        (lambda: check_module(tmp_path / "nope.py"), r"no such module: .*nope\.py"),
        (lambda: check_script(tmp_path / "nope.py"), r"no such script: .*nope\.py"),
        (lambda: check_dataset(RUNTIME / "FRK101_file.py", timeout=-1), r"timeout must be positive"),
        (lambda: check_dataset(RUNTIME / "FRK101_file.py", timeout="soon"), r"timeout must be a number"),
        (lambda: check_dataset(42), r"neither a dataset .* nor a factory"),
        (lambda: check_dataset([1, 2], 3), r"arguments were given but the target is not a factory"),
    ]
    bad = tmp_path / "my-data.py"
    bad.write_text("")
    cases.append((lambda: check_module(bad), r"my-data\.py: the module name must be a Python identifier"))
    for call, pattern in cases:
        with pytest.raises(HarnessError) as ei:
            call()
        assert re.search(pattern, str(ei.value)), str(ei.value)
        assert "\n" not in str(ei.value)


class Holder:
    """Picklable class, unpicklable instance (a lambda made in __init__)."""

    def __init__(self):
        self.items = [1, 2, 3]
        self.transform = lambda x: x * 2

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return self.transform(self.items[i])


@requires_torch
def test_unpicklable_object_fails_spawn_and_forkserver_without_a_subprocess():
    res = check_dataset(Holder())
    assert res.verdicts() == {"fork": "not run", "spawn": "fails", "forkserver": "fails"}
    pat = r"^AttributeError: Can't pickle local object 'Holder\.__init__\.<locals>\.<lambda>'$"
    assert re.match(pat, str(res["spawn"].error))
    assert re.search(r"cannot be pickled, so it cannot be moved into the isolated harness process; pass a "
                     r"factory", res["fork"].reason)
    with pytest.raises(AssertionError, match=r"(?m)^  spawn: fails - AttributeError: Can't pickle local object"):
        assert_dataloader_safe(Holder(), contexts=("fork", "spawn"))


@requires_torch
def test_fork_only_check_of_an_unpicklable_object_is_skipped_not_passed():
    with pytest.raises(pytest.skip.Exception, match=r"fork: not run - the dataset cannot be pickled"):
        assert_dataloader_safe(Holder(), contexts=("fork",))


@requires_torch
def test_a_dataloader_is_checked_with_the_options_its_workers_get():
    from torch.utils.data import DataLoader

    loader = DataLoader(_Items(), num_workers=2, collate_fn=lambda x: x)  # noqa: FRK201 - under test
    res = check_dataset(loader, contexts=("fork", "spawn"))
    assert res.verdicts() == {"fork": "not run", "spawn": "fails"}
    assert re.match(r"PicklingError: Can't pickle <function <lambda>|AttributeError: Can't pickle local object",
                    str(res["spawn"].error).replace("pickle.PicklingError", "PicklingError")), str(res)
    assert res["spawn"].reason == "collate_fn= cannot be pickled"


class _Items:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return i


@requires_torch
def test_a_module_that_does_not_import_is_an_error_not_a_verdict(tmp_path):
    mod = tmp_path / "broken_ds.py"
    mod.write_text("raise RuntimeError('boom at import')\n")
    res = check_module(mod, contexts=["fork"])
    assert res.error == "importing broken_ds.py:make_dataset failed: RuntimeError: boom at import"
    assert res.verdicts() == {"fork": "error"} and not res.safe
    with pytest.raises(AssertionError, match=r"(?m)^  error: importing broken_ds\.py:make_dataset failed"):
        raise_for(res)


def test_not_run_outside_pytest_raises_not_run_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pytest", None)  # `import pytest` now raises ImportError
    with pytest.raises(NotRunError, match="fork: not run"):
        raise_for(_case(fork="not run"))


# ----------------------------------------------------------------------------------- imports


def test_plugin_and_harness_import_without_torch():
    code = textwrap.dedent("""\
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("torch is blocked")
        sys.meta_path.insert(0, Block())
        import flake8_forksafe.pytest_plugin as p
        import flake8_forksafe.harness as h
        assert callable(p.assert_dataloader_safe) and p.assert_dataloader_safe is h.assert_dataloader_safe
        assert "torch" not in sys.modules
        print("clean")
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert out.stdout.strip() == "clean", out.stderr


# ----------------------------------------------------------------------------------- verify


def test_verify_reports_a_missing_fixer(monkeypatch):
    monkeypatch.setitem(sys.modules, "flake8_forksafe.fix", None)
    out = io.StringIO()
    assert run_verify(out=out) == 2
    assert re.match(r"forksafe: error: verify needs the autofixer \(flake8_forksafe\.fix\.fix_source\), which "
                    r"cannot be imported: (ModuleNotFound|Import)Error", out.getvalue())
    out = io.StringIO()
    assert run_verify(True, out=out) == 2
    assert json.loads(out.getvalue())["exit_code"] == 2


def test_verify_rejects_a_select_that_matches_nothing():
    out = io.StringIO()
    assert run_verify(out=out, select=["FRK999"]) == 2
    assert out.getvalue().strip() == "forksafe: error: no runtime fixture matches --select FRK999"


def test_verify_judges_cells():
    meta = {"EXPECT": {"fork": ("flagged", "differs"), "spawn": "fails", "forkserver": "any"},
            "EXPECT_MATCH": {"spawn": r"cannot pickle 'BufferedReader' object"},
            "EXPECT_FINDINGS": {"fork": ["inherited_fd"]}}
    res = _case(fork="flagged", spawn="fails", forkserver="ok")
    res["fork"].findings = [Finding("inherited_fd", "shared")]
    res["spawn"].error = ErrorInfo("TypeError", "cannot pickle '_io.BufferedReader' object")
    assert judge_unsafe(meta, res, "fork").text() == "confirmed (flagged)"
    assert judge_unsafe(meta, res, "spawn").text() == "confirmed (fails)"
    assert judge_unsafe(meta, res, "forkserver").text() == "- (ok)"
    res["spawn"].error = ErrorInfo("TypeError", "cannot pickle 'Environment' object")
    assert judge_unsafe(meta, res, "spawn").text() == "not confirmed (fails)"
    res["fork"].findings = [Finding("parent_offset_moved", "moved")]
    assert judge_unsafe(meta, res, "fork").text() == "not confirmed (flagged)"
    res["fork"].notes = ["inherited-descriptor probe unavailable: no /proc and no kcmp on this system"]
    assert judge_unsafe(meta, res, "fork").text() == "not run"
    assert judge_fixed(_case(spawn="ok"), "spawn").text() == "confirmed (ok)"
    assert judge_fixed(_case(spawn="flagged"), "spawn").text() == "not confirmed (flagged)"
    assert judge_fixed(_case(spawn="not run"), "spawn").text() == "not run"
    assert judge_fixed(_case(), "spawn").text() == "not confirmed (error)"


def test_docs_describe_the_public_api():
    doc = (ROOT / "docs" / "harness.md").read_text()
    for name in ("check_dataset", "check_module", "check_script", "assert_dataloader_safe", "forksafe.check",
                 "forksafe verify", "build_data", "make_dataset", "make_loader", "not run", "flagged"):
        assert name in doc, name
    assert Path(ROOT / "flake8_forksafe" / "harness" / "verify.py").is_file()


@pytest.mark.parametrize("message", [
    "cannot pickle '_io.BufferedReader' object",     # Python 3.9-3.11
    "cannot pickle 'BufferedReader' instances",      # Python 3.12+
])
def test_expectations_match_the_meaning_on_every_python(message):
    """A fixture's EXPECT_MATCH names the type and object; each Python's wording of it is confirmed."""
    meta = {"EXPECT": {"spawn": "fails"}, "EXPECT_MATCH": {"spawn": r"TypeError: cannot pickle 'BufferedReader' object"}}
    res = _case(spawn="fails")
    res["spawn"].error = ErrorInfo("TypeError", message)
    assert judge_unsafe(meta, res, "spawn").text() == "confirmed (fails)"
    res["spawn"].error = ErrorInfo("TypeError", message.replace("BufferedReader", "TextIOWrapper"))
    assert judge_unsafe(meta, res, "spawn").text() == "not confirmed (fails)"


def test_canonical_error_forms():
    from flake8_forksafe.harness.verify import canonical_error

    assert canonical_error("TypeError: cannot pickle 'TextIOWrapper' instances") == \
        "TypeError: cannot pickle 'TextIOWrapper' object"
    assert canonical_error("TypeError: cannot pickle '_thread.lock' object") == \
        "TypeError: cannot pickle '_thread.lock' object"
    assert canonical_error("_pickle.PicklingError: Can't pickle local object <function f.<locals>.<lambda> at "
                           "0x7f00ab>") == "PicklingError: Can't pickle local object 'f.<locals>.<lambda>'"


@pytest.mark.parametrize("probe, why", [
    ("import time; time.sleep(60)", r"try 1: timeout: no answer within 1 s; try 2: timeout: no answer within 2 s"),
    ("print('not json')", r"try 1: unparseable output: 'not json'; try 2: unparseable output"),
    ("import forksafe_no_such_module_xyz", r"try 1: import error: exit status 1: ModuleNotFoundError: No module "
                                           r"named 'forksafe_no_such_module_xyz'; try 2: import error"),
])
def test_device_probe_says_why_it_failed_after_one_retry(monkeypatch, probe, why):
    from flake8_forksafe.harness import device

    monkeypatch.setattr(device, "_PROBE", probe)
    device.detect_device.cache_clear()
    try:
        info = device.detect_device(timeout=1.0)
    finally:
        device.detect_device.cache_clear()
    assert info.kind == "unknown" and info.failed and not info.accelerator
    assert re.match(why, info.error), info.error
    assert str(info).startswith("unknown device (the device probe failed: try 1: ")


def test_verify_refuses_to_claim_cpu_when_the_probe_failed(monkeypatch):
    from flake8_forksafe.harness import device

    monkeypatch.setattr(device, "detect_device", lambda *a, **k: device.DeviceInfo("unknown", error="try 1: x; try 2: y"))
    out = io.StringIO()
    assert run_verify(out=out, select=["FRK201"]) == 2
    assert re.fullmatch(r"forksafe verify: 2 runtime fixtures on an UNKNOWN device: the device probe failed twice "
                        r"\(try 1: x; try 2: y\); nothing was run \(a GPU runner must not be reported as cpu\)\n",
                        out.getvalue()), out.getvalue()
    out = io.StringIO()
    assert run_verify(True, out=out, select=["FRK201"]) == 2
    doc = json.loads(out.getvalue())
    assert doc["exit_code"] == 2 and doc["runner"]["device"] == "unknown"


@requires_torch
def test_a_run_that_times_out_is_rerun_once_then_reported_as_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKSAFE_TIMEOUT_SCALE", "0.02")  # setup allowance 1.2 s
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(120)\n")
    res = check_script(script, contexts=["fork"], timeout=1)
    c = res["fork"]
    assert c.verdict == "timeout" and c.attempts == 2 and c.timed_out, str(res)
    assert re.fullmatch(r"the script did not finish within 1\.6 s, twice \(limits scale with this machine's "
                        r"start-up time, x0\.02 now\)", c.reason), c.reason
    assert not res.safe


@requires_torch
def test_a_run_that_times_out_once_keeps_its_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKSAFE_TIMEOUT_SCALE", "0.02")
    marker = tmp_path / "first"
    script = tmp_path / "slow_once.py"
    script.write_text("import os, sys, time\n"
                      f"m = {str(marker)!r}\n"
                      "if not os.path.exists(m):\n    open(m, 'w').close()\n    time.sleep(120)\n"
                      "print('done')\n")
    res = check_script(script, contexts=["fork"], timeout=5)
    c = res["fork"]
    assert c.verdict == "ok" and c.attempts == 2, str(res)
    assert c.notes == ["the first run timed out (the script did not finish within 5.6 s); this is the rerun"]


@requires_torch
@pytest.mark.parametrize("launch", ["boot", "python"])
def test_a_script_fails_with_its_main_process_error_not_a_later_child_line(tmp_path, launch):
    """A child process that writes an error line to the shared stderr after the parent's traceback (a
    second DataLoader worker dying after the parent gave up, under load) does not become the script's
    error: the launcher records the main process's own exception."""
    script = tmp_path / "late_child.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import sys
        import time

        def late():
            time.sleep(1.5)
            sys.stderr.write("ValueError: a child's error, written last\\n")

        if __name__ == "__main__":
            mp.get_context("fork").Process(target=late).start()
            raise RuntimeError("the parent's error")
    """))
    res = check_script(script, contexts=["fork"], launch=launch)
    c = res["fork"]
    assert c.verdict == "fails", str(res)
    assert (c.error.type, c.error.message) == ("RuntimeError", "the parent's error"), str(res)
