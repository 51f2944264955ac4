"""What the project index costs, next to the floor of parsing every file with ``ast.parse``.

    python benchmarks/index_cost.py [--only torch] [--corpus-limit N]

Prints CPU seconds (``time.process_time``, so other load on the machine matters little) of:

* the floor: ``ast.parse`` of every file of the corpus;
* the summariser given those trees (``index.summarise``: what the index adds to a parse the gate
  already made), cold, and its ratio to the floor (target <= 0.3x);
* a cold ``ProjectIndex.summarise_file`` per file with its own parse, hashing and a cache write,
  and a warm one (every summary read back from the cache), for reference.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus import build_corpus  # noqa: E402

from flake8_forksafe.config import Config  # noqa: E402
from flake8_forksafe.index import ProjectIndex, summarise  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="torch")
    ap.add_argument("--corpus-limit", type=int, default=0)
    args = ap.parse_args(argv)
    corpus = build_corpus(only=[s for s in args.only.split(",") if s], limit=args.corpus_limit)
    k = Config().knowledge
    datas = []
    for p in corpus.abspaths():
        with open(p, "rb") as fh:
            datas.append((p, fh.read()))
    print(f"corpus: {len(datas)} files, {corpus.total_mb:.1f} MB ({', '.join(corpus.sources)})")

    trees = []
    t0 = time.process_time()
    for p, data in datas:
        try:
            trees.append((p, ast.parse(data)))
        except (SyntaxError, ValueError, RecursionError):
            pass
    parse_s = time.process_time() - t0

    t0 = time.process_time()
    for p, tree in trees:
        summarise(tree, Path(p).stem, k, path=p)
    summ_s = time.process_time() - t0

    with tempfile.TemporaryDirectory() as cache:
        root = corpus.root
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

    print(f"ast.parse floor            {parse_s:7.2f} s CPU")
    print(f"summariser on those trees  {summ_s:7.2f} s CPU  = {summ_s / parse_s:.2f}x the floor (target <= 0.3x)")
    print(f"index cold, own parse+cache{cold_s:7.2f} s CPU  = {cold_s / parse_s:.2f}x  ({cold.summarised} summarised)")
    print(f"index warm, from the cache {warm_s:7.2f} s CPU  = {warm_s / parse_s:.2f}x  ({warm.cache_hits} cache hits, "
          f"{warm.summarised} summarised)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
