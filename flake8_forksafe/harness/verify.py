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


class _Skip(Exception):
    pass


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


# Error wording that changed between Python versions, put in one canonical form before a fixture's
# EXPECT_MATCH is applied, so a fixture states the meaning (type and object), never one version's text:
#   3.9-3.11: TypeError: cannot pickle '_io.BufferedReader' object
#   3.12+:    TypeError: cannot pickle 'BufferedReader' instances
#   3.14:     Can't pickle local object <function make_loader.<locals>.<lambda> at 0x7f...>
#   3.9-3.13: Can't pickle local object 'make_loader.<locals>.<lambda>'
_CANONICAL = [
    (re.compile(r"cannot pickle '(?:_io\.)?([\w.]+)' (?:object|instances)"), r"cannot pickle '\1' object"),
    (re.compile(r"Can't (?:pickle|get) local object <function (\S+) at 0x[0-9a-fA-F]+>"),
     r"Can't pickle local object '\1'"),
    (re.compile(r"\b(?:_pickle|pickle)\.PicklingError\b"), "PicklingError"),
]


def canonical_error(text: str) -> str:
    """``text`` with version-specific wording replaced by the canonical form that fixtures match."""
    for rx, repl in _CANONICAL:
        text = rx.sub(repl, text)
    return text


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
        ok = re.search(pattern, canonical_error(text)) is not None
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


def _fix_config(rule: str) -> Any:
    """The fixer's configuration: its defaults, plus the fixture's rule (FRK501 is off by default)."""
    from flake8_forksafe.config import Config

    return Config(extend_select=(rule,))


def _verify_one(meta: Dict[str, Any], fix_source: Any, contexts: List[str], tmp: Path,
                runner_device: str = "cpu") -> Row:
    path = Path(meta["path"])
    devices = tuple(meta.get("DEVICES") or ("cpu",))
    device = "cuda" if any(d in ACCELERATORS for d in devices) else "cpu"
    row = Row(meta["name"], str(meta["RULE"]), device)
    src = path.read_text(encoding="utf-8")
    fixed_path: Optional[Path] = None
    hazard_only = meta.get("FIX", True) is False
    if hazard_only:
        # No automatic fix for this rule: the fixer must leave the file alone, and the "fixed" row runs the
        # hand-written version (fixtures/runtime/fixed/), what the rule's message tells users to do.
        by_hand = path.parent / "fixed" / path.name
        try:
            fr = fix_source(src, path=path.name, config=_fix_config(row.rule), unsafe=True)
            fixed_src = fr.source if isinstance(fr.source, str) else fr.source.decode("utf-8")
            row.fix = {"changed": fixed_src != src, "fixed": _codes(getattr(fr, "fixed", [])),
                       "remaining": _codes(getattr(fr, "remaining", [])), "errors": [], "by_hand": str(by_hand)}
            if fixed_src != src:
                row.notes.append(f"{row.rule} has no automatic fix, yet the autofixer changed this file")
        except Exception as exc:  # noqa: BLE001
            row.fix = {"changed": False, "fixed": [], "remaining": [], "errors": [f"{type(exc).__name__}: {exc}"]}
            row.notes.append(f"the autofixer raised {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        row.notes.append(f"hazard only: no automatic fix; the fixed row runs the hand-written fixed/{path.name}")
        if by_hand.is_file():
            fixed_path = by_hand
        else:
            row.notes.append(f"no hand-written fixed/{path.name}")
    try:
        if hazard_only:
            raise _Skip
        fr = fix_source(src, path=path.name, config=_fix_config(row.rule), unsafe=True)
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
    except _Skip:
        pass
    except Exception as exc:  # noqa: BLE001 - a fixer crash is a verify result, not a verify crash
        row.fix = {"changed": False, "fixed": [], "remaining": [], "errors": [f"{type(exc).__name__}: {exc}"]}
        row.notes.append(f"the autofixer raised {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")

    def run(p: Path) -> Optional[CaseResult]:
        try:
            return check_fixture(p, contexts=contexts)
        except HarnessError as exc:
            row.notes.append(f"{p.name}: {exc}")
            return None

    gpu_missing = device != "cpu" and runner_device not in ACCELERATORS
    # A CUDA script on a runner without CUDA/ROCm is not run at all: it could only fail for want of a GPU
    # (a dataset fixture still runs on the CPU: its parent-side CUDA initialisation is observed by a hook).
    skip_script = gpu_missing and meta.get("KIND") == "script"
    unsafe = None if skip_script else run(path)
    fixed = run(fixed_path) if fixed_path is not None and not skip_script else None
    row.results = {"unsafe": unsafe.to_dict() if unsafe else None, "fixed": fixed.to_dict() if fixed else None}
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
        if skip_script:
            row.notes.append("a CUDA script: not run, its cells need a CUDA/ROCm device (on this runner CUDA is "
                             "absent)")
        elif unsafe is not None:
            where = [f.detail.get("where") for f in unsafe.findings if f.kind == "parent_cuda_init"]
            row.notes.append("unsafe: " + (f"the parent initialises CUDA at {where[0]} (torch.cuda._lazy_init hook)"
                                           if where else "no CUDA initialisation seen in the parent"))
        if fixed is not None and fixed.kind != "script":
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
    from flake8_forksafe.harness.device import detect_device
    from flake8_forksafe.harness.runner import _scale

    dev = detect_device()
    if dev.failed:
        # Never claim "cpu" for a runner whose probe failed: its CUDA cells would turn into "not run".
        msg = (f"forksafe verify: {len(metas)} runtime fixtures on an UNKNOWN device: the device probe failed "
               f"twice ({dev.error}); nothing was run (a GPU runner must not be reported as cpu)")
        if argv_json:
            print(json.dumps({"error": msg, "exit_code": 2, "runner": {"device": "unknown", "probe_error": dev.error,
                                                                      "python": platform.python_version()}}), file=out)
        else:
            print(msg, file=out)
        return 2
    runner_kind = dev.kind if dev.kind != "none" else "cpu"
    if jobs is None:
        jobs = int(os.environ.get("FORKSAFE_VERIFY_JOBS", "0") or 0) or max(1, (os.cpu_count() or 2) // 2)
    tmp = Path(tempfile.mkdtemp(prefix="forksafe-verify-"))
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            rows = list(ex.map(lambda m: _verify_one(m, fix_source, ctxs, tmp, runner_kind), metas))
    except HarnessError as exc:
        return fail(str(exc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = _counts(rows)
    code = 1 if counts[NOT_CONFIRMED] else 0
    ran = [r.results[v] for r in rows for v in ("unsafe", "fixed") if r.results.get(v)]
    runner = runner_kind
    torch_version = dev.torch or next((x.get("torch") for x in ran if x.get("torch")), "")
    scale = _scale()
    default_method = _default_start_method()
    if argv_json:
        doc = {
            "runner": {"device": runner, "torch": torch_version, "python": platform.python_version(),
                       "platform": sys.platform, "device_detail": str(dev), "timeout_scale": scale,
                       "default_start_method": default_method},
            "python_3_14": PY314_NOTE,
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
            "fixed versions: flake8_forksafe.fix.fix_source (live, unsafe fixes on)",
            f"runner: {dev}; default start method here: {default_method}; limits x{scale:g} "
            f"(measured start-up {dev.startup:g} s)",
            PY314_NOTE]
    _render(rows, ctxs, head, out)
    extra = f", {counts[NO_CLAIM]} observed without a claim" if counts[NO_CLAIM] else ""
    print(f"\nsummary: {counts[CONFIRMED]} confirmed, {counts[NOT_CONFIRMED]} not confirmed, "
          f"{counts[NOT_RUN_CELL]} not run{extra}", file=out)
    return code


PY314_NOTE = ("Python 3.14+: Linux defaults to forkserver, so there the forkserver column is what users get unless "
              "they choose fork: inherited handles (FRK101, FRK103), locks and generators (FRK203) fail to pickle "
              "instead of sharing state, unguarded scripts (FRK401-403) fail, module-level handles (FRK102) are reopened "
              "by each worker's import, CUDA in the parent (FRK301, FRK404) costs a CUDA context per worker")


def _default_start_method() -> str:
    import multiprocessing

    # Never get_context()/get_start_method() without allow_none: they would fix the start method here.
    chosen = multiprocessing.get_start_method(allow_none=True)
    return chosen or multiprocessing.get_all_start_methods()[0]


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
