"""Long hypothesmith fuzzing run: the properties of tests/test_fuzz.py with many more examples.

    python benchmarks/fuzz.py --examples 2000 [--seed N] [--only check|fix|text]

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=1000, help="examples per property")
    ap.add_argument("--seed", type=int, default=None, help="fixed seed (reproducible run)")
    ap.add_argument("--only", choices=("check", "fix", "text"), action="append",
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

    chosen = args.only or ["check", "fix", "text"]
    table = {"check": check, "fix": fix, "text": text}
    failed = []
    for name in chosen:
        test = table[name]
        if args.seed is not None:
            test = seed(args.seed)(test)
        counter["n"], counter["t0"] = 0, time.perf_counter()
        print(f"{name}: up to {args.examples} examples", flush=True)
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
    if failed:
        print(f"fuzz: failed properties: {', '.join(failed)}")
        return 1
    print("fuzz: all properties held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
