"""Fetch and unpack the pinned packages of the labelled real-world corpus.

Reads every ``benchmarks/realworld/packages/*/*.toml``, downloads the pinned distribution with
``pip download --no-deps`` into ``benchmarks/.realworld/dists/`` and unpacks only ``.py`` files
(plus ``pyproject.toml`` / ``setup.cfg``) into ``benchmarks/.realworld/src/<name>/``.

Idempotent: a package whose source directory is complete is skipped, and a distribution already in
``dists/`` is not downloaded again (no network when everything is cached).  One line per package.

    python benchmarks/realworld/fetch.py [--part work|holdout|own-dataset|all] [--only NAME,...]

Exit status: 0, or 1 when a package could not be fetched or unpacked.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
PACKAGES_DIR = HERE / "packages"
CACHE = HERE.parent / ".realworld"
DISTS = CACHE / "dists"
SRC = CACHE / "src"
PARTS = ("work", "holdout", "own-dataset")
_MARKER = ".complete"
_KEEP_NAMES = {"pyproject.toml", "setup.cfg"}


def load_packages(part: str = "all") -> list[dict]:
    """Every package TOML (``[package]`` table plus ``sites``), sorted by part then name."""
    out = []
    for toml_path in sorted(PACKAGES_DIR.glob("*/*.toml")):
        with toml_path.open("rb") as fh:
            data = tomllib.load(fh)
        pkg = dict(data["package"])
        pkg["sites"] = list(data.get("site", []))
        pkg["toml"] = toml_path
        if pkg.get("part") != toml_path.parent.name:
            raise SystemExit(f"{toml_path}: part = {pkg.get('part')!r} but file is under {toml_path.parent.name}/")
        if part in ("all", pkg["part"]):
            out.append(pkg)
    out.sort(key=lambda p: (PARTS.index(p["part"]) if p["part"] in PARTS else 9, p["name"]))
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def find_dist(pkg: dict) -> Path | None:
    """The cached distribution file for this pin, if any."""
    want = _norm(pkg["name"])
    version = pkg["version"]
    for path in sorted(DISTS.glob("*")):
        fname = path.name
        if pkg["dist"] == "wheel" and fname.endswith(".whl"):
            dist_name, dist_version = fname.split("-")[:2]
        elif pkg["dist"] == "sdist" and (fname.endswith(".tar.gz") or fname.endswith(".zip")):
            stem = fname[: -len(".tar.gz")] if fname.endswith(".tar.gz") else fname[: -len(".zip")]
            dist_name, _, dist_version = stem.rpartition("-")
        else:
            continue
        if _norm(dist_name) == want and dist_version == version:
            return path
    return None


def download(pkg: dict) -> Path:
    DISTS.mkdir(parents=True, exist_ok=True)
    spec = f"{pkg['name']}=={pkg['version']}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", "-d", str(DISTS)]
    if pkg["dist"] == "wheel":
        cmd += ["--only-binary=:all:"]
    else:
        # An sdist's metadata would otherwise be prepared in an isolated build environment, which for
        # some packages (fairseq) means downloading torch.  Without isolation pip uses this interpreter.
        cmd += ["--no-binary=:all:", "--no-build-isolation"]
    proc = subprocess.run([*cmd, spec], capture_output=True, text=True)
    found = find_dist(pkg)
    if found is None:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and "is ignored" not in ln]
        last = lines[-1].strip() if lines else f"exit status {proc.returncode}"
        raise RuntimeError(f"pip download {spec} failed: {last}")
    return found


def _wanted(member: str) -> bool:
    name = member.rsplit("/", 1)[-1]
    return member.endswith(".py") or name in _KEEP_NAMES


def _safe(member: str) -> bool:
    parts = member.split("/")
    return not member.startswith("/") and ".." not in parts and "\\" not in member


def unpack(dist: Path, dest: Path) -> int:
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    count = 0
    if dist.name.endswith(".whl") or dist.name.endswith(".zip"):
        with zipfile.ZipFile(dist) as zf:
            for info in zf.infolist():
                if info.is_dir() or not _wanted(info.filename) or not _safe(info.filename):
                    continue
                target = tmp / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
                count += 1
    else:
        with tarfile.open(dist) as tf:
            for member in tf.getmembers():
                if not member.isfile() or not _wanted(member.name) or not _safe(member.name):
                    continue
                fh = tf.extractfile(member)
                if fh is None:
                    continue
                target = tmp / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(fh.read())
                count += 1
    (tmp / _MARKER).write_text(f"{dist.name}\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return count


def source_root(pkg: dict) -> Path:
    """The directory that is checked for this package."""
    root = SRC / pkg["name"]
    return root / pkg["root"] if pkg.get("root") else root


def fetch(pkg: dict) -> str:
    dest = SRC / pkg["name"]
    marker = dest / _MARKER
    if marker.exists():
        dist = find_dist(pkg)
        if dist is not None and marker.read_text().strip() == dist.name:
            n = sum(1 for _ in dest.rglob("*.py"))
            return f"cached     {n:5d} .py files"
    dist = find_dist(pkg)
    how = "cached dist"
    if dist is None:
        dist = download(pkg)
        how = "downloaded"
    n = unpack(dist, dest)
    if not source_root(pkg).is_dir():
        raise RuntimeError(f"root {pkg['root']!r} does not exist in {dist.name}")
    return f"{how:10s} {n:5d} files unpacked from {dist.name}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="all", choices=("all", *PARTS))
    ap.add_argument("--only", default="", help="comma-separated package names")
    args = ap.parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    status = 0
    for pkg in load_packages(args.part):
        if only and pkg["name"] not in only:
            continue
        label = f"{pkg['part']:11s} {pkg['name']}=={pkg['version']} ({pkg['dist']})"
        try:
            msg = fetch(pkg)
        except Exception as exc:  # one clear line per package, never a traceback
            print(f"{label}: FAILED: {exc}")
            status = 1
            continue
        print(f"{label}: {msg}")
    return status


if __name__ == "__main__":
    sys.exit(main())
