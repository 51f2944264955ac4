"""`forksafe check --add-noqa` on the real-world corpus (benchmarks/.realworld/src/<package>/, built by
benchmarks/realworld): each package is COPIED to a temporary folder (the corpus is never modified),
then per package:

1. `forksafe check` (JSON): the findings before;
2. `forksafe check --add-noqa`: the comments added, the findings it could not baseline (stderr);
3. `forksafe check`: the findings left (0 expected);
4. `--add-noqa` again: the tree must be byte-identical (idempotent);
5. every file the baseline changed still compiles, and each of its changed lines is the old line with a
   comment added or extended (nothing else moved).

    python benchmarks/addnoqa_realworld.py [--src DIR] [--only PKG,...] [--pythonpath DIR]

Prints one line per package and the totals; exits 1 when a package keeps findings, changes on the
second run, or has a changed line that is more than a comment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT / "benchmarks" / ".realworld" / "src"


def forksafe(args: List[str], pythonpath: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "check", "--no-cache", *args],
        capture_output=True, text=True, env=env,
    )


def findings(tree: Path, pythonpath: str) -> Tuple[List[dict], str]:
    r = forksafe(["--format", "json", "--exit-zero", str(tree)], pythonpath)
    try:
        return json.loads(r.stdout or "[]"), r.stderr
    except ValueError:
        return [], f"unreadable JSON output (exit {r.returncode}): {r.stderr.strip()[:300]}"


def snapshot(tree: Path) -> Dict[str, str]:
    out = {}
    for p in sorted(tree.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(tree))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def only_comments_added(old: bytes, new: bytes) -> List[str]:
    """Problems with a baselined file: it does not compile, or a line changed by more than a comment."""
    problems = []
    try:
        compile(new, "<baselined>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        problems.append(f"does not compile: {exc}")
    a, b = old.splitlines(), new.splitlines()
    if len(a) != len(b):
        return problems + [f"line count {len(a)} -> {len(b)}"]
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x == y:
            continue
        code = x.split(b"#", 1)[0].rstrip() if b"#" in x else x.rstrip()
        if not y.startswith(code) or b"# noqa" not in y[len(code):]:
            problems.append(f"line {i} changed by more than a comment: {x[:80]!r} -> {y[:80]!r}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(DEFAULT_SRC), help="folder of package sources (default: %(default)s)")
    ap.add_argument("--only", default="", help="comma-separated package names")
    ap.add_argument("--pythonpath", default="", help="a checkout whose forksafe to run (default: the installed one)")
    opts = ap.parse_args()
    src = Path(opts.src)
    if not src.is_dir():
        print(f"no corpus at {src}: build it with benchmarks/realworld first", file=sys.stderr)
        return 2
    pkgs = sorted(p for p in src.iterdir() if p.is_dir())
    if opts.only:
        wanted = set(opts.only.split(","))
        pkgs = [p for p in pkgs if p.name in wanted]
    bad = 0
    totals = dict(files=0, before=0, added=0, skipped=0, after=0, changed=0)
    print(f"{'package':26} {'py files':>8} {'findings':>8} {'noqa added':>10} {'files changed':>13} "
          f"{'not baselined':>13} {'left':>5} {'2nd run':>9} {'secs':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for pkg in pkgs:
            t0 = time.perf_counter()
            tree = Path(tmp, pkg.name)
            shutil.copytree(pkg, tree, symlinks=True)
            n_py = sum(1 for _ in tree.rglob("*.py"))
            pristine = {p: p.read_bytes() for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink()}
            before, err = findings(tree, opts.pythonpath)
            r = forksafe(["--add-noqa", str(tree)], opts.pythonpath)
            added = 0
            for line in r.stdout.splitlines():
                if line.startswith("Added "):
                    added = int(line.split()[1])
            skipped = [line for line in r.stderr.splitlines() if "not baselined" in line]
            errors = [line for line in r.stderr.splitlines() if "error" in line.lower() and "not baselined" not in line]
            after, err2 = findings(tree, opts.pythonpath)
            first = snapshot(tree)
            r2 = forksafe(["--add-noqa", str(tree)], opts.pythonpath)
            second = snapshot(tree)
            same = first == second
            changed = [p for p, data in pristine.items() if p.read_bytes() != data]
            problems = []
            for p in changed:
                problems += [f"{p.relative_to(tree)}: {x}" for x in only_comments_added(pristine[p], p.read_bytes())]
            ok = not after and same and not problems and not errors and r.returncode in (0, 1) and r2.returncode == 0
            bad += not ok
            print(f"{pkg.name:26} {n_py:8} {len(before):8} {added:10} {len(changed):13} {len(skipped):13} "
                  f"{len(after):5} {'same' if same else 'CHANGED':>9} {time.perf_counter() - t0:6.1f}")
            for line in (skipped + errors)[:10]:
                print(f"    {line.replace(tmp, '')}")
            for f in after[:10]:
                print(f"    left: {f.get('path')}:{f.get('line')} {f.get('code')}".replace(tmp, ''))
            for p in problems[:10]:
                print(f"    {p}")
            if r2.returncode != 0:
                print(f"    second --add-noqa exit {r2.returncode}: {r2.stdout.strip()} {r2.stderr.strip()[:300]}")
            totals["files"] += n_py
            totals["before"] += len(before)
            totals["added"] += added
            totals["skipped"] += len(skipped)
            totals["after"] += len(after)
            totals["changed"] += len(changed)
            shutil.rmtree(tree)
    print(f"{'total':26} {totals['files']:8} {totals['before']:8} {totals['added']:10} {totals['changed']:13} "
          f"{totals['skipped']:13} {totals['after']:5}")
    print(f"packages: {len(pkgs)}, not clean after --add-noqa or not idempotent: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
