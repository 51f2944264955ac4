"""The ``forksafe`` command: check, fix, explain, rules, verify, lsp.

Exit codes: 0 clean, 1 findings (or, for ``fix``, findings remain / ``--diff`` would change files),
2 usage, configuration or input errors.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from flake8_forksafe import __version__
from flake8_forksafe.config import Config, ConfigError, discover as discover_config, merge_cli, split_list
from flake8_forksafe.engine import Finding, SourceError, check_source, could_have_findings, decode
from flake8_forksafe.formats import FORMATS, render

# (findings, error line or None, skipped line or None)
Outcome = Tuple[List[Finding], Optional[str], Optional[str]]


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> "None":  # one line, exit 2, no usage dump on stderr noise
        raise UsageError(message)


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", help="files or directories (default: .); - reads stdin")
    p.add_argument("--select", action="append", metavar="CODES", help="only these codes or prefixes (FRK1,FRK401)")
    p.add_argument("--ignore", action="append", metavar="CODES", help="skip these codes or prefixes")
    p.add_argument("--extend-select", action="append", metavar="CODES", help="add codes to the selection (e.g. FRK501)")
    p.add_argument("--exclude", action="append", metavar="PATTERNS", help="replace the exclude patterns")
    p.add_argument("--extend-exclude", action="append", metavar="PATTERNS", help="add exclude patterns")
    p.add_argument("--force-exclude", action="store_true", default=None, help="apply excludes to files named on the command line too")
    p.add_argument("--config", metavar="PYPROJECT", help="read [tool.flake8-forksafe] from this file")
    p.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="processes to use (default: all cores)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write .forksafe_cache")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="forksafe", description="Find and fix PyTorch DataLoader multiprocessing hazards.")
    parser.add_argument("--version", action="version", version=f"flake8-forksafe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("check", help="report findings")
    _add_selection(c)
    c.add_argument("--format", choices=FORMATS, default=None, help="output format (default: text)")
    c.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    c.add_argument("--statistics", action="store_true", help="print a count per code at the end")

    f = sub.add_parser("fix", help="rewrite findings into the safe pattern")
    _add_selection(f)
    f.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    f.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply fixes marked unsafe")

    e = sub.add_parser("explain", help="print a rule's documentation")
    e.add_argument("code")

    r = sub.add_parser("rules", help="list every rule")
    r.add_argument("--format", choices=("text", "json"), default="text")

    v = sub.add_parser("verify", help="prove each hazard and each fix with real DataLoader workers (needs torch)")
    v.add_argument("--json", action="store_true")
    v.add_argument("--select", action="append", metavar="CODES")

    sub.add_parser("lsp", help="run the language server on stdio (needs the lsp extra)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"forksafe: error: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"forksafe: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("forksafe: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


def _config(args) -> Config:
    paths = [p for p in (args.paths or ["."]) if p != "-"] or ["."]
    cfg = discover_config(paths, args.config)
    options = dict(
        select=split_list(args.select),
        ignore=split_list(args.ignore),
        extend_select=split_list(args.extend_select),
        exclude=split_list(args.exclude),
        extend_exclude=split_list(args.extend_exclude),
        jobs=args.jobs,
    )
    if args.force_exclude:
        options["force_exclude"] = True
    if getattr(args, "unsafe_fixes", None):
        options["unsafe_fixes"] = True
    if getattr(args, "format", None):
        options["format"] = args.format
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return merge_cli(cfg, **options)


def _targets(args, cfg: Config) -> Tuple[List[str], List[str]]:
    from flake8_forksafe.files import discover

    paths = args.paths or ["."]
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("- (stdin) cannot be combined with other paths")
        return ["-"], []
    return discover(paths, cfg)


def _read(path: str, stdin_name: Optional[str]) -> Tuple[str, bytes]:
    if path == "-":
        return (stdin_name or "-"), sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return path, fh.read()


# ------------------------------------------------------------------------------------------ check


def check_file(path: str, cfg: Config, data: Optional[bytes] = None, cache=None) -> Outcome:
    shown = path
    try:
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        return [], f"{shown}: cannot read: {exc.strerror or exc}", None
    try:
        text = decode(data, path)
        if not could_have_findings(text, cfg):
            return [], None, None
        digest = None
        if cache is not None:
            digest = cache.digest(data)
            hit = cache.get(digest, shown)
            if hit is not None:
                return hit, None, None
        findings = check_source(text, shown, cfg, prefilter=False)
        if digest is not None:
            cache.put(digest, findings)
        return findings, None, None
    except SourceError as exc:
        return [], None, f"{shown}: {exc.message}"
    except RecursionError:
        return [], None, f"{shown}: skipped: nesting too deep to analyse"
    except Exception as exc:  # a bug of ours: one line, keep going, exit 2 at the end
        return [], f"{shown}: internal error ({type(exc).__name__}: {exc}); please report it", None


_WORKER_CFG: Optional[Config] = None
_WORKER_CACHE = None


def _init_worker(cfg: Config, use_cache: bool) -> None:
    global _WORKER_CFG, _WORKER_CACHE
    _WORKER_CFG = cfg
    _WORKER_CACHE = _make_cache(cfg) if use_cache else None


def _check_in_worker(path: str) -> Outcome:
    assert _WORKER_CFG is not None
    return check_file(path, _WORKER_CFG, cache=_WORKER_CACHE)


def _make_cache(cfg: Config):
    if not cfg.cache:
        return None
    from flake8_forksafe.cache import Cache

    return Cache(cfg.root or Path.cwd(), cfg)


def run_check(files: List[str], cfg: Config, use_cache: bool, stdin_name: Optional[str] = None) -> List[Outcome]:
    if files == ["-"]:
        name, data = _read("-", stdin_name)
        return [check_file(name, cfg, data=data)]
    jobs = cfg.jobs or os.cpu_count() or 1
    jobs = min(jobs, max(1, len(files) // 8))  # processes only pay off on many files
    if jobs <= 1:
        cache = _make_cache(cfg) if use_cache else None
        return [check_file(p, cfg, cache=cache) for p in files]
    import multiprocessing

    if multiprocessing.get_start_method() == "fork":
        # workers inherit what the parent imported: load libcst and the rules once, not per worker
        from flake8_forksafe.checks import ALL_RULES  # noqa: F401

        import flake8_forksafe.analysis  # noqa: F401
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(cfg, use_cache)) as pool:
        return list(pool.map(_check_in_worker, files, chunksize=max(1, len(files) // (jobs * 8))))


def cmd_check(args) -> int:
    cfg = _config(args)
    files, errors = _targets(args, cfg)
    for e in errors:
        print(f"forksafe: error: {e}", file=sys.stderr)
    outcomes = run_check(files, cfg, not args.no_cache, args.stdin_filename)
    findings: List[Finding] = []
    internal = False
    for found, err, skipped in outcomes:
        findings.extend(found)
        if skipped:
            print(f"forksafe: {skipped}", file=sys.stderr)
        if err:
            internal = True
            print(f"forksafe: error: {err}", file=sys.stderr)
    report = render(cfg.format if cfg.format in FORMATS else "text", findings)
    if args.statistics and cfg.format == "text":
        counts = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        report += "".join(f"{n:<5} {code}\n" for code, n in sorted(counts.items()))
    if args.output:
        Path(args.output).write_text(report, encoding="utf-8")
    else:
        sys.stdout.write(report)
    if errors or internal:
        return 2
    if not files:
        print("forksafe: no Python files to check", file=sys.stderr)
    return 0 if (not findings or args.exit_zero) else 1


# -------------------------------------------------------------------------------------------- fix


def cmd_fix(args) -> int:
    from flake8_forksafe.fix import fix_source, write_atomic

    cfg = _config(args)
    files, errors = _targets(args, cfg)
    for e in errors:
        print(f"forksafe: error: {e}", file=sys.stderr)
    changed_files = 0
    fixed_total = 0
    remaining: List[Finding] = []
    failed = bool(errors)
    for path in files:
        try:
            name, data = _read(path, args.stdin_filename)
        except OSError as exc:
            print(f"forksafe: error: {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            failed = True
            continue
        try:
            result = fix_source(data, name, cfg, unsafe=bool(cfg.unsafe_fixes))
        except SourceError as exc:
            print(f"forksafe: {name}: {exc.message}", file=sys.stderr)
            continue
        except Exception as exc:
            print(f"forksafe: error: {name}: internal error ({type(exc).__name__}: {exc}); please report it", file=sys.stderr)
            failed = True
            continue
        for err in result.errors:
            print(f"forksafe: error: {name}: {err}", file=sys.stderr)
            failed = True
        for note in result.notes:
            print(f"forksafe: {name}: {note}", file=sys.stderr)
        remaining.extend(result.remaining)
        if not result.changed:
            continue
        changed_files += 1
        fixed_total += len(result.fixed)
        new = result.source
        if args.diff:
            sys.stdout.write(_diff(name, data, new))
        elif path == "-":
            sys.stdout.buffer.write(new)
        else:
            try:
                write_atomic(path, new)
            except OSError as exc:
                print(f"forksafe: error: {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
                failed = True
    out = sys.stderr if (args.diff or files == ["-"]) else sys.stdout
    verb = "Would fix" if args.diff else "Fixed"
    if fixed_total or changed_files:
        print(f"{verb} {fixed_total} finding{'s' if fixed_total != 1 else ''} in {changed_files} file{'s' if changed_files != 1 else ''}.", file=out)
    if remaining:
        print(f"{len(remaining)} finding{'s' if len(remaining) != 1 else ''} remain{'s' if len(remaining) == 1 else ''}:", file=out)
        for f in remaining:
            hint = " (unsafe fix available: --unsafe-fixes)" if f.fix == "unsafe" and not cfg.unsafe_fixes else ""
            print(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}{hint}", file=out)
    elif not changed_files:
        print("Nothing to fix.", file=out)
    if failed:
        return 2
    if args.diff and changed_files:
        return 1
    return 1 if remaining else 0


def _diff(name: str, old: bytes, new: bytes) -> str:
    def lines(b: bytes) -> List[str]:
        try:
            return decode(b, name).splitlines(keepends=True)
        except SourceError:
            return b.decode("utf-8", "replace").splitlines(keepends=True)

    a, b = lines(old), lines(new)
    out = "".join(difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}"))
    if out and not out.endswith("\n"):
        out += "\n\\ No newline at end of file\n"
    return out


# ------------------------------------------------------------------------------- explain / rules


def cmd_explain(args) -> int:
    from flake8_forksafe.checks import BY_CODE
    from flake8_forksafe.docs import rule_doc, rule_summary

    code = args.code.strip().upper()
    rule = BY_CODE.get(code)
    if rule is None:
        raise UsageError(f"unknown rule code: {args.code} (see `forksafe rules`)")
    doc = rule_doc(code)
    if doc is None:
        doc = f"# {code}: {rule.name}\n\n{rule_summary(rule)}\n"
    sys.stdout.write(doc if doc.endswith("\n") else doc + "\n")
    return 0


def cmd_rules(args) -> int:
    import json

    from flake8_forksafe.checks import ALL_RULES
    from flake8_forksafe.docs import rule_summary

    if args.format == "json":
        rows = [
            {
                "code": r.code,
                "name": r.name,
                "summary": rule_summary(r),
                "default": bool(r.default_enabled),
                "fix": r.fix_applicability,
            }
            for r in ALL_RULES
        ]
        print(json.dumps(rows, indent=2))
        return 0
    for r in ALL_RULES:
        flags = []
        if r.fix_applicability:
            flags.append(f"fix: {r.fix_applicability}")
        if not r.default_enabled:
            flags.append("off by default")
        extra = f"  [{', '.join(flags)}]" if flags else ""
        print(f"{r.code}  {r.name}{extra}")
    return 0


# -------------------------------------------------------------------------------------- verify/lsp


def cmd_verify(args) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("forksafe: error: verify needs torch: pip install 'flake8-forksafe[harness]'", file=sys.stderr)
        return 2
    from flake8_forksafe.harness.verify import run_verify

    return run_verify(args.json, select=split_list(args.select))


def cmd_lsp(args) -> int:
    try:
        from flake8_forksafe.lsp import serve
    except ImportError as exc:
        print(f"forksafe: error: the language server needs pygls: pip install 'flake8-forksafe[lsp]' ({exc})", file=sys.stderr)
        return 2
    serve()
    return 0


COMMANDS = {
    "check": cmd_check,
    "fix": cmd_fix,
    "explain": cmd_explain,
    "rules": cmd_rules,
    "verify": cmd_verify,
    "lsp": cmd_lsp,
}
