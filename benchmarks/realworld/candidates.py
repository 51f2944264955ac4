"""List candidate DataLoader-multiprocessing hazard sites for a human to read.

An independent, deliberately broad scanner (stdlib ``ast`` only; it does not use flake8_forksafe),
so that the labelled corpus's recall is not defined by the tool being measured.  It over-reports on
purpose: every line it prints is something to read, not a finding.

    python benchmarks/realworld/candidates.py PATH [PATH ...] [--kinds handle,rng,...]
    python benchmarks/realworld/candidates.py --package NAME     # a fetched corpus package

Output: ``path:line: kind: source line`` (paths relative to the package root / argument).

Kinds:
  handle      handle-factory-like call (open, h5py.File, lmdb.open, np.load, read_csv(chunksize=),
              VideoCapture, tarfile/zipfile, PIL Image.open, ...) in a dataset-like class
  generator   glob/rglob/iterdir/scandir/walk or a generator expression in a dataset-like class
  rng         RNG constructor (default_rng, RandomState, random.Random, torch.Generator) in a
              dataset-like class
  sync        lock/queue/thread/threading.local in a dataset-like class
  cuda        .cuda(), .to("cuda"/device), device= keyword, torch.cuda.* in a dataset-like class
  module      handle-factory-like call at module top level
  lambda      lambda given to a DataLoader/Dataset/loader/collate/transform/map call or kept on self
  nested      function or class defined inside a function and handed to such a call, or a
              dataset-like class defined inside a function
  stored      self.<collate_fn|worker_init_fn|...> = ... (stored, then maybe passed elsewhere)
  start       set_start_method / get_context / multiprocessing_context= / set_forkserver_preload
  seed        seeding call inside a worker_init_fn-like function
  toplevel    module-level loop / next(iter()) over a loader, Pool(...), Process(...) not under
              the __main__ guard
  loader      DataLoader(...) call with num_workers= (context for the above)
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

HANDLE_NAMES = {
    "open", "fdopen", "File", "connect", "VideoCapture", "OpenSlide", "open_slide", "TiffFile",
    "TiffSlide", "ZipFile", "TarFile", "Environment", "HDFStore", "VideoReader", "AudioReader",
    "MongoClient", "Redis", "StrictRedis", "Session", "socket", "client", "resource", "Dataset",
    "memmap", "IndexedRawTextDataset", "LMDB", "Reader", "urlopen", "SoundFile", "NamedTemporaryFile",
    "TemporaryFile", "popen", "Popen",
}
HANDLE_QUALIFIED_CALLS = {"load", "read_csv", "read_table", "read_json", "read_parquet", "begin", "open_dataset"}
GEN_NAMES = {"glob", "rglob", "iglob", "iterdir", "scandir", "walk", "listdir_gen", "finditer", "imap", "imap_unordered"}
RNG_NAMES = {"default_rng", "RandomState", "Random", "Generator", "SeedSequence", "PCG64", "MT19937", "SystemRandom"}
SYNC_NAMES = {
    "Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "Event", "Thread", "Queue",
    "SimpleQueue", "LifoQueue", "PriorityQueue", "local", "ThreadPoolExecutor", "ProcessPoolExecutor",
    "Pool", "Barrier", "Timer",
}
LOADERISH = ("loader", "dataset", "collate", "transform", "compose", "pipeline", "map", "lambda", "sampler",
             "iter", "pipe", "batch", "datamodule", "shard", "decode", "filter")
STORED_ATTRS = ("collate", "worker_init", "transform", "loader_fn", "preprocess", "postprocess", "fn", "func",
                "tokenizer", "process")
DATASET_BASE_HINTS = ("Dataset", "DataPipe", "Sampler", "DataSource", "Iterable", "Loader")


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Call):
        inner = dotted(node.func)
        return f"{inner}()" if inner else ""
    return ""


def last_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def is_datasetish(cls: ast.ClassDef) -> bool:
    for base in cls.bases:
        name = dotted(base).split(".")[-1]
        if any(name.endswith(h) for h in DATASET_BASE_HINTS):
            return True
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in (
            "__getitem__", "__iter__", "__getitems__", "__len__"
        ):
            return True
    return False


def is_main_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    src = ast.dump(node.test)
    return "__name__" in src and "__main__" in src


class Scanner(ast.NodeVisitor):
    def __init__(self, lines: list[str]):
        self.lines = lines
        self.out: list[tuple[int, str]] = []
        self.class_stack: list[ast.ClassDef] = []
        self.func_depth = 0
        self.func_stack: list[ast.AST] = []

    def emit(self, node: ast.AST, kind: str) -> None:
        self.out.append((node.lineno, kind))

    # --- structure ---------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.func_depth and (is_datasetish(node)):
            self.emit(node, "nested")
        self.class_stack.append(node)
        saved = self.func_depth
        self.func_depth = 0
        self.generic_visit(node)
        self.func_depth = saved
        self.class_stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if "worker_init" in node.name or node.name in ("seed_worker", "_worker_init", "init_worker", "worker_init_fn"):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and "seed" in last_name(sub).lower():
                    self.emit(sub, "seed")
        if self.func_depth:
            parent = self.func_stack[-1]
            if self._name_used_loaderish(parent, node.name):
                self.emit(node, "nested")
        self.func_depth += 1
        self.func_stack.append(node)
        self.generic_visit(node)
        self.func_stack.pop()
        self.func_depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _name_used_loaderish(self, scope: ast.AST, name: str) -> bool:
        for sub in ast.walk(scope):
            if isinstance(sub, ast.Call):
                callee = dotted(sub.func).lower()
                args = list(sub.args) + [k.value for k in sub.keywords]
                if any(isinstance(a, ast.Name) and a.id == name for a in args):
                    if any(h in callee for h in LOADERISH):
                        return True
                    if any(k.arg in ("collate_fn", "worker_init_fn", "transform", "fn", "func", "map_fn")
                           and isinstance(k.value, ast.Name) and k.value.id == name for k in sub.keywords):
                        return True
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name) and sub.value.id == name:
                if any(isinstance(t, ast.Attribute) and dotted(t).startswith("self.") for t in sub.targets):
                    return True
        return False

    # --- statements --------------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if is_main_guard(stmt):
                continue
            self._toplevel(stmt)
        self.generic_visit(node)

    def _toplevel(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = ast.unparse(stmt.iter).lower()
            if any(h in it for h in ("loader", "dataset", "iter")):
                self.emit(stmt, "toplevel")
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Call):
                name = last_name(sub)
                if name in ("Pool", "Process", "spawn", "start_processes") or (
                    name == "next" and sub.args and isinstance(sub.args[0], ast.Call)
                    and last_name(sub.args[0]) == "iter"
                ):
                    self.emit(sub, "toplevel")
                elif self._is_handle_call(sub):
                    self.emit(sub, "module")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            d = dotted(t)
            if d.startswith("self.") and any(a in d.split(".")[-1].lower() for a in STORED_ATTRS):
                self.emit(node, "stored")
            if d.startswith("self.") and isinstance(node.value, ast.Lambda):
                self.emit(node.value, "lambda")
            if d.startswith("self.") and isinstance(node.value, ast.GeneratorExp) and self._in_dataset():
                self.emit(node.value, "generator")
        self.generic_visit(node)

    def _in_dataset(self) -> bool:
        return bool(self.class_stack) and is_datasetish(self.class_stack[-1])

    def _is_handle_call(self, node: ast.Call) -> bool:
        name = last_name(node)
        full = dotted(node.func)
        if name in HANDLE_NAMES:
            return True
        if name in HANDLE_QUALIFIED_CALLS and "." in full:
            if name.startswith("read_"):
                return any(k.arg in ("chunksize", "iterator") or k.arg is None for k in node.keywords)
            return True
        return False

    def visit_Call(self, node: ast.Call) -> None:
        name = last_name(node)
        full = dotted(node.func)
        callee = full.lower()
        in_ds = self._in_dataset()
        if in_ds:
            if self._is_handle_call(node):
                self.emit(node, "handle")
            if name in GEN_NAMES:
                self.emit(node, "generator")
            if name in RNG_NAMES:
                self.emit(node, "rng")
            if name in SYNC_NAMES:
                self.emit(node, "sync")
            if self._is_cuda(node):
                self.emit(node, "cuda")
        elif name in RNG_NAMES and self.class_stack:
            self.emit(node, "rng")
        if name in ("set_start_method", "get_context", "set_forkserver_preload") or any(
            k.arg == "multiprocessing_context" for k in node.keywords
        ):
            self.emit(node, "start")
        if name.endswith("DataLoader") or name.endswith("Loader"):
            if any(k.arg == "num_workers" for k in node.keywords):
                self.emit(node, "loader")
        loaderish = any(h in callee for h in LOADERISH)
        for arg in list(node.args) + [k.value for k in node.keywords]:
            for sub in ast.walk(arg):
                if isinstance(sub, ast.Lambda) and (loaderish or any(
                    k.arg in ("collate_fn", "worker_init_fn", "transform", "target_transform", "fn", "map_fn")
                    and k.value is arg for k in node.keywords
                )):
                    self.emit(sub, "lambda")
                    break
        self.generic_visit(node)

    def _is_cuda(self, node: ast.Call) -> bool:
        name = last_name(node)
        full = dotted(node.func)
        if name == "cuda":
            return True
        if full.startswith("torch.cuda.") and name not in ("is_available", "device_count", "manual_seed",
                                                            "manual_seed_all", "is_initialized"):
            return True
        if name == "to" and node.args:
            txt = ast.unparse(node.args[0]).lower()
            if "cuda" in txt or "device" in txt or "gpu" in txt:
                return True
        for k in node.keywords:
            if k.arg == "device":
                txt = ast.unparse(k.value).lower()
                if "cpu" not in txt:
                    return True
        return False


def scan_file(path: Path) -> list[tuple[int, str, str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError):
        return []
    lines = text.splitlines()
    sc = Scanner(lines)
    sc.visit(tree)
    seen = set()
    out = []
    for line, kind in sorted(sc.out):
        if (line, kind) in seen:
            continue
        seen.add((line, kind))
        src = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        out.append((line, kind, src))
    return out


def iter_files(paths: list[Path]):
    for p in paths:
        if p.is_file():
            yield p.parent, p
        else:
            for f in sorted(p.rglob("*.py")):
                yield p, f


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--package", default=None, help="a fetched corpus package, by name")
    ap.add_argument("--kinds", default="", help="comma-separated kinds to keep (default: all)")
    args = ap.parse_args(argv)
    paths = list(args.paths)
    if args.package:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from fetch import load_packages, source_root

        pkgs = [p for p in load_packages() if p["name"] == args.package]
        if not pkgs:
            print(f"candidates.py: no package {args.package!r}")
            return 2
        paths.append(source_root(pkgs[0]))
    if not paths:
        ap.error("give PATHs or --package")
    kinds = {k.strip() for k in args.kinds.split(",") if k.strip()}
    for base, f in iter_files(paths):
        rel = f.relative_to(base).as_posix()
        for line, kind, src in scan_file(f):
            if kinds and kind not in kinds:
                continue
            print(f"{rel}:{line}: {kind}: {src[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
