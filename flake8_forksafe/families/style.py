"""The line length generated code keeps to: the project's own, read from the nearest
``[tool.ruff]`` / ``[tool.black]`` in pyproject.toml, ``ruff.toml`` / ``.ruff.toml``, or flake8's
``max-line-length`` in ``.flake8`` / setup.cfg / tox.ini; 88 (ruff's and black's default) otherwise."""

from __future__ import annotations

import configparser
import sys
from functools import lru_cache
from pathlib import Path
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10
    import tomli as tomllib

DEFAULT = 88


def _int(v: object) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and 40 <= v <= 400 else None


def _from_toml(path: Path, ruff_file: bool) -> Optional[int]:
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, ValueError):
        return None
    if ruff_file:
        return _int(doc.get("line-length"))
    tool = doc.get("tool")
    if not isinstance(tool, dict):
        return None
    for name in ("ruff", "black"):
        section = tool.get(name)
        if isinstance(section, dict) and _int(section.get("line-length")) is not None:
            return _int(section.get("line-length"))
    return None


def _from_ini(path: Path) -> Optional[int]:
    cp = configparser.RawConfigParser()
    try:
        cp.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    for section in ("flake8", "pycodestyle"):
        for key in ("max-line-length", "max_line_length"):
            if cp.has_option(section, key):
                try:
                    return _int(int(cp.get(section, key).strip()))
                except ValueError:
                    return None
    return None


@lru_cache(maxsize=256)
def _for_dir(d: Path) -> int:
    for cand in (d, *d.parents):
        for name in ("ruff.toml", ".ruff.toml"):
            if (cand / name).is_file():
                got = _from_toml(cand / name, True)
                if got is not None:
                    return got
        if (cand / "pyproject.toml").is_file():
            got = _from_toml(cand / "pyproject.toml", False)
            if got is not None:
                return got
        for name in (".flake8", "setup.cfg", "tox.ini"):
            if (cand / name).is_file():
                got = _from_ini(cand / name)
                if got is not None:
                    return got
    return DEFAULT


def line_length(path: str) -> int:
    """The line length of the project that ``path`` belongs to."""
    if not path or path.startswith("<"):
        return DEFAULT
    try:
        return _for_dir(Path(path).resolve().parent)
    except (OSError, RuntimeError, ValueError):
        return DEFAULT
