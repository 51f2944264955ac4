"""The language server and hostile documents (issue 13): a document nested too deep is skipped
without a crash, other documents keep their diagnostics, and a crash of the lint child costs one run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from flake8_forksafe.frontends.isolation import IsolatedLinter
from tests.integrations._lsp import make_client, open_document
from tests.integrations._util import HAZARD, tool

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lsp-hostile")


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


@pytest.mark.parametrize(
    "chain",
    ["x = y" + ".a" * 100_000, "x = " + "1 if x else " * 20_000 + "1", "x = " + " - ".join(["a"] * 8000)],
    ids=["attribute", "conditional", "binary"],
)
async def test_deep_document_is_skipped_and_the_server_lives(client: LanguageClient, workspace: Path, chain):
    deep = workspace / f"deep{len(chain)}.py"
    text = "from torch.utils.data import Dataset, DataLoader\n" + chain + "\n"
    assert await open_document(client, deep, text) == []
    good = workspace / f"good{len(chain)}.py"
    diags = await open_document(client, good, HAZARD)
    assert [d.code for d in diags] == ["FRK101", "FRK101"]


async def test_a_crashed_child_costs_one_call_and_the_next_call_works():
    linter = IsolatedLinter()
    try:
        reasons = []
        got = await linter.run(lambda why: reasons.append(why) or "died", os.abort)
        assert got == "died" and len(reasons) == 1
        assert reasons[0] in ("crashed (SIGABRT)", "did not finish")
        pid = await linter.run(lambda why: None, os.getpid)
        assert isinstance(pid, int) and pid != os.getpid()
    finally:
        linter.close()
