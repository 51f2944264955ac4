"""``forksafe lsp``: a language server (pygls, stdio) with the same findings and fixes as ``forksafe``.

What it does
------------
* Diagnostics on ``didOpen`` and ``didSave`` (at once, a full analysis) and on ``didChange``
  (debounced: the document is checked once it has been left alone for ``DEBOUNCE_S`` seconds; a
  newer change cancels the pending check). Diagnostics are published only for the version they
  were computed for (a check that finishes after a newer change publishes nothing). Each
  diagnostic has the rule code, the message, the range of the reported node, ``source``
  "forksafe" and a link to the rule's documentation (``codeDescription.href``).
* The lints run in a child process (``isolation.IsolatedLinter``) that remembers each open
  document (``lsp_incremental``): an edit re-parses only the top-level statement it is in for the
  pre-filter's facts, and when it touched only statements no finding can involve, the previous
  findings are reused (moved by the lines added) without libcst; else libcst too parses only the
  statement the edit is in (``lsp_incremental.SpliceParser``), the others kept from the last parse. A document skipped for a reason
  other than a syntax error (nested too deep, too big, undecodable) gets that one line in the log,
  once; a crash of the child costs that check only.
* The configuration is ``[tool.flake8-forksafe]`` of the nearest ``pyproject.toml`` above the
  document (re-read when that file changes). Documents the configuration excludes (``exclude`` /
  ``extend-exclude``, and the default excludes: virtualenvs, ``site-packages``, build directories)
  get no diagnostics, as in ``forksafe check`` on a directory. A configuration that cannot be read
  is reported once as a warning and the defaults are used.
* A document that does not parse (half-typed code) keeps its last diagnostics (republished, so the
  editor's list does not flicker while typing); one that never parsed has none. Nothing the document
  contains makes the server fail or send an error: internal errors are logged as one line.

Code actions
------------
Listed from the findings alone, each with ``data`` (URI, version, kind, code, line) that finds its
finding again; the edit is computed by ``codeAction/resolve`` when the user picks the action
(``resolveProvider``), for the version it was listed for (none once the document changed). A
client that does not announce ``codeAction.resolveSupport`` for ``edit`` gets the edits computed
with the list, as before.

* ``quickfix`` "FRKxxx: <fix title>": the rule's automatic fix, computed by the same machinery as
  ``forksafe fix`` (``fix_source`` restricted to that code, only the rules that fix run: the same
  text), returned as one whole-document edit.
  Rule fixes work on the whole module, so the action fixes every finding of that code in the
  document. Unsafe fixes (fixes that can change behaviour, ``fix = "unsafe"`` in ``forksafe rules``)
  are offered too, because the user picks them one by one, with "(unsafe)" at the end of the title
  and never as the preferred action.
* ``source.fixAll.forksafe`` "Fix all safe forksafe findings": ``forksafe fix`` on the document:
  safe fixes only, unless the project sets ``unsafe-fixes = true`` (then the title says so).
* ``quickfix`` "Suppress FRKxxx with # noqa": appends ``  # noqa: FRKxxx`` to the reported line
  (two spaces, as PEP 8 / E261 want), or adds the code to the line's existing ``# noqa:`` list.
  Its edit is given only where the comment is a real comment that the engine reads as
  suppressing the finding (checked by tokenizing and parsing the edited text: not after a line
  continuation, not inside a multi-line string).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import logging
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flake8_forksafe import __version__
from flake8_forksafe.config import Config, ConfigError, load_pyproject
from flake8_forksafe.model import DOCS_URL, SAFE, UNSAFE, Finding, SourceError
from flake8_forksafe.noqa import NOQA_INLINE, noqa_suppresses

DEBOUNCE_S = 0.15  # seconds of quiet after a change before the document is checked
SOURCE = "forksafe"
FIX_ALL_KIND = "source.fixAll.forksafe"
FIX_ALL_TITLE = "Fix all safe forksafe findings"
FIX_ALL_UNSAFE_TITLE = "Fix all forksafe findings (unsafe fixes included: unsafe-fixes = true)"

log = logging.getLogger("flake8_forksafe.lsp")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def lsp_lines(text: str) -> List[str]:
    """Lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` end a line), without terminators."""
    return _LINE_BREAK.split(text)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


# -------------------------------------------------------------------------------- configuration


class Configs:
    """``[tool.flake8-forksafe]`` of the nearest pyproject.toml, cached by path and mtime."""

    def __init__(self) -> None:
        self._cache: Dict[Tuple[str, int], Config] = {}
        self.warned: set = set()
        self.warnings: List[str] = []  # new warnings for the server to show (once each)

    @staticmethod
    def _pyproject(path: Optional[str]) -> Optional[Path]:
        if not path:
            return None
        d = Path(path).parent
        try:
            while not d.is_dir() and d != d.parent:  # an unsaved file in a directory not made yet
                d = d.parent
            for candidate in (d, *d.parents):
                p = candidate / "pyproject.toml"
                if p.is_file():
                    return p
        except OSError:
            return None
        return None

    def for_path(self, path: Optional[str]) -> Config:
        pp = self._pyproject(path)
        if pp is None:
            return self._default()
        try:
            mtime = pp.stat().st_mtime_ns
        except OSError:
            return self._default()
        key = (str(pp), mtime)
        cfg = self._cache.get(key)
        if cfg is None:
            try:
                cfg = load_pyproject(pp)
            except Exception as exc:  # ConfigError: the user's; anything else: ours. Never fatal.
                if key not in self.warned:
                    self.warned.add(key)
                    why = str(exc) if isinstance(exc, ConfigError) else f"{pp}: {_one_line(exc)}"
                    self.warnings.append(f"forksafe: {' '.join(why.split())}; using the default configuration")
                cfg = self._default()
            self._cache = {k: v for k, v in self._cache.items() if k[0] != key[0]}
            self._cache[key] = cfg
        return cfg

    def _default(self) -> Config:
        cfg = self._cache.get(("", 0))
        if cfg is None:
            cfg = self._cache[("", 0)] = Config()
        return cfg


def excluded(path: Optional[str], cfg: Config, workspace_root: Optional[str] = None) -> bool:
    """Whether the configuration's exclude patterns cover the document or a directory above it,
    below the project root (the pyproject.toml's directory, else the workspace root): the files
    ``forksafe check`` skips when it walks the project."""
    if not path:
        return False
    from flake8_forksafe.frontends.files import _excluded

    patterns = tuple(cfg.exclude) + tuple(cfg.extend_exclude)
    if not patterns:
        return False
    try:
        target = Path(os.path.abspath(path))
        candidates = [Path(r).resolve() for r in (cfg.root, workspace_root) if r]
    except (OSError, RuntimeError):
        return False
    root = next((r for r in candidates if r in target.parents), None)
    if root is None:
        return _excluded(target, patterns, target.parent)
    chain = [target] + [d for d in target.parents if root in d.parents]
    return any(_excluded(d, patterns, root) for d in chain)


# ------------------------------------------------------------------------------------- checking


def _index(path: Optional[str], cfg: Config):
    if not path or not path.endswith(".py") or not os.path.isfile(path):
        return None  # an untitled buffer: the file alone
    from flake8_forksafe.index import index_for

    return index_for(path, cfg.knowledge, use_cache=False)


# path -> (text, config) of open documents whose summary in the index lags behind their text
# (checked by reuse, which does not need it): brought up to date before another document is checked.
_LAGGING: Dict[str, Tuple[str, Config]] = {}


def lint(uri: str, text: str, path: str, cfg: Config, full: bool = False) -> Tuple[Optional[List[Finding]], Optional[str]]:
    """(findings, None); or (None, why) when the document cannot be checked as it is now: it does
    not parse (half-typed code: not worth a message), or a check failed (an internal error).
    Runs in the isolated child, which remembers each document between calls
    (``lsp_incremental``): ``full`` (open, save) re-analyses whatever changed."""
    with no_gc_child():  # the index's parse too: the collector would traverse the remembered libcst trees
        return _lint(uri, text, path, cfg, full)


IDLE_COLLECT_S = 2.0  # seconds without a lint after which the child collects its cyclic garbage
_IDLE_TIMER: List[Any] = []


def _collect_when_idle() -> None:
    """After a lint (in the child): the objects alive now (the remembered documents' trees) are moved
    out of the collector's generations (``gc.freeze``), so the next allocations (sending the answer,
    the next request) do not pay a traversal of them that finds nothing (a full collection of the
    child's memory after a 2,000-line document takes ~95 ms and frees nothing). Any cyclic garbage is
    collected once the child has been idle for ``IDLE_COLLECT_S`` seconds. Elsewhere (a test calling
    ``lint`` in its own process): nothing."""
    import gc
    import threading

    from flake8_forksafe.frontends.isolation import SERVER_CHILD

    if not SERVER_CHILD:
        return
    gc.freeze()
    for t in _IDLE_TIMER:
        t.cancel()
    timer = threading.Timer(IDLE_COLLECT_S, _collect_now)
    timer.daemon = True
    _IDLE_TIMER[:] = [timer]
    timer.start()


def _collect_now() -> None:
    import gc

    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _lint(uri: str, text: str, path: str, cfg: Config, full: bool) -> Tuple[Optional[List[Finding]], Optional[str]]:
    from flake8_forksafe.frontends import lsp_incremental

    try:
        for other in [p for p in _LAGGING if p != path]:
            lag_text, lag_cfg = _LAGGING.pop(other)
            lagging = _index(other, lag_cfg)
            if lagging is not None:
                lagging.update_text(other, lag_text)
        ix = _index(path, cfg)
        done = []

        def refresh() -> None:
            ix.update_text(path, text)
            done.append(True)

        found, _how = lsp_incremental.check(uri, text, path, cfg, ix, full=full, refresh=refresh)
        if ix is not None and not done:
            _LAGGING[path] = (text, cfg)
        else:
            _LAGGING.pop(path, None)
        return found, None
    except SourceError as exc:
        if exc.message.startswith("skipped: syntax error"):
            return None, None  # half-typed code: not worth a message
        return None, f"forksafe: {path}: {exc.message}"  # too deep, too big, not decodable: say why, once
    except RecursionError:
        return None, None
    except Exception as exc:  # a bug of ours must not cost the user the server
        return None, f"forksafe: {path}: internal error ({_one_line(exc)}); please report it"


def _current_index(path: str, text: str, cfg: Config) -> Any:
    """The index the lints use, its summary of this document brought up to ``text`` (a resolve
    follows the lint of that text; a lagging summary is refreshed first)."""
    lag = _LAGGING.pop(path, None)
    ix = _index(path, cfg)
    if ix is not None and lag is not None:
        ix.update_text(path, text)
    return ix


@contextlib.contextmanager
def no_gc_child() -> Any:
    """The collector off while the child lints or computes a fix, what it remembers frozen after
    (``_collect_when_idle``)."""
    from flake8_forksafe.engine import no_gc

    with no_gc():
        try:
            yield
        finally:
            _collect_when_idle()


def forget(uri: str) -> None:
    """Drop what the child remembers of a closed document."""
    from flake8_forksafe.frontends import lsp_incremental

    lsp_incremental.forget(uri)


def rule_of(code: str) -> Any:
    from flake8_forksafe.checks import BY_CODE

    return BY_CODE.get(code)


class DocState:
    """What the server knows of one open document."""

    def __init__(self) -> None:
        self.version: Optional[int] = None  # version of the text ``findings`` were computed for
        self.text: Optional[str] = None
        self.findings: Optional[List[Finding]] = None
        self.published: List[T.Diagnostic] = []  # the last diagnostics of a document that parsed
        self.pending: Optional[asyncio.Task] = None
        self.pending_full = False  # the pending check re-analyses everything (open, save)
        self.noted: Optional[str] = None  # the last one-line problem logged for the document
        self.fixes: Dict[Tuple[Any, ...], Any] = {}  # (version, ...) -> computed edits


class ForkSafeServer(LanguageServer):
    def __init__(self) -> None:
        from flake8_forksafe.frontends.lsp_notebook import sync_options

        super().__init__(
            "forksafe",
            __version__,
            text_document_sync_kind=T.TextDocumentSyncKind.Incremental,
            notebook_document_sync=sync_options(),  # notebooks: lsp_notebook.py
        )
        self.docs: Dict[str, DocState] = {}
        self.configs = Configs()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forksafe")
        from flake8_forksafe.frontends.isolation import IsolatedLinter

        self.isolated = IsolatedLinter()  # lints and fixes run in a child: a crash costs one run
        self.crashed: Dict[str, int] = {}  # uri -> hash of the text whose analysis crashed
        self.warmed = False

    # Errors never reach the user as a pop-up with a traceback: one line in the log.
    def report_server_error(self, error: Exception, source: Any) -> None:
        self.log_line(f"forksafe: internal error ({_one_line(error)})", T.MessageType.Warning)

    def log_line(self, message: str, kind: T.MessageType = T.MessageType.Log) -> None:
        try:
            self.window_log_message(T.LogMessageParams(type=kind, message=message))
        except Exception:  # the client is gone: nothing to tell
            pass

    def flush_config_warnings(self) -> None:
        while self.configs.warnings:
            msg = self.configs.warnings.pop(0)
            self.log_line(msg, T.MessageType.Warning)
            try:
                self.window_show_message(T.ShowMessageParams(type=T.MessageType.Warning, message=msg))
            except Exception:
                pass

    # -------------------------------------------------------------------------- documents

    def doc_path(self, uri: str) -> Optional[str]:
        return to_fs_path(uri)

    def check_path(self, uri: str) -> str:
        """The path given to the checks (rules look at the file name, e.g. ``__main__.py``)."""
        path = self.doc_path(uri)
        if path:
            return path
        return uri.rsplit("/", 1)[-1] or "untitled.py"

    def config_path(self, uri: str) -> Optional[str]:
        path = self.doc_path(uri)
        if path:
            return path
        root = getattr(self.workspace, "root_path", None)
        return os.path.join(root, "untitled.py") if root else None

    def schedule(self, uri: str, delay: float, full: bool = False) -> None:
        """Check the document after ``delay`` seconds; a newer call cancels a pending one (the
        debounce). ``full``: no reuse of the previous analysis (open, save)."""
        state = self.docs.setdefault(uri, DocState())
        if state.pending is not None and not state.pending.done():
            state.pending.cancel()
            full = full or state.pending_full  # a save's full check is not lost to a later change
        state.pending_full = full
        state.pending = asyncio.ensure_future(self._lint_and_publish(uri, delay, full))

    async def _lint_and_publish(self, uri: str, delay: float, full: bool = False) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self.refresh(uri, full)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.log_line(f"forksafe: {uri}: internal error ({_one_line(exc)}); diagnostics left as they were", T.MessageType.Warning)

    async def findings_for(self, uri: str, full: bool = False) -> Tuple[Optional[int], str, Optional[List[Finding]], Config]:
        """(version, text, findings or None, config) of the document as it is now."""
        doc = self.workspace.get_text_document(uri)
        version, text = doc.version, doc.source
        cfg = self.configs.for_path(self.config_path(uri))
        self.flush_config_warnings()
        if excluded(self.doc_path(uri), cfg, getattr(self.workspace, "root_path", None)):
            return version, text, [], cfg
        if self.doc_path(uri):
            cfg = cfg.for_path(self.doc_path(uri))  # per-file-ignores (findings and fixes)
        state = self.docs.setdefault(uri, DocState())
        if not full and state.text == text and state.findings is not None and state.version == version:
            return version, text, state.findings, cfg
        if self.crashed.get(uri) == hash(text):
            return version, text, None, cfg  # not again until the text changes

        def died(reason: str) -> Tuple[None, str]:
            self.crashed[uri] = hash(text)
            return None, f"forksafe: {self.check_path(uri)}: skipped: the analysis {reason}; not retried until the document changes"

        found, problem = await self.isolated.run(died, lint, uri, text, self.check_path(uri), cfg, full)
        if problem and problem != state.noted:
            self.log_line(problem, T.MessageType.Warning)  # once, not at every keystroke
        state.noted = problem
        if found is not None and uri in self.docs:
            current = self.workspace.get_text_document(uri)
            if current.version == version and current.source == text:
                if state.text != text:
                    state.fixes = {}
                state.version, state.text, state.findings = version, text, found
        return version, text, found, cfg

    async def refresh(self, uri: str, full: bool = False) -> None:
        if uri not in self.docs:
            return  # closed meanwhile
        version, text, found, _cfg = await self.findings_for(uri, full)
        state = self.docs.get(uri)
        if state is None:
            return
        doc = self.workspace.get_text_document(uri)
        if doc.version != version or doc.source != text:
            return  # edited while we were checking: never publish for a stale version (the newer change brings its own check)
        if found is None:
            lines = lsp_lines(text)
            diagnostics = [d for d in state.published if d.range.start.line < len(lines)]
        else:
            diagnostics = [self.diagnostic(f, lsp_lines(text), doc) for f in found]
            state.published = diagnostics
        self.text_document_publish_diagnostics(
            T.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def position(self, lines: Sequence[str], line: int, col: int, doc: Any) -> T.Position:
        """A 1-based line and a code-point column as an LSP position in the negotiated encoding."""
        idx = min(max(line - 1, 0), max(len(lines) - 1, 0))
        text = lines[idx] if lines else ""
        return T.Position(line=idx, character=doc.position_codec.client_num_units(text[: max(col, 0)]))

    def diagnostic(self, f: Finding, lines: Sequence[str], doc: Any) -> T.Diagnostic:
        start = self.position(lines, f.line, f.col, doc)
        if f.end_line > f.line or (f.end_line == f.line and f.end_col > f.col):
            end = self.position(lines, f.end_line, f.end_col, doc)
        else:
            line_text = lines[start.line] if lines else ""
            end = T.Position(line=start.line, character=doc.position_codec.client_num_units(line_text))
        return T.Diagnostic(
            range=T.Range(start=start, end=end),
            message=f.message,
            severity=T.DiagnosticSeverity.Warning,
            code=f.code,
            code_description=T.CodeDescription(href=DOCS_URL.format(code=f.code)),
            source=SOURCE,
            data={"fix": f.fix, "line": f.line, "col": f.col},
        )

    # ------------------------------------------------------------------------- code actions

    def resolves_edits(self) -> bool:
        """The client resolves a code action's ``edit`` lazily (``codeAction/resolve``)."""
        caps = self.client_capabilities
        td = getattr(caps, "text_document", None) if caps else None
        ca = getattr(td, "code_action", None) if td else None
        rs = getattr(ca, "resolve_support", None) if ca else None
        return bool(rs is not None and "edit" in (rs.properties or ()))

    async def code_actions(self, params: T.CodeActionParams) -> List[T.CodeAction]:
        """The actions for the range, listed from the findings alone: each carries ``data`` to
        find its finding again, and its edit is computed by ``resolve_action`` when the user
        picks it (at once for a client that cannot resolve)."""
        uri = params.text_document.uri
        version, text, found, cfg = await self.findings_for(uri)
        if not found:
            return []
        doc = self.workspace.get_text_document(uri)
        lines = lsp_lines(text)
        only = params.context.only

        def wanted(kind: str) -> bool:
            return not only or any(kind == o or kind.startswith(o + ".") for o in only)

        context_keys = {
            (d.code, d.range.start.line)
            for d in params.context.diagnostics
            if d.source == SOURCE and d.code is not None
        }
        rng = params.range

        def in_scope(f: Finding) -> bool:
            if (f.code, f.line - 1) in context_keys:
                return True
            last = max(f.end_line, f.line) - 1
            return f.line - 1 <= rng.end.line and last >= rng.start.line

        actions: List[T.CodeAction] = []
        scoped = [f for f in found if in_scope(f)]

        def data(kind: str, **more: Any) -> Dict[str, Any]:
            return {"uri": uri, "version": version, "action": kind, **more}

        if wanted(T.CodeActionKind.QuickFix):
            done = set()
            for f in scoped:
                if f.fix not in (SAFE, UNSAFE) or f.code in done:
                    continue
                done.add(f.code)
                rule = rule_of(f.code)
                what = (getattr(rule, "fix_title", "") or getattr(rule, "name", "") or "apply the fix") if rule else "apply the fix"
                actions.append(
                    T.CodeAction(
                        title=f"{f.code}: {what}" + (" (unsafe)" if f.fix == UNSAFE else ""),
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=[self.diagnostic(g, lines, doc) for g in found if g.code == f.code],  # all it fixes
                        is_preferred=f.fix == SAFE,
                        data=data("fix", code=f.code, unsafe=f.fix == UNSAFE),
                    )
                )
            seen = set()
            for f in scoped:
                if (f.line, f.code) in seen:
                    continue
                seen.add((f.line, f.code))
                actions.append(
                    T.CodeAction(
                        title=f"Suppress {f.code} with # noqa",
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=[self.diagnostic(f, lines, doc)],
                        data=data("noqa", code=f.code, line=f.line),
                    )
                )

        if wanted(FIX_ALL_KIND) and any(f.fix == SAFE or (f.fix == UNSAFE and cfg.unsafe_fixes) for f in found):
            actions.append(
                T.CodeAction(
                    title=FIX_ALL_UNSAFE_TITLE if cfg.unsafe_fixes else FIX_ALL_TITLE,
                    kind=FIX_ALL_KIND,
                    data=data("fixall"),
                )
            )
        if self.resolves_edits():
            return actions
        out = []
        for action in actions:  # a client that cannot resolve gets the edits now (and only working ones)
            action.edit = await self.action_edit(action.data)
            if action.edit is not None:
                action.data = None
                out.append(action)
        return out

    async def resolve_action(self, action: T.CodeAction) -> T.CodeAction:
        """``codeAction/resolve``: the edit of one listed action (none when the document changed
        since, or the fix turns out to change nothing)."""
        if action.edit is None and isinstance(action.data, dict):
            action.edit = await self.action_edit(action.data)
            if action.edit is None:
                self.log_line(f"forksafe: {action.title}: nothing to apply to this version of the document", T.MessageType.Info)
        return action

    async def action_edit(self, data: Any) -> Optional[T.WorkspaceEdit]:
        """The WorkspaceEdit of a listed action's ``data``, for the version it was listed for."""
        if not isinstance(data, dict) or not isinstance(data.get("uri"), str):
            return None
        uri = data["uri"]
        if uri not in self.docs:
            return None
        version, text, found, cfg = await self.findings_for(uri)
        if found is None or version != data.get("version"):
            return None
        doc = self.workspace.get_text_document(uri)
        path = self.check_path(uri)
        state = self.docs.setdefault(uri, DocState())

        async def cached(key: Tuple[Any, ...], fn, *args):
            key = (version, text) + key
            if key not in state.fixes:
                state.fixes[key] = await self.isolated.run(lambda why: None, fn, *args)
            return state.fixes[key]

        kind, code = data.get("action"), data.get("code")
        if kind == "fix" and any(f.code == code and f.fix in (SAFE, UNSAFE) for f in found):
            unsafe = any(f.code == code and f.fix == UNSAFE for f in found)
            new = await cached(("fix", code), fixed_text_in_child, uri, text, path, cfg, unsafe, code)
            return None if new is None else self.whole_document_edit(uri, version, text, new, doc)
        if kind == "fixall" and any(f.fix == SAFE or (f.fix == UNSAFE and cfg.unsafe_fixes) for f in found):
            new = await cached(("fixall",), fixed_text_in_child, uri, text, path, cfg, False, None)
            return None if new is None else self.whole_document_edit(uri, version, text, new, doc)
        line = data.get("line")
        if kind == "noqa" and any(f.code == code and f.line == line for f in found):
            # a tokenize and an ast parse of the statement (no analysis), where the statements are known
            edit = await cached(("noqa", line, code), noqa_edit_in_child, uri, text, path, cfg, line, code)
            if edit is None:
                return None
            line_idx, at, insert = edit
            lines = lsp_lines(text)
            pos = T.Position(line=line_idx, character=doc.position_codec.client_num_units(lines[line_idx][:at]))
            return self.workspace_edit(uri, version, [T.TextEdit(range=T.Range(start=pos, end=pos), new_text=insert)])
        return None

    def whole_document_edit(self, uri: str, version: Optional[int], old: str, new: str, doc: Any) -> T.WorkspaceEdit:
        lines = lsp_lines(old)
        end = T.Position(line=len(lines) - 1, character=doc.position_codec.client_num_units(lines[-1]))
        rng = T.Range(start=T.Position(line=0, character=0), end=end)
        return self.workspace_edit(uri, version, [T.TextEdit(range=rng, new_text=new)])

    def workspace_edit(self, uri: str, version: Optional[int], edits: List[T.TextEdit]) -> T.WorkspaceEdit:
        caps = self.client_capabilities
        ws = getattr(caps, "workspace", None)
        we = getattr(ws, "workspace_edit", None) if ws else None
        if we is not None and we.document_changes:
            return T.WorkspaceEdit(
                document_changes=[
                    T.TextDocumentEdit(
                        text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                        edits=edits,
                    )
                ]
            )
        return T.WorkspaceEdit(changes={uri: edits})


# ------------------------------------------------------------------------ fixes (pure functions)


def fixed_text(
    text: str, path: str, cfg: Config, unsafe: bool, code: Optional[str], parser: Any = None, index: Any = None
) -> Optional[str]:
    """The document after ``forksafe fix`` (restricted to ``code`` when given); None when the fix
    changes nothing, fails, or (for one code) does not remove any finding of that code.
    ``parser``, ``index``: see ``fix.fix_rounds`` (the same text; the index the lints use)."""
    from flake8_forksafe.fix import fix_source

    try:
        # only the rules that fix run (the text is the same; a resolve needs no other findings)
        result = fix_source(
            text, path, cfg, unsafe=unsafe, select=[code] if code else None, fixers_only=True, parser=parser, index=index
        )
    except (SourceError, RecursionError):
        return None
    if not result.changed or result.errors:
        return None
    if code is not None and not any(f.code == code for f in result.fixed):
        return None
    return result.source if isinstance(result.source, str) else None


def noqa_edit(
    text: str, path: str, cfg: Config, line: int, code: str, span: Optional[Tuple[int, int]] = None
) -> Optional[Tuple[int, int, str]]:
    """(0-based line, code-point column, text to insert) that suppresses ``code`` on ``line``, or
    None when no comment there would: the ``# noqa`` must be a real comment (not text in a
    multi-line string, not after a line continuation) that the engine reads as suppressing ``code``
    on that line (``noqa.noqa_suppresses``, the engine's own test), and the edited document must
    still parse. Checked with a tokenize and an ``ast`` parse, without analysing the document.
    ``span``: the 1-based first and last line of the top-level statement holding ``line`` (alone
    on its lines): only that statement is tokenized and parsed."""
    lines = lsp_lines(text)
    if not 0 < line <= len(lines):
        return None
    line_text = lines[line - 1]
    m = NOQA_INLINE.search(line_text)
    if m is not None and m.group("codes"):
        codes = m.group("codes")
        at = m.start("codes") + len(codes.rstrip(", \t"))
        insert = f", {code}"
        hash_col = m.start()
    elif m is not None:
        return None  # a bare ``# noqa`` already suppresses everything on the line
    else:
        at = len(line_text.rstrip())
        insert = f"  # noqa: {code}"
        hash_col = at + 2
    new_line = line_text[:at] + insert + line_text[at:]
    if not noqa_suppresses(new_line, code):
        return None
    # Rebuild the text with its own line endings (only the statement's lines, given its span).
    first, last = span if span is not None and span[0] <= line <= span[1] <= len(lines) else (1, len(lines))
    parts = _LINE_BREAK.split(text)
    seps = _LINE_BREAK.findall(text)
    parts[line - 1] = new_line
    new_text = "".join(parts[i] + (seps[i] if i < len(seps) else "") for i in range(first - 1, min(last, len(parts))))
    if not _comment_starts(new_text, line - first + 1, hash_col, at + len(insert)):
        return None
    try:
        ast.parse(new_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return line - 1, at, insert


def _comment_starts(text: str, line: int, col: int, upto: int) -> bool:
    """Columns ``col`` to ``upto`` of ``line`` are inside a comment (tokenized: not text in a string)."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] > line:
                return False
            if tok.type == tokenize.COMMENT and tok.start[0] == line and tok.start[1] <= col:
                return tok.end[1] >= upto
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError, RecursionError):
        return False
    return False


def fixed_text_in_child(
    uri: str, text: str, path: str, cfg: Config, unsafe: bool, code: Optional[str]
) -> Optional[str]:
    """``fixed_text`` where the lints run: the rounds' texts are parsed re-using the statements of
    the document's last checked texts that a fix did not touch (``lsp_incremental.parser_for``)."""
    from flake8_forksafe.frontends import lsp_incremental

    with no_gc_child():
        return fixed_text(text, path, cfg, unsafe, code, lsp_incremental.parser_for(uri, path, cfg), _current_index(path, text, cfg))


def noqa_edit_in_child(uri: str, text: str, path: str, cfg: Config, line: int, code: str) -> Optional[Tuple[int, int, str]]:
    """``noqa_edit`` where the lints run: the child knows the document's top-level statements."""
    from flake8_forksafe.frontends import lsp_incremental

    return noqa_edit(text, path, cfg, line, code, lsp_incremental.statement_span(uri, text, line))


# ------------------------------------------------------------------------------------- wiring


def create_server() -> ForkSafeServer:
    server = ForkSafeServer()

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ForkSafeServer, params: T.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.docs[uri] = DocState()
        ls.schedule(uri, 0, full=True)
        if not ls.warmed:  # the rule classes (fix titles for code actions) load while the child lints
            ls.warmed = True
            asyncio.get_running_loop().run_in_executor(ls.executor, rule_of, "FRK101")

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ForkSafeServer, params: T.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE, T.SaveOptions(include_text=False))
    def did_save(ls: ForkSafeServer, params: T.DidSaveTextDocumentParams) -> None:
        if params.text_document.uri in ls.docs:
            ls.schedule(params.text_document.uri, 0, full=True)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ForkSafeServer, params: T.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        state = ls.docs.pop(uri, None)
        if state is not None and state.pending is not None:
            state.pending.cancel()
        ls.crashed.pop(uri, None)
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if ls.isolated.started:
            asyncio.ensure_future(ls.isolated.run(lambda why: None, forget, uri))  # the child's memory of it

    @server.feature(
        T.TEXT_DOCUMENT_CODE_ACTION,
        T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True),
    )
    async def code_action(ls: ForkSafeServer, params: T.CodeActionParams) -> List[T.CodeAction]:
        try:
            return await ls.code_actions(params)
        except Exception as exc:
            ls.log_line(f"forksafe: code actions: internal error ({_one_line(exc)})", T.MessageType.Warning)
            return []

    @server.feature(T.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: ForkSafeServer, action: T.CodeAction) -> T.CodeAction:
        try:
            return await ls.resolve_action(action)
        except Exception as exc:
            ls.log_line(f"forksafe: code action: internal error ({_one_line(exc)})", T.MessageType.Warning)
            return action

    from flake8_forksafe.frontends.lsp_notebook import register as register_notebooks

    register_notebooks(server)  # notebookDocument/didOpen, didChange, didClose: diagnostics per cell

    @server.feature(T.SHUTDOWN)
    def shutdown(ls: ForkSafeServer, params: Any) -> None:
        for state in ls.docs.values():
            if state.pending is not None:
                state.pending.cancel()
        ls.executor.shutdown(wait=False)
        ls.isolated.close()

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says ``exit``."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="forksafe-lsp: %(levelname)s: %(message)s")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    create_server().start_io(stdin, stdout)
