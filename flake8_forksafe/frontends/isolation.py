"""Crash-proof running of per-file work in child processes.

A native crash (libcst's parser on a pathological file), the kernel's OOM killer or the memory cap
below ends one worker process, never the run: the file that worker was on is reported as skipped
(one line), a new worker takes its place, and every other file is analysed as usual.

Each worker gets a small batch of files and answers file by file, so when it dies the parent knows
exactly which file it was on. Workers cap their own address space (``FORKSAFE_MEMORY_MB``, default
2048 MB above what the worker holds when it starts; 0 turns the cap off): a file whose analysis
needs more gets a MemoryError (reported as a skip) or dies (reported the same way).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections import deque
from multiprocessing.connection import wait
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

DEFAULT_MEMORY_MB = 2048


def memory_budget_mb() -> int:
    try:
        return max(0, int(os.environ.get("FORKSAFE_MEMORY_MB", DEFAULT_MEMORY_MB)))
    except ValueError:
        return DEFAULT_MEMORY_MB


def cap_memory(budget_mb: Optional[int] = None) -> None:
    """Limit this process's address space to what it holds now plus ``budget_mb`` (never raising
    a limit set from outside). Only for worker processes: the limit is for the rest of its life."""
    budget = memory_budget_mb() if budget_mb is None else budget_mb
    if not budget:
        return
    try:
        import resource

        held = 0
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    held = int(line.split()[1]) * 1024
                    break
        want = held + budget * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft <= want:
            return
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ImportError, OSError, ValueError):  # not Linux / no /proc: run without a cap
        pass


def death_reason(exitcode: Optional[int]) -> str:
    """Why a worker ended, in words: 'crashed (SIGSEGV)', 'was killed (SIGKILL, out of memory?)'."""
    if exitcode is None:
        return "did not finish"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == signal.SIGKILL:
            return f"was killed ({name}, out of memory?)"
        return f"crashed ({name})"
    return f"ended with exit status {exitcode}"


def _worker(conn: Any, work: Callable[[Any], Any], init: Optional[Callable[..., None]], initargs: Tuple) -> None:
    import faulthandler

    faulthandler.disable()  # a native crash is reported by the parent in one line, not a C stack dump
    cap_memory()
    if init is not None:
        init(*initargs)
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        for index, item in batch:
            try:
                answer = (index, True, work(item))
            except MemoryError:
                answer = (index, False, "ran out of memory")
            except BaseException as exc:  # work() reports its own errors; this is the last resort
                answer = (index, False, f"failed ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})")
            conn.send(answer)


class _Worker:
    def __init__(self, ctx: Any, work: Callable, init: Optional[Callable], initargs: Tuple) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, work, init, initargs), daemon=True)
        self.proc.start()
        child.close()
        self.inflight: Deque[Tuple[int, Any]] = deque()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def run_isolated(
    items: Sequence[Any],
    work: Callable[[Any], Any],
    on_death: Callable[[Any, str], Any],
    jobs: int = 1,
    init: Optional[Callable[..., None]] = None,
    initargs: Tuple = (),
    batch: int = 1,
) -> List[Any]:
    """``[work(item) for item in items]`` computed in ``jobs`` worker processes; an item whose
    worker dies gives ``on_death(item, reason)`` instead, and a new worker goes on with the rest.
    ``work``, ``init`` and their arguments must be picklable (module-level functions)."""
    ctx = multiprocessing.get_context()
    results: List[Any] = [None] * len(items)
    todo: Deque[Tuple[int, Any]] = deque(enumerate(items))
    workers: Dict[Any, _Worker] = {}
    batch = max(1, batch)
    try:
        while todo or any(w.inflight for w in workers.values()):
            while todo and len(workers) < max(1, jobs):
                w = _Worker(ctx, work, init, initargs)
                workers[w.conn] = w
            for w in workers.values():
                if not w.inflight and todo:
                    chunk = [todo.popleft() for _ in range(min(batch, len(todo)))]
                    w.inflight.extend(chunk)
                    try:
                        w.conn.send(chunk)
                    except OSError:
                        pass  # the worker is gone: its EOF comes next
            busy = [c for c, w in workers.items() if w.inflight]
            for conn in wait(busy):
                w = workers[conn]
                try:
                    index, ok, value = conn.recv()
                except (EOFError, OSError):
                    w.proc.join(timeout=5)
                    reason = death_reason(w.proc.exitcode)
                    index, item = w.inflight.popleft()
                    results[index] = on_death(item, reason)
                    todo.extendleft(reversed(w.inflight))  # the rest of its batch goes to others
                    w.inflight.clear()
                    conn.close()
                    del workers[conn]
                    continue
                item = w.inflight.popleft()[1] if w.inflight and w.inflight[0][0] == index else items[index]
                results[index] = value if ok else on_death(item, value)
    finally:
        for w in list(workers.values()):
            w.stop()
    return results


def call_isolated(fn: Callable[[Any], Any], arg: Any, on_death: Callable[[Any, str], Any]) -> Any:
    """``fn(arg)`` in one child process; ``on_death(arg, reason)`` if that child dies."""
    return run_isolated([arg], fn, on_death, jobs=1)[0]


SERVER_CHILD: List[bool] = []  # [True] in the language server's child (``_server_child``)


def _server_child() -> None:
    """The language server's child: its stdout is the server's protocol stream, so anything
    printed goes to stderr instead; and its memory is capped."""
    import sys

    SERVER_CHILD[:] = [True]

    try:
        os.dup2(2, 1)
    except OSError:
        pass
    sys.stdout = sys.stderr
    cap_memory()


class IsolatedLinter:
    """For the language server: calls run in one long-lived child process (memory-capped); when
    it dies the call returns ``on_death``'s value and the next call starts a new child."""

    def __init__(self) -> None:
        self._pool: Any = None

    @property
    def started(self) -> bool:
        """A child is running (it may remember documents: ``lsp_incremental``)."""
        return self._pool is not None

    def _executor(self) -> Any:
        if self._pool is None:
            from concurrent.futures import ProcessPoolExecutor

            # spawn: the server has threads, and a fresh interpreter owes nothing to the server's state
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_server_child
            )
        return self._pool

    async def run(self, on_death: Callable[[str], Any], fn: Callable[..., Any], *args: Any) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        loop = asyncio.get_running_loop()
        pool = self._executor()
        try:
            return await loop.run_in_executor(pool, fn, *args)
        except BrokenProcessPool:
            exitcodes = [p.exitcode for p in list(getattr(pool, "_processes", {}).values() or [])]
            self.close()
            reason = death_reason(next((c for c in exitcodes if c), None))
            return on_death(reason)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


# ----------------------------------------------------------------------------- forksafe check

RISKY_BYTES = 1_000_000  # a file this big, or nested this deep, is analysed in a child process
RISKY_DEPTH = 150


def worker_died(path: str, reason: str) -> Tuple[list, None, str]:
    """The outcome (findings, error, skipped) of a file whose analysis killed its process."""
    return [], None, f"{path}: skipped: the analysis {reason}"


def risky(data: bytes, knowledge: Any = None) -> bool:
    """Could analysing ``data`` take the process down? (Big, or deep but under the guard's limit.)
    With ``knowledge``, a file that the pre-filter's text gate turns away (most files) is not
    scanned: it never reaches a parser."""
    from flake8_forksafe.guard import depth_upto

    if len(data) > RISKY_BYTES:
        return True
    text = data.decode("utf-8", "replace")
    if knowledge is not None:
        from flake8_forksafe.prefilter import text_gate

        if not text_gate(text, knowledge):
            return False
    return depth_upto(text) > RISKY_DEPTH  # the same scan the guard makes next (remembered)


def _check_path_alone(job: Tuple[str, Any, bool]) -> Any:
    from flake8_forksafe.frontends.cli import _make_cache, check_file

    path, cfg, use_cache = job
    return check_file(path, cfg, cache=_make_cache(cfg) if use_cache else None)


def check_serially(files: Sequence[str], cfg: Any, use_cache: bool) -> List[Any]:
    """``forksafe check`` in one process: files that could crash it are analysed in a child."""
    from flake8_forksafe.frontends.cli import _index, _make_cache, check_file

    cache = _make_cache(cfg) if use_cache else None
    out = []
    roots: dict = {}  # directory -> project root, for this run (index_for)
    for path in files:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            out.append(check_file(path, cfg, cache=cache))  # says why, in one line
            continue
        got = None
        if len(data) <= RISKY_BYTES:  # deep files are told apart once the gate lets them through
            index = _index(path, cfg, use_cache, roots)
            got = check_file(path, cfg, data=data, cache=cache, index=index, isolate=_deep)
        if got is None:
            got = call_isolated(_check_path_alone, (path, cfg, use_cache), lambda job, why: worker_died(job[0], why))
        out.append(got)
    return out


def _deep(text: str) -> bool:
    """Nested deep enough (under the guard's limit) that libcst could take the process down."""
    from flake8_forksafe.guard import depth_upto

    return depth_upto(text) > RISKY_DEPTH


# ------------------------------------------------------------------------------- forksafe fix


def _fix_alone(job: Tuple[bytes, str, Any, bool]) -> Tuple[str, Any]:
    from flake8_forksafe.model import SourceError
    from flake8_forksafe.fix import fix_source

    data, name, cfg, unsafe, use_index = job
    try:
        index = None
        if use_index:
            from flake8_forksafe.index import index_for

            index = index_for(name, cfg.knowledge, use_cache=bool(cfg.cache))
        return "ok", fix_source(data, name, cfg, unsafe=unsafe, index=index)
    except SourceError as exc:
        return "skip", exc.message
    except RecursionError:
        return "skip", "skipped: nesting too deep to analyse"
    except MemoryError:
        return "skip", "skipped: the analysis ran out of memory"
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def fix_guarded(data: Any, name: str, cfg: Any, unsafe: bool = False, index: Any = None) -> Any:
    """``fix.fix_source``, in a child process for a file that could take this one down (which
    builds the file's project index itself when ``index`` is given).
    Raises SourceError (one line) for a file that cannot be fixed, as fix_source does."""
    from flake8_forksafe.model import SourceError
    from flake8_forksafe.fix import fix_source

    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if not risky(raw, cfg.knowledge if cfg is not None else None):
        try:
            return fix_source(data, name, cfg, unsafe=unsafe, index=index)
        except MemoryError:
            raise SourceError("skipped: the analysis ran out of memory") from None
    kind, value = call_isolated(
        _fix_alone, (data, name, cfg, unsafe, index is not None), lambda job, why: ("skip", f"skipped: the analysis {why}")
    )
    if kind == "ok":
        return value
    if kind == "skip":
        raise SourceError(value)
    raise RuntimeError(value)
