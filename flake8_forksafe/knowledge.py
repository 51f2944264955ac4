"""The declarative knowledge in ``rules/*.toml``: the only reader of those files.

Every list in them can be extended from configuration with one generic mechanism: an extension is
``("<file>.<entry>", values)`` (``"datasets.bases"``, ``"unpicklable.transient.functions"``,
``"handles.factory"``); for a list of tables (``handles.factory``, ``unpicklable.object``) a value is
the ``name`` of a new entry, with the defaults of the other fields, and a name already there is kept
as shipped. ``knowledge_for(extensions)`` builds and caches the result (``Config.knowledge``).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Optional, Sequence, Tuple, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def worker_init_like(name: str, first_param: Optional[str]) -> bool:
    """A function written as a DataLoader ``worker_init_fn``: its name says so (``worker_init_fn``,
    ``seed_worker_init``) and its first parameter is ``worker_id``. The gate asks it of an ``ast``
    def (``prefilter.worker_init_def``), FRK602 of a libcst one."""
    return "worker_init" in name.lower() and first_param == "worker_id"


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
    stream: bool = False  # reads move a position that a reopened handle starts again from 0
    mode: Optional[Tuple[int, str, str]] = None  # (position, keyword, default) of the open mode


@dataclass(frozen=True)
class LibraryClass:
    """A library class modelled in ``rules/libraries.toml``."""

    name: str
    dataset: bool = True  # a torch dataset (subclasses are dataset-like)
    hooks: Tuple[str, ...] = ()  # methods its ``__init__`` calls on self: parent-side in a subclass
    transient: FrozenSet[str] = frozenset()  # constructor arguments used while constructing, not kept
    worker_hooks: Tuple[str, ...] = ()  # methods its ``__getitem__``/``__iter__`` calls: worker-side in a subclass


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
    transient_functions: FrozenSet[str]  # calls that use a function argument without keeping it
    transient_methods: FrozenSet[str]
    iteration_consumers: FrozenSet[str]  # FRK401: calls that iterate a loader they are given
    iteration_wrappers: FrozenSet[str]
    context_keywords: Tuple[str, ...]  # FRK401: keywords that pass a multiprocessing context
    collate_method_words: Tuple[str, ...] = ()  # dataset methods that are the loader's collate_fn
    loader_consumer_methods: FrozenSet[str] = frozenset()  # FRK401: `trainer.fit(model, dl)` iterates dl
    loader_factory_words: Tuple[str, ...] = ()  # FRK401: `x.to_dataloader(num_workers=2)` builds a loader
    loader_factory_keywords: Tuple[str, ...] = ("num_workers",)  # ... given one of these (`workers=4`)
    lazy_pools: FrozenSet[str] = frozenset()  # FRK401: executors that start workers on first submit/map
    lazy_pool_starts: FrozenSet[str] = frozenset()
    library_classes: Dict[str, LibraryClass] = field(default_factory=dict)  # rules/libraries.toml
    not_datasets: FrozenSet[str] = frozenset()  # look-alike `...Dataset` classes that are not torch datasets
    not_dataset_modules: Tuple[str, ...] = ()  # modules none of whose classes is a torch dataset
    not_loader_modules: Tuple[str, ...] = ()  # modules whose *DataLoader classes are not torch's
    unpicklable_fork_safe: FrozenSet[str] = frozenset()  # of ``unpicklable``: a fork copy is harmless
    generator_functions: FrozenSet[str] = frozenset()  # calls returning a generator/iterator (FRK203)
    generator_methods: FrozenSet[str] = frozenset()  # pathlib-like methods returning one, on any non-module receiver
    path_generator_methods: FrozenSet[str] = frozenset()  # the same, only on a `...Path(...)` receiver
    # Words a file must contain to possibly hold a dataset/loader finding (the textual pre-filter).
    words: Tuple[str, ...] = field(default=())
    # What other modules derive from this object (``derived``), kept with it: no global keyed by id.
    _derived: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key: str, make: "Callable[[Knowledge], T]") -> "T":
        """``make(self)``, computed once per Knowledge object (e.g. the pre-filter's name sets)."""
        try:
            return self._derived[key]
        except KeyError:
            value = self._derived[key] = make(self)
            return value

    def not_a_loader(self, qname: str) -> bool:
        """``qname`` (resolved through imports) is another framework's loader (``paddle.io.DataLoader``)."""
        return qname not in self.loaders and any(qname.startswith(m + ".") for m in self.not_loader_modules)

    def not_a_dataset(self, qname: str) -> bool:
        """``qname`` (resolved through imports) names another library's look-alike: ``xarray.Dataset``,
        Hugging Face ``datasets.Dataset``, ``tf.data.Dataset``; a modelled torch dataset never is."""
        if qname in self.dataset_bases:
            return False
        lib = self.library_classes.get(qname)
        if lib is not None:
            return not lib.dataset
        if qname in self.not_datasets:
            return True
        return any(qname == m or qname.startswith(m + ".") for m in self.not_dataset_modules)

    def in_dataset_module(self, qname: str) -> bool:
        """A class (a capitalised name) of a ``dataset_modules`` module: ``torchvision.datasets.X``."""
        return qname.rsplit(".", 1)[-1][:1].isupper() and any(qname.startswith(m + ".") for m in self.dataset_modules)

    def library_hooks(self, qname: str) -> Tuple[str, ...]:
        lib = self.library_classes.get(qname)
        return lib.hooks if lib is not None else ()

    def library_worker_hooks(self, qname: str) -> Tuple[str, ...]:
        lib = self.library_classes.get(qname)
        return lib.worker_hooks if lib is not None else ()

    def library_transient(self, qname: str) -> FrozenSet[str]:
        lib = self.library_classes.get(qname)
        return lib.transient if lib is not None else frozenset()


T = TypeVar("T")
Extensions = Tuple[Tuple[str, Tuple[str, ...]], ...]
FILES = ("handles", "datasets", "unpicklable", "cuda", "multiprocessing", "rng", "libraries")


@functools.lru_cache(maxsize=None)
def _shipped() -> Dict[str, dict]:
    out = {}
    for name in FILES:
        with open(data_dir() / f"{name}.toml", "rb") as fh:
            out[name] = tomllib.load(fh)
    return out


def extension_error(key: str) -> str:
    """Why ``key`` names no list of ``rules/*.toml`` that configuration can extend ("" if it does)."""
    node: Any = _shipped()
    parts = key.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            lists = ", ".join(extension_keys())
            return f"unknown knowledge list {key!r} (known: {lists})"
        node = node[part]
    if not isinstance(node, list):
        return f"{key!r} is not a list"
    return ""


def extension_keys() -> Tuple[str, ...]:
    """Every extensible list, as ``file.entry`` (``file.table.entry`` for nested tables)."""
    out = []

    def walk(prefix: str, node: Any) -> None:
        for k, v in node.items():
            if isinstance(v, list):
                out.append(f"{prefix}.{k}")
            elif isinstance(v, dict):
                walk(f"{prefix}.{k}", v)

    for name, data in _shipped().items():
        walk(name, data)
    return tuple(out)


def _extend(data: Dict[str, dict], key: str, values: Sequence[str]) -> None:
    *path, last = key.split(".")
    node = data
    for part in path:
        node[part] = dict(node[part])  # copy on the way down: the shipped data stays as loaded
        node = node[part]
    entries = list(node[last])
    if entries and isinstance(entries[0], dict):  # a list of tables: values are names
        have = {e.get("name") for e in entries}
        entries += [{"name": v} for v in values if v not in have]
    else:
        entries += [v for v in values if v not in entries]
    node[last] = entries


@functools.lru_cache(maxsize=64)
def knowledge_for(extensions: Extensions = ()) -> Knowledge:
    """The shipped knowledge extended by ``extensions`` (``(("datasets.bases", ("mylib.Base",)),)``);
    built once per distinct extensions."""
    data = dict(_shipped())
    for key, values in extensions:
        if values:
            error = extension_error(key)
            if error:
                raise ValueError(error)
            _extend(data, key, values)
    return _build(data)


def default_knowledge() -> Knowledge:
    return knowledge_for(())


def _build(data: Dict[str, dict]) -> Knowledge:
    handles = data["handles"]
    datasets = data["datasets"]
    unpick = data["unpicklable"]
    cuda = data["cuda"]
    mp = data["multiprocessing"]
    rng = data["rng"]
    libs = data["libraries"]
    transient = unpick.get("transient", {})
    library_classes = {
        c["name"]: LibraryClass(
            name=c["name"],
            dataset=bool(c.get("dataset", True)),
            hooks=tuple(c.get("hooks", ())),
            transient=frozenset(c.get("transient", ())),
            worker_hooks=tuple(c.get("worker_hooks", ())),
        )
        for c in libs.get("class", ())
    }
    lib_bases = tuple(n for n, c in library_classes.items() if c.dataset)
    factories = {
        f["name"]: Factory(
            name=f["name"],
            derived=frozenset(f.get("derived", ())),
            subscript=bool(f.get("subscript", False)),
            close=f.get("close", "close"),
            when=f.get("when", ""),
            stream=bool(f.get("stream", False)),
            mode=tuple(f["mode"]) if f.get("mode") else None,
        )
        for f in handles["factory"]
    }
    return Knowledge(
        factories=factories,
        dataset_bases=frozenset(datasets["bases"]) | frozenset(lib_bases),
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
        transient_functions=frozenset(transient.get("functions", ())),
        transient_methods=frozenset(transient.get("methods", ())),
        iteration_consumers=frozenset(mp.get("iteration_consumers", ())),
        iteration_wrappers=frozenset(mp.get("iteration_wrappers", ())),
        context_keywords=tuple(mp.get("context_keywords", ("multiprocessing_context", "mp_context", "context"))),
        collate_method_words=tuple(w.lower() for w in datasets.get("collate_method_words", ())),
        loader_consumer_methods=frozenset(mp.get("loader_consumer_methods", ())),
        loader_factory_words=tuple(w.lower() for w in mp.get("loader_factory_words", ())),
        loader_factory_keywords=tuple(mp.get("loader_factory_keywords", ("num_workers",))),
        lazy_pools=frozenset(mp.get("lazy_pools", ())),
        lazy_pool_starts=frozenset(mp.get("lazy_pool_starts", ())),
        library_classes=library_classes,
        not_datasets=frozenset(libs.get("not_datasets", ())),
        not_dataset_modules=tuple(libs.get("not_dataset_modules", ())),
        not_loader_modules=tuple(libs.get("not_loader_modules", ())),
        unpicklable_fork_safe=frozenset(o["name"] for o in unpick["object"] if o.get("fork_safe", False)),
        generator_functions=frozenset(libs.get("generator_functions", ())),
        generator_methods=frozenset(libs.get("generator_methods", ())),
        path_generator_methods=frozenset(libs.get("path_generator_methods", ())),
        # The textual pre-filter (prefilter.py): a file with none of these words cannot have a finding.
        words=tuple(
            dict.fromkeys(
                ("Dataset", "DataLoader", "DataPipe", "datasets", "worker_init_fn", "num_workers", ".collate_fn")
                + tuple(b.rsplit(".", 1)[-1] for b in datasets["bases"])
                + tuple(b.rsplit(".", 1)[-1] for b in lib_bases)
                + tuple(l.rsplit(".", 1)[-1] for l in datasets["loaders"])
            )
        ),
    )
