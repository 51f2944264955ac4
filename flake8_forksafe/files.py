"""Which files to check: recursive discovery with excludes, like flake8 and ruff."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

from flake8_forksafe.config import Config

PY_SUFFIXES = (".py", ".pyi")


def _excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    name = path.name
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    for pat in patterns:
        pat = pat.rstrip("/")
        if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(path.as_posix(), pat):
            return True
        if "/" in pat and (rel == pat or rel.startswith(pat + "/")):
            return True
    return False


def _force_excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    """The file or one of its directories below the project root matches an exclude pattern."""
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        rel = Path(os.path.normpath(path))
    parts = rel.parts
    return any(_excluded(root.joinpath(*parts[: i + 1]), patterns, root) for i in range(len(parts)))


def discover(paths: Sequence[str], config: Config) -> Tuple[List[str], List[str]]:
    """Return (files, errors). Files named explicitly are checked even when excluded, unless
    ``force-exclude`` is set (as in ruff: pre-commit names every file); directories
    are walked, skipping excluded names, hidden/virtualenv/build directories and symlinked dirs."""
    patterns = tuple(config.exclude) + tuple(config.extend_exclude)
    root = (config.root or Path.cwd()).resolve()
    files: List[str] = []
    errors: List[str] = []
    seen = set()
    for p in paths:
        path = Path(p)
        if not path.exists():
            errors.append(f"{p}: no such file or directory")
            continue
        if path.is_file():
            if config.force_exclude and _force_excluded(path, patterns, root):
                continue
            key = os.path.abspath(p)
            if key not in seen:
                seen.add(key)
                files.append(p)
            continue
        for f in _walk(path, patterns, root):
            key = os.path.abspath(f)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, errors


def _walk(top: Path, patterns: Sequence[str], root: Path) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        keep = []
        for name in sorted(dirnames):
            sub = d / name
            if sub.is_symlink() or _excluded(sub, patterns, root):
                continue
            if (sub / "pyvenv.cfg").exists():  # a virtualenv with any name
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.endswith(PY_SUFFIXES):
                f = d / name
                if not _excluded(f, patterns, root):
                    yield str(f)
