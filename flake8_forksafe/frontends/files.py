"""Which files to check: recursive discovery with excludes, like flake8 and ruff."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

from flake8_forksafe.config import Config

PY_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIXES = (".ipynb",)  # checked cell by cell (notebook.py)


def _excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    name = path.name
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside the root, or a symlink loop
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
    except (ValueError, RuntimeError, OSError):  # outside the root, or a symlink loop
        rel = Path(os.path.normpath(path))
    parts = rel.parts
    return any(_excluded(root.joinpath(*parts[: i + 1]), patterns, root) for i in range(len(parts)))


def discover_files(paths: Sequence[str], config: Config) -> Tuple[List[str], List[str]]:
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
        kind = file_kind(p)
        if kind != "directory" and kind != "file":
            errors.append(f"{shown(p)}: {kind}" + ("" if kind == "no such file or directory" else "; skipped"))
            continue
        if kind == "file":
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
            if name.endswith(PY_SUFFIXES + NOTEBOOK_SUFFIXES):
                f = d / name
                if file_kind(str(f)) != "file":  # FIFOs, sockets, devices, broken links, loops: silently
                    continue
                if not _excluded(f, patterns, root):
                    yield str(f)


def file_kind(path: str) -> str:
    """'file' (a regular file, through symlinks), 'directory', or why the path cannot be read, in words."""
    try:
        st = os.stat(path)
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if exc.errno == errno.ENOENT:
            return "no such file or directory" if not os.path.islink(path) else "broken symlink"
        return f"cannot read: {exc.strerror or exc}"
    except ValueError:  # an embedded NUL byte
        return "invalid path"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    if stat.S_ISFIFO(st.st_mode):
        return "not a regular file (a FIFO)"
    if stat.S_ISSOCK(st.st_mode):
        return "not a regular file (a socket)"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "not a regular file (a device)"
    return "not a regular file"


def shown(path: str) -> str:
    """A path as it can be printed: bytes of a non-UTF-8 name as \\xNN escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable(findings: list) -> list:
    """The findings, with file names that are not valid UTF-8 (surrogate escapes) made printable."""
    from dataclasses import replace

    out = []
    for f in findings:
        try:
            f.path.encode("utf-8")
        except UnicodeEncodeError:
            f = replace(f, path=shown(f.path))
        out.append(f)
    return out



def file_language(path: str) -> "str | None":
    """``"python"`` for .py/.pyi files and extension-less scripts with a python ``#!`` line (what
    pre-commit's ``types: [python]`` passes), ``"notebook"`` for .ipynb (the hook for notebook
    support), None for anything else (named on the command line: one error line, exit 2)."""
    if path.endswith(PY_SUFFIXES):
        return "python"
    if path.endswith(NOTEBOOK_SUFFIXES):
        return "notebook"
    if "." not in os.path.basename(path):
        try:
            with open(path, "rb") as fh:
                first = fh.readline(200)
        except OSError:
            return "python"  # let the reader report it
        if first.startswith(b"#!") and b"python" in first:
            return "python"
    return None
