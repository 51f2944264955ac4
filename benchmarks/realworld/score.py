"""Score flake8-forksafe against the labelled real-world corpus.

For every package of the chosen part(s) this runs

    forksafe check --select FRK,FRK501 --format json --no-cache .

in the package's checked root (``benchmarks/.realworld/src/<name>/<root>``, made by ``fetch.py``),
matches each finding to a labelled site by (path, code, line) exactly, and prints per rule and
overall, for ``work`` and ``holdout`` separately:

* precision = findings matching a ``flag`` site / findings matching ``flag``, ``no-flag`` or no site
  (findings on ``debatable`` sites are left out);
* recall = ``flag`` sites found / ``flag`` sites;

the number of findings on the ``own-dataset`` packages (the target is 0), the unlabelled findings
(every finding must get a site; ``--strict`` exits 1 when one has none) and the missed ``flag``
sites.

The tool is ``forksafe`` from PATH, or any command given with ``--forksafe`` (e.g. another
checkout's ``--forksafe "/other/.venv/bin/forksafe"`` or ``--forksafe "python -m flake8_forksafe"``).

    python benchmarks/realworld/score.py [--part work|holdout|own-dataset|all] [--strict]
        [--forksafe CMD] [--only NAME,...] [--json FILE]

Exit status: 0; 1 with ``--strict`` when a finding is unlabelled or a site is malformed; 2 when the
tool failed on a package or a package is not fetched.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import PARTS, load_packages, source_root  # noqa: E402

VERDICTS = ("flag", "no-flag", "debatable")
SCORED_PARTS = ("work", "holdout")


def tool_command(arg: str | None) -> list[str]:
    if arg:
        cmd = shlex.split(arg)
        # the tool runs in each package's root: a relative path to it must not depend on that
        if cmd and "/" in cmd[0] and not os.path.isabs(cmd[0]):
            cmd[0] = os.path.abspath(cmd[0])
        return cmd
    exe = shutil.which("forksafe")
    if exe is None:
        # the interpreter running this script may have it even when its bin/ is not on PATH
        cand = Path(sys.executable).with_name("forksafe")
        if cand.exists():
            return [str(cand)]
        raise SystemExit("score.py: no `forksafe` on PATH; pass --forksafe CMD")
    return [exe]


def run_tool(cmd: list[str], root: Path) -> list[dict]:
    proc = subprocess.run(
        [*cmd, "check", "--select", "FRK,FRK501", "--format", "json", "--no-cache", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise RuntimeError(f"forksafe exited {proc.returncode}: {last}")
    try:
        data = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"forksafe printed no JSON ({exc})") from None
    if isinstance(data, dict):  # tolerate a wrapped report
        data = data.get("findings", [])
    return data


def check_sites(pkg: dict, root: Path) -> list[str]:
    """Malformed sites: unknown verdict, missing file, line out of range, duplicates."""
    problems = []
    seen = set()
    for site in pkg["sites"]:
        where = f"{pkg['name']}: {site.get('path')}:{site.get('line')} {site.get('code')}"
        if site.get("verdict") not in VERDICTS:
            problems.append(f"{where}: verdict {site.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
        if not str(site.get("code", "")).startswith("FRK"):
            problems.append(f"{where}: code is not an FRK code")
        if not site.get("reason"):
            problems.append(f"{where}: no reason")
        key = (site.get("path"), site.get("code"), site.get("line"))
        if key in seen:
            problems.append(f"{where}: duplicate site")
        seen.add(key)
        path = root / str(site.get("path", ""))
        if not path.is_file():
            problems.append(f"{where}: no such file under {root}")
            continue
        n_lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        if not (isinstance(site.get("line"), int) and 1 <= site["line"] <= n_lines):
            problems.append(f"{where}: line outside 1..{n_lines}")
    return problems


def fmt_ratio(num: int, den: int) -> str:
    return f"{num / den:.3f}" if den else "  -  "


def print_table(part: str, stats: dict[str, dict[str, int]]) -> None:
    print(f"\n== {part}")
    head = f"{'rule':8s} {'findings':>8s} {'true':>5s} {'no-flag':>7s} {'unlab':>5s} {'debat':>5s} " \
           f"{'flag sites':>10s} {'found':>5s} {'precision':>9s} {'recall':>7s}"
    print(head)
    print("-" * len(head))
    total: dict[str, int] = defaultdict(int)
    for code in sorted(stats):
        s = stats[code]
        for k, v in s.items():
            total[k] += v
        _row(code, s)
    print("-" * len(head))
    _row("all", total)


def _row(label: str, s: dict[str, int]) -> None:
    scored = s["true"] + s["noflag"] + s["unlabelled"]
    print(
        f"{label:8s} {s['findings']:8d} {s['true']:5d} {s['noflag']:7d} {s['unlabelled']:5d} {s['debatable']:5d} "
        f"{s['flag_sites']:10d} {s['found']:5d} {fmt_ratio(s['true'], scored):>9s} "
        f"{fmt_ratio(s['found'], s['flag_sites']):>7s}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="all", choices=("all", *PARTS))
    ap.add_argument("--forksafe", default=None, help="command that runs the tool (default: forksafe on PATH)")
    ap.add_argument("--only", default="", help="comma-separated package names")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a finding has no site or a site is malformed")
    ap.add_argument("--json", default=None, help="also write every finding with its verdict to this file")
    args = ap.parse_args(argv)
    cmd = tool_command(args.forksafe)
    only = {n.strip() for n in args.only.split(",") if n.strip()}

    stats: dict[str, dict[str, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: dict.fromkeys(
            ("findings", "true", "noflag", "unlabelled", "debatable", "flag_sites", "found"), 0))
    )
    own_counts: dict[str, int] = {}
    unlabelled: list[str] = []
    misses: list[str] = []
    problems: list[str] = []
    failed = False
    report = []

    selected = [pkg for pkg in load_packages(args.part) if not only or pkg["name"] in only]
    if not selected:
        print(f"no package in part {args.part!r}" + (f" named {args.only}" if only else ""))
        return 2
    for pkg in selected:
        root = source_root(pkg)
        if not root.is_dir():
            print(f"{pkg['name']}: not fetched ({root} missing); run fetch.py first")
            failed = True
            continue
        problems += check_sites(pkg, root)
        try:
            findings = run_tool(cmd, root)
        except (RuntimeError, OSError) as exc:
            print(f"{pkg['name']}: {exc}")
            failed = True
            continue
        sites = {(s["path"], s["code"], s["line"]): s for s in pkg["sites"]}
        part = pkg["part"]
        found_keys = set()
        for f in findings:
            key = (f["path"].replace("\\", "/").removeprefix("./"), f["code"], f["line"])
            site = sites.get(key)
            verdict = site["verdict"] if site else None
            found_keys.add(key)
            report.append({"package": pkg["name"], "part": part, "path": key[0], "line": key[2],
                           "code": key[1], "verdict": verdict, "message": f.get("message", "")})
            if site is None:
                unlabelled.append(f"{part}/{pkg['name']}: {key[0]}:{key[2]}: {key[1]} {f.get('message', '')[:110]}")
            if part not in SCORED_PARTS:
                continue
            s = stats[part][key[1]]
            s["findings"] += 1
            if verdict == "flag":
                s["true"] += 1
            elif verdict == "no-flag":
                s["noflag"] += 1
            elif verdict == "debatable":
                s["debatable"] += 1
            else:
                s["unlabelled"] += 1
        if part == "own-dataset":
            own_counts[pkg["name"]] = len(findings)
            continue
        for key, site in sites.items():
            if site["verdict"] != "flag":
                continue
            s = stats[part][site["code"]]
            s["flag_sites"] += 1
            if key in found_keys:
                s["found"] += 1
            else:
                misses.append(f"{part}/{pkg['name']}: {key[0]}:{key[2]}: {key[1]} {site.get('reason', '')[:110]}")

    for part in SCORED_PARTS:
        if part in stats:
            print_table(part, stats[part])
    if own_counts:
        print(f"\n== own-dataset: {sum(own_counts.values())} findings (target 0)")
        for name, n in own_counts.items():
            print(f"  {name}: {n}")
    if misses:
        print(f"\n== missed flag sites ({len(misses)})")
        for line in misses:
            print("  " + line)
    if unlabelled:
        print(f"\n== unlabelled findings ({len(unlabelled)}): label them")
        for line in unlabelled:
            print("  " + line)
    if problems:
        print(f"\n== malformed sites ({len(problems)})")
        for line in problems:
            print("  " + line)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if failed:
        return 2
    if args.strict and (unlabelled or problems):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
