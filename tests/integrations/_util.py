"""Shared by the integration tests: the sample project, the tools, a SARIF 2.1.0 structural check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# Two FRK101 hazards with safe fixes. The first line holds a character outside the Basic
# Multilingual Plane before the finding, so UTF-16 (LSP) and code-point (SARIF) columns differ.
HAZARD = textwrap.dedent(
    '''\
    import lmdb
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path):
            self.tag = "\U0001F39E"; self.env = lmdb.open(path, readonly=True, lock=False)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            with self.env.begin() as txn:
                return txn.get(str(i).encode())


    class Logs(Dataset):
        def __init__(self, path):
            self.fh = open(path, "rb")

        def __getitem__(self, i):
            self.fh.seek(i)
            return self.fh.read(1)
    '''
)
# (1-based line, the reported call) of each finding in HAZARD
HAZARD_CALLS = [(7, 'lmdb.open(path, readonly=True, lock=False)'), (19, 'open(path, "rb")')]

CLEAN = textwrap.dedent(
    '''\
    from torch.utils.data import Dataset


    class Squares(Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i * i
    '''
)


def hazard_spans(text: str = HAZARD) -> List[Dict[str, int]]:
    """Where each HAZARD_CALLS call is: 1-based line, 0-based code-point start and end columns."""
    lines = text.splitlines()
    out = []
    for line, call in HAZARD_CALLS:
        start = lines[line - 1].index(call)
        out.append({"line": line, "start": start, "end": start + len(call)})
    return out


def tool(name: str) -> str:
    """A console script of the environment that runs the tests."""
    p = BIN / name
    return str(p) if p.exists() else name


def run(cmd: List[str], cwd: Path, env: Dict[str, str] | None = None, timeout: int = 600, **kw: Any):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "PYTHONPATH", "GIT_"))}
    env.update(
        GIT_AUTHOR_NAME="forksafe tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="forksafe tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
    )
    env.update(extra)
    return env


def git(*args: str, cwd: Path, env: Dict[str, str] | None = None) -> str:
    r = run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env or clean_env())
    assert r.returncode == 0, f"git {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


class HookRepo(NamedTuple):
    """A git repository pre-commit can install the hooks from, and the commit to use."""

    path: Path
    rev: str


def precommit_config(repo: HookRepo, hooks: List[Dict[str, Any]]) -> str:
    import yaml

    return yaml.safe_dump({"repos": [{"repo": str(repo.path), "rev": repo.rev, "hooks": hooks}]}, sort_keys=False)


# ------------------------------------------------------------------------------------------ SARIF

_SARIF_LOG_KEYS = {"$schema", "version", "runs", "inlineExternalProperties", "properties"}
_RUN_KEYS = {
    "tool", "invocations", "conversion", "language", "versionControlProvenance", "originalUriBaseIds",
    "artifacts", "logicalLocations", "graphs", "results", "automationDetails", "runAggregates",
    "baselineGuid", "redactionTokens", "defaultEncoding", "defaultSourceLanguage", "newlineSequences",
    "columnKind", "externalPropertyFileReferences", "threadFlowLocations", "taxonomies", "addresses",
    "translations", "policies", "webRequests", "webResponses", "specialLocations", "properties",
}
_DRIVER_KEYS = {
    "guid", "name", "fullName", "version", "semanticVersion", "dottedQuadFileVersion", "releaseDateUtc",
    "downloadUri", "informationUri", "organization", "product", "productSuite", "shortDescription",
    "fullDescription", "rules", "notifications", "taxa", "locations", "language", "contents",
    "isComprehensive", "localizedDataSemanticVersion", "minimumRequiredLocalizedDataSemanticVersion",
    "associatedComponent", "translationMetadata", "supportedTaxonomies", "properties",
}
_RULE_KEYS = {
    "id", "deprecatedIds", "guid", "deprecatedGuids", "name", "deprecatedNames", "shortDescription",
    "fullDescription", "messageStrings", "defaultConfiguration", "helpUri", "help", "relationships",
    "properties",
}
_RESULT_KEYS = {
    "ruleId", "ruleIndex", "rule", "kind", "level", "message", "analysisTarget", "locations", "guid",
    "correlationGuid", "occurrenceCount", "partialFingerprints", "fingerprints", "stacks", "codeFlows",
    "graphs", "graphTraversals", "relatedLocations", "suppressions", "baselineState", "rank",
    "attachments", "hostedViewerUri", "workItemUris", "provenance", "fixes", "taxa",
    "webRequest", "webResponse", "properties",
}
_REGION_KEYS = {
    "startLine", "startColumn", "endLine", "endColumn", "charOffset", "charLength", "byteOffset",
    "byteLength", "snippet", "message", "sourceLanguage", "properties",
}
_LEVELS = {"none", "note", "warning", "error"}
_COLUMN_KINDS = {"utf16CodeUnits", "unicodeCodePoints"}


def sarif_problems(doc: Any) -> List[str]:
    """Everything in ``doc`` that a SARIF 2.1.0 consumer (GitHub code scanning) would reject or
    misread, for the properties this tool writes. Empty when the log is valid."""
    errs: List[str] = []

    def need(cond: bool, what: str) -> bool:
        if not cond:
            errs.append(what)
        return cond

    def keys(obj: Dict[str, Any], allowed: set, where: str) -> None:
        extra = set(obj) - allowed
        need(not extra, f"{where}: unknown properties {sorted(extra)}")

    def text_message(obj: Any, where: str) -> None:
        if need(isinstance(obj, dict), f"{where} must be an object"):
            need(isinstance(obj.get("text"), str) and obj["text"].strip() != "", f"{where}.text must be a non-empty string")

    def url(value: Any, where: str) -> None:
        need(isinstance(value, str) and re.match(r"^https?://[^\s]+$", value) is not None, f"{where} must be an absolute http(s) URL, got {value!r}")

    if not need(isinstance(doc, dict), "the log must be an object"):
        return errs
    keys(doc, _SARIF_LOG_KEYS, "sarifLog")
    need(doc.get("version") == "2.1.0", "version must be '2.1.0'")
    schema = doc.get("$schema")
    need(isinstance(schema, str) and re.search(r"sarif-2\.1\.0(-rtm\.\d+)?\.json$", schema or "") is not None, f"$schema must name the SARIF 2.1.0 schema, got {schema!r}")
    runs = doc.get("runs")
    if not need(isinstance(runs, list) and len(runs) >= 1, "runs must be a non-empty array"):
        return errs
    for r_i, run_ in enumerate(runs):
        where = f"runs[{r_i}]"
        if not need(isinstance(run_, dict), f"{where} must be an object"):
            continue
        keys(run_, _RUN_KEYS, where)
        if "columnKind" in run_:
            need(run_["columnKind"] in _COLUMN_KINDS, f"{where}.columnKind invalid")
        driver = (run_.get("tool") or {}).get("driver")
        if not need(isinstance(driver, dict), f"{where}.tool.driver must be an object"):
            continue
        keys(driver, _DRIVER_KEYS, f"{where}.tool.driver")
        need(isinstance(driver.get("name"), str) and driver["name"] != "", f"{where}.tool.driver.name must be a non-empty string")
        if "informationUri" in driver:
            url(driver["informationUri"], f"{where}.tool.driver.informationUri")
        rules = driver.get("rules", [])
        need(isinstance(rules, list), f"{where}.tool.driver.rules must be an array")
        ids = []
        for i, rule in enumerate(rules):
            rw = f"{where}.tool.driver.rules[{i}]"
            if not need(isinstance(rule, dict), f"{rw} must be an object"):
                continue
            keys(rule, _RULE_KEYS, rw)
            need(isinstance(rule.get("id"), str) and rule["id"] != "", f"{rw}.id must be a non-empty string")
            ids.append(rule.get("id"))
            for k in ("shortDescription", "fullDescription"):
                if k in rule:
                    text_message(rule[k], f"{rw}.{k}")
            if "help" in rule:
                text_message(rule["help"], f"{rw}.help")
                if "markdown" in rule["help"]:
                    need(isinstance(rule["help"]["markdown"], str), f"{rw}.help.markdown must be a string")
            if "helpUri" in rule:
                url(rule["helpUri"], f"{rw}.helpUri")
            conf = rule.get("defaultConfiguration")
            if conf is not None:
                need(conf.get("level", "warning") in _LEVELS, f"{rw}.defaultConfiguration.level invalid")
                need(isinstance(conf.get("enabled", True), bool), f"{rw}.defaultConfiguration.enabled must be a boolean")
            tags = (rule.get("properties") or {}).get("tags", [])
            need(isinstance(tags, list) and all(isinstance(t, str) for t in tags), f"{rw}.properties.tags must be strings")
        need(len(ids) == len(set(ids)), f"{where}: rule ids must be unique")
        results = run_.get("results")
        if not need(isinstance(results, list), f"{where}.results must be an array"):
            continue
        for j, res in enumerate(results):
            rw = f"{where}.results[{j}]"
            if not need(isinstance(res, dict), f"{rw} must be an object"):
                continue
            keys(res, _RESULT_KEYS, rw)
            need(isinstance(res.get("ruleId"), str) and res["ruleId"] in ids, f"{rw}.ruleId must name a rule of the driver")
            if "ruleIndex" in res:
                ri = res["ruleIndex"]
                need(isinstance(ri, int) and 0 <= ri < len(rules) and rules[ri].get("id") == res.get("ruleId"), f"{rw}.ruleIndex must point at the rule with ruleId")
            need(res.get("level", "warning") in _LEVELS, f"{rw}.level invalid")
            text_message(res.get("message"), f"{rw}.message")
            locs = res.get("locations")
            if not need(isinstance(locs, list) and len(locs) >= 1, f"{rw}.locations must be a non-empty array"):
                continue
            for k, loc in enumerate(locs):
                lw = f"{rw}.locations[{k}].physicalLocation"
                phys = (loc or {}).get("physicalLocation")
                if not need(isinstance(phys, dict), f"{lw} must be an object"):
                    continue
                uri = (phys.get("artifactLocation") or {}).get("uri")
                if need(isinstance(uri, str) and uri != "", f"{lw}.artifactLocation.uri must be a non-empty string"):
                    need(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", uri) is None, f"{lw}.artifactLocation.uri must be relative, got {uri!r}")
                    need(not uri.startswith("/"), f"{lw}.artifactLocation.uri must be relative, got {uri!r}")
                    need("\\" not in uri, f"{lw}.artifactLocation.uri must use '/', got {uri!r}")
                    need(not uri.startswith("./"), f"{lw}.artifactLocation.uri must not start with './', got {uri!r}")
                    need(re.fullmatch(r"[A-Za-z0-9\-._~/%!$&'()*+,;=:@]+", uri) is not None, f"{lw}.artifactLocation.uri is not a valid URI reference: {uri!r}")
                region = phys.get("region")
                if not need(isinstance(region, dict), f"{lw}.region must be an object"):
                    continue
                keys(region, _REGION_KEYS, f"{lw}.region")
                sl, sc = region.get("startLine"), region.get("startColumn", 1)
                need(isinstance(sl, int) and sl >= 1, f"{lw}.region.startLine must be an integer >= 1")
                need(isinstance(sc, int) and sc >= 1, f"{lw}.region.startColumn must be an integer >= 1")
                el, ec = region.get("endLine", sl), region.get("endColumn")
                need(isinstance(el, int) and isinstance(sl, int) and el >= sl, f"{lw}.region.endLine must be >= startLine")
                if ec is not None:
                    need(isinstance(ec, int) and ec >= 1, f"{lw}.region.endColumn must be an integer >= 1")
                    if el == sl and isinstance(ec, int) and isinstance(sc, int):
                        need(ec >= sc, f"{lw}.region.endColumn must be >= startColumn on one line")
    return errs
