"""Run datasets and scripts under every start method, each case in its own subprocess.

This module does not import torch: it runs in the caller's process (pytest, the CLI), which must never
fork (pytest has threads; forking it is the very hazard under test). Each case runs in its own process,
in its own session, under a hard timeout; on timeout the whole process group (workers, forkserver,
resource tracker) is killed. The case process is forked from a "zygote": an interpreter started once per
calling process (``start_new_session=True``) that has imported torch and nothing else, so a case does not
pay for ``import torch`` again (``_zygote``). Without it (``FORKSAFE_ZYGOTE=0``, or if it cannot start)
each case is a fresh interpreter.
"""

from __future__ import annotations

import ast
import atexit
import importlib.util
import json
import os
import pickle
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from flake8_forksafe.harness.results import (
    CONTEXTS,
    ERROR,
    FAILS,
    FLAGGED,
    HANGS,
    NOT_RUN,
    OK,
    TIMEOUT,
    CaseResult,
    ContextResult,
    ErrorInfo,
    Finding,
    context_from_dict,
)

DEFAULT_TIMEOUTS = {"fork": 30.0, "spawn": 60.0, "forkserver": 60.0}
SETUP_ALLOWANCE = 60.0  # interpreter start, import torch, build_data, on a loaded machine

Timeout = Union[None, float, int, Mapping[str, float]]


class HarnessError(Exception):
    """Bad input or an environment the harness cannot work in. The message is one line."""


class NotRunError(Exception):
    """``assert_dataloader_safe`` could not run a requested start method here (and nothing failed)."""


@dataclass(frozen=True)
class ModuleFactory:
    """A dataset built in the harness subprocess from a module file: ``factory(**build(tmpdir))``."""

    path: str
    factory: str = "make_dataset"
    build: Optional[str] = "build_data"
    loader: Optional[str] = "make_loader_kwargs"

    @classmethod
    def parse(cls, target: Union[str, "os.PathLike[str]"]) -> "ModuleFactory":
        s = os.fspath(target)
        path, sep, name = s.rpartition(":")
        if sep and path.endswith(".py") and name.isidentifier():
            return cls(path, name)
        return cls(s)


# ------------------------------------------------------------------------------------ helpers


def _contexts(contexts: Iterable[str]) -> List[str]:
    if isinstance(contexts, str):
        contexts = [c.strip() for c in contexts.split(",") if c.strip()]
    out = list(dict.fromkeys(contexts))
    bad = [c for c in out if c not in CONTEXTS]
    if bad or not out:
        raise HarnessError(f"unknown start method {', '.join(bad) or '(none)'}: use fork, spawn or forkserver")
    return out


def _scale() -> float:
    """Every default limit of the harness is multiplied by this: how much slower than an idle machine
    ``import torch`` starts here and now (measured once per process by the device probe; 1 to 8).
    ``FORKSAFE_TIMEOUT_SCALE`` overrides it."""
    env = os.environ.get("FORKSAFE_TIMEOUT_SCALE")
    if env:
        try:
            return max(0.01, float(env))
        except ValueError:
            pass
    if importlib.util.find_spec("torch") is None:
        return 1.0
    from flake8_forksafe.harness.device import startup_scale

    return startup_scale()


def setup_allowance() -> float:
    return SETUP_ALLOWANCE * _scale()


def _timeouts(timeout: Timeout, contexts: Sequence[str], scaled: bool = False) -> Dict[str, float]:
    """Per start method, the limit of one run. Defaults (and a fixture's ``TIMEOUT``: ``scaled=True``)
    scale with the measured start-up time; a number the caller passes is taken as it is."""
    k = _scale() if timeout is None or scaled else 1.0
    if timeout is None:
        return {c: round(DEFAULT_TIMEOUTS[c] * k, 1) for c in contexts}
    if isinstance(timeout, Mapping):
        return {c: round(float(timeout.get(c, DEFAULT_TIMEOUTS[c])) * k, 1) for c in contexts}
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        raise HarnessError(f"timeout must be a number of seconds, not {timeout!r}") from None
    if t <= 0:
        raise HarnessError("timeout must be positive")
    return {c: round(t * k, 1) for c in contexts}


def _pkg_parent() -> str:
    import flake8_forksafe

    return str(Path(list(flake8_forksafe.__path__)[0]).resolve().parent)


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    parent = _pkg_parent()
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = parent + (os.pathsep + pp if pp else "")
    # torch.cuda.is_available() through NVML: asking must not initialise CUDA (that would poison forks).
    env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTHONSTARTUP", None)
    return env


def _python() -> str:
    return sys.executable or "python3"


def require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise HarnessError(f"the runtime harness needs torch in {_python()}: pip install 'flake8-forksafe[harness]'")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _tail(path: Path, n: int = 1500) -> str:
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def _last_error_line(text: str) -> Optional[ErrorInfo]:
    """``Type: message`` from the last traceback line of a stderr capture."""
    for line in reversed([ln.rstrip() for ln in text.splitlines() if ln.strip()]):
        if line.startswith((" ", "\t")):
            continue
        name, sep, msg = line.partition(": ")
        if sep and name and " " not in name and (name[0].isupper() or "." in name) and not name.endswith(":"):
            return ErrorInfo(name, " ".join(msg.split())[:400])
    return None


class _Proc:
    """One subprocess in its own session, with its output in files."""

    def __init__(self, cmd: List[str], tmp: Path, name: str, cwd: Optional[str] = None,
                 extra_env: Optional[Mapping[str, str]] = None):
        self.out = tmp / f"{name}.out"
        self.err = tmp / f"{name}.err"
        env = _env()
        env.update(extra_env or {})
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=o, stderr=e, cwd=cwd, env=env,
                                      start_new_session=True, close_fds=True)
        self.timed_out = False
        self.started = time.monotonic()
        self.seconds = 0.0

    def wait(self, deadline: float) -> int:
        try:
            rc = self.p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            _kill_group(self.p.pid)
            rc = self.p.wait()
        self.seconds = round(time.monotonic() - self.started, 2)
        # Leftovers (the forkserver, the resource tracker, orphaned workers) go with the group.
        _kill_group(self.p.pid)
        return rc


class _Zygote:
    """Client of ``_zygote``: one pre-started interpreter per calling process that forks the case
    processes (saving ``import torch`` per case). Falls back to fresh interpreters when it cannot start
    or dies; ``FORKSAFE_ZYGOTE=0`` turns it off."""

    _lock = threading.Lock()
    _instance: Optional["_Zygote"] = None
    _broken = False

    def __init__(self) -> None:
        self.p = subprocess.Popen([_python(), "-c", "from flake8_forksafe.harness._zygote import main; main()"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=_env(), start_new_session=True, close_fds=True)
        self.send_lock = threading.Lock()
        self.waiters: Dict[int, "queue.Queue[Dict[str, Any]]"] = {}
        self.next_id = 0
        self.alive = True
        import select

        ok = False
        if select.select([self.p.stdout], [], [], setup_allowance())[0]:  # ready once torch is imported there
            try:
                ok = "ready" in json.loads(self.p.stdout.readline())
            except ValueError:
                pass
        if not ok:
            self.close()
            raise OSError("the harness zygote did not start")
        threading.Thread(target=self._read, name="forksafe-zygote", daemon=True).start()
        atexit.register(self.close)

    @classmethod
    def get(cls) -> Optional["_Zygote"]:
        if os.environ.get("FORKSAFE_ZYGOTE", "1") == "0" or not hasattr(os, "fork"):
            return None
        with cls._lock:
            if cls._instance is not None and cls._instance.alive:
                return cls._instance
            if cls._broken:
                return None
            try:
                cls._instance = cls()
            except OSError:
                cls._broken = True
                return None
            return cls._instance

    def _read(self) -> None:
        for line in self.p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            q = self.waiters.get(msg.get("id"))
            if q is not None:
                q.put(msg)
        self.alive = False
        for q in list(self.waiters.values()):
            q.put({"dead": True})

    def run(self, spec: Path, out: Path, err: Path, deadline: float) -> Tuple[Optional[int], bool]:
        """(exit status, timed out); status None if the zygote died under the case."""
        q: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        with self.send_lock:
            self.next_id += 1
            rid = self.next_id
            self.waiters[rid] = q
            req = {"id": rid, "spec": str(spec), "out": str(out), "err": str(err), "env": _env(),
                   "cwd": os.getcwd()}
            try:
                self.p.stdin.write((json.dumps(req) + "\n").encode())
                self.p.stdin.flush()
            except (BrokenPipeError, OSError):
                self.alive = False
                self.waiters.pop(rid, None)
                return None, False
        pid = None
        timed_out = False
        try:
            while True:
                try:
                    msg = q.get(timeout=max(0.05, deadline - time.monotonic()))
                except queue.Empty:
                    if pid is None:
                        return None, False
                    timed_out = True
                    _kill_group(pid)
                    deadline = time.monotonic() + 30
                    continue
                if msg.get("dead"):
                    if pid is not None:
                        _kill_group(pid)
                    return None, timed_out
                if "pid" in msg:
                    pid = msg["pid"]
                elif "exit" in msg:
                    if pid is not None:
                        _kill_group(pid)  # leftovers: forkserver, resource tracker, orphaned workers
                    return int(msg["exit"]), timed_out
        finally:
            self.waiters.pop(rid, None)

    def close(self) -> None:
        self.alive = False
        try:
            if self.p.stdin:
                self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill_group(self.p.pid)


def _run_process(spec_path: Path, tmp: Path, hard: float) -> Tuple[int, bool, Path]:
    """Run the harness process for ``spec_path``: forked from the zygote, or a fresh interpreter."""
    deadline = time.monotonic() + hard
    z = _Zygote.get()
    if z is not None:
        rc, timed_out = z.run(spec_path, tmp / "case.out", tmp / "case.err", deadline)
        if rc is not None:
            return rc, timed_out, tmp / "case.err"
        if timed_out:
            return -9, True, tmp / "case.err"
        # the zygote died: start over in a fresh interpreter
        for name in ("result.jsonl", "case.out", "case.err"):
            try:
                (tmp / name).unlink()
            except OSError:
                pass
    proc = _Proc([_python(), "-c", "from flake8_forksafe.harness._child import main; main()", str(spec_path)],
                 tmp, "case")
    rc = proc.wait(time.monotonic() + hard)
    return rc, proc.timed_out, proc.err


# ------------------------------------------------------------------------------------ dataset cases


def _run_case(source: Dict[str, Any], label: str, kind_hint: str, contexts: List[str], timeouts: Dict[str, float],
              num_workers: int, tmp: Path, extra_sys_path: Sequence[str] = ()) -> CaseResult:
    """Run the case; a start method that ran into the harness's time limit is run once more (in a fresh
    process), and if it times out again its verdict is ``timeout``: never ``fails`` or ``hangs``."""
    res = _run_case_once(source, label, kind_hint, contexts, timeouts, num_workers, tmp, extra_sys_path)
    again = [c.context for c in res.contexts if c.timed_out]
    if not again:
        return res
    sub = tmp / "rerun"
    sub.mkdir(exist_ok=True)
    second = _run_case_once(source, label, kind_hint, again, timeouts, num_workers, sub, extra_sys_path)
    by_ctx = {c.context: c for c in second.contexts}
    merged = []
    for c in res.contexts:
        if c.context not in by_ctx:
            merged.append(c)
            continue
        n = by_ctx[c.context]
        n.attempts = 2
        if n.timed_out:
            n.verdict = TIMEOUT
            n.reason = (f"no result within the harness's limit twice ({n.reason or c.reason}; limits scale with "
                        f"this machine's start-up time, x{_scale():g} now)")
        else:
            n.notes.append(f"the first run timed out ({c.reason}); this is the rerun")
        merged.append(n)
    res.contexts = merged
    if second.error and not res.error:
        res.error = second.error
    if not res.torch:
        res.device, res.torch = second.device, second.torch
    return res


def _run_case_once(source: Dict[str, Any], label: str, kind_hint: str, contexts: List[str],
                   timeouts: Dict[str, float], num_workers: int, tmp: Path,
                   extra_sys_path: Sequence[str] = ()) -> CaseResult:
    spec = {
        "source": source,
        "contexts": contexts,
        "timeouts": timeouts,
        "num_workers": num_workers,
        "tmpdir": str(tmp),
        "result_path": str(tmp / "result.jsonl"),
        "sys_path": list(extra_sys_path),
    }
    spec_path = tmp / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    hard = setup_allowance() + sum(timeouts.values()) * 3 + 10  # construction + two epochs per context
    t0 = time.monotonic()
    rc, timed_out, err_path = _run_process(spec_path, tmp, hard)
    events = []
    try:
        for line in (tmp / "result.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                events.append(json.loads(line))
    except (OSError, ValueError):
        pass
    res = CaseResult(target=label, kind=kind_hint, num_workers=num_workers)
    res.seconds = round(time.monotonic() - t0, 2)
    done = {}
    for ev in events:
        if ev["event"] == "context":
            res.contexts.append(context_from_dict(ev["result"]))
        elif ev["event"] == "done":
            done = ev
        elif ev["event"] == "setup_error":
            res.error = ev["error"]
            if ev.get("where"):
                res.notes.append(ev["where"])
        elif ev["event"] == "crash":
            res.error = f"the harness process crashed: {ev['error']}"
            res.notes.append(ev.get("traceback", "")[-1500:])
    if done:
        res.device = done.get("device", "cpu")
        res.kind = done.get("kind") or res.kind
        res.torch = done.get("torch", "")
        res.nondeterministic = bool(done.get("nondeterministic"))
        if res.nondeterministic:
            res.notes.append("the dataset is random (two passes without workers differ): items are compared by "
                             "count only, the randomness probes decide")
        if done.get("parent_cuda_init"):
            res.findings.append(Finding("parent_cuda_init", f"CUDA is initialised in the parent before workers "
                                        f"start, at {done['parent_cuda_init']}",
                                        {"where": done["parent_cuda_init"]}))
    have = {c.context for c in res.contexts}
    for ctx in contexts:
        if ctx in have:
            continue
        if timed_out:
            res.contexts.append(ContextResult(ctx, HANGS, timed_out=True, reason=(
                f"the harness process did not finish within {hard:g} s and was killed")))
        elif res.error:
            res.contexts.append(ContextResult(ctx, ERROR, reason=res.error))
        else:
            err = _tail(err_path)
            res.error = res.error or f"the harness process exited with status {rc} before reporting"
            res.contexts.append(ContextResult(ctx, ERROR, reason=res.error,
                                              notes=[err[-600:]] if err.strip() else []))
    order = {c: i for i, c in enumerate(contexts)}
    res.contexts.sort(key=lambda c: order.get(c.context, 99))
    if not events and rc != 0 and not timed_out:
        err = _tail(err_path)
        if "No module named 'torch'" in err:
            raise HarnessError(f"the runtime harness needs torch in {_python()}: "
                               f"pip install 'flake8-forksafe[harness]'")
    return res


def check_module(path: Union[str, "os.PathLike[str]"], factory: str = "make_dataset", *,
                 build: Optional[str] = "build_data", loader: Optional[str] = "make_loader_kwargs",
                 kwargs: Optional[Mapping[str, Any]] = None, contexts: Iterable[str] = CONTEXTS,
                 num_workers: int = 2, timeout: Timeout = None, keep_tmp: bool = False,
                 scaled: bool = False, one_shot: bool = False) -> CaseResult:
    """Check the dataset built by ``factory(**build_data(tmpdir), **kwargs)`` from a module file.

    The module is imported only in the harness subprocess (by name, from its folder, so spawn workers can
    import it too). ``make_loader_kwargs()`` (optional) returns extra DataLoader options such as
    ``collate_fn`` or ``worker_init_fn``.

    ``one_shot``: the dataset can be iterated once per process (it keeps a generator): each pass of the
    ``num_workers=0`` baseline after the first gets a fresh dataset from ``factory``; the loader still gets
    the first one, which the parent has iterated, as a user's sanity pass would have."""
    require_torch()
    p = Path(os.fspath(path)).resolve()
    if not p.is_file():
        raise HarnessError(f"no such module: {path}")
    if not p.stem.isidentifier():
        raise HarnessError(f"{p.name}: the module name must be a Python identifier so workers can import it")
    ctxs = _contexts(contexts)
    try:
        json.dumps(dict(kwargs or {}))
    except (TypeError, ValueError):
        raise HarnessError("kwargs for a module factory must be JSON values (str, numbers, lists, dicts)") from None
    tmp = Path(tempfile.mkdtemp(prefix="forksafe-"))
    try:
        source = {"kind": "module", "path": str(p), "factory": factory, "build": build, "loader": loader,
                  "kwargs": dict(kwargs or {}), "one_shot": bool(one_shot)}
        return _run_case(source, f"{p.name}:{factory}", "map", ctxs, _timeouts(timeout, ctxs, scaled), num_workers,
                         tmp)
    finally:
        if not keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _is_factory(obj: Any) -> bool:
    import functools

    kinds = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)
    return isinstance(obj, kinds)


def _is_dataloader(obj: Any) -> bool:
    return any(c.__name__ == "DataLoader" and c.__module__.startswith("torch.utils.data")
               for c in type(obj).__mro__)


def _describe(obj: Any) -> str:
    if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '?')}.{obj.__qualname__}"
    import functools

    if isinstance(obj, functools.partial):
        return f"partial({_describe(obj.func)})"
    return f"{type(obj).__module__}.{type(obj).__qualname__} instance"


def _pickle_error(exc: BaseException) -> ErrorInfo:
    t = type(exc)
    mod = t.__module__
    name = t.__qualname__ if mod == "builtins" else f"{mod.lstrip('_')}.{t.__qualname__}"
    return ErrorInfo(name, " ".join(str(exc).split())[:400])


def check_dataset(target: Any, *args: Any, contexts: Iterable[str] = CONTEXTS,
                  loader_kwargs: Optional[Mapping[str, Any]] = None, num_workers: int = 2,
                  timeout: Timeout = None, **kwargs: Any) -> CaseResult:
    """Check a dataset under every start method.

    ``target`` is one of:

    * a ``DataLoader``: its dataset is checked, with its ``collate_fn``/``worker_init_fn``/``timeout``;

    * a dataset object: pickled here and unpickled in the harness subprocess. If it cannot be pickled,
      that is the spawn/forkserver verdict (DataLoader would fail the same way) and fork is "not run";
    * a factory and its arguments (``MyDataset, root`` or a ``functools.partial``): pickled by reference
      and called in the subprocess, so all three start methods run, fork included;
    * a path ``"pkg/mod.py"`` or ``"pkg/mod.py:factory"``: see :func:`check_module`.
    """
    if isinstance(target, (str, os.PathLike, ModuleFactory)):
        mf = target if isinstance(target, ModuleFactory) else ModuleFactory.parse(target)
        if args:
            raise HarnessError("positional arguments are only for factories; pass kwargs= for a module factory")
        return check_module(mf.path, mf.factory, build=mf.build, loader=mf.loader, kwargs=kwargs,
                            contexts=contexts, num_workers=num_workers, timeout=timeout)
    require_torch()
    ctxs = _contexts(contexts)
    tos = _timeouts(timeout, ctxs)
    loader_kwargs = dict(loader_kwargs or {})
    if _is_dataloader(target):
        # A DataLoader: check its dataset with the options that reach its workers.
        from flake8_forksafe.harness._child import kwargs_from_loader

        if args or kwargs:
            raise HarnessError("arguments were given but the target is a DataLoader")
        extra = kwargs_from_loader(target)
        extra.pop("batch_size", None)
        loader_kwargs = {**extra, **loader_kwargs}
        target = target.dataset
    label = _describe(target)
    payload: Dict[str, Any]
    obj = None
    if _is_factory(target):
        payload = {"factory": target, "args": args, "kwargs": kwargs}
        try:
            pickle.dumps(payload)
        except Exception:  # noqa: BLE001 - a lambda or local factory: build the dataset here instead
            try:
                obj = target(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise HarnessError(f"calling the factory {label} raised {type(exc).__name__}: {exc}") from None
            label = f"{_describe(obj)} (from {label})"
    else:
        if args or kwargs:
            raise HarnessError("arguments were given but the target is not a factory (a class or function)")
        obj = target
    if obj is not None:
        if not (hasattr(obj, "__getitem__") or hasattr(obj, "__iter__")):
            raise HarnessError(f"{label} is neither a dataset (no __getitem__/__iter__) nor a factory")
        payload = {"dataset": obj}
    # What DataLoader sends to every spawn/forkserver worker: the dataset, collate_fn, worker_init_fn.
    unpicklable: Optional[Tuple[str, BaseException]] = None
    for what, value in [("the dataset", payload.get("dataset", payload.get("factory")))] + [
            (f"{k}=", loader_kwargs[k]) for k in ("collate_fn", "worker_init_fn") if k in loader_kwargs]:
        try:
            pickle.dumps(value)
        except Exception as exc:  # noqa: BLE001
            unpicklable = (what, exc)
            break
    if unpicklable is None:
        payload["loader_kwargs"] = loader_kwargs
        try:
            blob = pickle.dumps(payload)
        except Exception as exc:  # noqa: BLE001
            raise HarnessError(f"loader_kwargs cannot be sent to the harness process: {type(exc).__name__}: {exc}") \
                from None
        tmp = Path(tempfile.mkdtemp(prefix="forksafe-"))
        try:
            (tmp / "payload.pkl").write_bytes(blob)
            source = {"kind": "pickle", "payload": str(tmp / "payload.pkl"), "label": label}
            path = [p for p in sys.path if p and os.path.isdir(p)]
            res = _run_case(source, label, "map", ctxs, tos, num_workers, tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if res.error and "unpickl" not in res.error and "No module named" in res.error:
            res.notes.append("the harness process imports your classes by module name: define them at module "
                             "level in an importable module")
        return res
    what, exc = unpicklable
    info = _pickle_error(exc)
    res = CaseResult(target=label, kind="map", num_workers=num_workers)
    inheritance_only = "through inheritance" in str(exc)
    for ctx in ctxs:
        if ctx == "fork":
            res.contexts.append(ContextResult(ctx, NOT_RUN, reason=(
                f"{what} cannot be pickled, so it cannot be moved into the isolated harness process; pass a "
                f"factory (the class and its arguments) to check fork too")))
        elif inheritance_only:
            res.contexts.append(ContextResult(ctx, NOT_RUN, error=info, reason=(
                f"{what} holds multiprocessing objects that only travel to workers at start-up; pass a factory")))
        else:
            res.contexts.append(ContextResult(ctx, FAILS, error=info, reason=f"{what} cannot be pickled"))
    return res


# ------------------------------------------------------------------------------------ scripts

# Runs the script as ``python script.py`` would (runpy, as ``__main__``: spawn and forkserver workers re-import
# it by path as ``__mp_main__``), ``ctx`` "-" leaving the start method to the script. The main process's own
# uncaught exception is written to $FORKSAFE_MAIN_ERROR: the workers share its stderr, and a second worker's
# traceback can land after the parent's under load, so "the last error line of stderr" is not the parent's.
_BOOT = (
    "import multiprocessing as mp, os, runpy, sys, traceback\n"
    "ctx, path = sys.argv[1], sys.argv[2]\n"
    "if ctx != '-':\n"
    "    mp.set_start_method(ctx, force=True)\n"
    "sys.argv = [path] + sys.argv[3:]\n"
    "_pid = os.getpid()\n"
    "try:\n"
    "    runpy.run_path(path, run_name='__main__')\n"
    "except SystemExit:\n"
    "    raise\n"
    "except BaseException as exc:\n"
    "    _out = os.environ.get('FORKSAFE_MAIN_ERROR')\n"
    "    if _out and os.getpid() == _pid:\n"
    "        with open(_out, 'w', encoding='utf-8') as f:\n"
    "            f.write(traceback.format_exception_only(type(exc), exc)[-1])\n"
    "    raise\n"
)
_BOOTSTRAP_MSG = "bootstrapping phase"  # "... has finished its bootstrapping phase", wrapped and interleaved


def check_script(path: Union[str, "os.PathLike[str]"], *, contexts: Iterable[str] = CONTEXTS,
                 timeout: Timeout = None, args: Sequence[str] = (), launch: str = "boot",
                 scaled: bool = False) -> CaseResult:
    """Run a script as ``python script.py``, once per context (concurrently, each in its own session).

    ``launch="boot"``: the default start method is set to the context before the script runs (for scripts
    that never choose one). ``launch="python"``: the script as ``python script.py`` runs it, with
    ``FORKSAFE_START_METHOD`` set to the context, for scripts that choose their start method themselves
    (``set_start_method``). ok: exit status 0; fails: the main process's own error (recorded by the launcher;
    the last error line of stderr only if it recorded none: workers write there too); flagged: exit status 0 and the script printed
    ``forksafe-finding: KIND: message`` lines (a probe of its own, e.g. re-imports counted per epoch).
    A context that runs past its limit is run once more; twice: ``timeout``."""
    require_torch()
    p = Path(os.fspath(path)).resolve()
    if not p.is_file():
        raise HarnessError(f"no such script: {path}")
    if launch not in ("boot", "python"):
        raise HarnessError(f"unknown launch {launch!r}: use boot or python")
    ctxs = _contexts(contexts)
    tos = _timeouts(timeout, ctxs, scaled=scaled)
    tmp = Path(tempfile.mkdtemp(prefix="forksafe-"))
    res = CaseResult(target=p.name, kind="script", num_workers=0)
    t0 = time.monotonic()
    try:
        results = _run_scripts(p, ctxs, tos, args, launch, tmp, "1")
        again = [c for c in ctxs if results[c].timed_out]
        if again:
            second = _run_scripts(p, again, tos, args, launch, tmp, "2")
            for c in again:
                n = second[c]
                n.attempts = 2
                if n.timed_out:
                    n.verdict = TIMEOUT
                    n.reason = f"{n.reason}, twice (limits scale with this machine's start-up time, x{_scale():g} now)"
                else:
                    n.notes.append(f"the first run timed out ({results[c].reason}); this is the rerun")
                results[c] = n
        res.contexts = [results[c] for c in ctxs]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res.seconds = round(time.monotonic() - t0, 2)
    return res


_FINDING_LINE = "forksafe-finding: "
_CONTEXT_SET_MSG = "context has already been set"


def _run_scripts(p: Path, ctxs: Sequence[str], tos: Mapping[str, float], args: Sequence[str], launch: str,
                 tmp: Path, attempt: str) -> Dict[str, ContextResult]:
    t0 = time.monotonic()
    procs = {}
    for c in ctxs:
        main_error = tmp / f"{c}-{attempt}.main-error"
        if launch == "python":
            cmd = [_python(), "-c", _BOOT, "-", str(p), *args]
            extra = {"FORKSAFE_START_METHOD": c, "FORKSAFE_MAIN_ERROR": str(main_error)}
        else:
            cmd = [_python(), "-c", _BOOT, c, str(p), *args]
            extra = {"FORKSAFE_MAIN_ERROR": str(main_error)}
        procs[c] = _Proc(cmd, tmp, f"{c}-{attempt}", cwd=str(p.parent), extra_env=extra)
    out: Dict[str, ContextResult] = {}
    for c in ctxs:
        pr = procs[c]
        limit = tos[c] + setup_allowance() / 2
        rc = pr.wait(t0 + limit)
        err = _tail(pr.err, 1 << 20)
        stdout = _tail(pr.out, 1 << 20)
        cr = ContextResult(c, OK)
        cr.seconds = pr.seconds
        flat = " ".join(err.split())
        if pr.timed_out:
            cr.verdict, cr.reason, cr.timed_out = HANGS, f"the script did not finish within {limit:g} s", True
        elif rc != 0:
            cr.verdict = FAILS
            cr.error = (_last_error_line(_tail(tmp / f"{c}-{attempt}.main-error", 1 << 16)) or _last_error_line(err)
                        or ErrorInfo("exit status", str(rc)))
            if _BOOTSTRAP_MSG in flat:
                cr.findings.append(Finding("reran_main", (
                    "a worker re-ran the script's top level: \"An attempt has been made to start a new "
                    "process before the current process has finished its bootstrapping phase\" (no "
                    "if __name__ == '__main__': guard)")))
            if _CONTEXT_SET_MSG in flat:
                cr.findings.append(Finding("context_already_set", (
                    "a worker re-ran the script's module-level set_start_method() with the start method already "
                    "set: \"RuntimeError: context has already been set\"")))
        else:
            for line in stdout.splitlines():
                if line.startswith(_FINDING_LINE):
                    kind, _, message = line[len(_FINDING_LINE):].partition(": ")
                    cr.findings.append(Finding(kind.strip(), message.strip() or kind.strip()))
            if cr.findings:
                cr.verdict = FLAGGED
        out[c] = cr
    return out


# ------------------------------------------------------------------------------------ fixtures


def fixture_meta(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Module-level constants of a runtime fixture, read with ``ast`` (the fixture is never imported
    here): RULE, KIND ("dataset" | "script"), EXPECT, DEVICES, TIMEOUT, ONE_SHOT, plus the docstring."""
    p = Path(os.fspath(path))
    try:
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{p}: cannot read fixture: {exc}") from None
    meta: Dict[str, Any] = {"name": p.stem, "path": str(p), "doc": ast.get_docstring(tree) or ""}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    meta[name] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    meta.setdefault("RULE", p.stem.split("_")[0])
    meta.setdefault("KIND", "dataset")
    meta.setdefault("DEVICES", ("cpu",))
    return meta


def check_fixture(path: Union[str, "os.PathLike[str]"], *, contexts: Iterable[str] = CONTEXTS,
                  timeout: Timeout = None, num_workers: int = 2) -> CaseResult:
    """A runtime fixture: a script (``KIND = "script"``) or a module with ``make_dataset``."""
    meta = fixture_meta(path)
    if timeout is None and meta.get("TIMEOUT") is not None:
        timeout = meta["TIMEOUT"]
    scaled = timeout is not None and timeout is meta.get("TIMEOUT")
    if meta["KIND"] == "script":
        return check_script(path, contexts=contexts, timeout=timeout, launch=str(meta.get("LAUNCH", "boot")),
                            scaled=scaled)
    return check_module(path, contexts=contexts, timeout=timeout, num_workers=num_workers, scaled=scaled,
                        one_shot=bool(meta.get("ONE_SHOT", False)))


# ------------------------------------------------------------------------------------ assertions


def assert_dataloader_safe(ds_or_factory: Any, contexts: Iterable[str] = CONTEXTS, *args: Any,
                           loader_kwargs: Optional[Mapping[str, Any]] = None, num_workers: int = 2,
                           timeout: Timeout = None, **kwargs: Any) -> CaseResult:
    """Raise ``AssertionError`` naming each start method that fails, hangs, differs or is flagged.

    If nothing failed but a requested start method could not run here (no CUDA device, an object that
    cannot leave this process), the test is skipped under pytest (``NotRunError`` elsewhere): a
    "not run" is never a pass. Returns the :class:`CaseResult` when every start method passed."""
    __tracebackhide__ = True
    res = check_dataset(ds_or_factory, *args, contexts=contexts, loader_kwargs=loader_kwargs,
                        num_workers=num_workers, timeout=timeout, **kwargs)
    return raise_for(res)


def raise_for(res: CaseResult) -> CaseResult:
    __tracebackhide__ = True
    if res.error or any(c.verdict not in (OK, NOT_RUN) for c in res.contexts):
        raise AssertionError(res.failure_message())
    if res.not_run:
        msg = "; ".join(c.summary() for c in res.not_run)
        try:
            import pytest
        except ImportError:
            raise NotRunError(msg) from None
        pytest.skip(f"forksafe: {msg}")
    return res


__all__ = [
    "DEFAULT_TIMEOUTS",
    "HarnessError",
    "ModuleFactory",
    "NotRunError",
    "assert_dataloader_safe",
    "check_dataset",
    "check_fixture",
    "check_module",
    "check_script",
    "fixture_meta",
    "raise_for",
]
