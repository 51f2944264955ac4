"""`forksafe lsp` end to end: the real console script as a language server over stdio, driven by
pytest-lsp's client with Visual Studio Code's capabilities (UTF-16 positions, versioned edits).

One server serves the whole module (each test uses its own documents and directory).
"""

import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from flake8_forksafe.checks import ALL_RULES, BY_CODE
from flake8_forksafe.engine import check_source
from flake8_forksafe.frontends.lsp import (
    FIX_ALL_KIND,
    FIX_ALL_TITLE,
    FIX_ALL_UNSAFE_TITLE,
)
from flake8_forksafe.model import UNSAFE, Example
from tests.helpers import ran
from tests.integrations._lsp import (
    apply_edit,
    close_document,
    code_actions,
    make_client,
    open_document,
    published,
    replace_document,
    resolve_action,
    utf16_len,
)
from tests.integrations._util import CLEAN, HAZARD, hazard_spans, run, tool

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = "https://github.com/flake8-forksafe/flake8-forksafe/blob/main/docs/rules/{code}.md"
BROKEN = textwrap.dedent(
    """\
    import lmdb
    from torch.utils.data import Dataset


    class Frames(Dataset:
        def __init__(self, path):
            self.env = lmdb.open(path
    """
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lsp-workspace")


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[tool("forksafe"), "lsp"], client_factory=make_client),
)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=workspace.as_uri(),
            workspace_folders=[T.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def proj(workspace: Path, request) -> Path:
    d = workspace / request.node.name.replace("[", "_").replace("]", "").replace("/", "_")
    d.mkdir()
    return d


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def expected_ranges(text: str = HAZARD):
    lines = text.splitlines()
    out = []
    for s in hazard_spans(text):
        line = lines[s["line"] - 1]
        out.append(
            T.Range(
                start=T.Position(line=s["line"] - 1, character=utf16_len(line[: s["start"]])),
                end=T.Position(line=s["line"] - 1, character=utf16_len(line[: s["end"]])),
            )
        )
    return out


def cli_fix(tmp: Path, name: str, text: str, *args: str) -> str:
    """What `forksafe fix` writes for this file."""
    d = tmp / "cli-fix"
    d.mkdir(exist_ok=True)
    target = write(d / name, text)
    r = run([tool("forksafe"), "fix", "--no-cache", *args, name], cwd=d, timeout=300)
    ran(r)
    return target.read_text(encoding="utf-8")


def no_errors_reported(client: LanguageClient) -> None:
    errors = [m.message for m in client.messages if m.type == T.MessageType.Error]
    errors += [m.message for m in client.log_messages if m.type == T.MessageType.Error]
    assert errors == []
    assert not any("Traceback" in m.message for m in client.log_messages + client.messages)


# -------------------------------------------------------------------------------- diagnostics


async def test_open_publishes_exact_diagnostics(client: LanguageClient, proj: Path):
    doc = write(proj / "data.py", HAZARD)
    diags = await open_document(client, doc, HAZARD)
    want_messages = [f.message for f in check_source(HAZARD, str(doc))]
    assert [(d.code, d.range) for d in diags] == [("FRK101", r) for r in expected_ranges()]
    assert [d.message for d in diags] == want_messages
    for d in diags:
        assert d.source == "forksafe"
        assert d.severity == T.DiagnosticSeverity.Warning
        assert d.code_description.href == DOCS.format(code="FRK101")
    # the first finding sits after a character outside the BMP: UTF-16 columns, not code points
    line = HAZARD.splitlines()[6]
    assert diags[0].range.start.character == hazard_spans()[0]["start"] + 1
    assert utf16_len(line) == len(line) + 1
    assert await close_document(client, doc) == []
    no_errors_reported(client)


async def test_clean_document_has_no_diagnostics(client: LanguageClient, proj: Path):
    doc = write(proj / "clean.py", CLEAN)
    assert await open_document(client, doc, CLEAN) == []
    assert await code_actions(client, doc, T.Range(start=T.Position(line=0, character=0), end=T.Position(line=8, character=0))) == []


async def test_change_is_checked_and_save_and_close_publish(client: LanguageClient, proj: Path):
    doc = write(proj / "data.py", CLEAN)
    assert await open_document(client, doc, CLEAN) == []
    diags = await replace_document(client, doc, HAZARD, version=2)
    assert [(d.code, d.range) for d in diags] == [("FRK101", r) for r in expected_ranges()]
    # several quick edits: the diagnostics that count are those of the last version
    uri = doc.as_uri()
    mark = len(client.published)
    edited = HAZARD
    for version in (3, 4, 5):
        edited = "\n" + edited  # one more blank line above: every finding moves down a line
        client.text_document_did_change(
            T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    T.TextDocumentContentChangePartial(
                        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
                        text="\n",
                    )
                ],
            )
        )
    last = await published(client, uri, mark, version=5)
    assert [d.range.start.line for d in last.diagnostics] == [r.start.line + 3 for r in expected_ranges()]
    assert all(p.version in (3, 4, 5) for p in client.published[mark:] if p.uri == uri)
    mark = len(client.published)
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))
    saved = await published(client, uri, mark)
    assert [d.range for d in saved.diagnostics] == [d.range for d in last.diagnostics]
    assert await close_document(client, doc) == []


# ------------------------------------------------------------------------------- code actions


async def test_quick_fix_applies_the_rule_fix_and_clears_the_diagnostics(client: LanguageClient, proj: Path, tmp_path: Path):
    doc = write(proj / "data.py", HAZARD)
    diags = await open_document(client, doc, HAZARD)
    first = diags[0]
    actions = await code_actions(client, doc, first.range, [first])
    by_title = {a.title: a for a in actions}
    fix_title = f"FRK101: {BY_CODE['FRK101'].fix_title}"
    assert set(by_title) == {fix_title, "Suppress FRK101 with # noqa", FIX_ALL_TITLE}
    fix = by_title[fix_title]
    assert fix.kind == T.CodeActionKind.QuickFix and fix.is_preferred
    assert [d.code for d in fix.diagnostics] == ["FRK101", "FRK101"]
    assert by_title[FIX_ALL_TITLE].kind == FIX_ALL_KIND
    # one edit replacing the whole document, made for the version the client has
    (change,) = fix.edit.document_changes
    (edit,) = change.edits
    assert edit.range.start == T.Position(line=0, character=0)
    assert edit.range.end == T.Position(line=len(HAZARD.splitlines()), character=0)
    fixed = apply_edit(HAZARD, fix.edit, doc.as_uri(), version=1)
    assert fixed != HAZARD
    assert fixed == cli_fix(tmp_path, "data.py", HAZARD, "--select", "FRK101")
    assert await replace_document(client, doc, fixed, version=2) == []
    # nothing left to act on
    whole = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=len(fixed.splitlines()), character=0))
    assert await code_actions(client, doc, whole) == []
    await close_document(client, doc)
    no_errors_reported(client)


async def test_fix_all_source_action(client: LanguageClient, proj: Path, tmp_path: Path):
    doc = write(proj / "data.py", HAZARD)
    await open_document(client, doc, HAZARD)
    anywhere = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0))
    actions = await code_actions(client, doc, anywhere, only=[T.CodeActionKind.SourceFixAll])
    assert [(a.title, a.kind) for a in actions] == [(FIX_ALL_TITLE, FIX_ALL_KIND)]
    fixed = apply_edit(HAZARD, actions[0].edit, doc.as_uri(), version=1)
    assert fixed == cli_fix(tmp_path, "data.py", HAZARD)
    # quick fixes are not source actions, and the reverse
    assert await code_actions(client, doc, anywhere, only=[T.CodeActionKind.Source + ".organizeImports"]) == []
    line7 = T.Range(start=T.Position(line=6, character=0), end=T.Position(line=6, character=0))
    quick = await code_actions(client, doc, line7, only=[T.CodeActionKind.QuickFix])
    assert {a.kind for a in quick} == {T.CodeActionKind.QuickFix} and len(quick) == 2
    assert await replace_document(client, doc, fixed, version=2) == []
    await close_document(client, doc)


async def test_noqa_action_appends_or_merges(client: LanguageClient, proj: Path):
    text = HAZARD.replace('open(path, "rb")', 'open(path, "rb")  # noqa: E501,W291')
    doc = write(proj / "data.py", text)
    diags = await open_document(client, doc, text)
    assert len(diags) == 2
    lines = text.splitlines()

    async def suppress(diag):
        actions = await code_actions(client, doc, diag.range, [diag])
        (noqa,) = [a for a in actions if a.title == "Suppress FRK101 with # noqa"]
        assert noqa.kind == T.CodeActionKind.QuickFix and not noqa.is_preferred
        return noqa

    plain = await suppress(diags[0])
    after = apply_edit(text, plain.edit, doc.as_uri(), version=1).splitlines()
    assert after[6] == lines[6] + "  # noqa: FRK101"
    assert after[:6] == lines[:6] and after[7:] == lines[7:]

    merged = await suppress(diags[1])
    after2 = apply_edit(text, merged.edit, doc.as_uri(), version=1).splitlines()
    assert after2[18] == lines[18].replace("# noqa: E501,W291", "# noqa: E501,W291, FRK101")

    both = apply_edit(apply_edit(text, plain.edit, doc.as_uri()), merged.edit, doc.as_uri())
    assert await replace_document(client, doc, both, version=2) == []
    await close_document(client, doc)


# --------------------------------------------------------------------- broken and half-typed code


async def test_broken_document_gives_no_diagnostics_and_no_crash(client: LanguageClient, proj: Path):
    doc = write(proj / "broken.py", BROKEN)
    assert await open_document(client, doc, BROKEN) == []
    rng = T.Range(start=T.Position(line=6, character=0), end=T.Position(line=6, character=10))
    assert await code_actions(client, doc, rng) == []
    # garbage, NUL bytes, lone surrogates' replacement, deep nesting: still no crash, no diagnostics
    for version, junk in enumerate(["\x00\x01 def (", "(" * 5000, "class A(Dataset):\n\tdef f(self):\n  return 1\n"], start=2):
        assert await replace_document(client, doc, junk, version=version) == []
    await close_document(client, doc)
    # the server still works
    other = write(proj / "data.py", HAZARD)
    assert [d.code for d in await open_document(client, other, HAZARD)] == ["FRK101", "FRK101"]
    await close_document(client, other)
    no_errors_reported(client)


async def test_half_typed_document_keeps_the_last_diagnostics(client: LanguageClient, proj: Path):
    doc = write(proj / "data.py", HAZARD)
    good = await open_document(client, doc, HAZARD)
    half = HAZARD + "\n    def half(self, i\n"
    kept = await replace_document(client, doc, half, version=2)
    assert [(d.code, d.range, d.message) for d in kept] == [(d.code, d.range, d.message) for d in good]
    rng = T.Range(start=T.Position(line=6, character=0), end=T.Position(line=6, character=0))
    assert await code_actions(client, doc, rng) == []  # no edit computed from a document that does not parse
    assert await replace_document(client, doc, CLEAN, version=3) == []
    assert await replace_document(client, doc, CLEAN + "def (", version=4) == []
    await close_document(client, doc)
    no_errors_reported(client)


# ------------------------------------------------------------------------------ configuration


async def test_pyproject_configuration_is_honoured(client: LanguageClient, proj: Path):
    write(proj / "ignoring" / "pyproject.toml", '[tool.flake8-forksafe]\nignore = ["FRK101"]\n')
    ignored = write(proj / "ignoring" / "pkg" / "data.py", HAZARD)
    assert await open_document(client, ignored, HAZARD) == []

    write(proj / "custom" / "pyproject.toml", '[tool.flake8-forksafe]\nextra-handle-factories = ["mystore.connect"]\nextend-exclude = ["generated"]\n')
    custom_src = textwrap.dedent(
        """\
        import mystore
        from torch.utils.data import Dataset


        class Rows(Dataset):
            def __init__(self, path):
                self.db = mystore.connect(path)

            def __getitem__(self, i):
                return self.db.get(i)
        """
    )
    custom = write(proj / "custom" / "rows.py", custom_src)
    diags = await open_document(client, custom, custom_src)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diags] == [("FRK101", 6, 18)]
    # excluded by the project's configuration, as when `forksafe check` walks the project
    generated = write(proj / "custom" / "generated" / "data.py", HAZARD)
    assert await open_document(client, generated, HAZARD) == []
    # the same file outside any project: the default configuration
    plain = write(proj / "plain" / "rows.py", custom_src)
    assert await open_document(client, plain, custom_src) == []
    for p in (ignored, custom, generated, plain):
        await close_document(client, p)


async def test_a_broken_pyproject_is_a_warning_and_the_defaults_apply(client: LanguageClient, proj: Path):
    write(proj / "pyproject.toml", '[tool.flake8-forksafe]\nselect = 3\nunknown-key = 1\n')
    doc = write(proj / "data.py", HAZARD)
    before = len(client.messages)
    assert [d.code for d in await open_document(client, doc, HAZARD)] == ["FRK101", "FRK101"]
    shown = client.messages[before:]
    assert [m.type for m in shown] == [T.MessageType.Warning]
    assert "pyproject.toml" in shown[0].message and "\n" not in shown[0].message
    await close_document(client, doc)
    no_errors_reported(client)


# ------------------------------------------------------------------ every rule's example fixes


def _examples():
    for rule in ALL_RULES:
        if not rule.fix_applicability:
            continue
        for i, ex in enumerate(rule.INVALID):
            if isinstance(ex, Example) and ex.expected_fix is not None:
                yield pytest.param(rule, ex, id=f"{rule.code}-{i}")


@pytest.mark.parametrize("rule,example", list(_examples()))
async def test_each_rule_quick_fix_gives_the_documented_fix(client: LanguageClient, proj: Path, rule, example):
    """The quick fix of every rule's fixable example gives that example's fixed code; unsafe fixes
    say so in the title, are never preferred, and stay out of "Fix all" (unsafe-fixes is off)."""
    write(proj / "pyproject.toml", f'[tool.flake8-forksafe]\nselect = ["{rule.code}"]\n')
    src = textwrap.dedent(example.code)
    doc = write(proj / "example.py", src)
    diags = await open_document(client, doc, src)
    assert diags and {d.code for d in diags} == {rule.code}
    actions = await code_actions(client, doc, diags[0].range, [diags[0]])
    (fix,) = [a for a in actions if a.title.startswith(f"{rule.code}: ")]
    unsafe = rule.fix_applicability == UNSAFE
    assert fix.title == f"{rule.code}: {rule.fix_title}" + (" (unsafe)" if unsafe else "")
    assert bool(fix.is_preferred) is not unsafe
    assert apply_edit(src, fix.edit, doc.as_uri(), version=1) == textwrap.dedent(example.expected_fix)
    assert any(a.kind == FIX_ALL_KIND for a in actions) is not unsafe
    await close_document(client, doc)



async def test_fix_all_includes_unsafe_fixes_only_when_the_project_says_so(client: LanguageClient, proj: Path):
    cases = [(r, ex) for r, ex in (p.values for p in _examples()) if r.fix_applicability == UNSAFE]
    if not cases:
        pytest.skip("no rule with an unsafe fix has a fixed example")
    rule, example = cases[0]
    src = textwrap.dedent(example.code)
    anywhere = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0))
    for unsafe, version in ((False, 1), (True, 1)):
        d = proj / ("unsafe" if unsafe else "safe")
        write(d / "pyproject.toml", f'[tool.flake8-forksafe]\nselect = ["{rule.code}"]\nunsafe-fixes = {str(unsafe).lower()}\n')
        doc = write(d / "example.py", src)
        assert await open_document(client, doc, src, version)
        actions = await code_actions(client, doc, anywhere, only=[T.CodeActionKind.SourceFixAll])
        if not unsafe:
            assert actions == []
        else:
            (fix_all,) = actions
            assert fix_all.title == FIX_ALL_UNSAFE_TITLE and fix_all.kind == FIX_ALL_KIND
            assert apply_edit(src, fix_all.edit, doc.as_uri(), version=1) == textwrap.dedent(example.expected_fix)
        await close_document(client, doc)


async def test_base_class_in_another_module_of_the_project(client: LanguageClient, proj: Path):
    d = proj / "xmod"
    write(d / "pyproject.toml", "")
    write(d / "det/__init__.py", "")
    write(
        d / "det/base.py",
        "import lmdb\n\n\nclass Base:\n    def __init__(self, root):\n        self._load(root)\n\n"
        "    def _load(self, root):\n        self.env = lmdb.open(root)\n",
    )
    src = "from torch.utils.data import Dataset\n\nfrom .base import Base\n\n\nclass Coco(Base, Dataset):\n    pass\n"
    doc = write(d / "det/coco.py", src)
    (diag,) = await open_document(client, doc, src)
    assert (diag.code, diag.range.start.line) == ("FRK101", 5)
    assert f"(opened in base class Base._load, {Path('det/base.py')}:9)" in diag.message
    # the unsaved text counts: without the base, nothing
    assert await replace_document(client, doc, src.replace("(Base, Dataset)", "(Dataset)"), 2) == []
    await close_document(client, doc)


# ------------------------------------------------------------------- cheap listing, lazy edits


async def test_code_actions_are_listed_without_edits_and_resolved_one_by_one(client: LanguageClient, proj: Path, tmp_path: Path):
    """A client that resolves (VS Code does) gets the actions without their edits, each with the
    data that finds its finding again; ``codeAction/resolve`` computes one action's edit."""
    doc = write(proj / "data.py", HAZARD)
    diags = await open_document(client, doc, HAZARD)
    listed = await code_actions(client, doc, diags[0].range, [diags[0]], resolve=False)
    fix_title = f"FRK101: {BY_CODE['FRK101'].fix_title}"
    assert {a.title for a in listed} == {fix_title, "Suppress FRK101 with # noqa", FIX_ALL_TITLE}
    assert all(a.edit is None and a.data["uri"] == doc.as_uri() and a.data["version"] == 1 for a in listed)
    by_title = {a.title: a for a in listed}
    assert by_title[fix_title].data["action"] == "fix" and by_title[fix_title].data["code"] == "FRK101"
    assert by_title["Suppress FRK101 with # noqa"].data["line"] == diags[0].range.start.line + 1
    resolved = await resolve_action(client, by_title[fix_title])
    assert resolved.title == fix_title
    assert apply_edit(HAZARD, resolved.edit, doc.as_uri(), version=1) == cli_fix(tmp_path, "data.py", HAZARD, "--select", "FRK101")
    noqa = await resolve_action(client, by_title["Suppress FRK101 with # noqa"])
    after = apply_edit(HAZARD, noqa.edit, doc.as_uri(), version=1).splitlines()
    assert after[diags[0].range.start.line].endswith("  # noqa: FRK101")
    # listed for version 1, resolved after an edit: no edit for a text it was not made for
    await replace_document(client, doc, "\n" + HAZARD, version=2)
    stale = await resolve_action(client, by_title[FIX_ALL_TITLE])
    assert stale.edit is None
    await close_document(client, doc)
    no_errors_reported(client)


async def test_noqa_is_not_offered_inside_a_multiline_string_or_after_a_continuation(proj: Path):
    from flake8_forksafe.config import Config
    from flake8_forksafe.frontends.lsp import noqa_edit

    cfg = Config()
    text = 'x = """\nabc\n"""\ny = 1 + \\\n    2\nz = 3\n'
    assert noqa_edit(text, "x.py", cfg, 2, "FRK101") is None  # inside the string
    assert noqa_edit(text, "x.py", cfg, 4, "FRK101") is None  # after the backslash
    assert noqa_edit(text, "x.py", cfg, 6, "FRK101") == (5, 5, "  # noqa: FRK101")
    assert noqa_edit('s = "# noqa: E501"\n', "x.py", cfg, 1, "FRK101") is None  # a string, not a comment
    assert noqa_edit("z = 3  # noqa: E501\n", "x.py", cfg, 1, "FRK101") == (0, 19, ", FRK101")
    # after a comment already there: the noqa joins that comment
    assert noqa_edit("z = 3  # why\n", "x.py", cfg, 1, "FRK101") == (0, 12, "  # noqa: FRK101")


async def test_noqa_edit_within_the_statement_span_is_the_whole_text_one():
    """Tokenizing and parsing only the statement that holds the line (the child knows the spans)
    gives the same answer as the whole text."""
    from flake8_forksafe.config import Config
    from flake8_forksafe.frontends.lsp import noqa_edit

    cfg = Config()
    text = 'import os\n\n\nclass D:\n    s = """\n    x\n    """\n    y = 1 + \\\n        2\n    z = 3  # why\n\n\nw = 4\n'
    for line in range(1, text.count("\n") + 1):
        whole = noqa_edit(text, "x.py", cfg, line, "FRK101")
        span = (4, 10) if 4 <= line <= 10 else (line, line)
        assert noqa_edit(text, "x.py", cfg, line, "FRK101", span) == whole, line
    assert noqa_edit(text, "x.py", cfg, 10, "FRK101", (4, 10)) == (9, 16, "  # noqa: FRK101")
