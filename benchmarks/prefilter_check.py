"""The pre-filter loses nothing: every corpus file checked with and without it gives the same result.

    python benchmarks/prefilter_check.py [--jobs N] [--only torch,timm] [--corpus-limit N]

Runs every rule (FRK and the default-off FRK501) over the benchmark corpus twice per file -- once
through the two-stage pre-filter, once with libcst on every file -- and prints the files whose
findings differ (none expected) and how many files each stage rejected. Exit status 1 on any
difference. Takes minutes: the unfiltered run parses every file with libcst.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from corpus import build_corpus  # noqa: E402

from flake8_forksafe.config import Config  # noqa: E402
from flake8_forksafe.engine import SourceError, check_source, decode  # noqa: E402
from flake8_forksafe import slicing  # noqa: E402
from flake8_forksafe.prefilter import could_have_findings, text_gate  # noqa: E402

# This compares the pre-filter with libcst on everything: no per-file size limit on the libcst side
# (torch's 1.4 MB common_methods_invocations.py would otherwise be skipped unfiltered).
slicing.MAX_ANALYSED = 10**12

ALL = Config(select=("FRK", "FRK501"))


def _result(data: bytes, path: str, prefilter: bool):
    try:
        return [(f.code, f.line, f.col) for f in check_source(data, path, ALL, prefilter=prefilter)]
    except SourceError as exc:
        return ["error", exc.message]


def compare(path: str):
    data = Path(path).read_bytes()
    try:
        text = decode(data)
    except SourceError:
        return path, "undecodable", None, None
    stage = "libcst" if could_have_findings(text, ALL.knowledge) else ("ast" if text_gate(text, ALL.knowledge) else "text")
    return path, stage, _result(data, path, True), _result(data, path, False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--corpus-limit", type=int, default=0)
    args = ap.parse_args(argv)
    corpus = build_corpus(sys.executable, [s for s in args.only.split(",") if s], args.corpus_limit)
    files = corpus.abspaths()
    t0 = time.perf_counter()
    stages = {"text": 0, "ast": 0, "libcst": 0, "undecodable": 0}
    diffs = []
    with_findings = 0
    with ProcessPoolExecutor(args.jobs) as ex:
        for path, stage, filtered, unfiltered in ex.map(compare, files, chunksize=8):
            stages[stage] += 1
            if unfiltered and unfiltered[0] != "error":
                with_findings += 1
            if filtered != unfiltered:
                diffs.append((path, filtered, unfiltered))
    print(f"{len(files)} files in {time.perf_counter() - t0:.0f} s: rejected by the text gate {stages['text']}, "
          f"by the ast gate {stages['ast']}; parsed with libcst {stages['libcst']}; undecodable {stages['undecodable']}")
    print(f"files with findings (unfiltered): {with_findings}")
    for path, filtered, unfiltered in diffs:
        print(f"DIFFERS {path}\n  filtered:   {filtered}\n  unfiltered: {unfiltered}")
    print(f"{len(diffs)} file(s) differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
