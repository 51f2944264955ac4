"""A pytest-lsp client that records every ``publishDiagnostics`` (pytest-lsp keeps only the last one
per document), and helpers to drive a document: open, change, apply a code action's edit."""

import asyncio
import re
from pathlib import Path
from typing import List, Optional

from lsprotocol import types as T
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

# Longest wait for one notification: a guard against a hung test on a loaded machine, not a timing
# requirement (the server answers within a second; nothing here depends on how fast).
WAIT_S = 120


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    client.arrived = asyncio.Event()

    def publish_diagnostics(ls, params: T.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published.append(params)
        ls.arrived.set()

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish_diagnostics
    register_lsp_features(client, features)
    return client


async def published(client: LanguageClient, uri: str, mark: int, version: Optional[int] = None) -> T.PublishDiagnosticsParams:
    """The first diagnostics for ``uri`` (of ``version`` when given) published after ``mark``
    (an index into ``client.published`` taken before the triggering notification was sent)."""
    while True:
        for p in client.published[mark:]:
            if p.uri == uri and (version is None or p.version == version):
                return p
        client.arrived.clear()
        await asyncio.wait_for(client.arrived.wait(), WAIT_S)


async def open_document(client: LanguageClient, path: Path, text: str, version: int = 1) -> List[T.Diagnostic]:
    mark = len(client.published)
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=path.as_uri(), language_id="python", version=version, text=text)
        )
    )
    return list((await published(client, path.as_uri(), mark, version)).diagnostics)


async def replace_document(client: LanguageClient, path: Path, text: str, version: int) -> List[T.Diagnostic]:
    mark = len(client.published)
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return list((await published(client, path.as_uri(), mark, version)).diagnostics)


async def close_document(client: LanguageClient, path: Path) -> List[T.Diagnostic]:
    mark = len(client.published)
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=path.as_uri())))
    return list((await published(client, path.as_uri(), mark)).diagnostics)


async def code_actions(client: LanguageClient, path: Path, rng: T.Range, diagnostics=(), only=None, resolve: bool = True) -> List[T.CodeAction]:
    """The code actions for ``rng``; with ``resolve``, each listed without an edit is resolved
    (``codeAction/resolve``), as an editor does when the user picks it."""
    result = await asyncio.wait_for(
        client.text_document_code_action_async(
            T.CodeActionParams(
                text_document=T.TextDocumentIdentifier(uri=path.as_uri()),
                range=rng,
                context=T.CodeActionContext(diagnostics=list(diagnostics), only=only),
            )
        ),
        WAIT_S,
    )
    actions = [a for a in (result or []) if isinstance(a, T.CodeAction)]
    if resolve:
        actions = [await resolve_action(client, a) if a.edit is None else a for a in actions]
    return actions


async def resolve_action(client: LanguageClient, action: T.CodeAction) -> T.CodeAction:
    return await asyncio.wait_for(client.code_action_resolve_async(action), WAIT_S)


# ----------------------------------------------------------------------------- applying edits

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _offset(text: str, pos: T.Position) -> int:
    """A UTF-16 LSP position as an index into ``text``."""
    lines = _LINE.findall(text)
    if pos.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def apply_edit(text: str, edit: T.WorkspaceEdit, uri: str, version: Optional[int] = None) -> str:
    """Apply a WorkspaceEdit to one document, as an editor does (checking the version it targets)."""
    edits: List[T.TextEdit] = []
    if edit.document_changes:
        for change in edit.document_changes:
            assert isinstance(change, T.TextDocumentEdit), change
            assert change.text_document.uri == uri
            if version is not None:
                assert change.text_document.version == version, "edit made for another version"
            edits.extend(change.edits)
    else:
        assert edit.changes and set(edit.changes) == {uri}
        edits.extend(edit.changes[uri])
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        assert start <= end
        text = text[:start] + new + text[end:]
    return text
