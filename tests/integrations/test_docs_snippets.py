"""The setup pages' snippets work: docs/pre-commit.md, docs/flake8.md, docs/editors.md.

Every fenced block of these pages is preceded by ``<!-- test: KIND [ARG] -->`` saying how it is
exercised here (``none (why)`` for the few that need the network or an editor):

- ``file PATH``: written into the sample project the page's commands run in;
- ``console``: each ``$ command`` is run in that project; the lines shown after it must appear in
  its output, in order (a line ending in ``...`` is a prefix; a run of dots is any run of dots);
- ``pre-commit-config``: run by the real pre-commit (repo and rev pointed at this checkout);
  ``pre-commit-output``: what the first such configuration prints;
- ``github-workflow``: the workflow's forksafe/flake8 steps are run in order, its upload step must
  upload the SARIF file the report step wrote, and that file must be valid SARIF 2.1.0;
- ``lsp-command``: the command in the Lua / JavaScript snippet is started as a language server;
- ``vscode-flake8-settings``, ``nvim-lint``, ``none-ls``: flake8 is run the way that integration
  runs it (its arguments and output parser are copied below, with their sources), with the
  settings of the snippet.
"""

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple

import pytest
import yaml
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, client_capabilities

from flake8_forksafe import __version__
from flake8_forksafe.fix import fix_source
from flake8_forksafe.frontends.lsp import FIX_ALL_KIND
from tests.integrations._lsp import close_document, make_client, open_document
from tests.integrations._util import HAZARD, ROOT, HookRepo, git, hazard_spans, run, sarif_problems, tool

DOCS = ROOT / "docs"
PAGES = ("pre-commit.md", "flake8.md", "editors.md")
REPO_URL = "https://github.com/flake8-forksafe/flake8-forksafe"
KINDS = {
    "file", "console", "none", "pre-commit-config", "pre-commit-output", "github-workflow",
    "vscode-flake8-settings", "vscode-extension-manifest", "vscode-fix-on-save", "lsp-command",
    "nvim-fix-all", "nvim-lint", "none-ls",
}
MARKED = re.compile(
    r"<!-- test: (?P<kind>[\w-]+)(?: (?P<arg>[^>]*?))? -->\n```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.S | re.M
)


class Block(NamedTuple):
    kind: str
    arg: str
    lang: str
    body: str


def blocks(page: str, kind: str = None) -> List[Block]:
    text = (DOCS / page).read_text(encoding="utf-8")
    found = [Block(m["kind"], m["arg"] or "", m["lang"], m["body"]) for m in MARKED.finditer(text)]
    return [b for b in found if kind is None or b.kind == kind]


def project(tmp_path: Path, page: str) -> Path:
    """A directory holding the page's ``file`` blocks."""
    d = tmp_path / "project"
    d.mkdir()
    for b in blocks(page, "file"):
        target = d / b.arg
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(b.body, encoding="utf-8")
    return d


def line_matches(expected: str, actual: str) -> bool:
    prefix = expected.endswith("...") and not expected.endswith("....")
    text = expected[:-3] if prefix else expected
    pattern = r"\.+".join(re.escape(part) for part in re.split(r"\.{4,}", text))
    return re.match(pattern + ("" if prefix else "$"), actual) is not None


def assert_shows(expected_lines: List[str], output: str) -> None:
    actual = output.splitlines()
    i = 0
    for exp in (e for e in expected_lines if e.strip()):
        while i < len(actual) and not line_matches(exp, actual[i]):
            i += 1
        assert i < len(actual), f"expected {exp!r} in order in:\n{output}"
        i += 1


def command(argv: List[str]) -> List[str]:
    return [tool(argv[0]), *argv[1:]]


def jsonc(text: str):
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


# ----------------------------------------------------------------------------- the pages' shape


@pytest.mark.parametrize("page", PAGES)
def test_every_snippet_says_how_it_is_tested(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    fences = [line for line in text.splitlines() if line.startswith("```")]
    found = blocks(page)
    assert len(fences) == 2 * len(found), "a fenced block without a <!-- test: ... --> marker"
    assert {b.kind for b in found} <= KINDS
    for b in found:
        if b.kind == "none":
            assert b.arg.startswith("(") and b.arg.endswith(")"), "say why a snippet is not run"


# ---------------------------------------------------------------------------------- pre-commit


def _configs():
    return [yaml.safe_load(b.body) for b in blocks("pre-commit.md", "pre-commit-config")]


def test_pre_commit_configs_name_this_repository_and_its_hooks(tmp_path):
    manifest = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    configs = _configs()
    assert len(configs) == 3
    yaml_none = [b for b in blocks("pre-commit.md", "none") if b.lang == "yaml"]  # not the console examples
    for i, b in enumerate(blocks("pre-commit.md", "pre-commit-config") + yaml_none):
        (tmp_path / f"{i}.yaml").write_text(b.body, encoding="utf-8")
        r = run([sys.executable, "-m", "pre_commit", "validate-config", f"{i}.yaml"], cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    for cfg in configs:
        (repo,) = cfg["repos"]
        assert repo["repo"] == REPO_URL
        assert repo["rev"] == f"v{__version__}"
        assert {h["id"] for h in repo["hooks"]} <= manifest
    (flake8_hook,) = [yaml.safe_load(b.body) for b in yaml_none]
    deps = flake8_hook["repos"][0]["hooks"][0]["additional_dependencies"]
    assert deps == [f"flake8-forksafe=={__version__}"]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(3))
def test_pre_commit_page_configurations_run(index, hook_repo: HookRepo, pre_commit, tmp_path):
    cfg = _configs()[index]
    cfg["repos"][0].update(repo=str(hook_repo.path), rev=hook_repo.rev)
    proj = project(tmp_path, "pre-commit.md")
    (proj / ".pre-commit-config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git("init", "-q", cwd=proj)
    git("add", "-A", cwd=proj)
    original = (proj / "pkg" / "data.py").read_text(encoding="utf-8")
    r = pre_commit("run", "--all-files", cwd=proj)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    hooks = cfg["repos"][0]["hooks"]
    ids = [h["id"] for h in hooks]
    if index == 0:
        (shown,) = blocks("pre-commit.md", "pre-commit-output")
        assert_shows(shown.body.splitlines(), out)
    if "forksafe-fix" in ids:
        assert "files were modified by this hook" in out
        assert (proj / "pkg" / "data.py").read_text(encoding="utf-8") == fix_source(original, "pkg/data.py").source
    else:
        assert (proj / "pkg" / "data.py").read_text(encoding="utf-8") == original
        if "github" in hooks[0].get("args", []):
            assert "::warning file=pkg/data.py,line=7,col=20," in out
        else:
            assert "pkg/data.py:7:20: FRK101 " in out


# -------------------------------------------------------------------------------------- flake8


def test_flake8_page_commands(tmp_path):
    proj = project(tmp_path, "flake8.md")
    consoles = blocks("flake8.md", "console")
    assert consoles
    for b in consoles:
        steps: List[Dict] = []
        for line in b.body.splitlines():
            if line.startswith("$ "):
                steps.append({"argv": shlex.split(line[2:]), "shows": []})
            else:
                steps[-1]["shows"].append(line)
        for step in steps:
            r = run(command(step["argv"]), cwd=proj, timeout=300)
            assert r.returncode in (0, 1), f"{step['argv']}: {r.stderr}"
            assert r.stderr == "" or "error" not in r.stderr.lower(), r.stderr
            assert_shows(step["shows"], r.stdout)
            if "--format" in step["argv"] and step["argv"][step["argv"].index("--format") + 1] == "sarif":
                out = step["argv"][step["argv"].index("--output") + 1]
                doc = json.loads((proj / out).read_text(encoding="utf-8"))
                assert sarif_problems(doc) == []
                (res,) = doc["runs"][0]["results"]
                assert res["ruleId"] == "FRK101"
                assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/data.py"


def test_flake8_page_configuration_is_read_by_flake8(tmp_path):
    proj = project(tmp_path, "flake8.md")
    assert (proj / ".flake8").is_file()
    (proj / "src" / "rows.py").write_text(
        "import mystore\nfrom torch.utils.data import Dataset\n\n\nclass Rows(Dataset):\n"
        "    def __init__(self, path):\n        self.db = mystore.connect(path)\n\n"
        "    def __getitem__(self, i):\n        return self.db.get(i)\n",
        encoding="utf-8",
    )
    (proj / "src" / "loaders.py").write_text(
        "from torch.utils.data import DataLoader\n\n\ndef make(ds):\n"
        '    return DataLoader(ds, num_workers=4, multiprocessing_context="spawn")\n',
        encoding="utf-8",
    )
    r = run([sys.executable, "-m", "flake8", "--select", "FRK", "src"], cwd=proj, timeout=300)
    codes = sorted(re.findall(r"^(\S+):(\d+):\d+: (FRK\d+) ", r.stdout, re.M))
    assert codes == [("src/data.py", "7", "FRK101"), ("src/loaders.py", "5", "FRK501"), ("src/rows.py", "7", "FRK101")], r.stdout + r.stderr


def test_github_workflow(tmp_path):
    proj = project(tmp_path, "flake8.md")
    (b,) = blocks("flake8.md", "github-workflow")
    wf = yaml.safe_load(b.body)
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"push", "pull_request"}
    assert wf["permissions"]["security-events"] == "write"
    (job,) = wf["jobs"].values()
    steps = job["steps"]
    uploads = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    (upload,) = uploads
    sarif_file = upload["with"]["sarif_file"]
    ran = []
    for step in steps:
        cmd = step.get("run")
        if not cmd:
            continue
        argv = shlex.split(cmd)
        if argv[0] == "pip":
            continue  # the package is installed in the environment running the tests
        assert argv[0] in ("forksafe", "flake8"), cmd
        r = run(command(argv), cwd=proj, timeout=300)
        ran.append((argv, r))
    (report_argv, report), (fail_argv, fail) = ran
    # the report step succeeds (so the upload runs) and writes the file the upload step uploads
    assert report.returncode == 0, report.stderr
    assert report_argv[report_argv.index("--output") + 1] == sarif_file
    assert steps.index(upload) > [s.get("run") for s in steps].index(" ".join(report_argv))
    doc = json.loads((proj / sarif_file).read_text(encoding="utf-8"))
    assert sarif_problems(doc) == []
    assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["FRK101"]
    # the last step fails the job, with one annotation per finding
    assert fail.returncode == 1
    assert fail.stdout.startswith("::warning file=src/data.py,line=7,col=20,")


# ------------------------------------------------------------------------------------- editors


# vscode-flake8 (microsoft/vscode-flake8, bundled/tool/lsp_server.py): the format it always
# passes, how it parses each line, and how it picks a severity (the longest configured prefix
# of the code, then its first letter, else Error).
VSCODE_FLAKE8_FORMAT = "--format='%(row)d,%(col)d,%(code).1s,%(code)s:%(text)s'"
VSCODE_FLAKE8_LINE = re.compile(r"(?P<line>\d+),(?P<column>-?\d+),(?P<type>\w+),(?P<code>\w+\d+):(?P<message>[^\r\n]*)")


def vscode_severity(code: str, code_type: str, severity: Dict[str, str]) -> str:
    value = None
    while code and value is None:
        value = severity.get(code)
        code = code[:-1]
    return value or severity.get(code_type, "Error")


def test_vscode_flake8_extension_settings(tmp_path):
    (b,) = blocks("editors.md", "vscode-flake8-settings")
    settings = jsonc(b.body)
    assert settings["flake8.importStrategy"] == "fromEnvironment"
    src = tmp_path / "data.py"
    src.write_text(HAZARD, encoding="utf-8")
    r = run([sys.executable, "-m", "flake8", VSCODE_FLAKE8_FORMAT, *settings["flake8.args"], str(src)], cwd=tmp_path)
    rows = []
    for line in r.stdout.splitlines():
        if line.startswith("'") and line.endswith("'"):
            line = line[1:-1]
        m = VSCODE_FLAKE8_LINE.match(line)
        if m and m["code"].startswith("FRK"):
            rows.append((int(m["line"]), int(m["column"]), m["code"], vscode_severity(m["code"], m["type"], {"E": "Error", "F": "Error", "W": "Warning", **settings["flake8.severity"]})))
    assert rows == [(s["line"], s["start"] + 1, "FRK101", "Warning") for s in hazard_spans()]
    assert vscode_severity("FRK101", "F", {"E": "Error", "F": "Error", "W": "Warning"}) == "Error"


def test_vscode_extension_manifest():
    (b,) = blocks("editors.md", "vscode-extension-manifest")
    manifest = json.loads(b.body)
    assert manifest["main"] == "./extension.js"
    assert "onLanguage:python" in manifest["activationEvents"]
    assert "vscode-languageclient" in manifest["dependencies"]
    (js,) = [x for x in blocks("editors.md", "lsp-command") if x.lang == "js"]
    assert "vscode-languageclient/node" in js.body and "module.exports = { activate, deactivate }" in js.body


def test_fix_all_kind_in_the_editor_snippets():
    (vs,) = blocks("editors.md", "vscode-fix-on-save")
    assert list(jsonc(vs.body)["[python]"]["editor.codeActionsOnSave"]) == [FIX_ALL_KIND]
    (nv,) = blocks("editors.md", "nvim-fix-all")
    assert re.findall(r'only = \{ "([^"]+)" \}', nv.body) == [FIX_ALL_KIND]


def lsp_commands() -> List[List[str]]:
    out = []
    for b in blocks("editors.md", "lsp-command"):
        if b.lang == "lua":
            (table,) = re.findall(r"cmd = \{([^}]*)\}", b.body)
            out.append(re.findall(r'"([^"]*)"', table))
        elif b.lang == "js":
            (cmd, args) = re.findall(r'\{ command: "([^"]+)", args: \[([^\]]*)\] \}', b.body)[0]
            out.append([cmd, *re.findall(r'"([^"]*)"', args)])
        else:
            raise AssertionError(f"lsp-command in {b.lang!r}")
    return out


def test_the_editor_snippets_start_the_same_server():
    cmds = lsp_commands()
    assert len(cmds) == 4
    assert all(c == ["forksafe", "lsp"] for c in cmds)


@pytest.mark.asyncio
@pytest.mark.parametrize("argv", sorted({tuple(c) for c in lsp_commands()}))
async def test_the_editor_snippets_command_is_a_working_language_server(argv, tmp_path):
    config = ClientServerConfig(server_command=command(list(argv)), client_factory=make_client)
    client = await config.start()
    try:
        result = await client.initialize_session(
            T.InitializeParams(capabilities=client_capabilities("neovim"), root_uri=tmp_path.as_uri())
        )
        kinds = result.capabilities.code_action_provider.code_action_kinds
        assert set(kinds) == {T.CodeActionKind.QuickFix, FIX_ALL_KIND}
        doc = tmp_path / "data.py"
        doc.write_text(HAZARD, encoding="utf-8")
        diags = await open_document(client, doc, HAZARD)
        assert [(d.code, d.range.start.line) for d in diags] == [("FRK101", s["line"] - 1) for s in hazard_spans()]
        await close_document(client, doc)
        await client.shutdown_session()
    finally:
        await client.stop()


# nvim-lint (mfussenegger/nvim-lint, lua/lint/linters/flake8.lua): arguments and output pattern.
NVIM_LINT_ARGS = ["--format=%(path)s:%(row)d:%(col)d:%(code)s:%(text)s", "--no-show-source"]
NVIM_LINT_PATTERN = re.compile(r"[^:]+:(\d+):(\d+):(\w+):(.+)")


def test_nvim_lint_runs_flake8_with_the_plugin(tmp_path):
    (b,) = blocks("editors.md", "nvim-lint")
    assert re.search(r'linters_by_ft = \{ python = \{ "flake8" \} \}', b.body)
    src = tmp_path / "data.py"
    src.write_text(HAZARD, encoding="utf-8")
    r = run([sys.executable, "-m", "flake8", *NVIM_LINT_ARGS, str(src)], cwd=tmp_path)
    rows = [m.groups()[:3] for m in map(NVIM_LINT_PATTERN.match, r.stdout.splitlines()) if m and m[3].startswith("FRK")]
    assert rows == [(str(s["line"]), str(s["start"] + 1), "FRK101") for s in hazard_spans()]


# none-ls's flake8 source (none-ls-extras; the same as null-ls's former builtin): it pipes the
# buffer to flake8 and parses the default format.
NONE_LS_ARGS = ["--format", "default", "--stdin-display-name", "{file}", "-"]
NONE_LS_PATTERN = re.compile(r":(\d+):(\d+): (([A-Z])\w+) (.*)")


def test_none_ls_runs_flake8_with_the_plugin(tmp_path):
    (b,) = blocks("editors.md", "none-ls")
    assert 'require("none-ls.diagnostics.flake8")' in b.body
    args = [a.replace("{file}", "pkg/data.py") for a in NONE_LS_ARGS]
    r = run([sys.executable, "-m", "flake8", *args], cwd=tmp_path, input=HAZARD)
    rows = [m.groups()[:3] for m in map(NONE_LS_PATTERN.search, r.stdout.splitlines()) if m and m[3].startswith("FRK")]
    assert rows == [(str(s["line"]), str(s["start"] + 1), "FRK101") for s in hazard_spans()]
