"""Long hypothesmith fuzzing run: the properties of tests/test_fuzz.py with many more examples.

    python benchmarks/fuzz.py --examples 2000 [--seed N] [--only check|fix|text|mutate]
    python benchmarks/fuzz.py --minutes 30 --examples 300   # rounds of every property until 30 min pass

``mutate`` takes the real files of ``fixtures/`` and ``tests/corpus/`` and mutates them (lines
deleted, duplicated, swapped or truncated; indentation turned into tabs, mixed tabs or form feeds;
tokens, non-ASCII text and expression chains up to 2,000 deep inserted), then checks and fixes each.
A native crash ends this process (exit status 139 and no summary): run it under a shell that
reports the status.

Exits non-zero, with Hypothesis's minimal failing example, on the first property that fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import traceback
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def _load_properties():
    spec = importlib.util.spec_from_file_location(
        "forksafe_fuzz_properties", ROOT / "tests" / "test_fuzz.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHAINS = (".a", "()", "[0]", " - a", " and a", " < a", " if a else 1", "not ", "-", "(")
TOKENS = ("\t", "\f", "\\\n", "(", ")", ":", "lambda", "yield", "await ", "'", '"""', "#", "\u00e9",
          "\U0001F39E", "\x00", "\r", "if __name__ == '__main__':\n    ", "@property\n", "import os as os\n")


@st.composite
def mutated(draw, real):
    """A real file with one to four mutations."""
    lines = draw(st.sampled_from(real)).splitlines(keepends=True) or ["\n"]
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("delete", "duplicate", "swap", "truncate", "tabs", "formfeed",
                                   "token", "chain")))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        elif op == "tabs":  # every 4 spaces of indentation, or only some lines', become a tab
            some = draw(st.booleans())
            lines = [ln.replace("    ", "\t") if not some or k % 2 else ln for k, ln in enumerate(lines)]
        elif op == "formfeed":
            ln = lines[i]
            at = draw(st.integers(0, len(ln) - len(ln.lstrip())))
            lines[i] = ln[:at] + "\f" + ln[at:]
        elif op == "token":
            ln = lines[i]
            at = draw(st.integers(0, len(ln)))
            lines[i] = ln[:at] + draw(st.sampled_from(TOKENS)) + ln[at:]
        else:
            ln = lines[i]
            indent = ln[: len(ln) - len(ln.lstrip())]
            link = draw(st.sampled_from(CHAINS))
            n = draw(st.sampled_from((10, 100, 499, 501, 2000)))
            body = "x = " + link * n + ("1" if link in ("not ", "-") else "") + (")" * n if link == "(" else "")
            lines.insert(i, indent + body + "\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=1000, help="examples per property")
    ap.add_argument("--seed", type=int, default=None, help="fixed seed (reproducible run)")
    ap.add_argument("--minutes", type=float, default=0,
                    help="keep running rounds (each property, --examples each, new random examples) "
                         "until this many minutes have passed; 0: one round")
    ap.add_argument("--only", choices=("check", "fix", "text", "mutate"), action="append",
                    help="run only these properties (repeatable; default: all)")
    args = ap.parse_args(argv)
    # Generated programs such as `1()` make compile() warn; that is noise here.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    props = _load_properties()

    cfg = settings(
        max_examples=args.examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
        database=None,
    )
    counter = {"n": 0, "t0": time.perf_counter()}

    def tick(name: str) -> None:
        counter["n"] += 1
        n = counter["n"]
        if n % 100 == 0:
            rate = n / (time.perf_counter() - counter["t0"])
            print(f"  {name}: {n} examples ({rate:.1f}/s)", flush=True)

    @cfg
    @given(source=props.programs())
    def check(source):
        tick("check")
        props.assert_check_ok(source)
        props.assert_check_ok(source.encode("utf-8"))

    @cfg
    @given(source=props.programs(), unsafe=st.booleans(), as_bytes=st.booleans())
    def fix(source, unsafe, as_bytes):
        tick("fix")
        props.assert_fix_ok(source.encode("utf-8") if as_bytes else source, unsafe)

    @cfg
    @given(source=st.one_of(st.text(), st.binary(),
                            st.builds(props._join, st.sampled_from(props.SEEDS), st.text())))
    def text(source):
        tick("text")
        props.assert_check_ok(source)

    real = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))
            + sorted((ROOT / "tests" / "corpus").rglob("*.py"))]

    @cfg
    @given(source=mutated(real), unsafe=st.booleans())
    def mutate(source, unsafe):
        tick("mutate")
        props.assert_check_ok(source)
        if props._compiles(source):  # the fix properties hold for programs
            props.assert_fix_ok(source, unsafe)
            return
        try:  # a broken file: fix raises nothing but SourceError, and changes nothing
            result = props.fix_source(source, props.PATH, unsafe=unsafe)
        except props.SourceError:
            return
        assert not result.errors and not result.changed, result.errors

    chosen = args.only or ["check", "fix", "text", "mutate"]
    table = {"check": check, "fix": fix, "text": text, "mutate": mutate}
    failed = []
    start = time.perf_counter()
    total = {name: 0 for name in chosen}
    rounds = 0
    while True:
        rounds += 1
        for name in chosen:
            test = table[name]
            if args.seed is not None:
                test = seed(args.seed + rounds - 1)(test)
            counter["n"], counter["t0"] = 0, time.perf_counter()
            print(f"{name}: up to {args.examples} examples (round {rounds})", flush=True)
            try:
                test()
            except Exception as exc:  # report and go on with the other properties
                failed.append(name)
                print(f"{name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
                for note in getattr(exc, "__notes__", ()):  # Hypothesis's falsifying example
                    print(f"    {note}", flush=True)
                traceback.print_exception(exc, limit=-6)
            else:
                dt = time.perf_counter() - counter["t0"]
                print(f"{name}: OK, {counter['n']} runs in {dt:.0f} s", flush=True)
            total[name] += counter["n"]
        if failed or time.perf_counter() - start >= args.minutes * 60:
            break
    minutes = (time.perf_counter() - start) / 60
    print(f"fuzz: {rounds} round(s) in {minutes:.1f} min; examples run: "
          + ", ".join(f"{k} {v}" for k, v in total.items()) + f"; {sum(total.values())} in all")
    if failed:
        print(f"fuzz: failed properties: {', '.join(failed)}")
        return 1
    print("fuzz: all properties held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
