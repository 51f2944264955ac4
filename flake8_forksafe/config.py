"""Configuration: ``[tool.flake8-forksafe]`` in pyproject.toml, command-line options, flake8 options."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from flake8_forksafe.knowledge import Extensions, Knowledge, extension_error, knowledge_for

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
    "format", "force-exclude", "extend-knowledge", "per-file-ignores", "extend-per-file-ignores",
}

# Codes that are not rules of checks/: FRK000 is a file that does not parse (ignorable like a rule).
SYNTAX_ERROR = "FRK000"


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
    # any list of rules/*.toml extended: (("datasets.bases", ("mylib.Base",)), ...); see knowledge.py
    extend_knowledge: Extensions = ()
    # (glob, codes) pairs: flake8/ruff ``per-file-ignores`` (a leading ``!`` negates the glob)
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    file_ignore: Tuple[str, ...] = ()  # the per-file codes of one file (``for_path``)

    @property
    def knowledge(self) -> Knowledge:
        """The knowledge these options ask for: derived here only, built once per distinct options."""
        return knowledge_for(self.knowledge_extensions())

    def knowledge_extensions(self) -> Extensions:
        pairs = (
            ("handles.factory", self.extra_handle_factories),
            ("datasets.bases", self.extra_dataset_bases),
            ("datasets.loaders", self.extra_loaders),
        ) + self.extend_knowledge
        return tuple((key, values) for key, values in pairs if values)

    def is_enabled(self, code: str, default_on: bool) -> bool:
        """flake8's semantics, so both front ends select the same rules: the longest matching
        prefix of select/ignore wins, select wins ties, and rules that are off by default (FRK501)
        sit in the ignore list (flake8's extend-default-ignore), so only naming them selects them."""
        if self.file_ignore and code.startswith(self.file_ignore):
            return False  # per-file-ignores win over every selection (as in ruff)
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


    def reports_syntax_errors(self) -> bool:
        """FRK000 is reported whatever is selected, unless an ignore names it (or a prefix of it) and
        no longer select does."""
        code = SYNTAX_ERROR
        if self.file_ignore and code.startswith(self.file_ignore):
            return False
        i = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        s = max((len(p) for p in self.select + self.extend_select if code.startswith(p)), default=-1)
        return i < 0 or s > i

    def file_ignores(self, path: str) -> Tuple[str, ...]:
        """The per-file-ignores codes that apply to ``path``."""
        if not self.per_file_ignores:
            return ()
        root = self.root or Path.cwd()
        try:
            rel = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(root))).as_posix()
        except ValueError:
            rel = Path(path).as_posix()
        rel = posixpath.normpath(rel)
        out: List[str] = []
        for pattern, codes in self.per_file_ignores:
            negate = pattern.startswith("!")
            if _path_matches(rel, pattern[1:] if negate else pattern) != negate:
                out.extend(codes)
        return tuple(out)

    def for_path(self, path: str) -> "Config":
        codes = self.file_ignores(path)
        return replace(self, file_ignore=codes) if codes else self


def _path_matches(rel: str, pattern: str) -> bool:
    """flake8/ruff matching: a pattern without ``/`` matches the file name or the relative path; one
    with ``/`` the path relative to the project root (``*`` crosses directories, as in flake8); a
    pattern naming a directory matches the files below it."""
    pat = pattern.strip()
    if pat.startswith("./"):
        pat = pat[2:]
    pat = pat.rstrip("/") or pat
    name = rel.rsplit("/", 1)[-1]
    if "/" not in pat and fnmatch.fnmatchcase(name, pat):
        return True
    if fnmatch.fnmatchcase(rel, pat):
        return True
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:i]), pat) for i in range(1, len(parts)))


def _per_file(value, key: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f'{key} must be a table of glob = [codes], e.g. {{ "tests/*" = ["FRK101"] }}')
    out = []
    for pattern, codes in value.items():
        if not isinstance(pattern, str) or not pattern.strip():
            raise ConfigError(f"{key}: an empty file pattern")
        out.append((pattern.strip(), _codes(codes, f"{key} {pattern!r}")))
    return tuple(out)


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
        if v in ("ALL", "FRK") or any(c.startswith(v) for c in ALL_CODES + (SYNTAX_ERROR,)):
            out.append("FRK" if v == "ALL" else v)
        else:
            # forksafe's own options and section: every code must be ours (flake8, which shares
            # select/ignore between plugins, does not come through here).
            raise ConfigError(f"unknown rule code or prefix in {key}: {v}{_closest(v, ALL_CODES)} (see `forksafe rules`)")
    return tuple(out)


def _closest(value: str, codes: Sequence[str]) -> str:
    import difflib

    match = difflib.get_close_matches(value, list(codes), n=1, cutoff=0.5)
    if not match and value[:1].isalpha():  # XYZ: no close code; name the family a prefix would give
        match = difflib.get_close_matches(value, list(codes), n=1, cutoff=0.0)
    return f"; did you mean {match[0]}?" if match else ""


def _strings(value, key: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of strings, got {value!r}")
    return tuple(v.strip() for v in value if v.strip())


def _extensions(value, source: str) -> Extensions:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: extend-knowledge must be a table of lists, e.g. {{\"datasets.bases\" = [...]}}")
    out = []
    for key, names in value.items():
        error = extension_error(str(key))
        if error:
            raise ConfigError(f"{source}: extend-knowledge: {error}")
        out.append((str(key), _strings(names, f"extend-knowledge.{key}")))
    return tuple(out)


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
    if "per-file-ignores" in data:
        kw["per_file_ignores"] = _per_file(data["per-file-ignores"], "per-file-ignores")
    if "extend-per-file-ignores" in data:
        kw["per_file_ignores"] = kw.get("per_file_ignores", cfg.per_file_ignores) + _per_file(
            data["extend-per-file-ignores"], "extend-per-file-ignores"
        )
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
    if "extend-knowledge" in data:
        kw["extend_knowledge"] = _extensions(data["extend-knowledge"], source)
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
        return Config()
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    section = doc.get("tool", {}).get("flake8-forksafe", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.flake8-forksafe] must be a table")
    cfg = from_mapping(section, source=f"{path} [tool.flake8-forksafe]")
    return replace(cfg, root=path.parent)


def discover_config(paths: Sequence[str], explicit: Optional[str] = None) -> Config:
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
    return from_mapping(data, base=cfg, source="command line")


def split_list(values: Optional[Iterable[str]]) -> Optional[List[str]]:
    if values is None:
        return None
    out: List[str] = []
    for v in values:
        out.extend(x for x in v.replace(",", " ").split() if x)
    return out
