"""Dataset-heavy corpus benchmark: what issue 10's speed acceptance asks for, printed in one run.

Builds (once, under ``benchmarks/.corpus/datasets/``) a corpus of real packages' data-loading code
from pinned wheels (``pip download --no-deps --only-binary=:all:``): whole packages whose job is
loading data (HF datasets, lhotse, litdata, mosaicml-streaming, torchdata, webdataset, torchgeo,
torchio, pytorch-forecasting, monai without its tests), and the data / datasets / loader / transforms
sub-packages of the others (torchvision, torchaudio, torch_geometric, timm, speechbrain, torchrl).
Then it runs, each in its own child process, and prints CPU seconds (``getrusage(RUSAGE_CHILDREN)``
around the child: user + system):

- a bare ``ast.parse`` loop over the files (the floor) and ``forksafe check --jobs 1 --no-cache``
  over the same files (the ratio to the floor; target <= 2.0x), and forksafe's peak RSS (< 150 MB);
- libcst's parse alone of what ``forksafe check`` gives libcst there (the statements the slicer
  keeps of the files the gate passes): the least the design (libcst visitors) costs;
- the same two on torch's own installed package (target <= 0.6x);
- ``flake8 -j 1`` with the plugin (this environment) against ``flake8 -j 1`` from an environment
  without the plugin (``--flake8-alone``, default ``benchmarks/.venv-flake8-alone/bin/flake8``, made
  on first use with the same flake8 version as this environment's), on the dataset corpus
  (target <= 1.10x).

    python benchmarks/dataset_bench.py [--runs 2] [--skip-torch] [--skip-flake8] [--flake8-limit N]
    python benchmarks/dataset_bench.py --profile 25   # + cProfile of check over the corpus, in-process

Each figure is the best (lowest) of ``--runs`` runs; every run is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / ".corpus" / "datasets"
# name -> (version, the sub-package parts taken; None: the whole package less its tests)
PINNED = {
    "datasets": ("5.2.0", None),
    "lhotse": ("1.33.0", None),
    "litdata": ("0.2.76", None),
    "mosaicml-streaming": ("0.13.0", None),
    "torchdata": ("0.11.0", None),
    "webdataset": ("1.0.2", None),
    "torchgeo": ("0.8.1", None),
    "torchio": ("1.2.1", None),
    "pytorch-forecasting": ("1.8.0", None),
    "monai": ("1.5.1", None),
    "torchvision": ("0.24.1", ("/datasets/", "/io/", "/transforms/")),
    "torchaudio": ("2.11.0", ("/datasets/", "/io/", "/transforms/", "/pipelines/")),
    "torch_geometric": ("2.8.1", ("/data/", "/datasets/", "/loader/", "/sampler/", "/io/", "/transforms/")),
    "timm": ("1.0.22", ("/data/",)),
    "speechbrain": ("1.1.2", ("/dataio/", "/augment/", "/processing/", "/utils/")),
    "torchrl": ("0.14.1", ("/data/", "/envs/")),
}
TESTS = ("/tests/", "/test/", "/testing/")


def build(python: str) -> list:
    src = OUT / "src"
    done = OUT / ".complete"
    stamp = repr(sorted(PINNED.items()))
    if not done.exists() or done.read_text() != stamp:
        wheels = OUT / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        for name, (version, _) in PINNED.items():
            subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", str(wheels), f"{name}=={version}"], check=True)
        for name, (version, parts) in PINNED.items():
            stem = name.replace("-", "_")
            whl = next(wheels.glob(f"{stem}-{version}-*.whl"))
            with zipfile.ZipFile(whl) as z:
                for m in z.namelist():
                    if not m.endswith(".py") or ".dist-info/" in m:
                        continue
                    if parts is None:
                        if any(t in "/" + m for t in TESTS):
                            continue
                    elif not any(p in "/" + m for p in parts):
                        continue
                    z.extract(m, src / stem)
        done.write_text(stamp)
    return sorted(str(p) for p in src.rglob("*.py"))


def torch_files(python: str) -> list:
    loc = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return sorted(str(p) for p in Path(loc).rglob("*.py"))


def child(cmd: list, stdin: str = "") -> tuple:
    """CPU seconds (user + system) and peak RSS (MB) of one child run."""
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], input=sys.stdin.read(), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *cmd], input=stdin, text=True, capture_output=True, check=True)
    cpu, rss = out.stdout.split()
    return float(cpu), float(rss)


AST_LOOP = (
    "import ast, sys\n"
    "for p in sys.stdin.read().split('\\n'):\n"
    "    try:\n        ast.parse(open(p, 'rb').read())\n    except Exception:\n        pass\n"
)


def xargs(listfile: Path, *cmd: str) -> list:
    # one command for the whole list, as the floor is one process: xargs's default 128 KiB of
    # arguments cut the 2,300 paths into two runs (the tool's start-up and project index paid twice)
    return ["xargs", "-s", "1500000", "-a", str(listfile), "-d", "\\n", *cmd]


def measure(label: str, files: list, forksafe: str, runs: int) -> dict:
    listfile = OUT / f"{label}.txt"
    listfile.write_text("\n".join(files))
    best = {"floor": 1e9, "tool": 1e9, "rss": 0.0}
    for r in range(runs):
        floor, _ = child([sys.executable, "-c", AST_LOOP], "\n".join(files))
        tool, rss = child(xargs(listfile, forksafe, "check", "--jobs", "1", "--no-cache", "--exit-zero"))
        print(f"  {label} ({len(files)} files) run {r + 1}: ast.parse loop {floor:.2f} CPU s, "
              f"forksafe check --jobs 1 --no-cache {tool:.2f} CPU s = {tool / floor:.2f}x, peak RSS {rss:.0f} MB",
              flush=True)
        best = {"floor": min(best["floor"], floor), "tool": min(best["tool"], tool), "rss": max(best["rss"], rss)}
    return best


PARSE_FLOOR = (
    "import resource, sys, time\n"
    "import libcst\n"
    "from flake8_forksafe import slicing\n"
    "from flake8_forksafe.frontends.cli import main\n"
    "texts = []\n"
    "reduce = slicing.reduce\n"
    "def keep(text, *a, **k):\n"
    "    out = reduce(text, *a, **k)\n"
    "    texts.append(out[0])\n"
    "    return out\n"
    "slicing.reduce = keep\n"
    "files = sys.stdin.read().split('\\n')\n"
    "import contextlib, io\n"
    "try:\n"
    "    with contextlib.redirect_stdout(io.StringIO()):\n"
    "        main(['check', '--jobs', '1', '--no-cache', '--exit-zero', *files])\n"
    "except SystemExit:\n"
    "    pass\n"
    "def cpu():\n"
    "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    return r.ru_utime + r.ru_stime\n"
    "t = cpu()\n"
    "for x in texts:\n"
    "    libcst.parse_module(x)\n"
    "print(len(texts), sum(map(len, texts)), cpu() - t)\n"
)


def parse_floor(files: list) -> tuple:
    """What the design costs at least: libcst's parse alone of the text ``forksafe check`` hands
    libcst (the statements the slicer keeps of the files the gate passes), CPU seconds."""
    out = subprocess.run([sys.executable, "-c", PARSE_FLOOR], input="\n".join(files), text=True,
                         capture_output=True, check=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def flake8_alone_env(python: str, where: Path) -> str:
    exe = where / "bin" / "flake8"
    if not exe.exists():
        version = subprocess.run([python, "-m", "flake8", "--version"], capture_output=True, text=True).stdout.split()[0]
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", f"flake8=={version}"], check=True)
    return str(exe)


def measure_flake8(files: list, alone: str, runs: int) -> dict:
    listfile = OUT / "flake8.txt"
    listfile.write_text("\n".join(files))
    plugin = str(Path(sys.executable).with_name("flake8"))
    best = {"alone": 1e9, "plugin": 1e9}
    for r in range(runs):
        a, _ = child(xargs(listfile, alone, "-j", "1", "--exit-zero"))
        p, _ = child(xargs(listfile, plugin, "-j", "1", "--exit-zero", "--extend-select", "FRK"))
        print(f"  flake8 ({len(files)} files) run {r + 1}: flake8 alone {a:.2f} CPU s, flake8 + flake8-forksafe "
              f"{p:.2f} CPU s = {p / a:.3f}x", flush=True)
        best = {"alone": min(best["alone"], a), "plugin": min(best["plugin"], p)}
    return best


def profile(files: list, top: int) -> None:
    import cProfile
    import pstats

    from flake8_forksafe.frontends.cli import main as cli_main

    prof = cProfile.Profile()
    prof.enable()
    try:
        cli_main(["check", "--jobs", "1", "--no-cache", "--exit-zero", *files])
    except SystemExit:
        pass
    prof.disable()
    st = pstats.Stats(prof, stream=sys.stdout)
    st.sort_stats("cumulative").print_stats("flake8_forksafe", top)
    st.sort_stats("tottime").print_stats(top)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--forksafe", default=str(Path(sys.executable).with_name("forksafe")))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-flake8", action="store_true")
    ap.add_argument("--flake8-alone", default=str(HERE / ".venv-flake8-alone"),
                    help="a virtual environment with flake8 and without the plugin (made when missing)")
    ap.add_argument("--flake8-limit", type=int, default=0, help="flake8 on an evenly spaced sample of N files")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="then cProfile check, top N functions")
    ns = ap.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "")
    files = build(sys.executable)
    # warm: page cache and .pyc files
    for p in files:
        Path(p).read_bytes()
    subprocess.run([ns.forksafe, "check", "--no-cache", "--exit-zero", *files[:5]], capture_output=True)
    print(f"dataset corpus: {len(files)} files, {sum(os.path.getsize(p) for p in files) / 1e6:.1f} MB "
          f"({', '.join(f'{n} {v}' for n, (v, _) in PINNED.items())})")
    rows = [("datasets", measure("datasets", files, ns.forksafe, ns.runs), 2.0)]
    analysed, chars, libcst_cpu = parse_floor(files)
    print(f"  datasets: libcst.parse_module alone over the {chars / 1e6:.1f} MB forksafe analyses "
          f"({analysed} files the gate passes, sliced) {libcst_cpu:.2f} CPU s = "
          f"{libcst_cpu / rows[0][1]['floor']:.2f}x the best ast.parse floor: the least a libcst analysis costs")
    if not ns.skip_torch:
        tfiles = torch_files(sys.executable)
        rows.append(("torch", measure("torch", tfiles, ns.forksafe, ns.runs), 0.6))
    fl = None
    if not ns.skip_flake8:
        sample = files
        if ns.flake8_limit and ns.flake8_limit < len(files):
            step = len(files) / ns.flake8_limit
            sample = [files[int(i * step)] for i in range(ns.flake8_limit)]
        fl = measure_flake8(sample, flake8_alone_env(sys.executable, Path(ns.flake8_alone)), ns.runs)
    print("summary (best of runs):")
    peak = 0.0
    for label, b, target in rows:
        ratio = b["tool"] / b["floor"]
        peak = max(peak, b["rss"])
        print(f"  {label}: ast.parse {b['floor']:.2f} CPU s, forksafe {b['tool']:.2f} CPU s = {ratio:.2f}x "
              f"(target <= {target}x: {'PASS' if ratio <= target else 'FAIL'})")
    if fl is not None:
        ratio = fl["plugin"] / fl["alone"]
        print(f"  flake8: alone {fl['alone']:.2f} CPU s, + plugin {fl['plugin']:.2f} CPU s = {ratio:.3f}x "
              f"(target <= 1.10x: {'PASS' if ratio <= 1.10 else 'FAIL'})")
    print(f"  forksafe peak RSS: {peak:.0f} MB (target < 150 MB: {'PASS' if peak < 150 else 'FAIL'})")
    if ns.profile:
        profile(files, ns.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
