"""The language server's latency as an editor sees it: ``forksafe lsp`` over stdio, driven by a raw
JSON-RPC client, on a 2,000-line realistic document (``lsp_doc.py``: datasets with handles, lambdas,
loaders, module-level code, and unrelated models, metrics and helpers).

Printed, median and max of ``--runs`` runs each (wall time on this machine; the load average is
printed too, since the machine may be shared):

* diagnostics after an edit: from ``didChange`` to the ``publishDiagnostics`` of that version, and
  the same less the debounce (``DEBOUNCE_S``): for an edit in an unrelated function (answered by
  reuse) and for an edit inside a dataset class (the reduced document analysed again);
* listing the code actions at a finding (``textDocument/codeAction``, the document already checked);
* resolving one action (``codeAction/resolve``): the quick fix of a rule, the ``# noqa`` action and
  "fix all", each on a version whose fixes were not computed yet.

Usage: ``python benchmarks/lsp_bench.py [--runs 20] [--resolve-runs N] [--lines 2000] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.lsp_doc import build  # noqa: E402
from flake8_forksafe.frontends.lsp import DEBOUNCE_S  # noqa: E402
from tests.integrations._rawlsp import RawClient  # noqa: E402


def forksafe() -> List[str]:
    exe = Path(sys.executable).with_name("forksafe")
    return [str(exe), "lsp"] if exe.exists() else [sys.executable, "-m", "flake8_forksafe", "lsp"]


def figures(xs: List[float]) -> str:
    return f"median {statistics.median(xs) * 1000:8.1f} ms   max {max(xs) * 1000:8.1f} ms   (n={len(xs)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--resolve-runs", type=int, default=None, help="runs of the rule-fix and fix-all resolves (default: --runs)")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--json", help="also write the raw timings here")
    args = ap.parse_args()
    resolve_runs = args.runs if args.resolve_runs is None else args.resolve_runs

    text = build(args.lines)
    work = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    doc = work / "train.py"
    doc.write_text(text, encoding="utf-8")
    uri = doc.as_uri()
    print(f"document: {text.count(chr(10))} lines, {len(text)} bytes; debounce {DEBOUNCE_S * 1000:.0f} ms; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    client = RawClient(forksafe(), cwd=str(work))
    times: Dict[str, List[float]] = {}
    try:
        client.initialize(work.as_uri())
        t0 = time.perf_counter()
        client.open(uri, text, 1)
        first = client.diagnostics(uri, 1, timeout=900)
        print(f"open (child start + full check): {(time.perf_counter() - t0) * 1000:.0f} ms, {len(first['diagnostics'])} diagnostics")
        version = 1
        lines = text.split("\n")

        def change(new_lines: List[str]) -> float:
            nonlocal version, lines
            version += 1
            lines = new_lines
            mark = len(client.seen)
            t = time.perf_counter()
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": "\n".join(lines)}],
            })
            client.diagnostics(uri, version, since=mark, timeout=900)
            return time.perf_counter() - t

        def at(prefix: str) -> int:
            return next(i for i, line in enumerate(lines) if line.startswith(prefix))

        # edits in an unrelated function (schedule_0's body) and inside a dataset class
        for i in range(args.runs):
            k = at("def schedule_0") + 2
            times.setdefault("diagnostics, edit in unrelated code", []).append(change(lines[:k] + [f"    unused_{i} = {i}"] + lines[k:]))
        for i in range(args.runs):
            k = at("    def __getitem__") + 1
            times.setdefault("diagnostics, edit inside a dataset class", []).append(change(lines[:k] + [f"        unused_{i} = {i}"] + lines[k:]))

        diags = client.diagnostics(uri, version)["diagnostics"]
        target = next(d for d in diags if d["code"] == "FRK101")

        def listing() -> List[dict]:
            t = time.perf_counter()
            actions = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri},
                "range": target["range"],
                "context": {"diagnostics": [target]},
            }, timeout=900)
            times.setdefault("codeAction list", []).append(time.perf_counter() - t)
            return actions

        for _ in range(args.runs):
            actions = listing()
        assert all("edit" not in a or a["edit"] is None for a in actions), "listed with edits"
        kinds = {a["data"]["action"]: a for a in actions}

        def resolve(action: dict, label: str) -> dict:
            t = time.perf_counter()
            out = client.request("codeAction/resolve", action, timeout=900)
            times.setdefault(label, []).append(time.perf_counter() - t)
            assert out.get("edit"), f"{label}: no edit"
            return out

        for i in range(max(args.runs, resolve_runs)):
            # a new version each time: nothing cached from the previous run
            k = at("def schedule_1") + 2
            change(lines[:k] + [f"    again_{i} = {i}"] + lines[k:])
            diags = client.diagnostics(uri, version)["diagnostics"]
            target = next(d for d in diags if d["code"] == "FRK101")
            kinds = {a["data"]["action"]: a for a in listing()}
            resolve(kinds["noqa"], "codeAction/resolve, # noqa")
            if i < resolve_runs:
                resolve(kinds["fix"], f"codeAction/resolve, {target['code']} quick fix")
                resolve(kinds["fixall"], "codeAction/resolve, fix all")
    finally:
        client.close()

    print()
    for label, xs in times.items():
        print(f"{label:45s} {figures(xs)}")
        if label.startswith("diagnostics"):
            print(f"{label + ' - debounce':45s} {figures([x - DEBOUNCE_S for x in xs])}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"debounce_s": DEBOUNCE_S, "times_s": times}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
