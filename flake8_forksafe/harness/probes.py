"""Code that runs inside the harness subprocess and inside DataLoader workers.

Imports torch. Never imported by the caller's process (pytest, the CLI): only by ``_child`` and, through
pickling, by spawn/forkserver workers.

* ``ProbeMap`` / ``ProbeIterable`` wrap the user's dataset. After each item they record the worker id, a
  per-process sequence number, the inherited-descriptor probe and (once per worker) the RNG-state probe.
* ``TagCollate`` wraps the user's ``collate_fn`` (or torch's ``default_convert``) and replaces the item by
  its fingerprint, so items are compared exactly without shipping tensors back through shared memory.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import itertools
import os
import pickle
import platform
import random
import stat
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

# ------------------------------------------------------------------------------------ fingerprints


def _encode(obj: Any, out: "hashlib._Hash", depth: int = 0) -> None:
    if depth > 50:
        out.update(b"<deep>")
        return
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.is_sparse:
            t = t.to_dense()
        t = t.contiguous()
        out.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        try:
            out.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        except (RuntimeError, TypeError):
            out.update(repr(t.tolist()).encode())
        return
    np = _numpy()
    if np is not None and isinstance(obj, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(obj)
        out.update(f"N{a.dtype.str}{a.shape}".encode())
        if a.dtype.hasobject:
            for x in a.ravel().tolist():
                _encode(x, out, depth + 1)
        else:
            out.update(a.tobytes())
        return
    if isinstance(obj, dict):
        out.update(f"D{type(obj).__name__}{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _encode(k, out, depth + 1)
            _encode(obj[k], out, depth + 1)
        return
    if isinstance(obj, (list, tuple)):
        out.update(f"L{type(obj).__name__}{len(obj)}".encode())
        for x in obj:
            _encode(x, out, depth + 1)
        return
    if isinstance(obj, (str, bytes, bytearray, int, float, complex, bool, type(None))):
        out.update(f"S{type(obj).__name__}:".encode() + repr(obj).encode())
        return
    try:
        out.update(b"P" + pickle.dumps(obj, protocol=4))
    except Exception:  # noqa: BLE001 - anything unpicklable is compared by repr
        out.update(b"R" + repr(obj).encode())


def _numpy():
    try:
        import numpy

        return numpy
    except ImportError:  # pragma: no cover - numpy ships with torch wheels
        return None


def fingerprint(obj: Any) -> str:
    h = hashlib.sha1()
    try:
        _encode(obj, h)
    except Exception:  # noqa: BLE001 - a probe must never break the user's dataset
        h = hashlib.sha1(b"R" + short_repr(obj, 10_000).encode())
    return h.hexdigest()[:20]


def short_repr(obj: Any, limit: int = 80) -> str:
    try:
        r = repr(obj)
    except Exception:  # noqa: BLE001
        r = f"<{type(obj).__name__}>"
    r = " ".join(r.split())
    return r if len(r) <= limit else r[: limit - 3] + "..."


# ------------------------------------------------------------------------------------ descriptors

_KCMP_FILE = 0
_SYS_KCMP = {"x86_64": 312, "amd64": 312, "aarch64": 272, "arm64": 272, "ppc64le": 354, "s390x": 343}
_IGNORED_PREFIXES = ("/dev/", "/proc/", "/sys/", "/run/", "memfd:", "anon_inode:", "pipe:", "socket:")


def _fd_dir() -> Optional[str]:
    for d in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(d):
            return d
    return None


def open_files() -> Dict[int, Tuple[int, int, str]]:
    """Regular files this process holds open: fd -> (st_dev, st_ino, path)."""
    d = _fd_dir()
    if d is None:
        return {}
    out: Dict[int, Tuple[int, int, str]] = {}
    try:
        names = os.listdir(d)
    except OSError:
        return {}
    for name in names:
        try:
            fd = int(name)
            st = os.fstat(fd)
        except (ValueError, OSError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        try:
            path = os.readlink(os.path.join(d, name))
        except OSError:
            path = f"<fd {fd}>"
        if path.startswith(_IGNORED_PREFIXES):
            continue
        out[fd] = (st.st_dev, st.st_ino, path)
    return out


def probe_method() -> str:
    """How this machine can tell whether two processes share an open file description."""
    forced = os.environ.get("FORKSAFE_FD_PROBE", "")
    if forced in ("kcmp", "fdinfo", "none"):
        return forced
    if _kcmp_works():
        return "kcmp"
    if os.path.isdir("/proc/self/fdinfo"):
        return "fdinfo"
    return "none"


_LIBC: List[Any] = []


def _syscall() -> Any:
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True).syscall)
        except (OSError, AttributeError):
            _LIBC.append(None)
    return _LIBC[0]


def _kcmp(pid1: int, pid2: int, fd1: int, fd2: int) -> Optional[bool]:
    nr = _SYS_KCMP.get(platform.machine().lower())
    syscall = _syscall() if nr is not None else None
    if syscall is None:
        return None
    r = syscall(nr, pid1, pid2, _KCMP_FILE, fd1, fd2)
    if r < 0:
        return None
    return r == 0


def _kcmp_works() -> bool:
    if not hasattr(os, "fork"):
        return False
    try:
        r, w = os.pipe()
    except OSError:
        return False
    try:
        return _kcmp(os.getpid(), os.getpid(), r, r) is True and _kcmp(os.getpid(), os.getpid(), r, w) is False
    finally:
        os.close(r)
        os.close(w)


def _fdinfo_flags(pid: int, fd: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        return None
    return None


def _shared_by_fdinfo(parent: int, fd: int, lock_path: str) -> Optional[bool]:
    """Toggle O_NONBLOCK (a no-op for regular files) on our fd and watch the parent's fdinfo: the flag
    lives in the open file description, so the parent sees it only if the description is shared.
    Serialised across workers with a lock file."""
    try:
        lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = _fdinfo_flags(parent, fd)
        if before is None:
            return None
        mine = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, mine ^ os.O_NONBLOCK)
        try:
            after = _fdinfo_flags(parent, fd)
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, mine)
        if after is None:
            return None
        return (before ^ after) & os.O_NONBLOCK != 0
    except OSError:
        return None
    finally:
        try:
            fcntl.flock(lock, fcntl.LOCK_UN)
        finally:
            os.close(lock)


class FdProbe:
    """The inherited-descriptor probe, configured in the parent, run in workers (picklable)."""

    def __init__(self, parent_pid: int, files: Dict[int, Tuple[int, int, str]], method: str, lock_path: str):
        self.parent_pid = parent_pid
        self.files = files
        self.method = method
        self.lock_path = lock_path

    def run(self) -> List[Tuple[int, str, str]]:
        """Descriptors of the parent's data files that this process still shares: (fd, path, method)."""
        if os.getpid() == self.parent_pid or self.method == "none":
            return []
        found = []
        for fd, (dev, ino, path) in self.files.items():
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) != (dev, ino):
                continue
            if self.method == "kcmp":
                shared = _kcmp(self.parent_pid, os.getpid(), fd, fd)
            else:
                shared = _shared_by_fdinfo(self.parent_pid, fd, self.lock_path)
            if shared:
                found.append((fd, path, self.method))
        return found


class MmapTracker:
    """Records the private descriptor each ``mmap.mmap`` keeps (CPython dups the file's fd), so that
    ``np.memmap`` / ``np.load(mmap_mode=...)`` are not reported: a mapping is safe to inherit, and the rule
    catalogue says they are not handles. Installed in the harness process before the dataset exists."""

    def __init__(self) -> None:
        self.fds: Dict[int, Tuple[int, int]] = {}
        self.installed = False

    def install(self) -> None:
        import mmap

        if self.installed or not isinstance(mmap.mmap, type):
            return
        tracker = self
        base = mmap.mmap

        class _TrackedMmap(base):  # type: ignore[misc, valid-type]
            def __new__(cls, *args: Any, **kwargs: Any) -> Any:
                before = set(open_files())
                obj = super().__new__(cls, *args, **kwargs)
                for fd, (dev, ino, _) in open_files().items():
                    if fd not in before:
                        tracker.fds[fd] = (dev, ino)
                return obj

        _TrackedMmap.__name__ = _TrackedMmap.__qualname__ = "mmap"
        _TrackedMmap.__module__ = "mmap"
        mmap.mmap = _TrackedMmap
        self.installed = True

    def owns(self, fd: int, info: Tuple[int, int, str]) -> bool:
        return self.fds.get(fd) == (info[0], info[1])


def offsets(fds) -> Dict[int, Optional[int]]:
    out: Dict[int, Optional[int]] = {}
    for fd in fds:
        try:
            out[fd] = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError:
            out[fd] = None
    return out


# ------------------------------------------------------------------------------------ randomness

_SKIP_MODULES = ("torch", "numpy", "builtins", "h5py", "lmdb", "sqlite3", "io", "_io")


def _rng_digest(obj: Any) -> Optional[Tuple[str, str]]:
    np = _numpy()
    try:
        if np is not None and isinstance(obj, np.random.Generator):
            return "numpy Generator", hashlib.sha1(repr(obj.bit_generator.state).encode()).hexdigest()[:16]
        if np is not None and isinstance(obj, np.random.RandomState):
            st = obj.get_state()
            h = hashlib.sha1(repr((st[0], st[2], st[3], st[4])).encode() + st[1].tobytes())
            return "numpy RandomState", h.hexdigest()[:16]
        if isinstance(obj, random.Random) and not isinstance(obj, random.SystemRandom):
            return "random.Random", hashlib.sha1(repr(obj.getstate()).encode()).hexdigest()[:16]
        if isinstance(obj, torch.Generator):
            if obj.device.type != "cpu":
                return None
            return "torch.Generator", hashlib.sha1(obj.get_state().numpy().tobytes()).hexdigest()[:16]
    except Exception:  # noqa: BLE001 - a probe must never break the user's dataset
        return None
    return None


def rng_states(dataset: Any, budget: int = 300) -> Dict[str, Tuple[str, str]]:
    """Digest of every RNG this process would draw from: the global ones and RNG objects reachable from
    the dataset's attributes (a few levels deep). name -> (kind, digest)."""
    np = _numpy()
    out: Dict[str, Tuple[str, str]] = {}
    if np is not None:
        d = _rng_digest(np.random.mtrand._rand)
        if d:
            out["np.random (global)"] = d
    out["random (global)"] = ("random", hashlib.sha1(repr(random.getstate()).encode()).hexdigest()[:16])
    out["torch (global)"] = ("torch", hashlib.sha1(torch.get_rng_state().numpy().tobytes()).hexdigest()[:16])
    seen = set()
    todo: List[Tuple[str, Any, int]] = [("dataset", dataset, 0)]
    while todo and budget > 0:
        name, obj, depth = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        budget -= 1
        d = _rng_digest(obj)
        if d:
            out[name] = d
            continue
        if depth >= 4:
            continue
        try:
            if isinstance(obj, dict):
                for k, v in itertools.islice(obj.items(), 50):
                    todo.append((f"{name}[{k!r}]", v, depth + 1))
            elif isinstance(obj, (list, tuple)):
                for i, v in enumerate(itertools.islice(obj, 50)):
                    todo.append((f"{name}[{i}]", v, depth + 1))
            else:
                mod = type(obj).__module__ or ""
                if mod.split(".")[0] in _SKIP_MODULES and not isinstance(obj, (Dataset, IterableDataset)):
                    continue
                attrs = getattr(obj, "__dict__", None)
                if isinstance(attrs, dict):
                    for k, v in itertools.islice(attrs.items(), 100):
                        todo.append((f"{name}.{k}", v, depth + 1))
        except Exception:  # noqa: BLE001 - odd containers: skip them
            continue
    return out


# ------------------------------------------------------------------------------------ wrappers


_OWN = frozenset({"inner", "fd_probe", "_seq", "_rng_pid"})


class _ProbeBase:
    """Transparent: attributes it does not own are read from and written to the wrapped dataset, so
    ``get_worker_info().dataset.start = ...`` in a user's ``worker_init_fn`` keeps working."""

    def _setup(self, inner: Any) -> None:
        self.inner = inner
        self.fd_probe: Optional[FdProbe] = None
        self._seq = 0
        self._rng_pid: Optional[int] = os.getpid()

    def __getattr__(self, name: str) -> Any:
        if name in _OWN or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def _meta(self) -> Dict[str, Any]:
        info = get_worker_info()
        meta: Dict[str, Any] = {"wid": -1 if info is None else info.id, "seq": self._seq, "pid": os.getpid()}
        self._seq += 1
        if info is not None:
            try:
                if self.fd_probe is not None:
                    meta["fds"] = self.fd_probe.run()
                if self._rng_pid != os.getpid():
                    # after the first item, so datasets that create their RNG lazily per worker have done so
                    self._rng_pid = os.getpid()
                    meta["rng"] = rng_states(self.inner)
            except Exception as exc:  # noqa: BLE001 - a probe must never break the user's dataset
                meta["probe_error"] = f"{type(exc).__name__}: {exc}"
        return meta


class ProbeMap(_ProbeBase, Dataset):
    def __init__(self, inner: Any):
        self._setup(inner)

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: int) -> Any:
        item = self.inner[index]
        return (self._meta(), item)


class ProbeIterable(_ProbeBase, IterableDataset):
    def __init__(self, inner: Any):
        self._setup(inner)

    def __iter__(self):
        for item in self.inner:
            yield (self._meta(), item)


def wrap(dataset: Any) -> Any:
    if isinstance(dataset, IterableDataset):
        return ProbeIterable(dataset)
    return ProbeMap(dataset)


class TagCollate:
    """Applies the user's collate_fn in the worker, then ships only a fingerprint back."""

    def __init__(self, collate: Any):
        self.collate = collate

    def __call__(self, tagged: Any) -> Any:
        meta, item = tagged
        out = self.collate(item)
        return (meta, fingerprint(out), short_repr(out))


# ------------------------------------------------------------------------------------ CUDA hook


class CudaInitHook:
    """Wraps ``torch.cuda._lazy_init`` to record where the parent first initialises CUDA.

    Works on CPU-only builds too: ``.cuda()``, ``device="cuda"`` and ``torch.cuda.*`` calls reach
    ``_lazy_init`` before torch raises "Torch not compiled with CUDA enabled"."""

    def __init__(self) -> None:
        self.where: Optional[str] = None
        self.installed = False
        self._orig = None

    def install(self) -> None:
        import torch.cuda

        if self.installed:
            return
        self._orig = torch.cuda._lazy_init
        hook = self

        def _lazy_init(*a, **kw):
            if hook.where is None and os.getpid() == hook._pid:
                hook.where = _caller_outside_torch()
            return hook._orig(*a, **kw)

        self._pid = os.getpid()
        torch.cuda._lazy_init = _lazy_init
        self.installed = True


def _caller_outside_torch() -> str:
    import traceback

    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.abspath(__file__))
    for fr in reversed(traceback.extract_stack()[:-2]):
        fn = os.path.abspath(fr.filename)
        if fn.startswith(torch_dir) or fn.startswith(here):
            continue
        return f"{fr.filename}:{fr.lineno} in {fr.name}"
    return "<unknown>"


__all__ = [
    "CudaInitHook",
    "FdProbe",
    "MmapTracker",
    "ProbeIterable",
    "ProbeMap",
    "TagCollate",
    "fingerprint",
    "offsets",
    "open_files",
    "probe_method",
    "rng_states",
    "short_repr",
    "wrap",
]
