"""The ``forksafe`` command: check, fix, explain, rules, verify, lsp.

Exit codes: 0 clean, 1 findings (or, for ``fix``, findings remain / ``--diff`` would change files),
2 usage, configuration or input errors.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from flake8_forksafe import __version__
from flake8_forksafe.config import SYNTAX_ERROR, Config, ConfigError, discover_config, merge_cli, split_list
from flake8_forksafe.engine import check_source, gate, project_anchor
from flake8_forksafe.model import Finding, SourceError
from flake8_forksafe.source import decode
from flake8_forksafe.frontends.formats import FORMATS, render
from flake8_forksafe.frontends.terminal import COLOR_CHOICES

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
    p.add_argument("--stdin-filename", metavar="PATH", help="read standard input, checked as if it were PATH (config, per-file-ignores)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="processes to use (default: all cores)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write .forksafe_cache")
    p.add_argument("--color", choices=COLOR_CHOICES, default="auto", help="colour the output: auto (a terminal; NO_COLOR/FORCE_COLOR respected), always, never")
    p.add_argument("--show-fixes", action="store_true", help="list per file and code the fixes that are available (check) or were applied (fix)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="forksafe", description="Find and fix PyTorch DataLoader multiprocessing hazards.")
    parser.add_argument("--version", action="version", version=f"flake8-forksafe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("check", help="report findings")
    _add_selection(c)
    c.add_argument("--format", choices=FORMATS, default=None, help="output format (default: text)")
    c.add_argument("--output-file", "--output", "-o", dest="output", metavar="FILE", help="write the report to FILE")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings (2 still means an error)")
    c.add_argument("--statistics", action="store_true", help="print a count per code, with the rule's name, at the end")
    c.add_argument("--show-source", action="store_true", help="show each finding's source line with a caret, and its full explanation")
    c.add_argument("--unsafe-fixes", action="store_true", default=None, help="count unsafe fixes as fixable ([*]) in markers and the summary")
    c.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to the line of every current finding (a baseline)")

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


def _reads_stdin(args) -> bool:
    """``-`` among the paths, or ``--stdin-filename`` (as in ruff, with or without ``-``)."""
    return "-" in (args.paths or []) or bool(getattr(args, "stdin_filename", None))


def _config(args) -> Config:
    paths = [p for p in (args.paths or ["."]) if p != "-"] or ["."]
    if getattr(args, "stdin_filename", None) and not [p for p in (args.paths or []) if p != "-"]:
        paths = [args.stdin_filename]
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
    from flake8_forksafe.frontends.files import discover_files

    from flake8_forksafe.frontends.files import file_language

    paths = args.paths or ["."]
    if _reads_stdin(args):
        if len([p for p in paths if p != "-"]) > 0 and "-" in paths:
            raise UsageError("- (stdin) cannot be combined with other paths")
        return ["-"], []  # --stdin-filename: the paths only locate the configuration (as in ruff)
    files, errors = discover_files(paths, cfg)
    named = {os.path.abspath(p) for p in paths if os.path.isfile(p)}
    kept = []
    for f in files:
        if os.path.abspath(f) in named and file_language(f) is None:
            errors.append(f"{f}: not a Python file (.py, .pyi, or a script with a python #! line)")
            continue
        kept.append(f)
    return kept, errors


def _read(path: str, stdin_name: Optional[str]) -> Tuple[str, bytes]:
    if path == "-":
        return (stdin_name or "-"), sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return path, fh.read()


# ------------------------------------------------------------------------------------------ check


def check_file(
    path: str, cfg: Config, data: Optional[bytes] = None, cache=None, index=None, isolate=None
) -> Optional[Outcome]:
    """One file's findings, error line and skip line. ``isolate(text)``: asked once the gate has let
    the file through, before any libcst parse; True returns None (the caller analyses the file in a
    child process: ``isolation.check_serially``)."""
    shown = path
    try:
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        return [], f"{shown}: cannot read: {exc.strerror or exc}", None
    from flake8_forksafe.frontends.files import file_language

    own = cfg.for_path(path)  # per-file-ignores; the cache holds findings before them
    if file_language(path) == "notebook":
        if isolate is not None and isolate(data.decode("utf-8", "replace")):
            return None
        found, err, skipped = _check_notebook(path, data, own)
        return _per_file_filter(found, own), err, skipped
    text = ""
    try:
        text = decode(data, path)
        # the slicer takes its facts, and the project index the gate's tree: the file is parsed by ast once
        verdict = gate(text, cfg, keep_tree=index is not None)
        if not verdict.passes and not project_anchor(index, path, cfg, text, tree=verdict.tree):
            return [], None, None
        digest = None
        if cache is not None:
            # findings also depend on the project modules the file's classes build on
            digest = cache.digest(data + (index.dependency_digest(path).encode() if index is not None else b""))
            hit = cache.get(digest, shown)
            if hit is not None:
                return _per_file_filter(hit, own), None, None
        if isolate is not None and isolate(text):
            return None
        findings = check_source(text, shown, cfg, index=index, verdict=verdict)
        if digest is not None:
            cache.put(digest, findings)
        return _per_file_filter(findings, own), None, None
    except SourceError as exc:
        found = syntax_error_finding(text, shown) if text else None
        if found is not None:
            return ([found] if own.reports_syntax_errors() else []), None, None
        return [], None, f"{shown}: {exc.message}"
    except RecursionError:
        return [], None, f"{shown}: skipped: nesting too deep to analyse"
    except MemoryError:
        return [], None, f"{shown}: skipped: the analysis ran out of memory"
    except Exception as exc:  # a bug of ours: one line, keep going, exit 2 at the end
        return [], f"{shown}: internal error ({type(exc).__name__}: {exc}); please report it", None


def _per_file_filter(findings: List[Finding], own: Config) -> List[Finding]:
    if not own.file_ignore:
        return findings
    return [f for f in findings if not f.code.startswith(own.file_ignore)]


def syntax_error_finding(text: str, path: str) -> Optional[Finding]:
    """FRK000 for a file CPython cannot compile (None when it compiles: then only our parser failed,
    and the file is skipped with one line instead)."""
    import ast

    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        line = err.lineno or 1
        col = max(0, (err.offset or 1) - 1)
        return Finding(path=path, line=line, col=col, code=SYNTAX_ERROR, message=f"syntax error ({err.msg})", name="syntax-error")
    except ValueError:  # Python < 3.12 raises ValueError, not SyntaxError, for a null byte
        at = text.find("\0")
        if at < 0:
            return None
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1)
        message = "syntax error (source code string cannot contain null bytes)"
        return Finding(path=path, line=line, col=col, code=SYNTAX_ERROR, message=message, name="syntax-error")
    except (RecursionError, MemoryError):
        return None
    return None


def _check_notebook(path: str, data: bytes, cfg: Config) -> Outcome:
    """A ``.ipynb`` file, cell by cell (notebook.py); cells left out are one line on stderr."""
    from flake8_forksafe.notebook import NotebookError, check_notebook

    try:
        findings, notes = check_notebook(data, path, cfg)
    except NotebookError as exc:
        return [], None, f"{path}: {exc.message}"
    except SourceError as exc:
        return [], None, f"{path}: {exc.message}"
    except RecursionError:
        return [], None, f"{path}: skipped: nesting too deep to analyse"
    except Exception as exc:
        return [], f"{path}: internal error ({type(exc).__name__}: {exc}); please report it", None
    return findings, None, (f"{path}: " + "; ".join(notes)) if notes else None


def _fix_notebook(path: str, data: bytes, cfg: Config, unsafe: bool):
    """(NotebookFix or None, an error line, a note line) for ``forksafe fix`` on a ``.ipynb`` file."""
    from flake8_forksafe.notebook import NotebookError, fix_notebook

    try:
        res = fix_notebook(data, path, cfg, unsafe=unsafe)
    except (NotebookError, SourceError) as exc:
        return None, None, f"{path}: {exc.message}"
    except RecursionError:
        return None, None, f"{path}: skipped: nesting too deep to analyse"
    except Exception as exc:
        return None, f"{path}: internal error ({type(exc).__name__}: {exc}); please report it", None
    err = "; ".join(f"error: {e}" for e in res.errors) or None
    return res, (f"{path}: {err}" if err else None), (f"{path}: " + "; ".join(res.notes)) if res.notes else None


def _notebook_diff(name: str, cells) -> str:
    """One unified diff per changed cell, labelled ``name:cell N`` as ruff labels them."""
    out = []
    for number, old, new in cells:
        a = old.splitlines(keepends=True)
        b = new.splitlines(keepends=True)
        if a and not a[-1].endswith("\n"):
            a[-1] += "\n"
        if b and not b[-1].endswith("\n"):
            b[-1] += "\n"
        out.append("".join(difflib.unified_diff(a, b, fromfile=f"a/{name}:cell {number}", tofile=f"b/{name}:cell {number}")))
    return "".join(out)


_WORKER_CFG: Optional[Config] = None
_WORKER_CACHE = None
_WORKER_ROOTS: dict = {}  # directory -> project root, for this worker's run (index_for)


def _init_worker(cfg: Config, use_cache: bool) -> None:
    global _WORKER_CFG, _WORKER_CACHE, _WORKER_ROOTS
    _WORKER_CFG = cfg
    _WORKER_CACHE = _make_cache(cfg) if use_cache else None
    _WORKER_ROOTS = {}


def _check_in_worker(path: str) -> Outcome:
    assert _WORKER_CFG is not None
    index = _index(path, _WORKER_CFG, _WORKER_CACHE is not None, _WORKER_ROOTS)
    return check_file(path, _WORKER_CFG, cache=_WORKER_CACHE, index=index)


def _index(path: str, cfg: Config, use_cache: bool, roots: Optional[dict] = None):
    """The file's project index, one per project root in each process (a forked worker inherits
    the parent's; a spawned one reads the summaries it needs from the index cache)."""
    from flake8_forksafe.index import index_for

    return index_for(path, cfg.knowledge, use_cache=use_cache and bool(cfg.cache), roots=roots)


def _make_cache(cfg: Config):
    if not cfg.cache:
        return None
    from flake8_forksafe.frontends.cache import Cache

    return Cache(cfg.root or Path.cwd(), cfg)


def run_check(files: List[str], cfg: Config, use_cache: bool, stdin_name: Optional[str] = None) -> List[Outcome]:
    if files == ["-"]:
        name, data = _read("-", stdin_name)
        return [check_file(name, cfg, data=data)]
    jobs = cfg.jobs or os.cpu_count() or 1
    jobs = min(jobs, max(1, len(files) // 8))  # processes only pay off on many files
    if jobs <= 1:
        from flake8_forksafe.frontends.isolation import check_serially

        return check_serially(files, cfg, use_cache)
    import multiprocessing

    if multiprocessing.get_start_method() == "fork":
        # workers inherit what the parent imported: load libcst and the rules once, not per worker
        from flake8_forksafe.checks import ALL_RULES  # noqa: F401

        import flake8_forksafe.analysis  # noqa: F401
    from flake8_forksafe.frontends.isolation import run_isolated, worker_died

    batch = max(1, min(16, len(files) // (jobs * 8)))
    return run_isolated(files, _check_in_worker, worker_died, jobs, _init_worker, (cfg, use_cache), batch)


def cmd_check(args) -> int:
    from flake8_forksafe.frontends import terminal

    cfg = _config(args)
    files, errors = _targets(args, cfg)
    for e in errors:
        print(f"forksafe: error: {e}", file=sys.stderr)
    stdin_data: Optional[bytes] = None
    if files == ["-"]:
        name, stdin_data = _read("-", args.stdin_filename)
        outcomes = [check_file(name, cfg, data=stdin_data)]
    else:
        outcomes = run_check(files, cfg, not args.no_cache)
    findings: List[Finding] = []
    internal = False
    for found, err, skipped in outcomes:
        findings.extend(found)
        if skipped:
            print(f"forksafe: {skipped}", file=sys.stderr)
        if err:
            internal = True
            print(f"forksafe: error: {err}", file=sys.stderr)
    if args.add_noqa:
        from flake8_forksafe.frontends.addnoqa import add_noqa_command

        return add_noqa_command(findings, stdin=files == ["-"], failed=bool(errors or internal))
    from flake8_forksafe.frontends.files import printable

    if cfg.format != "sarif":  # SARIF percent-encodes a non-UTF-8 file name's bytes itself
        findings = printable(findings)  # the others show them as \xNN escapes
    fmt = cfg.format if cfg.format in FORMATS else "text"
    unsafe = bool(cfg.unsafe_fixes)
    out_stream = None if args.output else sys.stdout
    style = terminal.Style(terminal.use_color(args.color, out_stream))
    if fmt == "text":
        sources = _sources(findings, stdin_data) if args.show_source else None
        report = terminal.report_text(findings, unsafe, style, args.show_source, sources)
        if args.statistics:
            report += terminal.statistics(findings, unsafe)
        report += terminal.summary(findings, unsafe)
        if args.show_fixes:
            report += terminal.fixes_by_file(
                [f for f in findings if f.fix], "Fixes available"
            )
    else:
        report = render(fmt, findings)
    if args.output:
        Path(args.output).write_text(report, encoding="utf-8")
    else:
        sys.stdout.write(report)
    if errors or internal:
        return 2
    if not files:
        print("forksafe: no Python files to check", file=sys.stderr)
    return 0 if (not findings or args.exit_zero) else 1


def _sources(findings: List[Finding], stdin_data: Optional[bytes]) -> dict:
    """The lines of each file with findings (for ``--show-source``)."""
    out = {}
    for f in findings:
        if f.path in out:
            continue
        try:
            data = stdin_data if stdin_data is not None else Path(f.path).read_bytes()
            out[f.path] = decode(data, f.path).splitlines()
        except (OSError, SourceError):
            out[f.path] = None
    return out


# -------------------------------------------------------------------------------------------- fix


def cmd_fix(args) -> int:
    from flake8_forksafe.frontends import terminal
    from flake8_forksafe.frontends.isolation import fix_guarded as fix_source
    from flake8_forksafe.frontends.writes import write_through

    cfg = _config(args)
    files, errors = _targets(args, cfg)
    for e in errors:
        print(f"forksafe: error: {e}", file=sys.stderr)
    changed_files = 0
    fixed_total = 0
    remaining: List[Finding] = []
    fixed: List[Finding] = []
    failed = bool(errors)
    for path in files:
        try:
            name, data = _read(path, args.stdin_filename)
        except OSError as exc:
            print(f"forksafe: error: {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            failed = True
            continue
        from flake8_forksafe.frontends.files import file_language

        own = cfg.for_path(name)  # per-file-ignores
        if file_language(name) == "notebook":
            # fixed cell by cell and written back as JSON (notebook.fix_notebook)
            nbres, err, skipped = _fix_notebook(name, data, own, bool(cfg.unsafe_fixes))
            for line in filter(None, (skipped, err)):
                print(f"forksafe: {line}", file=sys.stderr)
            failed = failed or bool(err)
            if nbres is None:
                if path == "-" and not args.diff:
                    sys.stdout.buffer.write(data)  # standard input comes back unchanged
                continue
            remaining.extend(_per_file_filter(nbres.remaining, own))
            if not nbres.changed:
                if path == "-" and not args.diff:
                    sys.stdout.buffer.write(data)
                continue
            if args.diff:
                sys.stdout.write(_notebook_diff(name, nbres.cells))
            elif path == "-":
                sys.stdout.buffer.write(nbres.source)
            else:
                try:
                    write_through(path, nbres.source)
                except OSError as exc:
                    print(f"forksafe: error: {exc if exc.strerror is None else f'{path}: cannot write: {exc.strerror}'}", file=sys.stderr)
                    failed = True
                    remaining.extend(nbres.fixed)
                    continue
            changed_files += 1
            fixed_total += len(nbres.fixed)
            fixed.extend(nbres.fixed)
            continue
        try:
            # the file's project index, as `check` uses it: what check reports as fixable is fixed
            index = _index(name, cfg, use_cache=not getattr(args, "no_cache", False)) if path != "-" else None
            result = fix_source(data, name, own, unsafe=bool(cfg.unsafe_fixes), index=index)
        except SourceError as exc:
            try:
                text = decode(data, name)
            except SourceError:
                text = ""
            found = syntax_error_finding(text, name) if text else None
            if found is not None:
                if own.reports_syntax_errors():
                    remaining.append(found)
            else:
                print(f"forksafe: {name}: {exc.message}", file=sys.stderr)
            if path == "-" and not args.diff:
                sys.stdout.buffer.write(data)  # a filter gives its input back unchanged
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
        new = result.source
        if args.diff:
            sys.stdout.write(_diff(name, data, new))
        elif path == "-":
            sys.stdout.buffer.write(new)
        else:
            try:
                write_through(path, new)
            except OSError as exc:
                print(f"forksafe: error: {exc if exc.strerror is None else f'{path}: cannot write: {exc.strerror}'}", file=sys.stderr)
                failed = True
                remaining.extend(result.fixed)  # not written: the findings are still in the file
                continue
        changed_files += 1  # counted only once written (or shown)
        fixed_total += len(result.fixed)
        fixed.extend(result.fixed)
    out = sys.stderr if (args.diff or files == ["-"]) else sys.stdout
    style = terminal.Style(terminal.use_color(args.color, out))
    verb = "Would fix" if args.diff else "Fixed"
    if fixed_total or changed_files:
        print(f"{verb} {fixed_total} finding{'s' if fixed_total != 1 else ''} in {changed_files} file{'s' if changed_files != 1 else ''}.", file=out)
    if remaining:
        print(f"{len(remaining)} finding{'s' if len(remaining) != 1 else ''} remain{'s' if len(remaining) == 1 else ''}:", file=out)
        for f in remaining:
            out.write(terminal.finding_line(f, bool(cfg.unsafe_fixes), style))
        hidden = sum(1 for f in remaining if f.fix == "unsafe" and not cfg.unsafe_fixes)
        if hidden:
            print(f"{hidden} more fixable with `--unsafe-fixes`.", file=out)
    elif not changed_files:
        print("Nothing to fix.", file=out)
    if args.show_fixes and fixed:
        out.write(terminal.fixes_by_file(fixed, "Would fix" if args.diff else "Fixed"))
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
        from flake8_forksafe.frontends.lsp import serve
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
