"""``forksafe verify``: prove every hazard and every fix with real DataLoader workers on this runner.

For each runtime fixture (``fixtures/runtime/*.py``: an unsafe dataset or script as users write it), the
live autofixer (``flake8_forksafe.fix.fix_source``, unsafe fixes on) produces the fixed version; both run
through the harness under fork, spawn and forkserver. Each cell of the matrix rule x start method x
device is

* ``confirmed``: the unsafe version shows the hazard the fixture expects (or the expected ``ok``, e.g.
  a lambda under fork), the fixed version passes;
* ``not confirmed``: anything else (exit status 1);
* ``not run``: this runner cannot run it (no CUDA device for an FRK3xx fixture, start method missing).

Exit status: 0 all confirmed or not run, 1 something not confirmed, 2 verify could not run (no fixer,
no fixtures, bad ``--select``).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from flake8_forksafe.harness.results import CONTEXTS, ERROR, NOT_RUN, OK, CaseResult
from flake8_forksafe.harness.runner import HarnessError, check_fixture, fixture_meta

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
NOT_RUN_CELL = "not run"
NO_CLAIM = "-"  # EXPECT says "any": observed, not judged

ACCELERATORS = ("cuda", "rocm")


def fixtures_dir() -> Optional[Path]:
    """``$FORKSAFE_FIXTURES_DIR``, else ``fixtures/runtime`` of the source tree, else the copy shipped in
    the package (``flake8_forksafe/_fixtures/runtime``)."""
    env = os.environ.get("FORKSAFE_FIXTURES_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "fixtures" / "runtime", here / "_fixtures" / "runtime"):
        if cand.is_dir():
            return cand
    return None


def discover(folder: Path, select: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    metas = [fixture_meta(p) for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")]
    if select:
        sel = [s.strip() for s in select if s.strip()]
        metas = [m for m in metas if any(str(m["RULE"]).startswith(s) or m["name"] == s for s in sel)]
    return metas


@dataclass
class Cell:
    status: str
    verdict: str = ""
    summary: str = ""

    def text(self) -> str:
        if self.status in (CONFIRMED, NOT_CONFIRMED, NO_CLAIM) and self.verdict:
            return f"{self.status} ({self.verdict})"
        return self.status


@dataclass
class Row:
    name: str
    rule: str
    device: str
    fix: Dict[str, Any] = field(default_factory=dict)
    cells: Dict[str, Dict[str, Cell]] = field(default_factory=dict)  # version -> context -> cell
    results: Dict[str, Optional[Dict[str, Any]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)


def _expected(meta: Dict[str, Any], ctx: str) -> Tuple[str, ...]:
    exp = (meta.get("EXPECT") or {}).get(ctx, "ok")
    return tuple(exp) if isinstance(exp, (list, tuple)) else (exp,)


def judge_unsafe(meta: Dict[str, Any], res: CaseResult, ctx: str) -> Cell:
    try:
        c = res[ctx]
    except KeyError:
        return Cell(NOT_CONFIRMED, ERROR, res.error or "no result")
    if c.verdict == NOT_RUN:
        return Cell(NOT_RUN_CELL, c.verdict, c.summary())
    exp = _expected(meta, ctx)
    if "any" in exp:
        return Cell(NO_CLAIM, c.verdict, c.summary())
    ok = c.verdict in exp
    pattern = (meta.get("EXPECT_MATCH") or {}).get(ctx)
    if ok and pattern:
        text = f"{c.error}" if c.error else c.summary()
        ok = re.search(pattern, text) is not None
    want = (meta.get("EXPECT_FINDINGS") or {}).get(ctx) or []
    if "inherited_fd" in want and any("probe unavailable" in n for n in c.notes):
        return Cell(NOT_RUN_CELL, c.verdict, "inherited-descriptor probe unavailable on this system")
    if ok and want:
        kinds = {f.kind for f in c.findings}
        ok = all(k in kinds for k in want)
    return Cell(CONFIRMED if ok else NOT_CONFIRMED, c.verdict, c.summary())


def judge_fixed(res: CaseResult, ctx: str) -> Cell:
    try:
        c = res[ctx]
    except KeyError:
        return Cell(NOT_CONFIRMED, ERROR, res.error or "no result")
    if c.verdict == NOT_RUN:
        return Cell(NOT_RUN_CELL, c.verdict, c.summary())
    return Cell(CONFIRMED if c.verdict == OK else NOT_CONFIRMED, c.verdict, c.summary())


def _codes(findings: Iterable[Any]) -> List[str]:
    out = []
    for f in findings or ():
        code = getattr(f, "code", None) or (f.get("code") if isinstance(f, dict) else None) or str(f)
        out.append(str(code))
    return out


def _verify_one(meta: Dict[str, Any], fix_source: Any, contexts: List[str], tmp: Path) -> Row:
    path = Path(meta["path"])
    devices = tuple(meta.get("DEVICES") or ("cpu",))
    device = "cuda" if any(d in ACCELERATORS for d in devices) else "cpu"
    row = Row(meta["name"], str(meta["RULE"]), device)
    src = path.read_text(encoding="utf-8")
    fixed_path: Optional[Path] = None
    try:
        fr = fix_source(src, path=path.name, unsafe=True)
        fixed_src = fr.source if isinstance(fr.source, str) else fr.source.decode("utf-8")
        row.fix = {"changed": fixed_src != src, "fixed": _codes(getattr(fr, "fixed", [])),
                   "remaining": _codes(getattr(fr, "remaining", [])), "errors": list(getattr(fr, "errors", []) or [])}
        if fixed_src == src:
            row.notes.append("the autofixer changed nothing")
        elif row.rule in row.fix["remaining"]:
            row.notes.append(f"{row.rule} remains after fixing")
        folder = tmp / meta["name"]
        folder.mkdir(parents=True, exist_ok=True)
        fixed_path = folder / path.name
        fixed_path.write_text(fixed_src, encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - a fixer crash is a verify result, not a verify crash
        row.fix = {"changed": False, "fixed": [], "remaining": [], "errors": [f"{type(exc).__name__}: {exc}"]}
        row.notes.append(f"the autofixer raised {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")

    def run(p: Path) -> Optional[CaseResult]:
        try:
            return check_fixture(p, contexts=contexts)
        except HarnessError as exc:
            row.notes.append(f"{p.name}: {exc}")
            return None

    unsafe = run(path)
    fixed = run(fixed_path) if fixed_path is not None else None
    row.results = {"unsafe": unsafe.to_dict() if unsafe else None, "fixed": fixed.to_dict() if fixed else None}
    runner_device = (unsafe or fixed).device if (unsafe or fixed) else "cpu"
    gpu_missing = device != "cpu" and runner_device not in ACCELERATORS
    for version, res in (("unsafe", unsafe), ("fixed", fixed)):
        cells: Dict[str, Cell] = {}
        for ctx in contexts:
            if gpu_missing:
                cells[ctx] = Cell(NOT_RUN_CELL, "", "no CUDA/ROCm device on this runner")
            elif res is None:
                cells[ctx] = Cell(NOT_CONFIRMED, ERROR, "could not be run")
            else:
                cells[ctx] = judge_unsafe(meta, res, ctx) if version == "unsafe" else judge_fixed(res, ctx)
        row.cells[version] = cells
    if gpu_missing:
        if unsafe is not None:
            where = [f.detail.get("where") for f in unsafe.findings if f.kind == "parent_cuda_init"]
            row.notes.append("unsafe: " + (f"the parent initialises CUDA at {where[0]} (torch.cuda._lazy_init hook)"
                                           if where else "no CUDA initialisation seen in the parent"))
        if fixed is not None:
            cuda = any(f.kind == "parent_cuda_init" for f in fixed.findings)
            passed = [c.context for c in fixed.contexts if c.passed]
            note = "the parent still initialises CUDA" if cuda else "no CUDA initialisation in the parent"
            if passed:
                note += "; passes on cpu under " + ", ".join(passed)
            row.notes.append("fixed: " + note)
    return row


def _render(rows: List[Row], contexts: List[str], head: List[str], out: TextIO) -> None:
    cols = ["rule", "fixture", "device", "version"] + contexts
    table: List[List[str]] = []
    for r in rows:
        for i, version in enumerate(("unsafe", "fixed")):
            cells = r.cells.get(version, {})
            first = [r.rule, r.name, r.device] if i == 0 else ["", "", ""]
            table.append(first + [version] + [cells[c].text() if c in cells else "" for c in contexts])
    widths = [max(len(cols[j]), *(len(t[j]) for t in table)) if table else len(cols[j]) for j in range(len(cols))]
    for line in head:
        print(line, file=out)
    print("", file=out)
    print("  ".join(c.ljust(widths[j]) for j, c in enumerate(cols)).rstrip(), file=out)
    for t in table:
        print("  ".join(x.ljust(widths[j]) for j, x in enumerate(t)).rstrip(), file=out)
    details = []
    for r in rows:
        for version in ("unsafe", "fixed"):
            for ctx, cell in r.cells.get(version, {}).items():
                if cell.status == NOT_CONFIRMED:
                    summary = cell.summary[len(ctx) + 2:] if cell.summary.startswith(f"{ctx}: ") else cell.summary
                    details.append(f"  {r.name} {version} {ctx}: {summary}")
        for n in r.notes:
            details.append(f"  {r.name}: {n}")
    if details:
        print("\ndetails:", file=out)
        for d in details:
            print(d, file=out)


def _counts(rows: List[Row]) -> Dict[str, int]:
    counts = {CONFIRMED: 0, NOT_CONFIRMED: 0, NOT_RUN_CELL: 0, NO_CLAIM: 0}
    for r in rows:
        for cells in r.cells.values():
            for cell in cells.values():
                counts[cell.status] = counts.get(cell.status, 0) + 1
    return counts


def run_verify(argv_json: bool = False, out: Optional[TextIO] = None, select: Optional[Sequence[str]] = None, *,
               contexts: Sequence[str] = CONTEXTS, jobs: Optional[int] = None,
               fixtures: Optional[Path] = None) -> int:
    """Run the verify matrix; print it (``argv_json``: as JSON) to ``out``; return the exit status."""
    out = out or sys.stdout

    def fail(msg: str) -> int:
        if argv_json:
            print(json.dumps({"error": msg, "exit_code": 2}), file=out)
        else:
            print(f"forksafe: error: {msg}", file=out if out is not sys.stdout else sys.stderr)
        return 2

    try:
        from flake8_forksafe.fix import fix_source
    except Exception as exc:  # noqa: BLE001 - ImportError, or a half-written fixer module
        return fail(f"verify needs the autofixer (flake8_forksafe.fix.fix_source), which cannot be imported: "
                    f"{type(exc).__name__}: {exc}")
    folder = Path(fixtures) if fixtures is not None else fixtures_dir()
    if folder is None or not folder.is_dir():
        return fail("no runtime fixtures found (set FORKSAFE_FIXTURES_DIR to the fixtures/runtime folder)")
    try:
        metas = discover(folder, select)
    except HarnessError as exc:
        return fail(str(exc))
    if not metas:
        return fail(f"no runtime fixture matches --select {','.join(select or [])}" if select else
                    f"no runtime fixtures in {folder}")
    ctxs = list(contexts)
    if jobs is None:
        jobs = int(os.environ.get("FORKSAFE_VERIFY_JOBS", "0") or 0) or max(1, (os.cpu_count() or 2) // 2)
    tmp = Path(tempfile.mkdtemp(prefix="forksafe-verify-"))
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            rows = list(ex.map(lambda m: _verify_one(m, fix_source, ctxs, tmp), metas))
    except HarnessError as exc:
        return fail(str(exc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = _counts(rows)
    code = 1 if counts[NOT_CONFIRMED] else 0
    ran = [r.results[v] for r in rows for v in ("unsafe", "fixed") if r.results.get(v)]
    runner = ran[0]["device"] if ran else "cpu"
    torch_version = ran[0].get("torch", "") if ran else ""
    if argv_json:
        doc = {
            "runner": {"device": runner, "torch": torch_version, "python": platform.python_version(),
                       "platform": sys.platform},
            "contexts": ctxs,
            "fixtures": [{"name": r.name, "rule": r.rule, "device": r.device, "fix": r.fix, "notes": r.notes,
                          "cells": {v: {c: asdict(cell) for c, cell in cells.items()} for v, cells in r.cells.items()},
                          "results": r.results} for r in rows],
            "summary": counts,
            "exit_code": code,
        }
        print(json.dumps(doc, indent=2, default=str), file=out)
        return code
    head = [f"forksafe verify: {len(rows)} runtime fixtures on {runner} (torch {torch_version or '?'}, Python "
            f"{platform.python_version()}), start methods {', '.join(ctxs)}",
            "fixed versions: flake8_forksafe.fix.fix_source (live, unsafe fixes on)"]
    _render(rows, ctxs, head, out)
    extra = f", {counts[NO_CLAIM]} observed without a claim" if counts[NO_CLAIM] else ""
    print(f"\nsummary: {counts[CONFIRMED]} confirmed, {counts[NOT_CONFIRMED]} not confirmed, "
          f"{counts[NOT_RUN_CELL]} not run{extra}", file=out)
    return code


def main(argv: Optional[Sequence[str]] = None) -> int:  # pragma: no cover - `python -m` convenience
    import argparse

    p = argparse.ArgumentParser(prog="forksafe verify")
    p.add_argument("--json", action="store_true")
    p.add_argument("--select", default="")
    a = p.parse_args(argv)
    sel = [s for s in a.select.split(",") if s.strip()] or None
    return run_verify(a.json, select=sel)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
