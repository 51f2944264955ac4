"""Dataset-heavy corpus benchmark: CPU seconds of a bare ``ast.parse`` loop vs ``forksafe check``.

Builds (once, under ``benchmarks/.corpus/datasets/``) a corpus of real packages' data-loading code:
every ``.py`` under the data / datasets sub-packages of pinned wheels (``pip download --no-deps``),
then runs, each in its own child process, and prints CPU seconds (``getrusage(RUSAGE_CHILDREN)``):

- a bare ``ast.parse`` loop over the files (the floor),
- ``forksafe check --jobs 1 --no-cache`` over the same files, with its peak RSS,
- the same two on torch's own package (``--torch``, the installed torch's sources).

    python benchmarks/dataset_bench.py [--forksafe .venv/bin/forksafe] [--runs 2] [--torch]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / ".corpus" / "datasets"
PINNED = {
    "torchvision": "0.24.1",
    "torchaudio": "2.11.0",
    "monai": "1.5.1",
    "torch_geometric": "2.8.1",
    "timm": "1.0.22",
}
PARTS = ("/data/", "/datasets/", "/dataset/")


def build(python: str) -> list:
    src = OUT / "src"
    if not (OUT / ".complete").exists():
        wheels = OUT / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        for name, version in PINNED.items():
            subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", str(wheels), f"{name}=={version}"], check=True)
        for whl in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(whl) as z:
                for m in z.namelist():
                    if m.endswith(".py") and any(p in "/" + m for p in PARTS):
                        z.extract(m, src)
        (OUT / ".complete").write_text("")
    return sorted(str(p) for p in src.rglob("*.py"))


def torch_files(python: str) -> list:
    loc = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return sorted(str(p) for p in Path(loc).rglob("*.py"))


def child_cpu(cmd: list, stdin: str = "") -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, input=stdin, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss / 1024  # peak RSS of the largest child so far, MB


AST_LOOP = (
    "import ast, sys\n"
    "for p in sys.stdin.read().split('\\n'):\n"
    "    try:\n        ast.parse(open(p, 'rb').read())\n    except Exception:\n        pass\n"
)


def measure(label: str, files: list, forksafe: str, runs: int) -> None:
    listing = "\n".join(files)
    listfile = OUT / f"{label}.txt"
    listfile.write_text(listing)
    for r in range(runs):
        floor, _ = child_cpu([sys.executable, "-c", AST_LOOP], listing)
        tool, _ = child_cpu(["sh", "-c", f'xargs -a "{listfile}" -d "\\n" {forksafe} check --jobs 1 --no-cache --exit-zero'])
        print(f"{label} ({len(files)} files) run {r + 1}: ast.parse loop {floor:.2f} CPU s, "
              f"forksafe check --jobs 1 --no-cache {tool:.2f} CPU s = {tool / floor:.2f}x the floor")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--forksafe", default=str(Path(sys.executable).with_name("forksafe")))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--torch", action="store_true", help="also torch's own package")
    ns = ap.parse_args()
    files = build(sys.executable)
    measure("datasets", files, ns.forksafe, ns.runs)
    if ns.torch:
        measure("torch", torch_files(sys.executable), ns.forksafe, ns.runs)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS of the largest child: {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
