"""Fixes keep behaviour: every program under ``programs/FRKxxx/`` (a file, or a directory whose
``main.py`` imports its other modules) is run before and after ``forksafe fix --unsafe-fixes`` and
the two standard outputs must be equal.

Both versions run in ONE interpreter (torch imported once) with every DataLoader forced to
``num_workers=0`` (the worker-only options dropped): what the program computes must not change.
For FRK401-FRK403 the plain scripts also run as they are, real workers and start methods included:
the fixed script must print the same.
The unsafe fixes (FRK301 CPU instead of CUDA, FRK404 spawn instead of fork, FRK601/FRK602 per-worker
streams) change what they are meant to change; their programs print what must stay the same (the set
of items, shapes, dtypes, counts), as the first line of each program says.

A program must really exercise its rule: its rule's finding is fixable before, gone after.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from tests.conftest import tool
from tests.helpers import ran

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(
    p for p in (HERE / "programs").glob("FRK*/*") if (p.suffix == ".py" or (p / "main.py").exists())
)
SCRIPT_RULES = ("FRK401", "FRK402", "FRK403")
CFG = Config(select=("FRK", "FRK501"))

# programs whose fix still changes what they do: strict, so the day it stops the test says so
# programs whose fix is known to change behaviour (strict: a fix that starts keeping it fails the test)
XFAIL: dict = {}

RUNNER = r"""
import contextlib, io, json, multiprocessing, os, random, runpy, sys, traceback
import numpy as np
import torch
import torch.utils.data as tud

_init = tud.DataLoader.__init__

def _in_process(self, *args, **kw):
    kw["num_workers"] = 0
    for k in ("persistent_workers", "prefetch_factor", "multiprocessing_context", "timeout"):
        kw.pop(k, None)
    _init(self, *args, **kw)

tud.DataLoader.__init__ = _in_process

def run(directory):
    main = os.path.join(directory, "main.py")
    cwd = os.getcwd()
    sys.path.insert(0, directory)
    os.chdir(directory)
    random.seed(0); np.random.seed(0); torch.manual_seed(0)
    multiprocessing.context._default_context._actual_context = None
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(main, run_name="__main__")
    except BaseException as exc:
        out.write("EXCEPTION %s: %s\n" % (type(exc).__name__, exc))
    finally:
        os.chdir(cwd)
        sys.path.remove(directory)
        for name, mod in list(sys.modules.items()):
            if os.path.dirname(os.path.abspath(getattr(mod, "__file__", None) or "/")) == directory:
                del sys.modules[name]
    return out.getvalue()

print(json.dumps([run(os.path.abspath(d)) for d in sys.argv[1:]]))
"""


def _copy(program: Path, dest: Path) -> Path:
    if program.is_dir():
        shutil.copytree(program, dest, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        dest.mkdir()
        shutil.copy(program, dest / "main.py")
    return dest


def _codes(directory: Path):
    out = []
    for f in sorted(directory.glob("*.py")):
        out += [(f.name, x.code, x.fix) for x in check_source(f.read_text(), str(f), CFG)]
    return out


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.stem if p.suffix == '.py' else p.name}"


@pytest.mark.parametrize(
    "program",
    [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=XFAIL[_id(p)])) if _id(p) in XFAIL else p
     for p in PROGRAMS],
    ids=[_id(p) for p in PROGRAMS],
)
def test_fix_keeps_behaviour(program: Path, tmp_path: Path, run_env):
    rule = program.parent.name
    before = _copy(program, tmp_path / "before")
    after = _copy(program, tmp_path / "after")
    found = [c for c in _codes(before) if c[1] == rule]
    assert found and all(fix for _, _, fix in found), f"{rule} is not fixable in this program: {_codes(before)}"
    res = subprocess.run(
        [tool("forksafe"), "fix", "--unsafe-fixes", "--extend-select", "FRK501", "--no-cache", str(after)],
        capture_output=True, text=True, env=run_env, timeout=120,
    )
    ran(res)
    assert not [c for c in _codes(after) if c[1] == rule], _codes(after)

    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(before), str(after)],
        capture_output=True, text=True, env=run_env, timeout=240, cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out_before, out_after = json.loads(proc.stdout.splitlines()[-1])
    assert "EXCEPTION" not in out_before and out_before.strip(), out_before
    assert out_after == out_before

    if rule in SCRIPT_RULES:
        # the plain scripts, real workers and start methods included: the fixed one prints what the
        # program printed in-process, and so does FRK401's unfixed one (fork workers); FRK402/FRK403's
        # unfixed ones are not run: their spawned workers die re-running `set_start_method` (the hazard)
        for d in (after, before) if rule == "FRK401" else (after,):
            p = subprocess.run(
                [sys.executable, "main.py"], capture_output=True, text=True, env=run_env, timeout=240, cwd=str(d)
            )
            assert (p.returncode, p.stdout) == (0, out_before), (d.name, p.stderr[-2000:])
