"""Output formats of ``forksafe check``: text, json, sarif (2.1.0), github (workflow commands).

Columns: ``Finding.col`` is 0-based (as flake8 plugins report them); every format shows it 1-based,
as flake8, ruff and editors display columns. Columns count code points (SARIF: ``columnKind``
``unicodeCodePoints``).

Notebooks (``.ipynb``): a finding's ``cell`` is the 1-based cell and its lines are lines of that cell.
Text shows ``path:cell N:L:C: CODE message`` (as ruff does); json adds a ``"cell"`` field after
``"path"``; SARIF keeps the cell-relative region, adds the result property ``notebookCell`` and a logical
location ``cell N``, and starts the message with ``cell N, line L:``; GitHub annotations likewise.

Paths: text and json show the path as given on the command line. SARIF and GitHub annotations need
paths relative to the repository root (the directory the tool runs in, in CI): an absolute path
under the current directory is made relative, and every path is written with ``/`` separators
(SARIF additionally percent-encodes it, as a URI reference must be).
"""

from __future__ import annotations

import json
import os
import posixpath
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from flake8_forksafe import __version__
from flake8_forksafe.model import DOCS_URL, Finding

FORMATS = ("text", "json", "sarif", "github")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/flake8-forksafe/flake8-forksafe"


# ------------------------------------------------------------------------------------------ helpers


def _end(f: Finding) -> Optional[Tuple[int, int]]:
    """(end_line, end_col) when the finding has a usable end (after its start), else None."""
    if f.end_line > f.line or (f.end_line == f.line and f.end_col > f.col):
        return f.end_line, f.end_col
    return None


def relative_posix(path: str) -> str:
    """The path relative to the current directory when it lies under it, with ``/`` separators,
    normalised, without a leading ``./``. Paths outside the current directory keep their ``..``."""
    p = path
    if os.path.isabs(p):
        try:
            p = os.path.relpath(p)
        except ValueError:  # another drive (Windows): nothing relative to say
            return p.replace("\\", "/")
    p = posixpath.normpath(p.replace("\\", "/"))
    return "" if p == "." else p


# ------------------------------------------------------------------------------------ text / json


def _cell(f: Finding) -> str:
    return f"cell {f.cell}:" if f.cell else ""


def text(findings: Sequence[Finding]) -> str:
    return "".join(f"{f.path}:{_cell(f)}{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)


def as_json(findings: Sequence[Finding]) -> str:
    rows = []
    for f in findings:
        end = _end(f)
        row: Dict[str, Any] = {"path": f.path}
        if f.cell:  # a notebook finding: the lines are lines of that cell
            row["cell"] = f.cell
        row.update(
            {
                "line": f.line,
                "column": f.col + 1,
                "end_line": end[0] if end else None,
                "end_column": end[1] + 1 if end else None,
                "code": f.code,
                "name": f.name,
                "message": f.message,
                "fix": f.fix,
                "url": DOCS_URL.format(code=f.code),
            }
        )
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


# ------------------------------------------------------------------------------------------ sarif


def _rule_docs(code: str) -> str:
    from flake8_forksafe.docs import rule_doc

    return rule_doc(code) or ""


def _one_paragraph(s: str) -> str:
    return " ".join(s.split())


def _rule_descriptor(rule: Any) -> Dict[str, Any]:
    from flake8_forksafe.docs import rule_summary

    summary = rule_summary(rule)
    full = _one_paragraph(rule.__doc__ or "") or summary
    help_text = full
    if rule.fix_applicability:
        title = f": {rule.fix_title}" if rule.fix_title else ""
        help_text += f" Automatic fix ({rule.fix_applicability}){title}."
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": full},
        "helpUri": DOCS_URL.format(code=rule.code),
        "help": {"text": help_text, "markdown": _rule_docs(rule.code) or help_text},
        "defaultConfiguration": {"level": "warning", "enabled": bool(rule.default_enabled)},
        "properties": {
            "tags": ["multiprocessing", "pytorch", "dataloader"],
            "fix": rule.fix_applicability or "none",
        },
    }


def sarif_uri(path: str) -> str:
    """A relative URI reference for a path: relative POSIX path, percent-encoded."""
    # errors: a non-UTF-8 file name's own bytes are percent-encoded (bad%FF.py)
    return urllib.parse.quote(relative_posix(path) or path, safe="/", errors="surrogateescape")


def sarif_document(findings: Sequence[Finding]) -> Dict[str, Any]:
    from flake8_forksafe.checks import ALL_RULES

    rules: List[Dict[str, Any]] = []
    index: Dict[str, int] = {}
    for r in ALL_RULES:
        index[r.code] = len(rules)
        rules.append(_rule_descriptor(r))
    results = []
    for f in findings:
        if f.code not in index:  # a code this version does not know (an old cache entry): still valid
            index[f.code] = len(rules)
            rules.append({"id": f.code, "helpUri": DOCS_URL.format(code=f.code)})
        region: Dict[str, int] = {"startLine": max(1, f.line), "startColumn": max(0, f.col) + 1}
        end = _end(f)
        if end is not None:
            region["endLine"] = end[0]
            region["endColumn"] = end[1] + 1  # exclusive, as libcst's end column
        result: Dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "warning",
            "message": {"text": f.message or f.name or f.code},
            "properties": {"fix": f.fix or "none"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": sarif_uri(f.path)},
                        "region": region,
                    }
                }
            ],
        }
        if f.cell:
            # a notebook: the region's lines are lines of the cell; the cell is a property
            result["message"]["text"] = f"cell {f.cell}, line {f.line}: {result['message']['text']}"
            result["properties"]["notebookCell"] = f.cell
            result["locations"][0]["logicalLocations"] = [{"name": f"cell {f.cell}", "kind": "notebookCell"}]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flake8-forksafe",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def sarif(findings: Sequence[Finding]) -> str:
    return json.dumps(sarif_document(findings), indent=2) + "\n"


# ----------------------------------------------------------------------------------------- github


def escape_data(s: str) -> str:
    """A workflow command's message (@actions/core ``escapeData``)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    """A workflow command's property value (@actions/core ``escapeProperty``)."""
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding]) -> str:
    """``::warning file=...,line=...::message`` annotations. Columns are given only for a
    single-line region: GitHub ignores (the API rejects) columns that span lines."""
    out = []
    for f in findings:
        props = [f"file={escape_property(relative_posix(f.path) or f.path)}", f"line={max(1, f.line)}"]
        end = _end(f)
        if end is not None and end[0] > f.line:
            props.append(f"endLine={end[0]}")
        else:
            props.append(f"col={f.col + 1}")
            if end is not None:
                props.append(f"endColumn={end[1] + 1}")
        props.append(f"title={escape_property(f'{f.code} {f.name}'.strip())}")
        where = f"cell {f.cell}, line {f.line}: " if f.cell else ""
        out.append(f"::warning {','.join(props)}::{escape_data(f'{where}{f.code} {f.message}')}\n")
    return "".join(out)


RENDERERS: Dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": text,
    "json": as_json,
    "sarif": sarif,
    "github": github,
}


def render(fmt: str, findings: List[Finding]) -> str:
    return RENDERERS[fmt](findings)
