"""The harness subprocess: runs one case (one dataset, every requested start method) and writes JSON lines.

Started by ``runner`` as ``python -c "from flake8_forksafe.harness._child import main; main()" SPEC``
in a new session, so the caller can kill it and everything it started (workers, the forkserver, the
resource tracker) as one process group. Nothing here runs in the caller's process.

Protocol of the result file (one JSON object per line): ``{"event": "case", ...}`` once, then one
``{"event": "context", "result": {...ContextResult...}}`` per start method as soon as it is known (so a
hard kill still leaves the finished ones), then ``{"event": "done", ...}``.
"""

from __future__ import annotations

import gc
import importlib
import json
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
import traceback
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Tuple

# Loader options the harness sets itself, or that would break the index-by-index comparison.
_IGNORED = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "drop_last", "num_workers",
            "multiprocessing_context")
# Options DataLoader rejects with num_workers=0.
_WORKER_ONLY = ("timeout", "worker_init_fn", "prefetch_factor", "persistent_workers")


class _Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so that ``except Exception`` in user code cannot swallow it."""


def _on_alarm(signum, frame):  # pragma: no cover - exercised through the hang tests
    raise _Timeout()


def error_info(exc: BaseException) -> Dict[str, str]:
    """``{"type", "message", "where"}``; a worker's exception re-raised by DataLoader is unwrapped to the
    original type and last line."""
    t = type(exc)
    mod = t.__module__ or ""
    top = mod.split(".")[0].lstrip("_")
    if mod in ("builtins", "exceptions"):
        name = t.__qualname__
    elif top and getattr(sys.modules.get(top), t.__name__, None) is t:
        name = f"{top}.{t.__qualname__}"
    else:
        name = f"{mod}.{t.__qualname__}"
    msg = str(exc)
    if t is KeyError and exc.args and isinstance(exc.args[0], str):
        msg = exc.args[0]
    where = ""
    if msg.startswith("Caught ") and "Original Traceback" in msg:
        first = msg.splitlines()[0]
        if " in " in first:
            where = "in " + first.split(" in ", 1)[1].rstrip(".")
        last = [ln for ln in msg.splitlines() if ln.strip()][-1].strip()
        tname, sep, rest = last.partition(": ")
        if sep and " " not in tname:
            name, msg = tname, rest
        else:
            name, msg = (last, "") if " " not in last else (name, last)
    msg = " ".join(msg.split())
    if len(msg) > 400:
        msg = msg[:397] + "..."
    return {"type": name, "message": msg, "where": where}


def one_line(exc: BaseException) -> str:
    e = error_info(exc)
    return f"{e['type']}: {e['message']}" if e["message"] else e["type"]


class Writer:
    def __init__(self, path: str):
        self.path = path

    def write(self, obj: Dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(obj, default=str) + "\n")
            f.flush()


# ------------------------------------------------------------------------------------ sources


class ModuleSource:
    """A module file with ``make_dataset(**data)`` (name configurable), optional ``build_data(tmpdir)``
    and ``make_loader_kwargs()``. Imported by name from its directory, so spawn workers can import it."""

    def __init__(self, spec: Dict[str, Any], data_dir: str):
        path = os.path.abspath(spec["path"])
        folder, fname = os.path.split(path)
        name = fname[:-3] if fname.endswith(".py") else fname
        if folder not in sys.path:
            sys.path.insert(0, folder)
        self.label = f"{fname}:{spec.get('factory') or 'make_dataset'}"
        self.path = path
        self.name = name
        self.spec = spec
        self.data_dir = data_dir
        self.mod: Any = None
        self.data: Dict[str, Any] = {}
        self.one_shot = bool(spec.get("one_shot"))  # a fresh dataset for each baseline pass after the first

    phase = "loading"

    def load(self) -> None:
        self.phase = "importing"
        self.mod = importlib.import_module(self.name)
        got = os.path.abspath(getattr(self.mod, "__file__", "") or "")
        if got != self.path:
            raise ImportError(f"module name {self.name!r} resolves to {got}, not {self.path}")
        build = getattr(self.mod, self.spec.get("build") or "build_data", None)
        if build is not None:
            self.phase = "building the data of"
            os.makedirs(self.data_dir, exist_ok=True)
            data = build(self.data_dir)
            self.data = dict(data or {})
        self.data.update(self.spec.get("kwargs") or {})
        self.phase = "loading"
        fname = self.spec.get("factory") or "make_dataset"
        self.factory = getattr(self.mod, fname, None)
        if self.factory is None:
            raise AttributeError(f"{os.path.basename(self.path)} has no function {fname!r}")
        self.loader_fn = getattr(self.mod, self.spec.get("loader") or "make_loader_kwargs", None)
        self.make_loader = getattr(self.mod, "make_loader", None)

    def make(self) -> Any:
        return self.factory(**self.data)

    def loader_kwargs(self, dataset: Any) -> Dict[str, Any]:
        kw: Dict[str, Any] = {}
        if self.make_loader is not None:
            kw.update(kwargs_from_loader(self.make_loader(dataset)))
        if self.loader_fn is not None:
            kw.update(self.loader_fn() or {})
        return kw


def kwargs_from_loader(loader: Any) -> Dict[str, Any]:
    """The options of a user's ``DataLoader`` that travel to workers or shape them (never iterated)."""
    from torch.utils.data._utils.collate import default_collate, default_convert

    kw: Dict[str, Any] = {}
    collate = getattr(loader, "collate_fn", None)
    if collate is not None and collate not in (default_collate, default_convert):
        kw["collate_fn"] = collate
    for name in ("worker_init_fn", "generator"):
        if getattr(loader, name, None) is not None:
            kw[name] = getattr(loader, name)
    if getattr(loader, "timeout", 0):
        kw["timeout"] = loader.timeout
    if getattr(loader, "batch_size", None) is not None:
        kw["batch_size"] = loader.batch_size  # dropped with a note: the harness compares single items
    return kw


class PickleSource:
    """A dataset object or a (factory, args, kwargs) pickled by the caller."""

    phase = "unpickling"
    one_shot = False

    def __init__(self, spec: Dict[str, Any], data_dir: str):
        self.spec = spec
        self.label = spec.get("label") or "dataset"
        self.blob = b""

    def load(self) -> None:
        with open(self.spec["payload"], "rb") as f:
            self.blob = f.read()
        try:
            pickle.loads(self.blob)  # fail early, with the unpickling error, if the caller's classes are missing
        except AttributeError as exc:
            if "__main__" in str(exc):
                raise ImportError(f"{exc}: classes defined in a script's __main__ cannot be imported by the "
                                  f"harness process; move them to a module") from None
            raise

    def make(self) -> Any:
        p = pickle.loads(self.blob)
        if "factory" in p:
            return p["factory"](*p.get("args", ()), **p.get("kwargs", {}))
        return p["dataset"]

    def loader_kwargs(self, dataset: Any) -> Dict[str, Any]:
        return dict(pickle.loads(self.blob).get("loader_kwargs") or {})


# ------------------------------------------------------------------------------------ running


class Case:
    def __init__(self, spec: Dict[str, Any], writer: Writer):
        self.spec = spec
        self.writer = writer
        self.tmp = spec["tmpdir"]
        self.num_workers = int(spec.get("num_workers", 2))
        self.timeouts: Dict[str, float] = spec.get("timeouts") or {}
        self.nondeterministic: Optional[bool] = None
        self.baseline_b: Optional[List[str]] = None
        self.baseline_a: Optional[List[str]] = None

    # -------------------------------------------------------------- setup
    def start(self) -> None:
        import torch  # noqa: F401 - imported before anything else of torch's

        from flake8_forksafe.harness import probes

        self.probes = probes
        # Regular files open now belong to the harness; any opened later (by the dataset's module, its
        # constructor, the baseline pass) are the dataset's.
        self.harness_files = probes.open_files()
        self.hook = probes.CudaInitHook()
        self.hook.install()
        self.mmaps = probes.MmapTracker()
        self.mmaps.install()
        self.fd_method = probes.probe_method()
        kind = self.spec["source"]["kind"]
        data_dir = os.path.join(self.tmp, "data")
        self.source = ModuleSource(self.spec["source"], data_dir) if kind == "module" else PickleSource(
            self.spec["source"], data_dir)
        self._start_forkserver()
        self.source.load()

    def _start_forkserver(self) -> None:
        """Have the forkserver preload torch, so two workers do not import it twice. The server is a fresh
        interpreter: it inherits nothing of the dataset, exactly as in users' programs (whose
        ``__main__``, preloaded by default, imports torch too). It starts on first use: a dataset that
        cannot be pickled fails before it is needed."""
        if "forkserver" not in self.spec["contexts"] or "forkserver" not in mp.get_all_start_methods():
            return
        preload = ["torch", "torch.utils.data"]
        try:
            import numpy  # noqa: F401

            preload.append("numpy")
        except ImportError:
            pass
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(preload)

    # -------------------------------------------------------------- one start method
    def run_context(self, ctx: str) -> Dict[str, Any]:
        res: Dict[str, Any] = {"context": ctx, "verdict": "ok", "findings": [], "notes": [], "device": "cpu"}
        if ctx not in mp.get_all_start_methods():
            res.update(verdict="not run", reason=f"start method {ctx!r} is not available on this platform")
            return res
        budget = float(self.timeouts.get(ctx, 30.0 if ctx == "fork" else 60.0))
        phase = "constructing the dataset"
        state: Dict[str, Any] = {}
        gc.collect()
        signal.setitimer(signal.ITIMER_REAL, budget)
        try:
            try:
                ds = self.source.make()
            except _Timeout:
                raise
            except BaseException as exc:  # noqa: BLE001
                return self._setup_failed(res, "constructing the dataset", exc)
            state["ds"] = ds
            phase = "iterating the dataset without workers"
            try:
                lk = self._loader_kwargs(res, ds)
                state["wrapped"] = wrapped = self.probes.wrap(ds)
                self.kind = "iterable" if isinstance(wrapped, self.probes.ProbeIterable) else "map"
                # A one-shot dataset (it keeps a generator) yields its items once per process: every pass
                # after the first gets a fresh one; the loader still gets `wrapped`, iterated by the parent.
                fresh = (lambda: self.probes.wrap(self.source.make())) if self.source.one_shot else None
                baseline = self._baseline(wrapped, lk, fresh=fresh)
                if self.nondeterministic is None:
                    # Random? Two plain passes (no worker_init_fn: it may seed from constants) differ.
                    again = fresh or (lambda: wrapped)
                    first = baseline if self.kind == "map" else self._baseline(again(), lk, simulate=False)
                    second = self._baseline(again(), lk, simulate=False)
                    self.baseline_a = [b[1] for b in first]
                    self.baseline_b = [b[1] for b in second]
                    self.nondeterministic = self.baseline_a != self.baseline_b
            except _Timeout:
                raise
            except BaseException as exc:  # noqa: BLE001
                return self._setup_failed(res, "iterating the dataset without workers (num_workers=0)", exc)
            phase = f"running DataLoader workers ({ctx})"
            if self.nondeterministic:  # two epochs, each with fresh workers
                budget *= 2
                signal.setitimer(signal.ITIMER_REAL, budget)
            self._run_workers(ctx, wrapped, lk, baseline, res)
        except _Timeout:
            res["timed_out"] = True  # the harness's limit, not DataLoader(timeout=): the runner reruns it once
            if phase.startswith("running"):
                res["verdict"] = "hangs"
                res["reason"] = f"no result after {budget:g} s while {phase}"
            else:  # not a multiprocessing hazard: the dataset is stuck without workers too
                res["verdict"] = "error"
                res["reason"] = f"no result after {budget:g} s while {phase}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._reap()
            state.clear()
            gc.collect()
        return res

    def _setup_failed(self, res: Dict[str, Any], what: str, exc: BaseException) -> Dict[str, Any]:
        if self.hook.where is not None and not _cuda_device():
            res.update(verdict="not run", reason=(
                f"the dataset initialises CUDA in the parent ({self.hook.where}) and this runner has no "
                f"CUDA device"))
            res["notes"].append(f"{what} raised {one_line(exc)}")
            return res
        res.update(verdict="error", reason=f"{what} raised {one_line(exc)}")
        res["notes"].append(_short_tb(exc))
        return res

    def _loader_kwargs(self, res: Dict[str, Any], ds: Any) -> Dict[str, Any]:
        lk = self.source.loader_kwargs(ds)
        for k in _IGNORED:
            if k in lk:
                lk.pop(k)
                res["notes"].append(f"loader option {k!r} ignored: the harness sets it (batch_size=None, "
                                    f"{self.num_workers} workers, one start method at a time)")
        return lk

    def _baseline(self, wrapped: Any, lk: Dict[str, Any], simulate: bool = True,
                  fresh: Optional[Callable[[], Any]] = None) -> List[Tuple[Dict[str, Any], str, str]]:
        from torch.utils.data import DataLoader, IterableDataset
        from torch.utils.data._utils import collate as _collate
        from torch.utils.data._utils import worker as _worker

        kw = {k: v for k, v in lk.items() if k not in _WORKER_ONLY and k != "collate_fn"}
        collate = self.probes.TagCollate(lk.get("collate_fn") or _collate.default_convert)
        if not simulate or not isinstance(wrapped, IterableDataset):
            return list(DataLoader(wrapped, batch_size=None, num_workers=0, collate_fn=collate, **kw))
        # An IterableDataset yields per worker: replay what each worker should yield, with its WorkerInfo.
        out: List[Tuple[Dict[str, Any], str, str]] = []
        init = lk.get("worker_init_fn")
        try:
            for w in range(self.num_workers):
                ds = wrapped if w == 0 or fresh is None else fresh()  # one-shot: each worker replayed afresh
                _worker._worker_info = _worker.WorkerInfo(
                    id=w, num_workers=self.num_workers, seed=1000 + w, dataset=ds)
                if init is not None:
                    init(w)
                out.extend(DataLoader(ds, batch_size=None, num_workers=0, collate_fn=collate, **kw))
        finally:
            _worker._worker_info = None
        return out

    def _run_workers(self, ctx: str, wrapped: Any, lk: Dict[str, Any], baseline: List[Any],
                     res: Dict[str, Any]) -> None:
        from torch.utils.data import DataLoader, IterableDataset
        from torch.utils.data._utils import collate as _collate

        probes = self.probes
        iterable = isinstance(wrapped, IterableDataset)
        files = {fd: info for fd, info in probes.open_files().items()
                 if self.harness_files.get(fd) != info and not self.mmaps.owns(fd, info)}
        wrapped.fd_probe = probes.FdProbe(os.getpid(), files, self.fd_method, os.path.join(self.tmp, "fd.lock")) \
            if files else None
        if self.fd_method == "none":
            res["notes"].append("inherited-descriptor probe unavailable: no /proc and no kcmp on this system")
        pos_before = probes.offsets(files)
        kw = {k: v for k, v in lk.items() if k != "collate_fn"}
        collate = probes.TagCollate(lk.get("collate_fn") or _collate.default_convert)
        epochs = 2 if self.nondeterministic else 1
        runs: List[List[Any]] = []
        parent_rng: List[Dict[str, Any]] = []
        for _ in range(epochs):
            parent_rng.append(probes.rng_states(wrapped.inner))
            # persistent_workers=True: the iterator does not shut its workers down at the end of the epoch,
            # so _fast_shutdown can kill them instead of waiting for spawn workers to tear down torch.
            kw["persistent_workers"] = True
            loader = DataLoader(wrapped, batch_size=None, num_workers=self.num_workers,
                                multiprocessing_context=ctx, collate_fn=collate, **kw)
            it = None
            items: List[Any] = []
            try:
                it = iter(loader)
                for x in it:
                    items.append(x)
            except _Timeout:
                raise
            except BaseException as exc:  # noqa: BLE001
                info = error_info(exc)
                if info["type"] == "RuntimeError" and info["message"].startswith("DataLoader timed out after"):
                    res.update(verdict="hangs", error=info, reason="DataLoader(timeout=) expired")
                else:
                    res.update(verdict="fails", error=info)
                self._fd_findings([m for run in runs + [items] for (m, _, _) in run], files, pos_before, res)
                return
            finally:
                _fast_shutdown(it)
                del loader, it
            runs.append(items)
        got = runs[0]
        res["n_expected"], res["n_got"] = len(baseline), len(got)
        self._compare(iterable, baseline, got, res)
        self._fd_findings([m for run in runs for (m, _, _) in run], files, pos_before, res)
        if self.nondeterministic:
            self._rng_findings(runs, parent_rng, res)
        for err in sorted({m["probe_error"] for run in runs for (m, _, _) in run if "probe_error" in m})[:3]:
            res["notes"].append(f"a probe failed in a worker (its finding may be missing): {err}")
        if res["verdict"] == "ok" and res["findings"]:
            res["verdict"] = "flagged"

    # -------------------------------------------------------------- analysis
    def _compare(self, iterable: bool, baseline: List[Any], got: List[Any], res: Dict[str, Any]) -> None:
        b = [x[1] for x in baseline]
        g = [x[1] for x in got]
        if self.nondeterministic:
            if len(b) != len(g):
                res.update(verdict="differs", reason=f"expected {len(b)} items, got {len(g)}")
            return
        if iterable:
            cb, cg = Counter(b), Counter(g)
            if cb != cg:
                missing = sum((cb - cg).values())
                extra = sum((cg - cb).values())
                res.update(verdict="differs", n_differing=missing + extra, reason=(
                    f"expected {len(b)} items (what each worker should yield), got {len(g)}: "
                    f"{missing} missing, {extra} unexpected"))
            return
        bad = [i for i in range(max(len(b), len(g))) if i >= len(b) or i >= len(g) or b[i] != g[i]]
        if bad:
            i = bad[0]
            exp = baseline[i][2] if i < len(baseline) else "<nothing>"
            saw = got[i][2] if i < len(got) else "<nothing>"
            res.update(verdict="differs", differing=bad[:20], n_differing=len(bad), reason=(
                f"{len(bad)} of {len(b)} items differ from the num_workers=0 baseline "
                f"(indices {', '.join(map(str, bad[:8]))}{', ...' if len(bad) > 8 else ''}); "
                f"index {i}: expected {exp}, got {saw}"))

    def _fd_findings(self, metas: List[Dict[str, Any]], files: Dict[int, Any], pos_before: Dict[int, Any],
                     res: Dict[str, Any]) -> None:
        seen = {}
        for m in metas:
            for fd, path, method in m.get("fds") or ():
                seen.setdefault((fd, path), (method, set()))[1].add(m["wid"])
        for (fd, path), (method, wids) in sorted(seen.items()):
            res["findings"].append({"kind": "inherited_fd", "message": (
                f"worker{'s' if len(wids) > 1 else ''} {', '.join(map(str, sorted(wids)))} still "
                f"share{'' if len(wids) > 1 else 's'} the parent's open file description of {path} "
                f"(fd {fd}, inherited through fork; {method})"),
                "detail": {"fd": fd, "path": path, "method": method, "workers": sorted(wids)}})
        after = self.probes.offsets(files)
        for fd, p0 in pos_before.items():
            p1 = after.get(fd)
            if p0 is not None and p1 is not None and p0 != p1:
                path = files[fd][2]
                res["findings"].append({"kind": "parent_offset_moved", "message": (
                    f"the parent's file offset of {path} (fd {fd}) moved from {p0} to {p1} while only "
                    f"workers read it"), "detail": {"fd": fd, "path": path, "before": p0, "after": p1}})

    def _rng_findings(self, runs: List[List[Any]], parent_rng: List[Dict[str, Any]], res: Dict[str, Any]) -> None:
        firsts: List[Dict[int, Dict[str, Any]]] = []
        for run in runs:
            per: Dict[int, Dict[str, Any]] = {}
            for m, _, _ in run:
                if "rng" in m and m["wid"] not in per:
                    per[m["wid"]] = m["rng"]
            firsts.append(per)

        def drawn(name: str, digest: Any, epoch: int) -> bool:
            # a dataset attribute counts only if the worker drew from it (its state left the parent's)
            return "(global)" in name or parent_rng[epoch].get(name) != digest

        reported = set()
        for e, per in enumerate(firsts):
            wids = sorted(per)
            for i, a in enumerate(wids):
                for b in wids[i + 1:]:
                    for name, dig in per[a].items():
                        if per[b].get(name) == dig and drawn(name, dig, e) and name not in reported:
                            reported.add(name)
                            res["findings"].append({"kind": "duplicate_rng", "message": (
                                f"duplicate randomness: workers {a} and {b} draw from identical RNG state "
                                f"({name}, {dig[0]})"), "detail": {"rng": name, "workers": [a, b], "epoch": e}})
        if len(firsts) > 1:
            for w in sorted(set(firsts[0]) & set(firsts[1])):
                for name, dig in firsts[0][w].items():
                    if firsts[1][w].get(name) == dig and drawn(name, dig, 0) and ("replay", name) not in reported:
                        reported.add(("replay", name))
                        res["findings"].append({"kind": "replayed_rng", "message": (
                            f"duplicate randomness: worker {w} starts every epoch from the same RNG state "
                            f"({name}, {dig[0]})"), "detail": {"rng": name, "worker": w}})
            e0 = [x[1] for x in runs[0]]
            e1 = [x[1] for x in runs[1]]
            varied = sum(1 for x, y in zip(self.baseline_a or [], self.baseline_b or []) if x != y)
            if not reported and e0 == e1 and varied >= 2:
                res["findings"].append({"kind": "replayed_items", "message": (
                    f"duplicate randomness: the workers returned exactly the same {len(e0)} random items in "
                    f"two epochs"), "detail": {"items": len(e0)}})

    # -------------------------------------------------------------- cleanup
    def _reap(self) -> None:
        for p in mp.active_children():
            try:
                p.kill()
            except Exception:  # noqa: BLE001
                pass
        for p in mp.active_children():
            p.join(2)


def _fast_shutdown(it: Any) -> None:
    """Stop a DataLoader iterator's workers with SIGKILL once their data is in (a spawn worker's orderly
    exit tears torch down and takes seconds). The workers' PIDs are unregistered first, so torch's
    SIGCHLD handler does not report the kill as a worker failure."""
    if it is None:
        return
    try:
        from torch.utils.data import _utils

        if getattr(it, "_worker_pids_set", False):
            _utils.signal_handling._remove_worker_pids(id(it))
            it._worker_pids_set = False
        workers = list(getattr(it, "_workers", []) or [])
        for w in workers:
            if w.is_alive():
                w.kill()
        for w in workers:
            w.join(2)
        it._shutdown_workers()
    except Exception:  # noqa: BLE001 - fall back to torch's own shutdown in __del__
        pass


def _cuda_device() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _device_kind() -> str:
    import torch

    if not _cuda_device():
        return "cpu"
    return "rocm" if getattr(torch.version, "hip", None) else "cuda"


def _short_tb(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return one_line(exc)
    fr = tb[-1]
    return f"at {fr.filename}:{fr.lineno} in {fr.name}"


def main(argv: Optional[List[str]] = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    spec_path = argv[-1]
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    for p in reversed(spec.get("sys_path") or []):
        if p not in sys.path:
            sys.path.insert(0, p)
    writer = Writer(spec["result_path"])
    signal.signal(signal.SIGALRM, _on_alarm)
    t0 = time.monotonic()
    rc = 0
    try:
        case = Case(spec, writer)
        try:
            case.start()
        except _Timeout:
            raise
        except BaseException as exc:  # noqa: BLE001
            what = getattr(getattr(case, "source", None), "phase", "preparing")
            label = case.source.label if hasattr(case, "source") else "the case"
            writer.write({"event": "setup_error", "error": f"{what} {label} failed: {one_line(exc)}",
                          "where": _short_tb(exc)})
            rc = 3
            return
        writer.write({"event": "case", "label": case.source.label, "fd_method": case.fd_method})
        case.kind = None
        for ctx in spec["contexts"]:
            t = time.monotonic()
            r = case.run_context(ctx)
            r["seconds"] = round(time.monotonic() - t, 2)
            writer.write({"event": "context", "result": r})
        import torch

        writer.write({"event": "done", "nondeterministic": bool(case.nondeterministic), "kind": case.kind,
                      "torch": torch.__version__,
                      "parent_cuda_init": case.hook.where, "device": _device_kind(),
                      "seconds": round(time.monotonic() - t0, 2)})
    except BaseException as exc:  # noqa: BLE001
        writer.write({"event": "crash", "error": one_line(exc), "traceback": traceback.format_exc()[-4000:]})
        rc = 4
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
