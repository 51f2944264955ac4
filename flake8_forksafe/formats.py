"""Output formats of ``forksafe check``: text, json, sarif (2.1.0), github (workflow commands).

Columns: ``Finding.col`` is 0-based (as flake8 plugins report them); every format shows it 1-based,
as flake8, ruff and editors display columns.
"""

from __future__ import annotations

import json
from typing import Callable, Dict, List, Sequence

from flake8_forksafe import __version__
from flake8_forksafe.engine import DOCS_URL, Finding

FORMATS = ("text", "json", "sarif", "github")


def text(findings: Sequence[Finding]) -> str:
    return "".join(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}\n" for f in findings)


def as_json(findings: Sequence[Finding]) -> str:
    rows = []
    for f in findings:
        rows.append(
            {
                "path": f.path,
                "line": f.line,
                "column": f.col + 1,
                "end_line": f.end_line,
                "end_column": f.end_col + 1,
                "code": f.code,
                "name": f.name,
                "message": f.message,
                "fix": f.fix,
                "url": DOCS_URL.format(code=f.code),
            }
        )
    return json.dumps(rows, indent=2) + "\n"


def _rule_docs(code: str) -> str:
    from flake8_forksafe.docs import rule_doc

    return rule_doc(code) or ""


def sarif(findings: Sequence[Finding]) -> str:
    from flake8_forksafe.checks import ALL_RULES
    from flake8_forksafe.docs import rule_summary

    rules = []
    index: Dict[str, int] = {}
    for i, r in enumerate(ALL_RULES):
        index[r.code] = i
        rules.append(
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": rule_summary(r)},
                "fullDescription": {"text": (r.__doc__ or rule_summary(r)).strip()},
                "helpUri": DOCS_URL.format(code=r.code),
                "help": {"text": rule_summary(r), "markdown": _rule_docs(r.code) or rule_summary(r)},
                "defaultConfiguration": {"level": "warning", "enabled": bool(r.default_enabled)},
                "properties": {"fix": r.fix_applicability or "none", "tags": ["multiprocessing", "pytorch"]},
            }
        )
    results = []
    for f in findings:
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index.get(f.code, 0),
                "level": "warning",
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": f.path.replace("\\", "/").lstrip("./") or f.path},
                            "region": {
                                "startLine": f.line,
                                "startColumn": f.col + 1,
                                "endLine": max(f.end_line, f.line),
                                "endColumn": f.end_col + 1,
                            },
                        }
                    }
                ],
            }
        )
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flake8-forksafe",
                        "version": __version__,
                        "informationUri": "https://github.com/flake8-forksafe/flake8-forksafe",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def github(findings: Sequence[Finding]) -> str:
    out = []
    for f in findings:
        props = (
            f"file={_gh_escape(f.path, True)},line={f.line},col={f.col + 1},"
            f"endLine={max(f.end_line, f.line)},endColumn={f.end_col + 1},title={_gh_escape(f.code + ' ' + f.name, True)}"
        )
        out.append(f"::warning {props}::{_gh_escape(f.code + ' ' + f.message)}\n")
    return "".join(out)


RENDERERS: Dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": text,
    "json": as_json,
    "sarif": sarif,
    "github": github,
}


def render(fmt: str, findings: List[Finding]) -> str:
    return RENDERERS[fmt](findings)
