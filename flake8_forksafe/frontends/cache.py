"""Optional on-disk cache of findings, keyed by file content, tool version and configuration."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import List, Optional

from flake8_forksafe import __version__
from flake8_forksafe.config import Config
from flake8_forksafe.model import Finding

CACHE_DIR = ".forksafe_cache"
SCHEMA = 3  # version of an entry's layout; any other is recomputed (3: findings carry their notebook cell)
_FIELDS = {
    "line": int, "col": int, "code": str, "message": str, "end_line": int, "end_col": int, "name": str, "cell": int,
}


def _checksum(rows: list, digest: str) -> str:
    """Over the findings and the source's digest: an entry moved to another file's name fails too."""
    blob = json.dumps(rows, sort_keys=True, separators=(",", ":")) + digest
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def valid_rows(entry: object, digest: str) -> Optional[list]:
    from flake8_forksafe.checks import ALL_CODES

    if not isinstance(entry, dict) or set(entry) != {"schema", "checksum", "findings"}:
        return None
    rows = entry["findings"]
    if entry["schema"] != SCHEMA or not isinstance(rows, list) or entry["checksum"] != _checksum(rows, digest):
        return None
    for row in rows:
        if not isinstance(row, dict) or set(row) != set(_FIELDS) | {"fix"}:
            return None
        for key, typ in _FIELDS.items():
            if type(row[key]) is not typ:
                return None
        if row["code"] not in ALL_CODES or row["fix"] not in (None, "safe", "unsafe"):
            return None
        if row["line"] < 1 or row["col"] < 0 or row["end_line"] < row["line"] or row["end_col"] < 0 or row["cell"] < 0:
            return None
    return rows


def config_key(config: Config) -> str:
    from flake8_forksafe.checks import ALL_RULES

    k = config.knowledge
    parts = [
        __version__,
        ",".join(r.code for r in ALL_RULES if config.is_enabled(r.code, r.default_enabled)),
        ",".join(sorted(k.factories)),
        ",".join(sorted(k.dataset_bases)),
        ",".join(sorted(k.loaders)),
    ]
    if config.extend_knowledge:
        parts.append(repr(config.extend_knowledge))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


class Cache:
    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config
        self.ok = True

    @functools.cached_property
    def dir(self) -> Path:
        # computed on first use: the key loads the rule classes, which files that fail the
        # pre-filter never need
        return self.root / CACHE_DIR / config_key(self.config)

    def _path(self, digest: str) -> Path:
        return self.dir / digest[:2] / f"{digest}.json"

    @staticmethod
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def get(self, digest: str, path: str) -> Optional[List[Finding]]:
        """The cached findings, or None: missing, unreadable, or failing validation (schema version,
        checksum, every field's type and range): a cache entry is never trusted blindly."""
        try:
            with open(self._path(digest), encoding="utf-8") as fh:
                entry = json.load(fh)
            rows = valid_rows(entry, digest)
            if rows is None:
                return None
            return [Finding(**{**row, "path": path}) for row in rows]
        except (OSError, ValueError, TypeError, RecursionError):
            return None

    def put(self, digest: str, findings: List[Finding]) -> None:
        if not self.ok:
            return
        target = self._path(digest)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.dir.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n")
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            rows = [{k: v for k, v in asdict(f).items() if k != "path"} for f in findings]
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"schema": SCHEMA, "checksum": _checksum(rows, digest), "findings": rows}, fh)
            os.replace(tmp, target)
        except OSError:
            self.ok = False  # read-only tree: run without a cache
