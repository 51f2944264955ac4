"""Run the detection and fix tests on every Python this machine has (pyenv builds beside the system one).

For each Python (3.9 and newer; ``--pythons 3.9,3.13`` to choose), a virtual environment
``benchmarks/.venv-pyX.Y`` (git-ignored, reused) gets the project and the test tools without torch,
and pytest runs the detection and fix tests there. Tests that need torch skip. One line per Python:

    python benchmarks/pythons.py                    # every pyenv Python 3.9+ and this one
    python benchmarks/pythons.py --pythons 3.9,3.13 --jobs 2
    python benchmarks/pythons.py --fresh            # rebuild the environments

A Python that is not installed gets one line and is skipped. Exit status: 0 when every Python that ran
passed, 1 when some test failed, 2 when an environment could not be built.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
# The detection and fix tests: per-rule detection and fixes, the fixture corpus (expected findings and
# fixed files), rule-page examples, fix properties, the pre-filter, slicing, bad input, the CLI, and
# FRK401's name facts (CPython's symbol table, whose scopes change between versions, against libcst's).
TESTS = [
    "tests/rules",
    "tests/test_main_guard_names.py",
    "tests/test_fixtures.py",
    "tests/test_rule_examples.py",
    "tests/test_fix_properties.py",
    "tests/test_prefilter.py",
    "tests/test_slicing.py",
    "tests/test_bad_input.py",
    "tests/test_cli.py",
]
PACKAGES = ["pytest>=7", "pytest-xdist>=3", "hypothesis>=6", "hypothesmith>=0.3"]
MIN = (3, 9)


def pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def find_pythons() -> Dict[str, str]:
    """``{"3.9": "/root/.pyenv/versions/3.9.18/bin/python3.9", ...}``: the newest build of each minor."""
    found: Dict[str, str] = {}
    versions = pyenv_root() / "versions"
    if versions.is_dir():
        for d in sorted(versions.iterdir(), key=lambda p: [int(x) if x.isdigit() else 0 for x in p.name.split(".")]):
            m = re.fullmatch(r"(\d+)\.(\d+)\.\d+", d.name)
            if not m or (int(m.group(1)), int(m.group(2))) < MIN:
                continue
            exe = d / "bin" / f"python{m.group(1)}.{m.group(2)}"
            if exe.exists():
                found[f"{m.group(1)}.{m.group(2)}"] = str(exe)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if here not in found:
        base = getattr(sys, "_base_executable", None) or sys.executable
        found[here] = base
    return found


def _minor_key(v: str) -> tuple:
    return tuple(int(x) for x in v.split("."))


def build_env(version: str, exe: str, fresh: bool) -> Optional[Path]:
    venv = ROOT / "benchmarks" / f".venv-py{version}"
    py = venv / "bin" / "python"
    stamp = venv / ".forksafe-ready"
    if fresh and venv.exists():
        shutil.rmtree(venv)
    if stamp.exists() and py.exists():
        return py
    steps = [[exe, "-m", "venv", str(venv)],
             [str(py), "-m", "pip", "install", "-q", "-e", str(ROOT), *PACKAGES]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            last = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip() and "is ignored" not in ln]
            print(f"python {version}: could not build the environment ({' '.join(cmd[:3])} ...): "
                  f"{last[-1] if last else 'exit ' + str(r.returncode)}")
            return None
    stamp.write_text("ok\n")
    return py


def summary_counts(text: str) -> Dict[str, int]:
    """``{"passed": 900, "skipped": 12, ...}`` from pytest's last summary line."""
    counts: Dict[str, int] = {}
    lines = [ln for ln in text.splitlines() if re.search(r"\b(passed|failed|error|skipped|no tests ran)\b", ln)]
    for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)", lines[-1] if lines
                              else ""):
        counts["errors" if word.startswith("error") else word] = int(n)
    return counts


def run_tests(version: str, py: Path, jobs: int, extra: List[str]) -> int:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    t0 = time.monotonic()
    c0 = os.times()
    cmd = [str(py), "-m", "pytest", "-q", "-n", str(jobs), *TESTS, *extra]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    c1 = os.times()
    wall = time.monotonic() - t0
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    out = r.stdout + r.stderr
    counts = summary_counts(out)
    shown = ", ".join(f"{v} {k}" for k, v in counts.items()) or "no summary"
    real = subprocess.run([str(py), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True).stdout.strip()
    print(f"python {real or version}: {shown} (exit {r.returncode}, {wall:.0f} s wall, {cpu:.0f} s CPU)")
    if r.returncode not in (0, 5):
        for ln in out.splitlines():
            if ln.startswith(("FAILED", "ERROR")):
                print(f"  {ln}")
    return r.returncode


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pythons", default="", help="comma-separated minor versions (default: every one found, 3.9+)")
    ap.add_argument("--jobs", "-n", type=int, default=2, help="pytest-xdist workers per run (default 2)")
    ap.add_argument("--fresh", action="store_true", help="rebuild the virtual environments")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    a = ap.parse_args(argv)
    found = find_pythons()
    wanted = [v.strip() for v in a.pythons.split(",") if v.strip()] or sorted(found, key=_minor_key)
    status = 0
    for v in wanted:
        exe = found.get(v)
        if exe is None:
            print(f"python {v}: not installed here (pyenv versions lists {', '.join(sorted(found, key=_minor_key))}); "
                  f"skipped")
            continue
        py = build_env(v, exe, a.fresh)
        if py is None:
            status = max(status, 2)
            continue
        rc = run_tests(v, py, a.jobs, a.pytest_args)
        if rc not in (0, 5):
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
