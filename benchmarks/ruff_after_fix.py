"""Fixed code against the linters users already run: the README example (docs/examples/) and every
fixture go through `forksafe fix` (unsafe fixes included, as the fixture tests do), then
`ruff check --select E,W,F,I` and `ruff format --check` run on input and output. Prints the ruff
findings the fix added (0 expected), per file and code, and the lines the handle fix (FRK101 alone)
adds to the README example.

    python benchmarks/ruff_after_fix.py [--ruff PATH] [--pythonpath DIR]

--pythonpath runs another checkout's forksafe (e.g. main's, for a before/after comparison).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sources() -> list:
    out = sorted((ROOT / "docs" / "examples").glob("*.py"))
    out += sorted(p for p in (ROOT / "fixtures").glob("FRK*/*.py") if not p.name.endswith(".fixed.py"))
    out += sorted((ROOT / "fixtures" / "runtime").glob("*.py"))
    return out


def ruff_findings(ruff: str, files: list) -> collections.Counter:
    """(file name, code) -> count, for ruff check E,W,F,I and (as code FORMAT) ruff format --check."""
    got: collections.Counter = collections.Counter()
    r = subprocess.run(
        [ruff, "check", "--isolated", "--no-cache", "--select", "E,W,F,I", "--output-format", "json", *files],
        capture_output=True,
        text=True,
    )
    for f in json.loads(r.stdout or "[]"):
        got[(Path(f["filename"]).name, f["code"] or "syntax")] += 1
    r = subprocess.run([ruff, "format", "--isolated", "--no-cache", "--check", *files], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("Would reformat: "):
            got[(Path(line[len("Would reformat: ") :]).name, "FORMAT")] += 1
    return got


def forksafe(pythonpath: str, args: list, cwd: str) -> None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ruff", default=shutil.which("ruff") or str(Path(sys.executable).with_name("ruff")))
    ap.add_argument("--pythonpath", default="", help="a checkout whose forksafe to run (default: the installed one)")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp, "before"), Path(tmp, "after")
        before.mkdir()
        after.mkdir()
        names = []
        for i, src in enumerate(sources()):
            name = f"{i:03d}_{src.parent.name}_{src.name}"
            shutil.copy(src, before / name)
            shutil.copy(src, after / name)
            names.append(name)
        forksafe(opts.pythonpath, ["fix", "--unsafe-fixes", "--select", "FRK,FRK501", "."], str(after))
        old = ruff_findings(opts.ruff, [str(before / n) for n in names])
        new = ruff_findings(opts.ruff, [str(after / n) for n in names])
        changed = sum((before / n).read_text() != (after / n).read_text() for n in names)
        added = {k: v - old.get(k, 0) for k, v in new.items() if v > old.get(k, 0)}
        print(f"files: {len(names)}, changed by fix: {changed}")
        print(f"ruff findings before fix: {sum(old.values())}, after: {sum(new.values())}")
        by_code = collections.Counter()
        for (name, code), n in sorted(added.items()):
            by_code[code] += n
            print(f"  new {code} x{n}: {name}")
        print(f"new ruff findings after fix: {sum(added.values())} {dict(by_code)}")

        example = ROOT / "docs" / "examples" / "train_lmdb.py"
        one = Path(tmp, "example")
        one.mkdir()
        shutil.copy(example, one / example.name)
        forksafe(opts.pythonpath, ["fix", "--select", "FRK101", example.name], str(one))
        n_before = len(example.read_text().splitlines())
        n_after = len((one / example.name).read_text().splitlines())
        print(f"README example, FRK101 fix alone: {n_before} -> {n_after} lines (+{n_after - n_before})")
    return 1 if added else 0


if __name__ == "__main__":
    sys.exit(main())
