"""Build the benchmark corpus: real-world Python sources available on any machine.

Sources
-------
* ``torch``: the installed torch package of the interpreter given by ``--python`` (found with
  ``importlib.util.find_spec`` -- torch is never imported), copied into the corpus so that every
  tool sees the same bytes under the same relative paths.
* ``torchvision``, ``timm``, ``monai``: pinned wheels fetched with
  ``pip download --no-deps --only-binary=:all:`` and unpacked (``.py`` members only).

Everything lives under ``benchmarks/.corpus/`` (gitignored).  Nothing is downloaded or copied
again when it is already there.

Usable on its own::

    python benchmarks/corpus.py [--only torch,timm] [--corpus-limit N] [--python PATH]

prints the corpus summary and writes the file list to ``benchmarks/.corpus/files.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / ".corpus"
WHEEL_DIR = CORPUS_DIR / "wheels"
SRC_DIR = CORPUS_DIR / "src"

# Pinned third-party packages (all exist on PyPI as wheels; checked with `pip download`).
PINNED: dict[str, str] = {
    "torchvision": "0.24.1",
    "timm": "1.0.22",
    "monai": "1.5.1",
}
ALL_SOURCES = ("torch", *PINNED)

_MARKER = ".complete"


@dataclass
class Corpus:
    root: Path  # every path in `files` is relative to this directory
    files: list[str]  # relative, POSIX separators, sorted
    sources: dict[str, str]  # name -> version
    total_bytes: int

    @property
    def total_mb(self) -> float:
        return self.total_bytes / 1e6

    def abspaths(self) -> list[str]:
        return [str(self.root / f) for f in self.files]


def _sanitize(version: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", version)


def _log(msg: str) -> None:
    print(f"[corpus] {msg}", file=sys.stderr, flush=True)


def _torch_location(python: str) -> tuple[str, str]:
    """Return (package directory, version) of torch for `python`, without importing torch."""
    script = (
        "import importlib.util, json\n"
        "spec = importlib.util.find_spec('torch')\n"
        "loc = list(spec.submodule_search_locations or []) if spec else []\n"
        "try:\n"
        "    import importlib.metadata as md; ver = md.version('torch')\n"
        "except Exception:\n"
        "    ver = 'unknown'\n"
        "print(json.dumps({'loc': loc, 'version': ver}))\n"
    )
    out = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True)
    info = json.loads(out.stdout)
    if not info["loc"]:
        raise SystemExit(f"torch is not installed for {python}; use --only without torch")
    return info["loc"][0], info["version"]


def _copy_py_tree(src: Path, dest: Path, subdir: str) -> None:
    """Copy the .py files of `src` to `dest/subdir/...` (atomically: via a temporary directory)."""
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = Path(dirpath).relative_to(src)
        for name in filenames:
            if name.endswith(".py"):
                target = tmp / subdir / rel / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(dirpath) / name, target)
    (tmp / _MARKER).write_text("ok\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def ensure_torch(python: str) -> tuple[Path, str]:
    loc, version = _torch_location(python)
    dest = SRC_DIR / f"torch-{_sanitize(version)}"
    if not (dest / _MARKER).exists():
        _log(f"copying torch {version} sources from {loc}")
        # Keep the package name as the top-level directory: <dest>/torch/...
        _copy_py_tree(Path(loc), dest, "torch")
    return dest, version


def _download_wheel(python: str, name: str, version: str) -> Path:
    WHEEL_DIR.mkdir(parents=True, exist_ok=True)
    norm = name.replace("-", "_")
    existing = sorted(WHEEL_DIR.glob(f"{norm}-{version}-*.whl"))
    if existing:
        return existing[0]
    _log(f"downloading {name}=={version}")
    subprocess.run(
        [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--disable-pip-version-check", "--quiet", "--dest", str(WHEEL_DIR),
         f"{name}=={version}"],
        check=True,
    )
    existing = sorted(WHEEL_DIR.glob(f"{norm}-{version}-*.whl"))
    if not existing:
        raise SystemExit(f"pip download did not produce a wheel for {name}=={version}")
    return existing[0]


def ensure_wheel_source(python: str, name: str, version: str) -> Path:
    dest = SRC_DIR / f"{name}-{_sanitize(version)}"
    if (dest / _MARKER).exists():
        return dest
    wheel = _download_wheel(python, name, version)
    _log(f"unpacking {wheel.name}")
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            # Only package sources; skip *.dist-info / *.data metadata.
            top = member.split("/", 1)[0]
            if member.endswith(".py") and not top.endswith((".dist-info", ".data")):
                zf.extract(member, tmp)
    (tmp / _MARKER).write_text("ok\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


def _spread(items: list[str], n: int) -> list[str]:
    """Deterministic, evenly spaced sample of n items (keeps the mix of packages and sizes)."""
    if n <= 0 or n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def build_corpus(
    python: str = sys.executable,
    only: list[str] | None = None,
    limit: int = 0,
) -> Corpus:
    wanted = list(only) if only else list(ALL_SOURCES)
    unknown = [w for w in wanted if w not in ALL_SOURCES]
    if unknown:
        raise SystemExit(f"unknown corpus source(s) {unknown}; choose from {list(ALL_SOURCES)}")
    SRC_DIR.mkdir(parents=True, exist_ok=True)
    sources: dict[str, str] = {}
    dirs: list[Path] = []
    for name in wanted:
        if name == "torch":
            d, ver = ensure_torch(python)
        else:
            ver = PINNED[name]
            d = ensure_wheel_source(python, name, ver)
        sources[name] = ver
        dirs.append(d)

    files: list[str] = []
    for d in dirs:
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames.sort()
            for fn in filenames:
                if fn.endswith(".py"):
                    files.append(Path(dirpath, fn).relative_to(CORPUS_DIR).as_posix())
    files.sort()
    files = _spread(files, limit)
    total = sum((CORPUS_DIR / f).stat().st_size for f in files)
    return Corpus(root=CORPUS_DIR, files=files, sources=sources, total_bytes=total)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", default="", help=f"comma-separated subset of {','.join(ALL_SOURCES)}")
    ap.add_argument("--corpus-limit", type=int, default=0)
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] or None
    corpus = build_corpus(args.python, only, args.corpus_limit)
    (CORPUS_DIR / "files.txt").write_text("\n".join(corpus.files) + "\n")
    src = ", ".join(f"{k} {v}" for k, v in corpus.sources.items())
    print(f"corpus: {len(corpus.files)} files, {corpus.total_mb:.1f} MB ({src})")
    print(f"        under {corpus.root}; list in {CORPUS_DIR / 'files.txt'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
