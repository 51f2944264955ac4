"""A bare JSON-RPC client for a language server on stdio, for the tests that need control over the
server's process (resource limits through ``preexec_fn``, its pid). benchmarks/lsp_bench.py has its
own copy with timings."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence


class RawClient:
    def __init__(self, cmd: Sequence[str], cwd: Optional[str] = None, preexec_fn: Optional[Callable[[], None]] = None) -> None:
        self.proc = subprocess.Popen(
            list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, preexec_fn=preexec_fn
        )
        self.inbox: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []  # every message from the server, in order
        self.stderr: List[bytes] = []
        self._id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            self.inbox.put(json.loads(out.read(length)))

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, message: Dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 120) -> Any:
        self._id += 1
        rid = self._id
        self.send({"id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return msg.get("result")

    def wait(self, pred: Callable[[Dict[str, Any]], bool], timeout: float = 120, since: int = 0) -> Dict[str, Any]:
        """The first message (from index ``since`` of ``seen``) that satisfies ``pred``."""
        for m in self.seen[since:]:
            if pred(m):
                return m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no such message from the server")
            try:
                m = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if "method" in m and "id" in m:  # a request from the server: answer it (null)
                self.send({"id": m["id"], "result": None})
            self.seen.append(m)
            if pred(m):
                return m

    def initialize(self, root_uri: str, capabilities: Optional[Dict[str, Any]] = None) -> Any:
        caps = capabilities if capabilities is not None else {
            "textDocument": {
                "publishDiagnostics": {"versionSupport": True},
                "codeAction": {
                    "dataSupport": True,
                    "resolveSupport": {"properties": ["edit"]},
                    "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}},
                },
            },
            "workspace": {"workspaceEdit": {"documentChanges": True}},
        }
        result = self.request("initialize", {"processId": None, "rootUri": root_uri, "capabilities": caps})
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})

    def diagnostics(self, uri: str, version: Optional[int] = None, since: int = 0, timeout: float = 120) -> Dict[str, Any]:
        return self.wait(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and (version is None or m["params"].get("version") == version),
            timeout,
            since,
        )["params"]

    def close(self, timeout: float = 30) -> int:
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit", None)
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
