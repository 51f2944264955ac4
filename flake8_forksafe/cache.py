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
from flake8_forksafe.engine import Finding

CACHE_DIR = ".forksafe_cache"


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
        try:
            with open(self._path(digest), encoding="utf-8") as fh:
                rows = json.load(fh)
            return [Finding(**{**row, "path": path}) for row in rows]
        except (OSError, ValueError, TypeError):
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
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump([{**asdict(f), "path": ""} for f in findings], fh)
            os.replace(tmp, target)
        except OSError:
            self.ok = False  # read-only tree: run without a cache
