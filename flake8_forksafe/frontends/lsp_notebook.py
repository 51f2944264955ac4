"""The language server's notebook documents (LSP 3.17 ``notebookDocument/*``): diagnostics per cell.

The server announces notebook sync for notebooks with Python cells. pygls keeps the notebook and the
text of its cells in the workspace; on open and on every change (debounced as text documents are) the
code cells are joined in notebook order (``notebook.join_cells``: magics neutralised, a cell that
does not parse left out), checked as notebook code (FRK405 applies, FRK401 does not), and each
finding is published on its cell's document URI at its line in that cell. Every code cell gets its
own ``publishDiagnostics`` (empty when clean), so fixed findings disappear; closing the notebook
clears them. Quick fixes are not offered in notebooks (``forksafe fix`` fixes the notebook file).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from lsprotocol import types as T

from flake8_forksafe.model import Finding, SourceError
from flake8_forksafe.notebook import check_cells, join_cells

if TYPE_CHECKING:  # pragma: no cover
    from flake8_forksafe.frontends.lsp import ForkSafeServer

DEBOUNCE_S = 0.3


def sync_options() -> T.NotebookDocumentSyncOptions:
    """Any notebook (``"*"`` matches every notebook type), its Python cells."""
    return T.NotebookDocumentSyncOptions(
        notebook_selector=[
            T.NotebookDocumentFilterWithNotebook(notebook="*", cells=[T.NotebookCellLanguage(language="python")])
        ]
    )


def lint_cells(cells: List[Tuple[int, str]], path: str, cfg) -> Tuple[Optional[List[Finding]], List[str]]:
    """(findings with ``cell`` = the index in ``cells`` + 1, notes); findings None when the check failed."""
    try:
        return check_cells(join_cells(cells), path, cfg)
    except (SourceError, RecursionError):
        return None, []


class NotebookState:
    def __init__(self) -> None:
        self.pending: Optional[asyncio.Task] = None
        self.published: Set[str] = set()  # cell URIs with diagnostics published


class Notebooks:
    def __init__(self, server: "ForkSafeServer") -> None:
        self.server = server
        self.state: Dict[str, NotebookState] = {}

    def schedule(self, uri: str, delay: float) -> None:
        state = self.state.setdefault(uri, NotebookState())
        if state.pending is not None and not state.pending.done():
            state.pending.cancel()
        state.pending = asyncio.ensure_future(self._run(uri, delay))

    async def _run(self, uri: str, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self.refresh(uri)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            why = " ".join(str(exc).split())
            self.server.log_line(
                f"forksafe: {uri}: internal error ({why}); notebook diagnostics left as they were", T.MessageType.Warning
            )

    def code_cells(self, uri: str) -> List[Tuple[str, str]]:
        """(cell document URI, text) of the notebook's code cells, in notebook order."""
        ws = self.server.workspace
        nb = ws.get_notebook_document(notebook_uri=uri)
        if nb is None:
            return []
        out = []
        for cell in nb.cells:
            if cell.kind != T.NotebookCellKind.Code:
                continue
            doc = ws.get_text_document(cell.document)
            if getattr(doc, "language_id", None) not in (None, "python"):
                continue
            out.append((cell.document, doc.source))
        return out

    async def refresh(self, uri: str) -> None:
        server = self.server
        if uri not in self.state:
            return
        cells = self.code_cells(uri)
        path = server.check_path(uri)
        cfg = server.configs.for_path(server.config_path(uri))
        server.flush_config_warnings()
        numbered = [(i, text) for i, (_, text) in enumerate(cells, start=1)]
        loop = asyncio.get_running_loop()
        found, _notes = await loop.run_in_executor(server.executor, lint_cells, numbered, path, cfg)
        if found is None or uri not in self.state or self.code_cells(uri) != cells:
            return  # failed, closed or edited meanwhile: the next change brings its own check
        per_cell: Dict[str, List[T.Diagnostic]] = {cell_uri: [] for cell_uri, _ in cells}
        for f in found:
            cell_uri, text = cells[f.cell - 1]
            doc = server.workspace.get_text_document(cell_uri)
            lines = text.splitlines() or [""]
            per_cell[cell_uri].append(server.diagnostic(replace(f, cell=0), lines, doc))
        state = self.state[uri]
        for cell_uri in state.published - set(per_cell):  # cells deleted since the last check
            server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
        for cell_uri, diagnostics in per_cell.items():
            server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=diagnostics))
        state.published = set(per_cell)

    def close(self, uri: str, cell_uris: List[str]) -> None:
        state = self.state.pop(uri, None)
        if state is not None and state.pending is not None:
            state.pending.cancel()
        for cell_uri in set(cell_uris) | (state.published if state else set()):
            self.server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))


def register(server: "ForkSafeServer") -> None:
    """Add the notebook features to the server (its capabilities come from ``sync_options``)."""
    notebooks = Notebooks(server)
    server.notebooks = notebooks

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls, params: T.DidOpenNotebookDocumentParams) -> None:
        notebooks.state[params.notebook_document.uri] = NotebookState()
        notebooks.schedule(params.notebook_document.uri, 0)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: T.DidChangeNotebookDocumentParams) -> None:
        if params.notebook_document.uri in notebooks.state:
            notebooks.schedule(params.notebook_document.uri, DEBOUNCE_S)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: T.DidCloseNotebookDocumentParams) -> None:
        notebooks.close(params.notebook_document.uri, [c.uri for c in params.cell_text_documents])
