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


# ------------------------------------------------------ the whole hostile corpus under 2 GB (issue 13)

AS_LIMIT = 2 << 30


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _address_space_limit(pid: int) -> str:
    with open(f"/proc/{pid}/limits", encoding="ascii") as fh:
        line = next(x for x in fh if x.startswith("Max address space"))
    return line.split()[3]  # the soft limit, in bytes


def _children(pid: int):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                    if any(x.split()[1:2] == [str(pid)] for x in fh if x.startswith("PPid:")):
                        out.append(int(entry))
            except OSError:
                pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the limits in /proc (Linux)")
async def test_every_hostile_file_is_answered_under_a_2gb_address_space_limit(tmp_path: Path):
    """The server, limited to 2 GB of address space (and its lint child with it), is sent every
    regular file of tests/test_hostile.py's corpus as an open document: it answers each with its
    diagnostics (the good files: their FRK101; the rest: none, or one line in the log), and it is
    still alive and right afterwards. A FIFO and a symlink loop cannot be opened by an editor:
    they are the files the corpus holds besides these, and are not sent."""
    from tests.integrations._rawlsp import RawClient
    from tests.test_hostile import outcomes

    corpus = tmp_path / "hostile"
    corpus.mkdir()
    expected, good = outcomes(corpus)
    files = sorted(p for p in corpus.iterdir() if p.is_file() and not p.is_symlink() and p.suffix == ".py")
    names = {p.name for p in files}
    assert {"deep_attribute.py", "deep_in_init.py", "huge_list.py", "huge_str.py", "formfeed.py", "mixed.py"} <= names
    assert len(files) == len(os.listdir(corpus)) - 4  # all but the FIFO and the three symlinks
    client = RawClient([tool("forksafe"), "lsp"], cwd=str(corpus), preexec_fn=_limited)
    try:
        client.initialize(corpus.as_uri())
        assert _address_space_limit(client.proc.pid) == str(AS_LIMIT)
        for version, p in enumerate(files, start=1):
            uri = p.as_uri()
            text = p.read_bytes().decode("utf-8", "replace")
            client.open(uri, text, version)
            diags = client.diagnostics(uri, version, timeout=600)["diagnostics"]
            codes = [(d["code"], d["range"]["start"]["line"]) for d in diags]
            if p.name in good or p.name == os.fsdecode(b"bad\xff.py"):
                assert codes == [("FRK101", 4)], p.name
            elif p.name == "mixed.py":
                assert codes == [("FRK101", 4)], p.name
            else:
                assert codes == [], p.name
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        children = _children(client.proc.pid)
        assert children, "the lint child is running"
        assert all(_address_space_limit(c) == str(AS_LIMIT) for c in children)
        # alive and right afterwards
        uri = (corpus / "after.py").as_uri()
        client.open(uri, HAZARD, 1)
        assert [d["code"] for d in client.diagnostics(uri, 1)["diagnostics"]] == ["FRK101", "FRK101"]
        logs = [m["params"]["message"] for m in client.seen if m.get("method") == "window/logMessage"]
        assert all("\n" not in m and "Traceback" not in m for m in logs), logs
        # a skipped file gets the one line `forksafe check` prints for it (the server names the full path)
        for name, want in expected.items():
            (line,) = [m for m in logs if m.startswith(f"forksafe: {corpus / name}: ")]
            as_check = line.replace(f"forksafe: {corpus / name}: ", f"forksafe: {name}: ", 1)
            assert as_check == want if isinstance(want, str) else want.fullmatch(as_check), line
        assert client.proc.poll() is None
    finally:
        code = client.close()
    assert code == 0
    assert b"Traceback" not in b"".join(client.stderr)
