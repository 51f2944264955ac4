"""The language server re-analyses only what an edit can change (``frontends/lsp_incremental.py``):
here documents are edited at random, version after version, and the server's incremental answer
for every version is compared with a fresh ``engine.check_source`` of that version's text.

The incremental checker is called in this process, as the server's child calls it; the test at
the end drives the real server over stdio through edits that are answered by reuse."""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path
from typing import List

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.frontends import lsp_incremental
from flake8_forksafe.model import SourceError
from flake8_forksafe.source import decode
from tests.helpers import fixture_files

ALL = Config(select=("FRK", "FRK501"))
CORPUS = sorted((Path(__file__).resolve().parents[1] / "corpus").glob("*.py"))

UNRELATED = textwrap.dedent(
    '''
    def helper_{n}(values, scale={n}):
        """Nothing to do with data loading."""
        total = 0
        for v in values:
            total += v * scale
        return total
    '''
)
SNIPPETS = [
    "",
    "# a comment",
    "# noqa: FRK101",
    "x = 1",
    "x = lambda: 0",
    "import os",
    "def f():\n    return open('p')",
    "    self.extra = open(path)",
    "    pass",
    "if __name__ == '__main__':\n    main()",
    "class Extra(Dataset):\n    def __init__(self):\n        self.f = open('x')",
    "loader = DataLoader(ds, num_workers=2, worker_init_fn=lambda i: None)",
    "# flake8: noqa",
    "def (",
    '"""',
    "s = 'fork'",
]


def _outcome(fn):
    try:
        return [(f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.fix) for f in fn()]
    except SourceError as exc:
        return ["error", exc.message]
    except RecursionError:
        return ["recursion"]


def _edit(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines) + 1)
    op = rng.randrange(8)
    if op == 0:  # a line from the snippets, anywhere
        lines.insert(i, rng.choice(SNIPPETS))
    elif op == 1 and lines:  # a line goes
        del lines[min(i, len(lines) - 1)]
    elif op == 2 and lines:  # a line is copied
        j = min(i, len(lines) - 1)
        lines.insert(j, lines[j])
    elif op == 3:  # an unrelated function before a top-level line
        tops = [k for k, line in enumerate(lines) if line[:1].isalpha()] or [0]
        lines.insert(rng.choice(tops), UNRELATED.format(n=rng.randrange(100)))
    elif op in (4, 6):  # typing inside an unrelated function
        heads = [k for k, line in enumerate(lines) if line.startswith("def helper_")]
        if heads:
            lines.insert(rng.choice(heads) + 1, f"    y{rng.randrange(9)} = {rng.randrange(99)}")
    elif op == 5 and lines:  # a character changes
        j = min(i, len(lines) - 1)
        line = lines[j]
        if line:
            k = rng.randrange(len(line))
            lines[j] = line[:k] + rng.choice("abx_ (:.#") + line[k + 1 :]
    else:  # blank lines
        lines[i:i] = [""] * rng.randrange(1, 3)
    return "\n".join(lines)


def _documents() -> List[tuple]:
    """Each fixture and corpus file, and some composed of several with unrelated code between
    (where reuse applies)."""
    files = fixture_files() + CORPUS
    docs = [(p.parent.name + "/" + p.name, decode(p.read_bytes())) for p in files]
    rng = random.Random(7)
    for n in range(6):
        parts = rng.sample(files, 3)
        text = "\n\n".join(
            decode(p.read_bytes()) + UNRELATED.format(n=10 * n + i) for i, p in enumerate(parts)
        )
        docs.append((f"composed-{n}", text))
    return docs


DOCS = _documents()
EDITS = 6


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _versions(name: str, text: str, edits: int):
    """The document's versions: random edits, each to the last version that parsed (a broken
    version is followed by the user's fixing it, not by more edits to the broken text)."""
    rng = random.Random(name)
    good = text
    yield text
    for _ in range(edits):
        text = _edit(good, rng)
        if _parses(text):
            good = text
        yield text


def _compare(name: str, text: str, edits: int) -> List[str]:
    uri = f"file:///incremental/{name}"
    path = "x.py"
    lsp_incremental.forget(uri)
    hows = []
    for version, text in enumerate(_versions(name, text, edits)):
        want = _outcome(lambda: check_source(text, path, ALL))
        how = []
        got = _outcome(lambda: how.append(lsp_incremental.check(uri, text, path, ALL, full=version == 0)) or how[-1][0])
        assert got == want, (name, version, text)
        hows.append(how[-1][1] if how else "error")
    lsp_incremental.forget(uri)
    return hows


@pytest.mark.parametrize("name,text", DOCS[::3], ids=lambda v: v if isinstance(v, str) and len(v) < 80 else None)
def test_random_edits_give_the_findings_of_a_fresh_check(name, text):
    _compare(name, text, EDITS)


def test_random_edits_of_composed_documents_reuse_and_match():
    """Documents made of several files with unrelated functions between: most edits there are
    answered by reuse, and every answer is that of a fresh check."""
    hows = []
    for name, text in DOCS:
        if name.startswith("composed"):
            hows += _compare(name, text, 12)
    assert hows.count("reused") >= 5, hows
    assert hows.count("analysed") >= 5, hows


def test_reuse_happens_and_is_exact():
    """An edit in a function no finding can involve is answered without libcst, and its findings
    moved by the lines the edit added; one in a dataset class is analysed again."""
    parts = [decode(p.read_bytes()) for p in CORPUS if p.name in ("det_coco_lmdb.py", "sqlite_caption_dataset.py")]
    text = parts[0] + UNRELATED.format(n=1) + "\n" + parts[1]
    uri = "file:///incremental/reuse"
    lsp_incremental.forget(uri)
    first, how = lsp_incremental.check(uri, text, "x.py", ALL, full=True)
    assert how == "analysed" and first
    head = text.index("def helper_1")
    edited = text[:head] + text[head:].replace("total = 0\n", "total = 0\n    # two lines\n\n    total += 1\n", 1)
    again, how = lsp_incremental.check(uri, edited, "x.py", ALL)
    assert how == "reused"
    assert again == check_source(edited, "x.py", ALL)
    below = [f for f in first if f.line > text[:head].count("\n")]
    assert below and [f.line + 3 for f in below] == [f.line for f in again if f.line > text[:head].count("\n") + 3]
    # inside the dataset: analysed again
    inside = edited.replace("self.env = lmdb.open(", "self.env2 = lmdb.open(", 1)
    assert inside != edited
    found, how = lsp_incremental.check(uri, inside, "x.py", ALL)
    assert how == "analysed" and found == check_source(inside, "x.py", ALL)
    # the same text opened again (full): analysed, not reused
    assert lsp_incremental.check(uri, inside, "x.py", ALL, full=True)[1] == "analysed"
    # no finding possible: the gate answers
    assert lsp_incremental.check(uri, "x = 1\n", "x.py", ALL) == ([], "gate")
    lsp_incremental.forget(uri)



def test_reuse_with_an_index_and_a_holder_like_class(tmp_path, monkeypatch):
    """With the project index, a document the gate passes that also has a class keeping a handle (a
    possible holder for a dataset of another module) is answered by reuse on an unrelated edit, and
    the holder question, which summarises the document (hundreds of ms on a 2,000-line file, on every
    edit), is asked only of documents the gate rejects."""
    from flake8_forksafe import index as index_module
    from flake8_forksafe.index import ProjectIndex

    asked = []
    real = index_module.has_kept_holder
    monkeypatch.setattr(index_module, "has_kept_holder", lambda *a, **k: asked.append(a[1]) or real(*a, **k))

    (tmp_path / "pyproject.toml").write_text("")
    parts = [decode(p.read_bytes()) for p in CORPUS if p.name == "det_coco_lmdb.py"]
    holder = "\n\nclass Reader:\n    def __init__(self, p):\n        self.f = open(p)\n"
    text = parts[0] + holder + UNRELATED.format(n=1)
    path = tmp_path / "x.py"
    path.write_text(text)
    ix = ProjectIndex(tmp_path, ALL.knowledge)
    uri = "file:///incremental/holder"
    lsp_incremental.forget(uri)
    first, how = lsp_incremental.check(uri, text, str(path), ALL, index=ix, full=True)
    assert how == "analysed" and first
    head = text.index("def helper_1")
    edited = text[:head] + text[head:].replace("total = 0\n", "total = 0\n    # a comment\n", 1)
    again, how = lsp_incremental.check(uri, edited, str(path), ALL, index=ix)
    assert how == "reused"
    assert asked == []
    assert again == check_source(edited, str(path), ALL, index=ProjectIndex(tmp_path, ALL.knowledge))
    # a document the gate rejects is asked (a holder there is analysed whole)
    assert lsp_incremental.check(uri, holder, str(path), ALL, index=ix)[1] == "gate" and asked == [str(path)]
    lsp_incremental.forget(uri)

def _facts_summary(f):
    from flake8_forksafe import slicing

    if f is None:
        return None
    return (
        [
            (s.start, s.end, s.name, s.guard, sorted(s.names), sorted(s.attrs), s.imports, s.lambdas, s.local_defs,
             s.globals, s.fork, s.literal, len(s.calls), list(s.bases))
            for s in f.stmts
        ],
        {k: sorted(v) for k, v in f.imports.items()},
        f.could_have_findings(),
        slicing.dropped_spans(f),
    )


def _same_facts_along(texts) -> None:
    from flake8_forksafe import prefilter

    memo = lsp_incremental.Memo(None)
    for text in texts:
        got = _facts_summary(lsp_incremental.facts(text, ALL.knowledge, memo))
        assert got == _facts_summary(prefilter.facts_of_text(text, ALL.knowledge)), text


def test_gate_facts_are_those_of_the_prefilter():
    before = lsp_incremental.stats()["one_statement"]
    for name, text in DOCS[::2]:
        _same_facts_along(_versions(name, text, 6))
    assert lsp_incremental.stats()["one_statement"] > before  # the one-statement path was taken


BASE = "import os\n\n\ndef f(x):\n    return x\n\n\nclass C:\n    pass\n\na = 1; b = 2\nz = 3\n"


@pytest.mark.parametrize(
    "edited",
    [
        BASE.replace("    return x\n", "    y = lambda: x\n    return y\n"),  # inside a def
        BASE.replace("    return x\n", "    return x\n    z = 1\n"),  # a line appended to a body
        BASE.replace("    return x\n", "    return x\n# comment\n"),  # a comment after it: not part of it
        BASE.replace("    return x\n", "    return x\nq = 1\n"),  # a new statement after it
        BASE.replace("def f(x):", "@decorate\ndef f(x):"),  # a decorator
        BASE.replace("def f(x):", "x = 0\ndef f(x):"),  # a statement before it
        BASE.replace("a = 1; b = 2", "a = 1; b = lambda: 2"),  # two statements on a line
        BASE.replace("    return x\n", "    return '''x\n"),  # a string left open: the rest changes meaning
        BASE.replace("    return x\n", "    return (x\n"),  # a bracket left open
        BASE.replace("    return x\n", "    from __future__ import annotations\n"),
        BASE.replace("class C:\n    pass", "class C(Dataset):\n    pass"),
        BASE.replace("class C:\n    pass", "class C:\n    pass\nelse:\n    pass"),
        BASE.replace("    return x\n", "    return x \\\n"),  # a line continuation at the end
        BASE.replace("z = 3\n", "z = 3"),  # the last newline goes
        BASE.replace("    pass\n", "    pass\n\f\n"),
        BASE.replace("\n", "\r\n"),
    ],
)
def test_one_statement_edits_give_the_prefilter_facts(edited):
    assert edited != BASE
    _same_facts_along([BASE, BASE, edited, edited, BASE, edited])


def test_an_edit_of_a_base_class_module_reaches_its_subclasses(tmp_path: Path):
    """Another open document's unsaved edit (checked by reuse: its index summary lags) still reaches
    the documents whose classes build on it: their next check is not a reuse of stale findings."""
    from flake8_forksafe.frontends.lsp import lint

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (pkg / "__init__.py").write_text("")
    base = (
        "import lmdb\nfrom torch.utils.data import DataLoader\n\n\ndef _open(root):\n    return lmdb.open(root)\n\n\n"
        "class Base:\n    def __init__(self, root):\n        self.env = _open(root)\n\n\n"
        "def loader(ds):\n    return DataLoader(ds, num_workers=2)\n"
    )
    coco = "from torch.utils.data import Dataset\n\nfrom .base import Base\n\n\nclass Coco(Base, Dataset):\n    pass\n"
    a, b = pkg / "base.py", pkg / "coco.py"
    a.write_text(base)
    b.write_text(coco)
    cfg = Config()
    assert lint("a", base, str(a), cfg, True) == ([], None)
    (found,), _ = lint("b", coco, str(b), cfg, True)
    assert found.code == "FRK101" and "base class Base.__init__" in found.message
    edited = base.replace("return lmdb.open(root)", "return dict(root=root)")
    before = lsp_incremental.stats()["reused"]
    assert lint("a", edited, str(a), cfg) == ([], None)
    assert lsp_incremental.stats()["reused"] == before + 1  # the edit in base.py was answered by reuse
    for text in (coco + "\n", coco):  # the next checks of coco.py (an edit, and back)
        assert lint("b", text, str(b), cfg) == (check_source(text, str(b), cfg, index=_fresh_index(b, text, {a: edited})), None)
        assert lint("b", text, str(b), cfg)[0] == []


def _fresh_index(path: Path, text: str, unsaved):
    from flake8_forksafe.index import ProjectIndex, project_root

    ix = ProjectIndex(project_root(str(path)), Config().knowledge)
    for p, t in unsaved.items():
        ix.update_text(str(p), t)
    ix.update_text(str(path), text)
    return ix


# ------------------------------------------------------------------ the real server over stdio

import attrs  # noqa: E402
import pytest_lsp  # noqa: E402
from lsprotocol import types as T  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from tests.integrations._lsp import apply_edit, code_actions, make_client, open_document, published  # noqa: E402
from tests.integrations._util import HAZARD, tool  # noqa: E402


def _no_resolve_capabilities() -> T.ClientCapabilities:
    """VS Code's capabilities less ``codeAction.resolveSupport`` (a client that cannot resolve)."""
    caps = client_capabilities("visual-studio-code")
    action = attrs.evolve(caps.text_document.code_action, resolve_support=None)
    return attrs.evolve(caps, text_document=attrs.evolve(caps.text_document, code_action=action))


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[tool("forksafe"), "lsp"], client_factory=make_client),
)
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp-incremental")
    await lsp_client.initialize_session(
        T.InitializeParams(capabilities=_no_resolve_capabilities(), root_uri=root.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_server_diagnostics_follow_random_edits(client: LanguageClient, tmp_path: Path):
    """Edits sent one by one (each waited for) and in bursts (only the last version's diagnostics
    count): every published version's diagnostics are those of a fresh check of that version."""
    name, text = next(d for d in DOCS if d[0] == "composed-1")
    doc = tmp_path / "composed.py"
    doc.write_text(text, encoding="utf-8")
    uri = doc.as_uri()
    texts = {1: text}
    await open_document(client, doc, text)
    version = 1
    rng = random.Random(3)
    for step, text in enumerate(list(_versions(name, text, 10))[1:]):
        version += 1
        texts[version] = text
        mark = len(client.published)
        _change(client, uri, version, text)
        if step % 3 != 2:
            await published(client, uri, mark, version)
        else:  # a burst: two more versions at once
            for _ in range(2):
                version += 1
                text = _edit(text, rng)
                texts[version] = text
                _change(client, uri, version, text)
            await published(client, uri, mark, version)
    for p in client.published:
        if p.uri != uri:
            continue
        want = _outcome(lambda: check_source(texts[p.version], str(doc), ALL))
        if want and want[0] == "error":
            continue  # a version that does not parse keeps the last diagnostics
        default = [w for w in _outcome(lambda: check_source(texts[p.version], str(doc)))]
        assert [(d.code, d.range.start.line + 1, d.message) for d in p.diagnostics] == [(w[0], w[1], w[5]) for w in default], p.version


@pytest.mark.asyncio(loop_scope="module")
async def test_a_client_without_resolve_gets_the_edits_at_once(client: LanguageClient, tmp_path: Path):
    doc = tmp_path / "data.py"
    doc.write_text(HAZARD, encoding="utf-8")
    diags = await open_document(client, doc, HAZARD)
    actions = await code_actions(client, doc, diags[0].range, [diags[0]], resolve=False)
    assert len(actions) == 3 and all(a.edit is not None and a.data is None for a in actions)
    fixed = apply_edit(HAZARD, next(a for a in actions if a.title.startswith("FRK101: ")).edit, doc.as_uri(), version=1)
    assert fixed != HAZARD and "FRK101" not in {f.code for f in check_source(fixed, str(doc))}


def _inner_edit(text: str, rng: random.Random) -> str:
    """An edit inside a top-level statement (where ``SpliceParser`` splices) or near one."""
    lines = text.split("\n")
    inner = [k for k, line in enumerate(lines) if line[:1] in (" ", "\t") and line.strip()] or [0]
    j = rng.choice(inner)
    indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
    op = rng.randrange(9)
    if op == 0:
        lines.insert(j, f"{indent}z{rng.randrange(9)} = {rng.randrange(99)}")
    elif op == 1:
        lines.insert(j, f"{indent}# a comment")
    elif op == 2:
        lines.insert(j + 1, f"{indent}    # deeper")
    elif op == 3:
        lines.insert(j + 1, "# at the left edge")
    elif op == 4:
        lines.insert(j + 1, "")
    elif op == 5:
        del lines[j]
    elif op == 6 and lines[j]:
        k = rng.randrange(len(lines[j]))
        lines[j] = lines[j][:k] + rng.choice("abx_ (:.#") + lines[j][k + 1 :]
    elif op == 7:
        lines.insert(j + 1, lines[j])
    else:
        lines.insert(j + 1, "x = 1")  # a new statement: not one statement's edit
    return "\n".join(lines)


def test_splice_parser_gives_the_module_of_a_whole_parse():
    """``SpliceParser`` re-parses only the top-level statements an edit is in: on random edits of
    every fixture and corpus document (one or two at a time), its module is the whole parse's
    (``deep_equals``, the same code) and the statement codes it carries are the module's."""
    import libcst as cst

    spliced = 0
    for name, text in DOCS:
        parser = lsp_incremental.SpliceParser()
        rng = random.Random(name)
        good = text
        if not _parses(good):
            continue
        parser(good, "x.py")
        for step in range(10):
            new = _inner_edit(good, rng)
            if not _parses(new):
                continue
            if step % 3 == 1:  # not parsed: the next version differs from the last parsed in two places
                good = new
                continue
            before = lsp_incremental.STATS["spliced"]
            got = parser(new, "x.py")
            want = cst.parse_module(new)
            assert got.code == want.code, name  # not always `new`: libcst 1.9 drops some indented comments at the end
            assert got.deep_equals(want), (name, new)
            codes = parser.codes(got)
            if codes is not None:
                assert codes == [got.code_for_node(s) for s in got.body], name
            spliced += lsp_incremental.STATS["spliced"] - before
            good = new
    assert spliced >= 100, spliced


def test_splice_parser_declines_what_a_statement_alone_cannot_decide():
    """An indented comment after the edited statement, the module's first indented block, the
    first and last statements, two statements where there was one: a whole parse."""
    import libcst as cst

    base = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\nx = 1\n"
    cases = [
        base.replace("    return 2\n", "    return 2\n    y = 3\n"),  # spliced: inside g
        base.replace("    return 1\n", "    return 1\ny = 0\n"),  # two statements: whole
        base.replace("import os\n", "import os, sys\n"),  # the first statement: whole
        base.replace("x = 1\n", "x = 2\n"),  # the last: whole
        base.replace("    return 1\n", "    y = 0\n    return 1\n"),  # the first indented block: whole
        base.replace("    return 2\n", "    return 22\n").replace("x = 1\n", "y = 0\n\n\nx = 1\n"),  # g, and a new one
        base.replace("    return 2\n", "    return 22\n").replace("import os\n", "import sys\n"),  # g and the first
    ]
    want_spliced = [1, 0, 0, 0, 0, 0, 0]
    for text, want in zip(cases, want_spliced):
        parser = lsp_incremental.SpliceParser()
        parser(base, "x.py")
        before = lsp_incremental.STATS["spliced"]
        got = parser(text, "x.py")
        assert lsp_incremental.STATS["spliced"] - before == want, text
        assert got.deep_equals(cst.parse_module(text))
    # a statement followed by an indented comment: a block ending it would take the comment
    odd = "import os\n\n\ndef f():\n    return 1\n\n\nx = 1\n    # odd\ny = 2\n\n\nz = 3\n"
    parser = lsp_incremental.SpliceParser()
    parser(odd, "x.py")
    edited = odd.replace("x = 1\n", "if x:\n    pass\n")
    before = lsp_incremental.STATS["spliced"]
    got = parser(edited, "x.py")
    assert lsp_incremental.STATS["spliced"] == before
    assert got.deep_equals(cst.parse_module(edited))


def test_splice_parser_parses_each_edited_statement():
    """Two statements edited (a version the parser did not see between): both are parsed alone,
    the others are the same objects."""
    import libcst as cst

    base = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef h():\n    return 3\n\n\nx = 1\n"
    edited = base.replace("    return 2\n", "    y = 2\n    return y\n").replace("    return 3\n", "    return 33\n")
    parser = lsp_incremental.SpliceParser()
    old = parser(base, "x.py")
    before = lsp_incremental.STATS["spliced"]
    got = parser(edited, "x.py")
    assert lsp_incremental.STATS["spliced"] == before + 1
    assert got.deep_equals(cst.parse_module(edited)) and got.code == edited
    assert [a is b for a, b in zip(old.body, got.body)] == [True, True, False, False, True]


def test_splice_parser_guards_the_edited_statements_as_a_whole_parse():
    """An edit that nests a statement too deeply gets the whole parse's error, as before the
    splice read only the edited statements with the nesting guards."""
    from flake8_forksafe.source import parse

    base = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\nx = 1\n"
    deep = base.replace("    return 2\n", "    return " + "(" * 300 + "2" + ")" * 300 + "\n")
    chained = base.replace("    return 2\n", "    return " + " + ".join(["a"] * 3000) + "\n")
    for edited in (deep, chained):
        parser = lsp_incremental.SpliceParser()
        parser(base, "x.py")
        before = lsp_incremental.STATS["spliced"]
        with pytest.raises(SourceError) as got:
            parser(edited, "x.py")
        with pytest.raises(SourceError) as want:
            parse(edited, "x.py")
        assert got.value.message == want.value.message and lsp_incremental.STATS["spliced"] == before
