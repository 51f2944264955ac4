"""`forksafe lsp` with notebook documents (LSP 3.17 ``notebookDocument/*``), end to end: the real
console script over stdio, a client with Visual Studio Code's capabilities opening a notebook whose
cells are separate text documents. Diagnostics arrive per cell, at the line in that cell."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.integrations._lsp import make_client, published
from tests.integrations._util import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")

IMPORTS = "%matplotlib inline\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n"
DATASET = "x = 1\n\nclass Squares(Dataset):\n    def __len__(self):\n        return 8\n\n    def __getitem__(self, i):\n        return i * i\n"
LOADER = "loader = DataLoader(Squares(), num_workers=2)\nfor b in loader:\n    print(b)\n"


def with_notebooks(caps: T.ClientCapabilities) -> T.ClientCapabilities:
    """VS Code's capabilities plus notebook document sync (pytest-lsp's recorded set predates it)."""
    if caps.notebook_document is None:
        caps = attrs.evolve(
            caps,
            notebook_document=T.NotebookDocumentClientCapabilities(
                synchronization=T.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
            ),
        )
    return caps


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lsp-notebooks")


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[tool("forksafe"), "lsp"], client_factory=make_client),
)
async def client(lsp_client: LanguageClient, workspace: Path):
    result = await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=with_notebooks(client_capabilities("visual-studio-code")),
            root_uri=workspace.as_uri(),
            workspace_folders=[T.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    lsp_client.server_capabilities = result.capabilities
    yield
    await lsp_client.shutdown_session()


def cell_uri(nb: Path, i: int) -> str:
    return f"vscode-notebook-cell:{nb.as_posix()}#C{i}"


async def open_notebook(client: LanguageClient, nb: Path, cells):
    """cells: (kind, text); returns the cell URIs. Waits for the diagnostics of the last code cell."""
    uris = [cell_uri(nb, i) for i in range(len(cells))]
    mark = len(client.published)
    client.notebook_document_did_open(
        T.DidOpenNotebookDocumentParams(
            notebook_document=T.NotebookDocument(
                uri=nb.as_uri(), notebook_type="jupyter-notebook", version=1,
                cells=[T.NotebookCell(kind=kind, document=u) for (kind, _), u in zip(cells, uris)],
            ),
            cell_text_documents=[
                T.TextDocumentItem(uri=u, language_id="python" if kind == T.NotebookCellKind.Code else "markdown",
                                   version=1, text=text)
                for (kind, text), u in zip(cells, uris)
            ],
        )
    )
    last_code = [u for (kind, _), u in zip(cells, uris) if kind == T.NotebookCellKind.Code][-1]
    await published(client, last_code, mark)
    return uris, mark


def diags(client, uri, mark):
    hits = [p for p in client.published[mark:] if p.uri == uri]
    return [(d.code, d.range.start.line, d.range.start.character) for d in hits[-1].diagnostics] if hits else None


async def test_capabilities_announce_notebook_sync(client: LanguageClient):
    sync = client.server_capabilities.notebook_document_sync
    assert [c.language for c in sync.notebook_selector[0].cells] == ["python"]


async def test_notebook_diagnostics_per_cell_then_fixed_by_an_edit_then_closed(client: LanguageClient, workspace: Path):
    nb = workspace / "explore.ipynb"
    code, md = T.NotebookCellKind.Code, T.NotebookCellKind.Markup
    uris, mark = await open_notebook(client, nb, [(md, "# Title"), (code, IMPORTS), (code, DATASET), (code, LOADER)])
    # one publish per code cell; the finding on cell 3 (index 2), line 3 of the cell (0-based 2); no FRK401
    assert diags(client, uris[2], mark) == [("FRK405", 2, 0)]
    assert diags(client, uris[1], mark) == [] and diags(client, uris[3], mark) == []
    assert diags(client, uris[0], mark) is None  # markdown cells get nothing
    (d,) = [p for p in client.published[mark:] if p.uri == uris[2]][-1].diagnostics
    assert "Can't get attribute 'Squares' on <module '__main__' ...>" in d.message

    # the user moves the class into a module and imports it: the diagnostic goes away
    mark = len(client.published)
    client.notebook_document_did_change(
        T.DidChangeNotebookDocumentParams(
            notebook_document=T.VersionedNotebookDocumentIdentifier(version=2, uri=nb.as_uri()),
            change=T.NotebookDocumentChangeEvent(
                cells=T.NotebookDocumentCellChanges(
                    text_content=[
                        T.NotebookDocumentCellContentChanges(
                            document=T.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                            changes=[T.TextDocumentContentChangeWholeDocument(text="from squares import Squares\n")],
                        )
                    ]
                )
            ),
        )
    )
    await published(client, uris[3], mark)
    assert diags(client, uris[2], mark) == []

    mark = len(client.published)
    client.notebook_document_did_close(
        T.DidCloseNotebookDocumentParams(
            notebook_document=T.NotebookDocumentIdentifier(uri=nb.as_uri()),
            cell_text_documents=[T.TextDocumentIdentifier(uri=u) for u in uris],
        )
    )
    await published(client, uris[2], mark)
    assert diags(client, uris[2], mark) == []


async def test_a_cell_that_does_not_parse_leaves_the_others_checked(client: LanguageClient, workspace: Path):
    nb = workspace / "broken.ipynb"
    code = T.NotebookCellKind.Code
    uris, mark = await open_notebook(client, nb, [(code, IMPORTS), (code, "def half(:\n"), (code, DATASET), (code, LOADER)])
    assert diags(client, uris[2], mark) == [("FRK405", 2, 0)]
    assert diags(client, uris[1], mark) == []
