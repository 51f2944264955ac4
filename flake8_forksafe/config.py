"""Configuration: ``[tool.flake8-forksafe]`` in pyproject.toml, command-line options, flake8 options."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from flake8_forksafe.knowledge import Knowledge, default_knowledge

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A bad option or config value; the message is one line for the user."""


DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".env", "env", "__pycache__",
    "build", "dist", "node_modules", ".eggs", "*.egg-info", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "site-packages", ".forksafe_cache",
)

KNOWN_KEYS = {
    "select", "ignore", "extend-select", "extend-ignore", "exclude", "extend-exclude",
    "extra-handle-factories", "extra-dataset-bases", "extra-loaders", "unsafe-fixes", "jobs", "cache",
    "format", "force-exclude",
}


@dataclass(frozen=True)
class Config:
    select: Tuple[str, ...] = ()          # empty: the rules on by default
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: Tuple[str, ...] = ()
    extra_handle_factories: Tuple[str, ...] = ()
    extra_dataset_bases: Tuple[str, ...] = ()
    extra_loaders: Tuple[str, ...] = ()
    unsafe_fixes: bool = False
    jobs: Optional[int] = None
    cache: bool = True
    format: str = "text"
    force_exclude: bool = False  # apply excludes to files named on the command line too
    root: Optional[Path] = None
    knowledge: Knowledge = field(default_factory=default_knowledge, compare=False, repr=False)

    def with_knowledge(self) -> "Config":
        return replace(
            self,
            knowledge=default_knowledge().extended(
                self.extra_handle_factories, self.extra_dataset_bases, self.extra_loaders
            ),
        )

    def is_enabled(self, code: str, default_on: bool) -> bool:
        """flake8's semantics, so both front ends select the same rules: the longest matching
        prefix of select/ignore wins, select wins ties, and rules that are off by default (FRK501)
        sit in the ignore list (flake8's extend-default-ignore), so only naming them selects them."""
        sel = self.select + self.extend_select
        ignore = self.ignore + (() if default_on else (code,))
        s = max((len(p) for p in sel if code.startswith(p)), default=-1)
        i = max((len(p) for p in ignore if code.startswith(p)), default=-1)
        if s < 0 and i < 0:
            return not self.select
        if s < 0:
            return False
        if i < 0:
            return True
        return s >= i


def _codes(value, key: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of rule codes or prefixes, got {value!r}")
    from flake8_forksafe.checks import ALL_CODES

    out = []
    for v in value:
        v = v.strip().upper()
        if not v:
            continue
        if v in ("ALL", "FRK") or any(c.startswith(v) for c in ALL_CODES):
            out.append("FRK" if v == "ALL" else v)
        elif v.startswith("FRK"):
            raise ConfigError(f"unknown rule code or prefix in {key}: {v} (see `forksafe rules`)")
        else:
            # Other plugins' codes (flake8 shares select/ignore between plugins): not ours to judge.
            out.append(v)
    return tuple(out)


def _strings(value, key: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of strings, got {value!r}")
    return tuple(v.strip() for v in value if v.strip())


def from_mapping(data: dict, base: Optional[Config] = None, source: str = "config") -> Config:
    cfg = base or Config()
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    kw = {}
    for key in ("select", "ignore", "extend-select", "extend-ignore"):
        if key in data:
            kw[key.replace("-", "_")] = _codes(data[key], key)
    if "extend_ignore" in kw:
        kw["ignore"] = kw.get("ignore", cfg.ignore) + kw.pop("extend_ignore")
    for key in ("exclude", "extend-exclude", "extra-handle-factories", "extra-dataset-bases", "extra-loaders"):
        if key in data:
            kw[key.replace("-", "_")] = _strings(data[key], key)
    if "unsafe-fixes" in data:
        if not isinstance(data["unsafe-fixes"], bool):
            raise ConfigError(f"{source}: unsafe-fixes must be true or false")
        kw["unsafe_fixes"] = data["unsafe-fixes"]
    if "force-exclude" in data:
        if not isinstance(data["force-exclude"], bool):
            raise ConfigError(f"{source}: force-exclude must be true or false")
        kw["force_exclude"] = data["force-exclude"]
    if "cache" in data:
        if not isinstance(data["cache"], bool):
            raise ConfigError(f"{source}: cache must be true or false")
        kw["cache"] = data["cache"]
    if "jobs" in data:
        if not isinstance(data["jobs"], int) or isinstance(data["jobs"], bool) or data["jobs"] < 1:
            raise ConfigError(f"{source}: jobs must be a positive integer")
        kw["jobs"] = data["jobs"]
    if "format" in data:
        kw["format"] = str(data["format"])
    return replace(cfg, **kw)


def find_pyproject(start: Path) -> Optional[Path]:
    start = start.resolve()
    for d in (start, *start.parents) if start.is_dir() else (start.parent, *start.parent.parents):
        p = d / "pyproject.toml"
        if p.is_file():
            return p
    return None


def load_pyproject(path: Optional[Path]) -> Config:
    if path is None:
        return Config().with_knowledge()
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    section = doc.get("tool", {}).get("flake8-forksafe", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.flake8-forksafe] must be a table")
    cfg = from_mapping(section, source=f"{path} [tool.flake8-forksafe]")
    return replace(cfg, root=path.parent).with_knowledge()


def discover(paths: Sequence[str], explicit: Optional[str] = None) -> Config:
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        return load_pyproject(p)
    start = Path(paths[0]) if paths else Path.cwd()
    if not start.exists():
        start = Path.cwd()
    return load_pyproject(find_pyproject(start))


def merge_cli(cfg: Config, **options) -> Config:
    """Apply command-line options (None = not given) on top of the file config."""
    data = {k.replace("_", "-"): v for k, v in options.items() if v is not None}
    return from_mapping(data, base=cfg, source="command line").with_knowledge()


def split_list(values: Optional[Iterable[str]]) -> Optional[List[str]]:
    if values is None:
        return None
    out: List[str] = []
    for v in values:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return out
