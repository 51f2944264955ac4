"""The declarative knowledge in ``rules/*.toml``, loaded once and extended from config."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def data_dir() -> Path:
    """``rules/`` ships inside the wheel as ``flake8_forksafe/_rules``; in a checkout it is ``rules/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if (candidate / "handles.toml").is_file():
            return candidate
    raise RuntimeError("flake8-forksafe: rule data (rules/*.toml) is missing from the installation")


@dataclass(frozen=True)
class Factory:
    name: str
    derived: FrozenSet[str] = frozenset()
    subscript: bool = False
    close: str = "close"
    when: str = ""


@dataclass(frozen=True)
class Knowledge:
    factories: Dict[str, Factory]
    dataset_bases: FrozenSet[str]
    dataset_base_suffixes: Tuple[str, ...]
    dataset_modules: Tuple[str, ...]
    loaders: FrozenSet[str]
    loader_suffixes: Tuple[str, ...]
    unpicklable: Dict[str, bool]  # qualified name -> lazy fix applies
    cuda_queries: FrozenSet[str]
    device_keywords: FrozenSet[str]
    move_methods: FrozenSet[str]
    cuda_methods: FrozenSet[str]
    default_device_setters: FrozenSet[str]
    start_method_setters: FrozenSet[str]
    forkserver_preload: FrozenSet[str]
    get_context: FrozenSet[str]
    pools: FrozenSet[str]
    process_classes: FrozenSet[str]
    spawners: FrozenSet[str]
    rng_constructors: FrozenSet[str]
    seeders: FrozenSet[str]
    seed_sources: FrozenSet[str]
    # Words a file must contain to possibly hold a dataset/loader finding (the textual pre-filter).
    words: Tuple[str, ...] = field(default=())

    def extended(self, handle_factories=(), dataset_bases=(), loaders=()) -> "Knowledge":
        if not (handle_factories or dataset_bases or loaders):
            return self
        factories = dict(self.factories)
        for name in handle_factories:
            factories.setdefault(name, Factory(name))
        extra_words = tuple(n.rsplit(".", 1)[-1] for n in (*dataset_bases, *loaders))
        return Knowledge(
            **{
                **self.__dict__,
                "factories": factories,
                "dataset_bases": self.dataset_bases | frozenset(dataset_bases),
                "loaders": self.loaders | frozenset(loaders),
                "words": tuple(dict.fromkeys(self.words + extra_words)),
            }
        )


def _load(name: str) -> dict:
    with open(data_dir() / name, "rb") as fh:
        return tomllib.load(fh)


@functools.lru_cache(maxsize=None)
def default_knowledge() -> Knowledge:
    handles = _load("handles.toml")
    datasets = _load("datasets.toml")
    unpick = _load("unpicklable.toml")
    cuda = _load("cuda.toml")
    mp = _load("multiprocessing.toml")
    rng = _load("rng.toml")
    factories = {
        f["name"]: Factory(
            name=f["name"],
            derived=frozenset(f.get("derived", ())),
            subscript=bool(f.get("subscript", False)),
            close=f.get("close", "close"),
            when=f.get("when", ""),
        )
        for f in handles["factory"]
    }
    return Knowledge(
        factories=factories,
        dataset_bases=frozenset(datasets["bases"]),
        dataset_base_suffixes=tuple(datasets["base_name_suffixes"]),
        dataset_modules=tuple(datasets["dataset_modules"]),
        loaders=frozenset(datasets["loaders"]),
        loader_suffixes=tuple(datasets["loader_name_suffixes"]),
        unpicklable={o["name"]: bool(o.get("lazy", False)) for o in unpick["object"]},
        cuda_queries=frozenset(cuda["queries"]),
        device_keywords=frozenset(cuda["device_keywords"]),
        move_methods=frozenset(cuda["move_methods"]),
        cuda_methods=frozenset(cuda["cuda_methods"]),
        default_device_setters=frozenset(cuda["default_device_setters"]),
        start_method_setters=frozenset(mp["start_method_setters"]),
        forkserver_preload=frozenset(mp["forkserver_preload"]),
        get_context=frozenset(mp["get_context"]),
        pools=frozenset(mp["pools"]),
        process_classes=frozenset(mp["process_classes"]),
        spawners=frozenset(mp["spawners"]),
        rng_constructors=frozenset(rng["constructors"]),
        seeders=frozenset(rng["seeders"]),
        seed_sources=frozenset(rng["seed_sources"]),
        # The textual pre-filter (prefilter.py): a file with none of these words cannot have a finding.
        words=tuple(
            dict.fromkeys(
                ("Dataset", "DataLoader", "DataPipe", "datasets", "worker_init_fn")
                + tuple(b.rsplit(".", 1)[-1] for b in datasets["bases"])
                + tuple(l.rsplit(".", 1)[-1] for l in datasets["loaders"])
            )
        ),
    )
