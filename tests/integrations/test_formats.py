"""`forksafe check --format sarif|github|json|text`: the renderers and the real command.

SARIF is checked with a structural validator of the SARIF 2.1.0 properties GitHub code scanning
reads (``_util.sarif_problems``; jsonschema is not a dependency), GitHub annotations by parsing
them back the way the Actions runner does.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from flake8_forksafe.model import Finding
from flake8_forksafe.frontends.formats import (
    FORMATS,
    escape_data,
    escape_property,
    github,
    relative_posix,
    render,
    sarif_document,
    sarif_uri,
)
from tests.integrations._util import CLEAN, HAZARD, hazard_spans, run, sarif_problems, tool

URL = "https://github.com/flake8-forksafe/flake8-forksafe/blob/main/docs/rules/{code}.md"


def finding(path="pkg/data.py", line=3, col=4, end_line=3, end_col=9, code="FRK101", message="m", name="handle-opened-in-init"):
    return Finding(path=path, line=line, col=col, code=code, message=message, end_line=end_line, end_col=end_col, fix="safe", name=name)


def forksafe(*args: str, cwd: Path):
    return run([tool("forksafe"), *args], cwd=cwd, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src" / "my data").mkdir(parents=True)
    (tmp_path / "src" / "my data" / "loader.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "src" / "clean.py").write_text(CLEAN, encoding="utf-8")
    return tmp_path


# ------------------------------------------------------------------------------ the validator


def test_the_sarif_validator_rejects_what_github_rejects():
    good = sarif_document([finding()])
    assert sarif_problems(good) == []

    def broken(mutate) -> List[str]:
        doc = json.loads(json.dumps(good))
        mutate(doc)
        return sarif_problems(doc)

    loc = lambda d: d["runs"][0]["results"][0]["locations"][0]["physicalLocation"]  # noqa: E731
    assert broken(lambda d: d.update(version="2.0.0"))
    assert broken(lambda d: d.pop("$schema"))
    assert broken(lambda d: d["runs"][0]["tool"]["driver"].pop("name"))
    assert broken(lambda d: d["runs"][0]["results"][0].update(ruleId="FRK999"))
    assert broken(lambda d: d["runs"][0]["results"][0].update(ruleIndex=5000))
    assert broken(lambda d: d["runs"][0]["results"][0]["message"].update(text=""))
    assert broken(lambda d: loc(d)["artifactLocation"].update(uri="/abs/data.py"))
    assert broken(lambda d: loc(d)["artifactLocation"].update(uri="file:///abs/data.py"))
    assert broken(lambda d: loc(d)["artifactLocation"].update(uri="pkg\\data.py"))
    assert broken(lambda d: loc(d)["artifactLocation"].update(uri="my data.py"))
    assert broken(lambda d: loc(d)["region"].update(startColumn=0))
    assert broken(lambda d: loc(d)["region"].update(startLine=0))
    assert broken(lambda d: loc(d)["region"].update(endColumn=2))
    assert broken(lambda d: d["runs"][0]["results"][0].update(severity="high"))


# --------------------------------------------------------------------------------- renderers


@pytest.mark.parametrize(
    "given,uri",
    [
        ("pkg/data.py", "pkg/data.py"),
        ("./pkg/data.py", "pkg/data.py"),
        ("pkg\\sub\\data.py", "pkg/sub/data.py"),
        (".hidden/data.py", ".hidden/data.py"),
        ("../other/data.py", "../other/data.py"),
        ("pkg/my data.py", "pkg/my%20data.py"),
        ("pkg/50%.py", "pkg/50%25.py"),
        ("pkg/dätä#1.py", "pkg/d%C3%A4t%C3%A4%231.py"),
    ],
)
def test_sarif_uris_are_relative_posix_uri_references(given, uri):
    assert sarif_uri(given) == uri
    assert sarif_problems(sarif_document([finding(path=given)])) == []


def test_absolute_paths_under_the_current_directory_become_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    absolute = str(tmp_path / "pkg" / "data.py")
    assert relative_posix(absolute) == "pkg/data.py"
    assert sarif_uri(absolute) == "pkg/data.py"
    assert "file=pkg/data.py," in github([finding(path=absolute)])


def test_sarif_regions_are_one_based_and_end_only_when_known():
    doc = sarif_document(
        [
            finding(line=3, col=0, end_line=3, end_col=5),
            finding(line=4, col=8, end_line=6, end_col=1),
            finding(line=7, col=2, end_line=0, end_col=0),  # no end known
        ]
    )
    assert sarif_problems(doc) == []
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in doc["runs"][0]["results"]]
    assert regions == [
        {"startLine": 3, "startColumn": 1, "endLine": 3, "endColumn": 6},
        {"startLine": 4, "startColumn": 9, "endLine": 6, "endColumn": 2},
        {"startLine": 7, "startColumn": 3},
    ]
    assert doc["runs"][0]["columnKind"] == "unicodeCodePoints"


def test_sarif_rules_carry_metadata_and_results_point_at_them():
    from flake8_forksafe.checks import ALL_RULES

    doc = sarif_document([finding(code=r.code) for r in ALL_RULES] + [finding(code="FRK999")])
    assert sarif_problems(doc) == []
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["name"] == "flake8-forksafe"
    rules = {r["id"]: r for r in driver["rules"]}
    for r in ALL_RULES:
        d = rules[r.code]
        assert d["name"] == r.name
        assert d["helpUri"] == URL.format(code=r.code)
        assert d["shortDescription"]["text"] and d["fullDescription"]["text"]
        assert "\n" not in d["fullDescription"]["text"]
        assert d["help"]["text"] and d["help"]["markdown"]
        assert d["defaultConfiguration"]["enabled"] is bool(r.default_enabled)
    # a code this version does not know (e.g. from an old cache) still gets a descriptor
    assert rules["FRK999"]["helpUri"] == URL.format(code="FRK999")
    for res in doc["runs"][0]["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]


def _unescape_data(s: str) -> str:
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(s: str) -> str:
    return _unescape_data(s.replace("%3A", ":").replace("%2C", ","))


def parse_workflow_command(line: str) -> Tuple[str, Dict[str, str], str]:
    """Parse one ``::command k=v,k=v::message`` line as the Actions runner does."""
    m = re.fullmatch(r"::(\w+) ([^:]*)::(.*)", line)
    assert m, f"not a workflow command: {line!r}"
    props = {}
    for part in m.group(2).split(","):
        key, _, value = part.partition("=")
        props[key] = _unescape_property(value)
    return m.group(1), props, _unescape_data(m.group(3))


def test_github_escaping_round_trips_through_the_runner_syntax():
    f = finding(path="we,ird:dir/50%.py", message="a: b, c 100%\r\nnext line", name="x,y:z")
    out = github([f])
    assert out.endswith("\n") and out.count("\n") == 1  # one command, on one line
    line = out[:-1]
    assert "\r" not in line
    command, props, message = parse_workflow_command(line)
    assert command == "warning"
    assert props == {
        "file": "we,ird:dir/50%.py",
        "line": "3",
        "col": "5",
        "endColumn": "10",
        "title": "FRK101 x,y:z",
    }
    assert message == "FRK101 a: b, c 100%\r\nnext line"
    assert escape_data("%\r\n:,") == "%25%0D%0A:,"
    assert escape_property("%\r\n:,") == "%25%0D%0A%3A%2C"


def test_github_multi_line_regions_give_lines_without_columns():
    out = github([finding(line=4, col=8, end_line=6, end_col=1)])
    _, props, _ = parse_workflow_command(out.rstrip("\n"))
    assert props["line"] == "4" and props["endLine"] == "6"
    assert "col" not in props and "endColumn" not in props


def test_every_format_renders_no_findings():
    assert set(FORMATS) == {"text", "json", "sarif", "github"}
    assert render("text", []) == "" and render("github", []) == ""
    assert json.loads(render("json", [])) == []
    doc = json.loads(render("sarif", []))
    assert sarif_problems(doc) == [] and doc["runs"][0]["results"] == []


# ------------------------------------------------------------------------- the real command


def test_check_format_sarif_is_valid_and_exact(project):
    r = forksafe("check", "--no-cache", "--format", "sarif", ".", cwd=project)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert sarif_problems(doc) == []
    rows = json.loads(forksafe("check", "--no-cache", "--format", "json", ".", cwd=project).stdout)
    results = doc["runs"][0]["results"]
    got = [
        (
            res["ruleId"],
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            res["locations"][0]["physicalLocation"]["region"],
            res["message"]["text"],
        )
        for res in results
    ]
    want = [
        (
            "FRK101",
            "src/my%20data/loader.py",
            {"startLine": s["line"], "startColumn": s["start"] + 1, "endLine": s["line"], "endColumn": s["end"] + 1},
            row["message"],
        )
        for s, row in zip(hazard_spans(), rows)
    ]
    assert got == want
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    listed = json.loads(forksafe("rules", "--format", "json", cwd=project).stdout)
    assert set(rules) == {r["code"] for r in listed}
    assert rules["FRK101"]["helpUri"] == URL.format(code="FRK101")


def test_check_format_sarif_output_file_with_absolute_paths(project):
    target = project / "src" / "my data" / "loader.py"
    r = forksafe("check", "--no-cache", "--format", "sarif", "--output", "out.sarif", str(target), cwd=project)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    doc = json.loads((project / "out.sarif").read_text(encoding="utf-8"))
    assert sarif_problems(doc) == []
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in doc["runs"][0]["results"]}
    assert uris == {"src/my%20data/loader.py"}


def test_check_format_sarif_on_a_clean_tree(project):
    r = forksafe("check", "--no-cache", "--format", "sarif", "src/clean.py", cwd=project)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert sarif_problems(doc) == [] and doc["runs"][0]["results"] == []


def test_check_format_github_annotations(project):
    r = forksafe("check", "--no-cache", "--format", "github", ".", cwd=project)
    assert r.returncode == 1, r.stderr
    rows = json.loads(forksafe("check", "--no-cache", "--format", "json", ".", cwd=project).stdout)
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    for line, s, row in zip(lines, hazard_spans(), rows):
        command, props, message = parse_workflow_command(line)
        assert command == "warning"
        assert props == {
            "file": "src/my data/loader.py",
            "line": str(s["line"]),
            "col": str(s["start"] + 1),
            "endColumn": str(s["end"] + 1),
            "title": "FRK101 handle-opened-in-init",
        }
        assert message == f"FRK101 {row['message']}"


def test_check_format_json_and_text_columns_are_one_based(project):
    rows = json.loads(forksafe("check", "--no-cache", "--format", "json", ".", cwd=project).stdout)
    spans = hazard_spans()
    assert [(r["code"], r["line"], r["column"], r["end_line"], r["end_column"]) for r in rows] == [
        ("FRK101", s["line"], s["start"] + 1, s["line"], s["end"] + 1) for s in spans
    ]
    text = forksafe("check", "--no-cache", ".", cwd=project).stdout.splitlines()
    path = os.path.join("src", "my data", "loader.py")
    assert text[-1].startswith(f"Found {len(spans)} findings.")
    assert [t.split(" FRK101 ")[0] for t in text[:-1]] == [f"{path}:{s['line']}:{s['start'] + 1}:" for s in spans]
