"""What the project index costs, next to the floor of parsing every file with ``ast.parse``.

    python benchmarks/index_cost.py [--only torch,datasets] [--corpus-limit N] [--skip-check]

Corpora: ``torch`` (the installed torch's sources, copied by ``corpus.py``) and ``datasets`` (the
dataset-heavy corpus of ``dataset_bench.py``: real packages' data-loading code from pinned wheels).
For each, it prints CPU seconds (``time.process_time``; the cyclic garbage collector off, as the
engine runs, so that a figure is not a collection of everything parsed before it) of:

* the floor: ``ast.parse`` of every file (each tree dropped before the next, as a loop would);
* the summariser given those trees (``index.summarise``: what the index adds to a parse the gate
  already made), and its ratio to the floor;
* **the index inside a real check** (issue 11's "the index costs at most 0.3x the floor, cold"):
  ``forksafe check --jobs 1 --no-cache`` over the corpus in this process, with the time spent
  inside the index (``index_for``, ``has_project_dataset``, every ``ProjectIndex`` method, the
  outermost call only: summaries of other modules, their parses, resolution, the text proof)
  added up; the ratio to the floor, and the whole check's time for reference;
* a cold ``ProjectIndex.summarise_file`` of every file with its own parse and a cache write, and a
  warm one (every summary read back from the cache), for reference.
"""

from __future__ import annotations

import argparse
import ast
import functools
import gc
import io
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from corpus import build_corpus  # noqa: E402

from flake8_forksafe import index as index_mod  # noqa: E402
from flake8_forksafe.config import Config  # noqa: E402
from flake8_forksafe.index import ProjectIndex, summarise  # noqa: E402


def corpus_files(name: str, limit: int) -> tuple:
    """(root, files) of one corpus."""
    if name == "datasets":
        import dataset_bench

        files = dataset_bench.build(sys.executable)
        if limit and limit < len(files):
            step = len(files) / limit
            files = [files[int(i * step)] for i in range(limit)]
        return dataset_bench.OUT / "src", files
    c = build_corpus(only=[name], limit=limit)
    return c.root, c.abspaths()


class IndexClock:
    """CPU time spent inside the index during a run: each wrapped function adds its time when it
    is the outermost index call on the stack (a summary inside a resolution counts once)."""

    def __init__(self) -> None:
        self.depth = 0
        self.seconds = 0.0
        self.undo: list = []

    def wrap(self, owner, name: str) -> None:
        real = owner.__dict__[name]
        if isinstance(real, (staticmethod, classmethod, property)) or not callable(real):
            return

        @functools.wraps(real)
        def timed(*a, **kw):
            if self.depth:
                return real(*a, **kw)
            self.depth = 1
            t0 = time.process_time()
            try:
                return real(*a, **kw)
            finally:
                self.seconds += time.process_time() - t0
                self.depth = 0

        setattr(owner, name, timed)
        self.undo.append((owner, name, real))

    def __enter__(self) -> "IndexClock":
        for name in list(ProjectIndex.__dict__):
            if not name.startswith("__"):
                self.wrap(ProjectIndex, name)
        for name in ("index_for", "has_project_dataset", "project_root"):
            self.wrap(index_mod, name)
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, real in reversed(self.undo):
            setattr(owner, name, real)


def check_in_process(files: list) -> tuple:
    """(CPU s of ``forksafe check --jobs 1 --no-cache`` over ``files``, CPU s inside the index)."""
    from flake8_forksafe.frontends import cli

    index_mod._INDEXES.clear()  # cold: no index left from an earlier corpus
    with IndexClock() as clock:  # the engine and the CLI import index functions at call time
        t0 = time.process_time()
        with redirect_stdout(io.StringIO()):
            try:
                cli.main(["check", "--jobs", "1", "--no-cache", "--exit-zero", *files])
            except SystemExit:
                pass
        total = time.process_time() - t0
    return total, clock.seconds


def measure(name: str, limit: int, skip_check: bool) -> None:
    root, files = corpus_files(name, limit)
    k = Config().knowledge
    datas = []
    for p in files:
        with open(p, "rb") as fh:
            datas.append((p, fh.read()))
    print(f"{name}: {len(datas)} files, {sum(len(d) for _, d in datas) / 1e6:.1f} MB (CPU seconds; the check runs with "
          f"the collector as the engine runs it, the loops without it)", flush=True)
    gc.disable()
    try:
        parse_s = summ_s = 0.0
        for p, data in datas:
            t0 = time.process_time()
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError, RecursionError):
                continue
            t1 = time.process_time()
            summarise(tree, Path(p).stem, k, path=p)
            summ_s += time.process_time() - t1
            parse_s += t1 - t0
            del tree
        gc.enable()
        print(f"  ast.parse floor                {parse_s:7.2f} s CPU")
        print(f"  summariser on those trees      {summ_s:7.2f} s CPU = {summ_s / parse_s:.2f}x the floor")
        if not skip_check:
            total, inside = check_in_process(files)
            print(f"  index inside check, cold       {inside:7.2f} s CPU = {inside / parse_s:.2f}x the floor "
                  f"(target <= 0.3x: {'PASS' if inside / parse_s <= 0.3 else 'FAIL'}); the whole check "
                  f"{total:.2f} s = {total / parse_s:.2f}x", flush=True)
        gc.disable()
        with tempfile.TemporaryDirectory() as cache:
            cold = ProjectIndex(root, k, Path(cache))
            t0 = time.process_time()
            for p, _ in datas:
                cold.summarise_file(Path(p))
            cold_s = time.process_time() - t0
            warm = ProjectIndex(root, k, Path(cache))
            t0 = time.process_time()
            for p, _ in datas:
                warm.summarise_file(Path(p))
            warm_s = time.process_time() - t0
        print(f"  every file: parse+summary+cache{cold_s:6.2f} s CPU = {cold_s / parse_s:.2f}x  ({cold.summarised} summarised)")
        print(f"  every file: from the cache     {warm_s:7.2f} s CPU = {warm_s / parse_s:.2f}x  ({warm.cache_hits} cache hits, "
              f"{warm.summarised} summarised)", flush=True)
    finally:
        gc.enable()
        gc.collect()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="torch,datasets", help="corpora: torch, datasets (comma-separated)")
    ap.add_argument("--corpus-limit", type=int, default=0)
    ap.add_argument("--skip-check", action="store_true", help="leave out the in-process check")
    args = ap.parse_args(argv)
    for name in [s for s in args.only.split(",") if s]:
        measure(name, args.corpus_limit, args.skip_check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
