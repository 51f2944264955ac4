"""The project index: what each module of a project defines, so that a file's checks can follow a
base class, a helper or a re-export into another module of the same project.

Each module is summarised once from the CPython ``ast`` tree (the tree the pre-filter gate already
builds can be passed in) into plain data that serialises to JSON: classes with their bases as
qualified names, methods (parameters stored on ``self``, ``self.`` methods called, ``super().__init__``),
what functions return (handles, generators, RNGs, CUDA values), and module-level handles.

A ``ProjectIndex`` maps module names to files under the project root, summarises modules on demand
(or all at once for ``forksafe check DIR``) and caches summaries by content hash in
``.forksafe_cache/index-v<N>/``. It never imports or runs the code it reads, and it does not follow
imports into installed packages: names it cannot find in the project stay qualified names, for the
library models in ``rules/`` to judge.
"""

from __future__ import annotations

import ast
import bisect
import functools
import hashlib
import json
import os
import stat
import re
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from flake8_forksafe.knowledge import Knowledge
from flake8_forksafe.prefilter import LEAF_FIELDS, _dotted, split_lines  # the gate's readers: one definition

SCHEMA = 14  # bump when the summary's shape or meaning changes: old cache entries are then ignored
CACHE_DIR = ".forksafe_cache"  # as cache.CACHE_DIR (not imported: that module loads the engine)
ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")
MAX_DEPTH = 32  # resolution steps (re-export chains, base chains)
MAX_LOADER_FN_FILES = 400  # files of a tests / examples / scripts directory read for loader_callable_user
_LOADER_FN_TEXT = re.compile(r"(?:collate_fn|worker_init_fn)[ \t]*=")
MAX_KEEPER_MODULES = 24  # modules ProjectIndex.keepers summarises for one holder class
MAX_TEXT_BYTES = 4_000_000  # a listed package file larger than this is not read (_file_text)
# a package whose files add up to more than this is not searched for datasets keeping a holder's
# objects (keepers): torch's own 46 MB made every holder question read (and keep) all of it, for no
# finding; the largest real project of the labelled corpus has 11 MB
MAX_HOLDER_PACKAGE_BYTES = 16_000_000
# where installed distributions live: the packages side by side there are not one project
_INSTALL_DIRS = frozenset({"site-packages", "dist-packages"})
# directories of a project that hold no module of it (``ProjectIndex.importers``)
_NOT_PROJECT_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env", "build", "dist"})

# --------------------------------------------------------------------------------------------------
# summaries (plain data)


@dataclass
class Assign:
    """``self.attr = <value>`` in a method. ``kind``: "factory" (detail: the factory's name),
    "param" (detail: the parameter, or ``kwargs[key]``), "none", "call" (detail: the callee,
    ``self.m`` or a qualified name), "generator", "rng", "cuda", "device" (a CUDA device literal:
    ``"cuda"``, ``torch.device("cuda:0")``, possibly under a condition), "other"."""

    attr: str
    line: int
    kind: str
    detail: str = ""


@dataclass
class Method:
    name: str
    line: int
    params: List[str] = field(default_factory=list)
    assigns: List[Assign] = field(default_factory=list)
    self_calls: List[str] = field(default_factory=list)
    super_init: bool = False
    base_inits: List[str] = field(default_factory=list)  # Base.__init__(self): qualified Base
    # "", "factory:<name>", "generator", "rng:<constructor>", "cuda", "call:<callee>", "loader:<workers>"
    # (``_Summariser.loader_workers``)
    returns: str = ""
    cuda: str = ""  # the first call in the body that initialises CUDA or moves data to it ("torch.cuda.current_device()")
    cuda_line: int = 0
    callees: List[str] = field(default_factory=list)  # qualified names of plain calls (project helpers followed)
    loader_attrs: List[str] = field(default_factory=list)  # `DataLoader(..., collate_fn=self.X)`: "X:<line>"
    # where a parameter (or a ``self.X`` attribute) goes as a device: "<src>:<line>" when it reaches
    # CUDA work in this body (``.to(src)``, ``.cuda(src)``, ``torch.*(device=src)``, ``map_location=src``,
    # an unresolvable call given it); ``device_flows``: "<src>><dest>" when it is stored (dest
    # ``self.X``) or passed on to another callable (dest ``<callee>|<keyword>`` / ``<callee>|#<i>``,
    # callee qualified or ``self.m``). ``src`` is a parameter name or ``self.X``.
    device_uses: List[str] = field(default_factory=list)
    device_flows: List[str] = field(default_factory=list)
    # the objects a call may give (``makes``: of the return values; ``keeps``: "<attr>:<line>:<entry>"
    # of a value kept on ``self``), looking into containers and comprehensions: "call:<callee>" (the
    # result of a call: an instance when the callee is a class), "obj:<name>" (a named object, e.g.
    # a class), "callret:<callee>" (calling what the callee returns: ``cls_ = pick(); return cls_(f)``)
    makes: List[str] = field(default_factory=list)
    keeps: List[str] = field(default_factory=list)
    # of an ``__init__``: parameters it only calls (``label_fn(path)``, also in a list comprehension)
    # or never reads; of another method, the parameters it calls that it only calls; never stored,
    # passed on, captured by a nested scope or a generator expression
    transient: List[str] = field(default_factory=list)
    # parameters the body passes as they are to a seeder of ``rules/rng.toml`` (``random.seed(seed)``):
    # a seeding helper (``set_global_seed(seed)``), followed by FRK602 from a worker_init_fn
    seeds: List[str] = field(default_factory=list)
    # the datasets of the DataLoader calls in the body whose ``num_workers`` is not 0 (literally, or
    # by default): "<source>:<line>", source "self.<attr>", "type.<qualified annotation>" (a parameter
    # annotated with a class) or "call.<qualified callee>" (``DataLoader(Rows(...))``)
    loader_datasets: List[str] = field(default_factory=list)
    # the parameters a returned value's constructor is given as they are (``return ImageFolder(root,
    # transform=transform)``, also through a local it was assigned to): "<callee>|<param>|<keyword>",
    # callee qualified, keyword "" when passed by position: what a library dataset a factory returns keeps
    forwards: List[str] = field(default_factory=list)
    # what a DataLoader call whose ``num_workers`` is not literally 0 is given as ``collate_fn`` /
    # ``worker_init_fn`` when that is the result of a call or an attribute of an object (what a
    # function, method or property returns): "<call|attr>|<qualified or ''>|<last name>|<keyword>|<line>"
    # (``collate_fn=make_collate(pad)``, ``collate_fn=Batch.collate()``, ``collate_fn=ds.collator``
    # with ``ds = TextDataset(...)``: qualified ``pkg.data.TextDataset.collator``; "" when the
    # receiver is not known)
    loader_fns: List[str] = field(default_factory=list)


@dataclass
class ClassSummary:
    name: str
    line: int
    bases: List[str] = field(default_factory=list)  # qualified; "" for a base that is not a name
    methods: Dict[str, Method] = field(default_factory=dict)
    # attributes whose type the class declares: a class-level ``attr: X`` (dataclass, pydantic
    # fields) or ``self.attr = param`` in ``__init__`` with ``param: X``: attr -> qualified X
    fields: Dict[str, str] = field(default_factory=dict)


@dataclass
class ModuleSummary:
    module: str
    path: str
    is_package: bool = False
    names: Dict[str, str] = field(default_factory=dict)  # imports and aliases: local -> qualified
    classes: Dict[str, ClassSummary] = field(default_factory=dict)
    functions: Dict[str, Method] = field(default_factory=dict)
    # module-level: attr is the global name; kind "factory" (a handle, detail its factory) or "device"
    # (a value that may be a CUDA device: ``DEFAULT_DEVICE = "cuda" if ... else "cpu"``)
    handles: List[Assign] = field(default_factory=list)
    error: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "ModuleSummary":
        classes = {
            k: ClassSummary(
                name=c["name"],
                line=c["line"],
                bases=list(c["bases"]),
                methods={m: _method(v) for m, v in c["methods"].items()},
                fields=dict(c["fields"]),
            )
            for k, c in d["classes"].items()
        }
        s = ModuleSummary(
            module=d["module"],
            path=d["path"],
            is_package=d["is_package"],
            names=dict(d["names"]),
            classes=classes,
            functions={k: _method(v) for k, v in d["functions"].items()},
            handles=[Assign(**h) for h in d["handles"]],
            error=d.get("error", ""),
        )
        return _compacted(s)


def _method(d: dict) -> Method:
    return Method(**{**d, "assigns": [Assign(**a) for a in d["assigns"]]})


# --------------------------------------------------------------------------------------------------
# the summariser




def absolute_module(current: str, is_package: bool, level: int, module: Optional[str]) -> str:
    """The absolute module ``from <level dots><module> import ...`` names inside ``current``."""
    if not level:
        return module or ""
    parts = current.split(".") if current else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: max(0, len(parts) - (level - 1))]
    if module:
        parts.append(module)
    return ".".join(p for p in parts if p)


class _Summariser:
    def __init__(self, k: Knowledge, module: str, is_package: bool) -> None:
        self.k = k
        self.s = ModuleSummary(module=module, path="", is_package=is_package)
        self.loader_names, self.loader_suffixes = k.derived("index.loader_names", _loader_names)
        self.loader_tails = k.derived("index.loader_words", _loader_words)  # a quick first test

    # -- names
    def qualify(self, d: Optional[str]) -> Optional[str]:
        if d is None:
            return None
        head, _, rest = d.partition(".")
        target = self.s.names.get(head)
        if target is None:
            if head in self.s.classes or head in self.s.functions:
                target = f"{self.s.module}.{head}" if self.s.module else head
            elif head in BUILTINS:
                target = head
            else:
                return d
        return f"{target}.{rest}" if rest else target

    def imports(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.s.names[a.asname] = a.name
                else:
                    root = a.name.split(".", 1)[0]
                    self.s.names[root] = root
        elif isinstance(node, ast.ImportFrom):
            mod = absolute_module(self.s.module, self.s.is_package, node.level, node.module)
            for a in node.names:
                if a.name != "*":
                    self.s.names[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name

    # -- values
    def factory(self, call: ast.Call) -> Optional[str]:
        q = self.qualify(_dotted(call.func))
        if q is None:
            return None
        f = self.k.factories.get(q) or (self.k.factories.get(q[9:]) if q.startswith("builtins.") else None)
        if f is None:
            return None
        if f.when == "npz":
            first = call.args[0] if call.args else None
            if not (isinstance(first, ast.Constant) and str(first.value).endswith(".npz")):
                return None
            if any(kw.arg == "mmap_mode" for kw in call.keywords):
                return None
        elif f.when == "chunked":
            ok = False
            for kw in call.keywords:
                v = kw.value
                if kw.arg == "chunksize" and not (isinstance(v, ast.Constant) and v.value is None):
                    ok = True
                if kw.arg == "iterator" and isinstance(v, ast.Constant) and v.value is True:
                    ok = True
            if not ok:
                return None
        return f.name

    def kind(self, value: Optional[ast.AST], fn: "_Fn", depth: int = 0) -> Tuple[str, str]:
        if value is None or depth > 6:
            return "other", ""
        if isinstance(value, ast.Constant) and value.value is None:
            return "none", ""
        if _cuda_literal(value):  # "cuda", "cuda:0", torch.device("cuda")
            return "device", "cuda"
        if isinstance(value, ast.GeneratorExp):
            return "generator", ""
        if isinstance(value, ast.Name):
            if value.id in fn.params:
                # a parameter the body may replace with a new object (``if rng is None: rng =
                # random.Random()``; ``rng = rng or np.random.default_rng()``) may be that object
                for v in reversed(fn.locals.get(value.id, [])[-4:]):
                    k = self.kind(v, fn, depth + 1)
                    if k[0] in ("factory", "generator", "rng", "cuda", "device"):
                        return k
                return "param", value.id
            vals = fn.locals.get(value.id)
            if vals:
                return self.kind(vals[-1], fn, depth + 1)
            return "other", ""
        if isinstance(value, ast.Subscript):  # kwargs["x"]
            if isinstance(value.value, ast.Name) and value.value.id == fn.kwargs:
                key = value.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    return "param", f"{fn.kwargs}[{key.value}]"
            return "other", ""
        if isinstance(value, ast.IfExp):
            for branch in (value.body, value.orelse):
                k = self.kind(branch, fn, depth + 1)
                if k[0] in ("factory", "generator", "rng", "cuda", "device"):
                    return k
            return self.kind(value.body, fn, depth + 1)
        if isinstance(value, ast.BoolOp):
            for v in value.values:
                k = self.kind(v, fn, depth + 1)
                if k[0] in ("factory", "generator", "rng", "cuda", "device"):
                    return k
            return "other", ""
        if isinstance(value, ast.Call):
            f = self.factory(value)
            if f:
                return "factory", f
            func = value.func
            # kwargs.get("x") / kwargs.pop("x", d)
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "pop")
                and isinstance(func.value, ast.Name)
                and func.value.id == fn.kwargs
                and value.args
                and isinstance(value.args[0], ast.Constant)
            ):
                return "param", f"{fn.kwargs}[{value.args[0].value}]"
            q = self.qualify(_dotted(func))
            if q in self.k.rng_constructors:
                return "rng", q or ""
            if isinstance(func, ast.Attribute):
                if func.attr in self.k.cuda_methods:
                    return "cuda", func.attr
                if func.attr in self.k.move_methods and value.args and _cuda_literal(value.args[0]):
                    return "cuda", func.attr
            if any(kw.arg in self.k.device_keywords and _cuda_literal(kw.value) for kw in value.keywords):
                return "cuda", q or ""
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == fn.self:
                return "call", f"self.{func.attr}"
            if q:
                return "call", q
        return "other", ""

    def loader_workers(self, value: ast.AST, fn: "_Fn", node: ast.AST, depth: int = 0) -> str:
        """When ``value`` (a returned value, or the local it names) is a DataLoader call (not one of
        ``not_loader_modules``): its ``num_workers`` as ``Method.returns`` records it: "0" (literally
        0, or not given without ``**``), "param:<name>:<default>" (a parameter of the function, its
        literal int default or ""), "some" (anything else: a literal above 0, ``**kwargs``, an
        expression); "" when it is no loader call."""
        if isinstance(value, ast.Name) and value.id not in fn.params and depth < 3:
            vals = fn.locals.get(value.id)
            return self.loader_workers(vals[-1], fn, node, depth + 1) if vals else ""
        if not isinstance(value, ast.Call):
            return ""
        d = _dotted(value.func) or ""
        last = d.rsplit(".", 1)[-1]
        q = self.qualify(d) or d
        if not (last in self.loader_names or last.endswith(self.loader_suffixes)) or self.k.not_a_loader(q):
            return ""
        arg = next((kw.value for kw in value.keywords if kw.arg == "num_workers"), None)
        if arg is None and len(value.args) > 5 and not any(isinstance(a, ast.Starred) for a in value.args[:6]):
            arg = value.args[5]  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers)
        if arg is None:
            star = any(kw.arg is None for kw in value.keywords) or any(isinstance(a, ast.Starred) for a in value.args)
            return "some" if star else "0"
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
            return "0" if arg.value == 0 else "some"
        if isinstance(arg, ast.Name) and arg.id in fn.params and arg.id not in fn.locals:
            a = node.args  # type: ignore[attr-defined]
            positional = [p.arg for p in (*a.posonlyargs, *a.args)]
            default = ""
            if arg.id in positional:
                i = positional.index(arg.id) - (len(positional) - len(a.defaults))  # defaults align right
                dv = a.defaults[i] if i >= 0 else None
            else:
                j = [p.arg for p in a.kwonlyargs].index(arg.id)
                dv = a.kw_defaults[j]
            if isinstance(dv, ast.Constant) and isinstance(dv.value, int):
                default = str(dv.value)
            return f"param:{arg.id}:{default}"
        return "some"

    def loader_dataset(self, call: ast.Call, fn: "_Fn", m: Method, node: ast.AST) -> None:
        """``Method.loader_datasets``: what a DataLoader call whose ``num_workers`` is not literally
        0 is given as its dataset, when the index can tell its class later."""
        if self.loader_workers(call, fn, node) in ("", "0"):  # "": no loader call
            return
        arg = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        if arg is None:
            arg = next((kw.value for kw in call.keywords if kw.arg == "dataset"), None)
        if isinstance(arg, ast.Name) and arg.id not in fn.params and fn.locals.get(arg.id):
            arg = fn.locals[arg.id][-1]  # ``ds = Rows(...)``; ``DataLoader(ds)``
        src = ""
        if _self_attr(arg, fn.self):
            src = f"self.{arg.attr}"  # type: ignore[union-attr]
        elif isinstance(arg, ast.Name) and arg.id in fn.params and arg.id not in fn.locals:
            ann = fn.annotations.get(arg.id)
            typ = self.annotated_class(ann) if ann is not None else None
            src = f"type.{typ}" if typ else ""
        elif isinstance(arg, ast.Call):
            callee = self.qualify(_dotted(arg.func))
            src = f"call.{callee}" if callee else ""
        if src and len(m.loader_datasets) < 16:
            m.loader_datasets.append(f"{src}:{call.lineno}")
        self.loader_fns(call, fn, m)

    def loader_fns(self, call: ast.Call, fn: "_Fn", m: Method) -> None:
        """``Method.loader_fns`` of a DataLoader call with workers."""
        for kw in call.keywords:
            if kw.arg not in ("collate_fn", "worker_init_fn") or len(m.loader_fns) >= 16:
                continue
            v = kw.value
            if isinstance(v, ast.Name) and v.id not in fn.params and fn.locals.get(v.id):
                v = fn.locals[v.id][-1]  # ``collate = make_collate(pad)``; ``collate_fn=collate``
            kind = "call" if isinstance(v, ast.Call) else "attr"
            d = _dotted(v.func if isinstance(v, ast.Call) else v)
            if not d or (kind == "attr" and "." not in d):
                continue  # a function given as it is: not what something returns
            head, _, rest = d.partition(".")
            qual = ""
            if rest and head in fn.locals and head not in fn.params:
                made = fn.locals[head][-1]  # ``ds = TextDataset(...)``; ``collate_fn=ds.collator``
                d_made = _dotted(made.func) if isinstance(made, ast.Call) else None
                known = d_made is not None and d_made.split(".", 1)[0] in (*self.s.names, *self.s.classes)
                qual = f"{self.qualify(d_made)}.{rest}" if known else ""
            elif head in self.s.names or head in self.s.classes or head in self.s.functions:
                qual = self.qualify(d) or ""
            m.loader_fns.append(f"{kind}|{qual}|{d.rsplit('.', 1)[-1]}|{kw.arg}|{call.lineno}")

    def annotated_class(self, ann: ast.AST, depth: int = 0) -> Optional[str]:
        """The class an annotation names, qualified: ``Dataset``, ``Dataset[T]``, ``"Dataset"``,
        ``Optional[Dataset]``; None for anything else."""
        if depth > 2:
            return None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value.strip(), mode="eval").body
            except (SyntaxError, ValueError):
                return None
        if isinstance(ann, ast.Subscript):
            head = self.qualify(_dotted(ann.value)) or ""
            if head in ("typing.Optional", "Optional"):
                return self.annotated_class(ann.slice, depth + 1)
            ann = ann.value
        d = _dotted(ann)
        return self.qualify(d) if d else None

    def loader_self_args(self, call: ast.Call, self_name: str, m: Method) -> None:
        """``DataLoader(..., collate_fn=self.X, worker_init_fn=self.Y)`` whose ``num_workers`` is not
        literally 0: a subclass that stores a lambda or a local function in ``self.X`` hands it to
        the workers."""
        d = _dotted(call.func) or ""
        last = d.rsplit(".", 1)[-1]
        if not (last in self.loader_names or last.endswith(self.loader_suffixes)):
            return
        for kw in call.keywords:
            if kw.arg == "num_workers" and isinstance(kw.value, ast.Constant) and kw.value.value == 0:
                return
        for kw in call.keywords:
            v = kw.value
            if (
                kw.arg in ("collate_fn", "worker_init_fn")
                and isinstance(v, ast.Attribute)
                and isinstance(v.value, ast.Name)
                and v.value.id == self_name
            ):
                m.loader_attrs.append(f"{v.attr}:{call.lineno}")

    def init_fields(self, init: ast.AST, self_name: str, c: ClassSummary) -> None:
        """``self.attr = param`` in ``__init__``'s own statements with ``param: X``: a field of type X."""
        anns = _annotations(init.args)  # type: ignore[attr-defined]
        for st in init.body:  # type: ignore[attr-defined]
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Name):
                tgt = st.targets[0]
                if _self_attr(tgt, self_name) and st.value.id in anns and tgt.attr not in c.fields:  # type: ignore[union-attr]
                    typ = self.annotated_class(anns[st.value.id])
                    if typ:
                        c.fields[tgt.attr] = typ  # type: ignore[union-attr]

    def cuda_call(self, call: ast.Call) -> str:
        """How ``call`` uses CUDA, as FRK301/FRK302 count it, from literals only: ``torch.cuda.X()``
        other than the queries of ``rules/cuda.toml``, ``x.cuda()``, ``x.to("cuda")``,
        ``device="cuda"``; "" when it does not."""
        func = call.func
        q = self.qualify(_dotted(func)) or ""
        if q.startswith("torch.cuda.") and q not in self.k.cuda_queries:
            return f"{q}()"
        if isinstance(func, ast.Attribute) and not q.startswith("torch."):
            if func.attr in self.k.cuda_methods:
                return f".{func.attr}()"
            if func.attr in self.k.move_methods and call.args and _cuda_literal(call.args[0]):
                return f".{func.attr}(cuda)"
        if any(kw.arg in self.k.device_keywords and _cuda_literal(kw.value) for kw in call.keywords):
            return f"{q or 'call'}(device=cuda)"
        return ""

    # -- functions
    def function(self, node, self_name: Optional[str], cls_name: Optional[str] = None) -> Method:
        """``cls_name``: a classmethod's first parameter (``cls.m()`` resolves on the receiver class,
        as ``self.m()`` does: ``BloscInterface.get_crop()`` inherited, calling ``cls._fixed_crop()``)."""
        a = node.args
        params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        m = Method(name=node.name, line=node.lineno, params=params)
        fn = _Fn(params, self_name, a.kwarg.arg if a.kwarg else None, cls=cls_name, annotations=_annotations(a))
        body_nodes = _body_nodes(node.body)
        generator = False
        returns: List[ast.AST] = []
        saved_names: Optional[Dict[str, str]] = None
        for n in body_nodes:
            if isinstance(n, ast.ImportFrom):  # a function-level import names things in this body only
                if saved_names is None:
                    saved_names = dict(self.s.names)
                self.imports(n)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        fn.locals.setdefault(t.id, []).append(n.value)
                    elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in fn.locals:
                        fn.locals[t.value.id].append(n.value)  # `router[k] = io`: the local holds it too
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
                filled = _FILLS.get(n.func.attr)  # `ios.append(io)`: the local list holds it too
                if filled is not None and n.func.value.id in fn.locals and len(n.args) > filled:
                    fn.locals[n.func.value.id].append(n.args[filled])
            elif isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name):
                fn.with_names.add(n.optional_vars.id)
            elif isinstance(n, (ast.Yield, ast.YieldFrom)):
                generator = True
            elif isinstance(n, ast.Return) and n.value is not None:
                returns.append(n.value)
        for n in body_nodes:
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and self_name:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if _self_attr(t, self_name):
                        v = n.value
                        if isinstance(v, ast.Name) and v.id in fn.with_names:
                            kind, detail = "other", ""
                        else:
                            kind, detail = self.kind(v, fn)
                            self.keep(m, t.attr, n.lineno, v, fn)
                        m.assigns.append(Assign(t.attr, n.lineno, kind, detail))  # type: ignore[union-attr]
                    elif _self_attr(t.value if isinstance(t, ast.Subscript) else None, self_name):
                        self.keep(m, t.value.attr, n.lineno, n.value, fn)  # type: ignore[union-attr]
            elif isinstance(n, ast.Call):
                f = n.func
                if (  # `self.dbs.append(self.connect_db(p))`: the container on self keeps it too
                    self_name
                    and isinstance(f, ast.Attribute)
                    and f.attr in _FILLS
                    and _self_attr(f.value, self_name)
                    and len(n.args) > _FILLS[f.attr]
                ):
                    self.keep(m, f.value.attr, n.lineno, n.args[_FILLS[f.attr]], fn)  # type: ignore[attr-defined]
                own = _self_attr(f, self_name)
                q = None if own else self.qualify(_dotted(f))
                if (not own and isinstance(f, (ast.Name, ast.Attribute))
                        and (f.attr if isinstance(f, ast.Attribute) else f.id).endswith(self.loader_tails)):
                    self.loader_dataset(n, fn, m, node)
                if self_name:
                    self.loader_self_args(n, self_name, m)
                elif q in self.k.seeders:
                    seed = n.args[0] if n.args else next((kw.value for kw in n.keywords if kw.arg == "seed"), None)
                    if isinstance(seed, ast.Name) and seed.id in params and seed.id not in fn.locals and seed.id not in m.seeds:
                        m.seeds.append(seed.id)
                if not m.cuda:
                    use = self.cuda_call(n)
                    if use:
                        m.cuda, m.cuda_line = use, n.lineno
                if not own:
                    if q and q not in m.callees and len(m.callees) < 64 and not q.startswith(("torch.", "numpy.", "builtins.")):
                        m.callees.append(q)
                if isinstance(f, ast.Attribute):
                    if self_name and isinstance(f.value, ast.Name) and f.value.id == self_name:
                        if f.attr not in m.self_calls:
                            m.self_calls.append(f.attr)
                    elif f.attr == "__init__":
                        if (
                            isinstance(f.value, ast.Call)
                            and isinstance(f.value.func, ast.Name)
                            and f.value.func.id == "super"
                        ):
                            m.super_init = True
                        else:
                            q = self.qualify(_dotted(f.value))
                            if q and q not in m.base_inits:
                                m.base_inits.append(q)
            elif isinstance(n, ast.Attribute) and self_name and isinstance(n.value, ast.Name):
                pass
        if self_name or any("dev" in p or p in self.k.device_keywords for p in params):
            self.device_flow(body_nodes, fn, m)
        else:
            m.device_uses = ["*:0"]  # not followed: a device given to it counts as CUDA work
        for r in returns:
            for e in self.produced(r, fn):
                if e not in m.makes and len(m.makes) < 16:
                    m.makes.append(e)
            for e in self.forwarded(r, fn):
                if e not in m.forwards and len(m.forwards) < 16:
                    m.forwards.append(e)
        if saved_names is not None:
            self.s.names = saved_names
        if self_name and node.name == "__init__":  # constructor arguments used only while constructing
            m.transient = transient_params_of_ast(node, [p for p in params if p != self_name])
        elif self_name:  # a pipeline stage's (``ds.filter(fn)``): only a parameter the body calls
            called = {n.func.id for n in body_nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            m.transient = transient_params_of_ast(node, [p for p in params if p != self_name and p in called])
        loader = next((w for w in (self.loader_workers(r, fn, node) for r in returns) if w), "")
        if generator:
            m.returns = "generator"
        elif loader:
            m.returns = f"loader:{loader}"
        else:
            for r in returns:
                kind, detail = self.kind(r, fn)
                if kind in ("factory", "call"):
                    m.returns = f"{kind}:{detail}"
                    break
                if kind == "rng":
                    m.returns = f"rng:{detail}" if detail else "rng"  # the constructor, for messages
                    break
                if kind in ("generator", "cuda"):
                    m.returns = kind
                    break
        return m

    def keep(self, m: Method, attr: str, line: int, v: ast.AST, fn: "_Fn") -> None:
        """``Method.keeps`` entries for the value ``v`` kept in ``self.<attr>`` (assigned, or put
        into a container there)."""
        if not isinstance(v, ast.Constant) and len(m.keeps) < 32:
            for e in self.produced(v, fn):
                m.keeps.append(f"{attr}:{line}:{e}")

    def sources(self, e: Optional[ast.AST], fn: "_Fn", depth: int = 0) -> Set[str]:
        """The parameters and ``self.X`` attributes whose value ``e`` may be as a device: the name
        itself, a local assigned from it, ``x or y`` / ``a if c else b``, ``torch.device(x)``."""
        if e is None or depth > 4:
            return set()
        if isinstance(e, ast.Name):
            if e.id in fn.params:
                return {e.id}
            out: Set[str] = set()
            for v in fn.locals.get(e.id, ())[-2:]:
                out |= self.sources(v, fn, depth + 1)
            return out
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and fn.self and e.value.id == fn.self:
            return {f"self.{e.attr}"}
        if isinstance(e, ast.BoolOp):
            return set().union(*(self.sources(v, fn, depth + 1) for v in e.values))
        if isinstance(e, ast.IfExp):
            return self.sources(e.body, fn, depth + 1) | self.sources(e.orelse, fn, depth + 1)
        if isinstance(e, ast.Call) and self.qualify(_dotted(e.func)) == "torch.device" and e.args:
            return self.sources(e.args[0], fn, depth + 1)
        return set()

    def produced(self, e: Optional[ast.AST], fn: "_Fn", depth: int = 0) -> List[str]:
        """``Method.makes`` entries for the value ``e`` (see there)."""
        if e is None or depth > 4:
            return []
        if isinstance(e, ast.Call):
            d = _dotted(e.func)
            if d is None:
                return []
            head = d.split(".", 1)[0]
            if head in fn.locals and "." not in d:  # calling a local: what it was assigned
                out: List[str] = []
                for v in fn.locals[head][-4:]:
                    for x in self.produced(v, fn, depth + 1):
                        kind, _, what = x.partition(":")
                        if kind == "obj":
                            out.append(f"call:{what}")
                        elif kind == "call":
                            out.append(f"callret:{what}")
                return out
            if head in fn.params or head in fn.locals or head == fn.self:
                if head == fn.self and d.count(".") == 1:
                    return [f"call:self.{d.split('.', 1)[1]}"]
                if head == fn.cls and d.count(".") == 1:
                    return [f"call:cls.{d.split('.', 1)[1]}"]
                return []
            q = self.qualify(d)
            return [f"call:{q}"] if q and not q.startswith(("builtins.", "torch.", "numpy.")) else []
        if isinstance(e, (ast.Name, ast.Attribute)):
            d = _dotted(e)
            if d is None:
                return []
            head = d.split(".", 1)[0]
            if head in fn.locals and "." not in d:
                return [x for v in fn.locals[head][-4:] for x in self.produced(v, fn, depth + 1)]
            if head in fn.params or head in fn.locals or head == fn.self:
                return []
            q = self.qualify(d)
            return [f"obj:{q}"] if q and not q.startswith("builtins.") else []
        if isinstance(e, ast.DictComp):
            return self.produced(e.value, fn, depth + 1)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.produced(e.elt, fn, depth + 1)
        if isinstance(e, ast.Dict):
            return [x for v in e.values[:8] for x in self.produced(v, fn, depth + 1)]
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return [x for v in e.elts[:8] for x in self.produced(v, fn, depth + 1)]
        if isinstance(e, ast.IfExp):
            return self.produced(e.body, fn, depth + 1) + self.produced(e.orelse, fn, depth + 1)
        return []

    def forwarded(self, e: Optional[ast.AST], fn: "_Fn", depth: int = 0) -> List[str]:
        """``Method.forwards`` entries for the returned value ``e`` (see there)."""
        if isinstance(e, ast.Name) and e.id in fn.locals and depth < 2:
            return [x for v in fn.locals[e.id][-4:] for x in self.forwarded(v, fn, depth + 1)]
        if not isinstance(e, ast.Call):
            return []
        d = _dotted(e.func)
        if d is None:
            return []
        head = d.split(".", 1)[0]
        if head in fn.params or head in fn.locals or head == fn.self:
            return []
        q = self.qualify(d)
        if not q:
            return []
        out = [f"{q}|{a.id}|" for a in e.args if isinstance(a, ast.Name) and a.id in fn.params]
        out += [f"{q}|{k.value.id}|{k.arg}" for k in e.keywords if k.arg and isinstance(k.value, ast.Name) and k.value.id in fn.params]
        return out

    def device_flow(self, body_nodes: List[ast.AST], fn: "_Fn", m: Method) -> None:
        """``Method.device_uses`` / ``device_flows`` (see there)."""
        uses: List[str] = []
        flows: List[str] = []

        def add(lst: List[str], item: str) -> None:
            if item not in lst and len(lst) < 32:
                lst.append(item)

        for n in body_nodes:
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and fn.self:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                srcs = self.sources(n.value, fn)
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == fn.self:
                        for src in srcs:
                            if src != f"self.{t.attr}":
                                add(flows, f"{src}>self.{t.attr}")
                continue
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            q = self.qualify(_dotted(f)) or ""
            args = [(f"#{i}", v) for i, v in enumerate(n.args) if not isinstance(v, ast.Starred)]
            args += [(kw.arg, kw.value) for kw in n.keywords if kw.arg is not None]
            own = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and fn.self is not None and f.value.id == fn.self
            moving = isinstance(f, ast.Attribute) and not own and not q.startswith("torch.") and (
                f.attr in self.k.move_methods or f.attr in self.k.cuda_methods
            )
            for key, v in args:
                srcs = self.sources(v, fn)
                if not srcs:
                    continue
                if moving and key in ("#0", "device"):
                    sink = True
                elif q.startswith("torch."):
                    sink = key in self.k.device_keywords or (q.startswith("torch.cuda.") and key == "#0")
                elif q.startswith(("builtins.", "logging.")) or (isinstance(f, ast.Attribute) and f.attr in _LOG_METHODS):
                    continue  # print(device), str(device), logger.info(...)
                elif own:
                    for src in srcs:
                        add(flows, f"{src}>self.{f.attr}|{key}")
                    continue
                elif q:  # resolved (or not) when asked: an unresolvable callee counts as CUDA work
                    for src in srcs:
                        add(flows, f"{src}>{q}|{key}")
                    continue
                else:
                    sink = True  # a call the index cannot follow (a method of an object, super())
                if sink:
                    for src in srcs:
                        add(uses, f"{src}:{n.lineno}")
        m.device_uses, m.device_flows = uses, flows

    # -- the module
    def definition(self, node: Union[ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef]) -> Union[ClassSummary, Method]:
        """The summary of a top-level ``class`` or ``def`` (put in the module's summary too)."""
        s = self.s
        if not isinstance(node, ast.ClassDef):
            s.functions[node.name] = self.function(node, None)
            return s.functions[node.name]
        c = s.classes[node.name] = ClassSummary(node.name, node.lineno)
        for b in node.bases:
            if isinstance(b, ast.Subscript):
                b = b.value
            c.bases.append(self.qualify(_dotted(b)) or "")
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                typ = self.annotated_class(item.annotation)  # ``dataset: Dataset`` (a field)
                if typ:
                    c.fields[item.target.id] = typ
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decos = {_dotted(d) for d in item.decorator_list}
                a = item.args
                first = (a.posonlyargs + a.args)[:1]
                self_name = first[0].arg if first and not decos & {"staticmethod", "classmethod"} else None
                cls_name = first[0].arg if first and "classmethod" in decos else None
                c.methods[item.name] = self.function(item, self_name, cls_name)
                if item.name == "__init__" and self_name:
                    self.init_fields(item, self_name, c)
        return c

    def run(self, tree: ast.Module, lines: Optional[List[str]] = None, memo: Optional["StatementMemo"] = None) -> ModuleSummary:
        """``lines`` (the text's lines) and ``memo``: the summaries of the top-level ``def`` / ``class``
        statements are taken from ``memo`` when the same code was summarised in the same context
        before (moved to its new lines), and remembered there (the language server's document)."""
        s = self.s
        # imports anywhere at module level (under if/try too), then definitions, in source order
        for node in _module_level(tree.body):
            self.imports(node)
        for node in _module_level(tree.body):
            if isinstance(node, ast.ClassDef):
                s.classes[node.name] = ClassSummary(node.name, node.lineno)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                s.functions[node.name] = Method(node.name, node.lineno)
        reuse = memo is not None and lines is not None
        context: Optional[tuple] = None  # what a definition's summary depends on besides its code
        for node in _module_level(tree.body):
            key = None
            if reuse and isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if context is None:
                    context = (frozenset(s.names.items()), frozenset(s.classes), frozenset(s.functions))
                key = ("".join(lines[start - 1 : node.end_lineno or node.lineno]), node.col_offset, context)  # type: ignore[index]
                hit = memo.take(key, start)  # type: ignore[union-attr]
                if hit is not None:
                    (s.classes if isinstance(node, ast.ClassDef) else s.functions)[node.name] = hit  # type: ignore[index]
                    continue
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                made = self.definition(node)
                if key is not None:
                    memo.keep(key, start, made)  # type: ignore[union-attr]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if not isinstance(t, ast.Name):
                        continue
                    d = _dotted(node.value)
                    if d is not None:  # Alias = Base / Alias = mod.Base
                        q = self.qualify(d)
                        if q and q != t.id:
                            s.names[t.id] = q
                            context = None
                    elif isinstance(node.value, ast.Call):
                        f = self.factory(node.value)
                        if f:
                            s.handles.append(Assign(t.id, node.lineno, "factory", f))
                    if _may_be_cuda(node.value):  # DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
                        s.handles.append(Assign(t.id, node.lineno, "device"))
        return s


_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
def _annotations(a: ast.arguments) -> Dict[str, ast.AST]:
    """A function's annotated parameters: name -> annotation."""
    return {p.arg: p.annotation for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.annotation is not None}


def _self_attr(e: Optional[ast.AST], self_name: Optional[str]) -> bool:
    """``e`` is ``self.<attr>``."""
    return isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == self_name


# container methods that put a value into a local container (the libcst side's CONTAINER_METHODS, less
# ``__setitem__``): the position of the value (or of the iterable / mapping whose values go in:
# ``extend``, ``update``) among the arguments
_FILLS = {"append": 0, "add": 0, "extend": 0, "update": 0, "insert": 1, "setdefault": 1}


@dataclass
class _Fn:
    params: List[str]
    self: Optional[str]
    kwargs: Optional[str]
    cls: Optional[str] = None  # a classmethod's first parameter
    locals: Dict[str, List[ast.AST]] = field(default_factory=dict)
    with_names: Set[str] = field(default_factory=set)
    annotations: Dict[str, ast.AST] = field(default_factory=dict)  # parameter -> its annotation


# statements at the start of a line (after spaces or tabs), found by ``_at_line_starts``: a search
# for the keyword, then a look at the line before it, is several times faster than ``^`` with re.M
_CLASS_BASES = re.compile(r"class[ \t]+\w+[ \t]*\(([^)]*)")
_FROM_IMPORT = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
_IMPORT = re.compile(r"import[ \t]+([^\n]*)")


def _line_start_matches(
    pattern: "re.Pattern[str]", text: str, indented: bool = True, after_async: bool = False
) -> Iterator[Tuple[int, "re.Match[str]"]]:
    """(where its line starts, the match) for each match of ``pattern`` (which should start with a
    keyword, so that ``re`` finds its candidates by a fast literal search) that only spaces or tabs
    (``indented``; nothing when False) and, with ``after_async``, an ``async`` keyword precede on its
    line: what ``re.compile("^[ \\t]*(?:async[ \\t]+)?" + pattern, re.M)`` would find, several times
    faster. A match elsewhere is skipped and the search goes on from its next character, so that it
    hides no match that starts inside it."""

    def line_start(start: int) -> int:
        line = text.rfind("\n", 0, start) + 1
        before = text[line:start]
        if indented:
            before = before.lstrip(" \t")
        if not before or (after_async and before[:5] == "async" and len(before) > 5 and not before[5:].strip(" \t")):
            return line
        return -1

    return _accepted_matches(pattern, text, line_start)


def _accepted_matches(
    pattern: "re.Pattern[str]", text: str, accept: Callable[[int], int]
) -> Iterator[Tuple[int, "re.Match[str]"]]:
    """(``accept(start)``, the match) for each match of ``pattern`` whose start ``accept`` does not
    answer -1 for; after a refused match the search goes on from its next character, so that it
    hides no match that starts inside it."""
    pos = 0
    search = pattern.search
    while True:
        m = search(text, pos)
        if m is None:
            return
        got = accept(m.start())
        if got < 0:
            pos = m.start() + 1
        else:
            yield got, m
            pos = m.end()


def _imported_names(imported: str) -> Iterator[List[str]]:
    """The names an import clause binds, each as its words, a comment dropped: ``a, b as c  #
    x`` (of ``from m import ...`` or ``import ...``, in parentheses or not) gives ``["a"]``,
    ``["b", "as", "c"]``."""
    for n in imported.strip("()").split(","):
        words = n.split("#", 1)[0].split()
        if words:
            yield words


def _at_line_starts(pattern: "re.Pattern[str]", text: str) -> list:
    """``re.compile("^[ \\t]*" + pattern, re.M).findall(text)`` (``_line_start_matches``)."""
    if pattern.groups > 1:
        return [m.groups() for _, m in _line_start_matches(pattern, text)]
    return [m.group(1) for _, m in _line_start_matches(pattern, text)]


def _word_matches(pattern: "re.Pattern[str]", text: str) -> Iterator["re.Match[str]"]:
    """The matches of ``pattern`` (which starts with a literal word, found by a fast literal search)
    that start a word: what ``\\b`` + ``pattern`` would find, several times faster. A match inside a
    word is skipped and the search goes on from its next character, so that it hides no match."""

    def word_start(start: int) -> int:
        c = text[start - 1] if start else " "
        return -1 if c.isalnum() or c == "_" else 0

    return (m for _, m in _accepted_matches(pattern, text, word_start))


@functools.lru_cache(maxsize=None)
def _rest_of(pattern: "re.Pattern[str]") -> "re.Pattern[str]":
    """``pattern`` without its leading ``\\n``."""
    assert pattern.pattern.startswith("\\n")
    return re.compile(pattern.pattern[2:], pattern.flags)


def _line_matches(pattern: "re.Pattern[str]", text: str) -> Iterator["re.Match[str]"]:
    """The matches of ``pattern`` = ``"\\n" + rest`` (found by a fast search for the newline), and of
    ``rest`` at the start of ``text``: what ``^`` + ``rest`` with re.M finds, faster. A match's
    groups and end are ``rest``'s (its start is one less, at the newline)."""
    first = _rest_of(pattern).match(text)
    if first is not None:
        yield first
    yield from pattern.finditer(text, first.end() if first is not None else 0)


def _indent(text: str, line: int) -> int:
    """How many spaces or tabs start the line that starts at ``line``."""
    end = line
    while end < len(text) and text[end] in " \t":
        end += 1
    return end - line


def _calls_name(text: str, name: str) -> bool:
    """``name`` is called as written (``TaskSet(``, not ``x.TaskSet(`` nor ``MyTaskSet(``):
    what ``(?<![\\w.])(\\w+)\\(`` finds, by a literal search for ``name(``."""
    if not _WORD.fullmatch(name):
        return False
    want = name + "("
    pos = text.find(want)
    while pos >= 0:
        if pos == 0:
            return True
        c = text[pos - 1]
        if not (c.isalnum() or c == "_" or c == "."):
            return True
        pos = text.find(want, pos + 1)
    return False


BUILTINS = frozenset({"open", "object", "super", "type"})


def _loader_names(k: Knowledge) -> Tuple[FrozenSet[str], Tuple[str, ...]]:
    """(the last parts of the loaders' names, the loader name suffixes), once per knowledge."""
    return frozenset(q.rsplit(".", 1)[-1] for q in k.loaders), tuple(k.loader_suffixes)


def _loader_words(k: Knowledge) -> Tuple[str, ...]:
    """The loaders' names and name suffixes: a call or a text naming none of them names no loader."""
    names, suffixes = _loader_names(k)
    return tuple(sorted(names)) + tuple(suffixes)


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_WANTED = (ast.Assign, ast.AnnAssign, ast.withitem, ast.Yield, ast.YieldFrom, ast.Return, ast.Call, ast.ImportFrom)
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}  # node type -> its fields, less the operator/context ones


_LEAF_VALUE = (ast.Constant, getattr(ast, "MatchSingleton", ast.Constant))  # their ``value`` is no node
# node type -> (its fields that may hold nodes, whether _Summariser.function reads the node)
_TYPE_INFO: Dict[type, Tuple[Tuple[str, ...], bool]] = {}
_PUSHED: Dict[type, bool] = {}  # type -> a child of that type is walked (a node, not a nested scope)


def _type_info(t: type) -> Tuple[Tuple[str, ...], bool]:
    fields = tuple(
        f for f in getattr(t, "_fields", ()) if f not in LEAF_FIELDS and not (f == "value" and issubclass(t, _LEAF_VALUE))
    )
    got = _TYPE_INFO[t] = (fields, issubclass(t, _WANTED))
    return got


def _body_nodes(body: List[ast.stmt]) -> List[ast.AST]:
    """The nodes of a function body that ``_Summariser.function`` reads (assignments, ``with``
    items, yields, returns, calls), without nested functions, classes and lambdas below the body's
    own statements, in source order (ties in the order of a depth-first walk that pops the last
    child pushed, as ``ast.iter_child_nodes`` lists them). The walk reads each node type's fields
    directly, skips the fields that never hold a node (``prefilter.LEAF_FIELDS``: names, operators,
    contexts), and tells nodes to read and children to walk by a lookup of their type: the same
    nodes in the same order as a walk with ``ast.iter_child_nodes``, several times faster."""
    out: List[ast.AST] = []
    todo: List[ast.AST] = list(body)
    info, pushed = _TYPE_INFO, _PUSHED
    AST, nested = ast.AST, _NESTED
    pop, push = todo.pop, todo.append
    while todo:
        n = pop()
        t = type(n)
        ti = info.get(t)
        if ti is None:
            ti = _type_info(t)
        fields, wanted = ti
        if wanted:
            out.append(n)
        for f in fields:
            v = getattr(n, f, None)
            if type(v) is list:
                for c in v:
                    tc = type(c)
                    ok = pushed.get(tc)
                    if ok is None:
                        ok = pushed[tc] = issubclass(tc, AST) and not issubclass(tc, nested)
                    if ok:
                        push(c)
            elif v is not None:
                tc = type(v)
                ok = pushed.get(tc)
                if ok is None:
                    ok = pushed[tc] = issubclass(tc, AST) and not issubclass(tc, nested)
                if ok:
                    push(v)
    out.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return out


_CAPTURING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.GeneratorExp)


def transient_params_of_ast(fn: ast.AST, params: Sequence[str]) -> List[str]:
    """The parameters of ``fn`` (an ``__init__``) its body only calls, or never reads: every read
    is ``p(...)`` outside a nested def, class, lambda or generator expression (a list, set or dict
    comprehension runs at once). A store, a ``del``, any other read (passed on, kept, returned), or a
    ``locals()`` / ``vars()`` call (which may keep them all) makes a parameter kept."""
    left = set(params)
    if not left:
        return []
    todo: List[Tuple[ast.AST, bool, bool]] = [(b, False, False) for b in fn.body]  # (node, captured, callee)
    while todo and left:
        n, captured, callee = todo.pop()
        t = type(n)
        if t is ast.Name:
            if n.id in left and (captured or not callee or type(n.ctx) is not ast.Load):
                left.discard(n.id)
            continue
        if t is ast.Call:
            if type(n.func) is ast.Name and n.func.id in ("locals", "vars"):
                return []
            todo.append((n.func, captured, True))
            todo.extend((c, captured, False) for c in n.args)
            todo.extend((kw, captured, False) for kw in n.keywords)
            continue
        inner = captured or isinstance(n, _CAPTURING)
        todo.extend((c, inner, False) for c in ast.iter_child_nodes(n))
    return [p for p in params if p in left]


def _cuda_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.startswith("cuda")
    if isinstance(node, ast.Call) and _dotted(node.func) in ("torch.device", "device") and node.args:
        return _cuda_literal(node.args[0])
    return False


def _may_be_cuda(node: ast.AST, depth: int = 0) -> bool:
    """A module-level value that is, or may be on a GPU machine, a CUDA device: a CUDA literal
    (``_cuda_literal``), ``f"cuda:{rank}"``, or one under a condition (``"cuda" if
    torch.cuda.is_available() else "cpu"``, ``os.environ.get("DEVICE") or "cuda"``)."""
    if depth > 4:
        return False
    if _cuda_literal(node):
        return True
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda")
    if isinstance(node, ast.IfExp):
        return _may_be_cuda(node.body, depth + 1) or _may_be_cuda(node.orelse, depth + 1)
    if isinstance(node, ast.BoolOp):
        return any(_may_be_cuda(v, depth + 1) for v in node.values)
    if isinstance(node, ast.Call) and _dotted(node.func) in ("torch.device", "device") and node.args:
        return _may_be_cuda(node.args[0], depth + 1)
    return False


def _module_level(body: List[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, looking into if / try / with blocks (not into defs)."""
    for st in body:
        if isinstance(st, (ast.If, ast.Try, ast.With)) or type(st).__name__ == "TryStar":
            for part in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(st, part, []) or [])
            for h in getattr(st, "handlers", []) or []:
                yield from _module_level(h.body)
        else:
            yield st


def summarise(
    tree: ast.Module,
    module: str,
    k: Knowledge,
    is_package: bool = False,
    path: str = "",
    lines: Optional[List[str]] = None,
    memo: Optional["StatementMemo"] = None,
) -> ModuleSummary:
    """The summary of one module from its ``ast`` tree (the gate's tree can be passed in);
    ``lines`` and ``memo``: see ``_Summariser.run``."""
    s = _Summariser(k, module, is_package).run(tree, lines, memo)
    s.path = path
    return _compacted(s)


_NONE: Tuple[str, ...] = ()  # every empty list of a finished summary: one shared empty tuple


def _compacted(s: ModuleSummary) -> ModuleSummary:
    """The summary with each method's empty lists replaced by one shared empty tuple: a summary is
    read-only once made, and a project's thousands of methods carry a dozen mostly empty lists each
    (3.4 MB of the dataset corpus's peak memory, 152.3 -> 148.9 MB)."""
    for m in [*s.functions.values(), *(m for c in s.classes.values() for m in c.methods.values())]:
        d = m.__dict__
        for name, v in d.items():
            if v.__class__ is list and not v:
                d[name] = _NONE
    return s


def _digest(data: bytes, module: str, is_package: bool) -> str:
    """The cache key of a module's summary: its bytes, the summary's shape, its name."""
    return hashlib.sha256(data + f"\0{SCHEMA}\0{module}\0{is_package}".encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class _Span:
    """A top-level statement of a document: ``kind`` "ClassDef" / "FunctionDef" / "AsyncFunctionDef"
    ("" for any other statement), its name, its first line (decorators included), the line its
    ``def`` / ``class`` keyword is on, its last line."""

    kind: str
    name: str
    start: int
    name_line: int
    end: int


def _spans(tree: ast.Module) -> List[_Span]:
    out = []
    for st in tree.body:
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
        defined = isinstance(st, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        out.append(_Span(type(st).__name__ if defined else "", getattr(st, "name", ""), start, st.lineno, st.end_lineno or st.lineno))
    return out


class StatementMemo:
    """The summaries of one document's top-level definitions, by their code and context, from its
    last summary: an edit inside one class re-summarises that class only (``ProjectIndex.update_text``).
    A summary found again is moved to the lines its code starts on now (every line it records)."""

    def __init__(self) -> None:
        self._last: Dict[tuple, Tuple[int, object]] = {}
        self._now: Dict[tuple, Tuple[int, object]] = {}
        self.reused = 0

    def take(self, key: tuple, start: int) -> Optional[object]:
        got = self._now.get(key) or self._last.get(key)
        if got is None:
            return None
        self._now[key] = got
        self.reused += 1
        return _moved(got[1], start - got[0])

    def keep(self, key: tuple, start: int, summary: object) -> None:
        self._now[key] = (start, _moved(summary, 0))

    def done(self) -> None:
        """One summary of the document is complete: forget the definitions it no longer has."""
        self._last, self._now = self._now, {}


def _moved(x: object, delta: int) -> object:
    """A copy of a ``ClassSummary`` or ``Method`` whose recorded lines are ``delta`` further."""
    if isinstance(x, ClassSummary):
        return ClassSummary(x.name, x.line + delta, list(x.bases), {n: _moved(m, delta) for n, m in x.methods.items()}, dict(x.fields))  # type: ignore[misc]
    m = x
    assert isinstance(m, Method)

    def at(entry: str, sep: int) -> str:  # "<a>:<line>" / "<a>:<line>:<b>": the line moved
        parts = entry.split(":", sep)
        if parts[1] != "0":
            parts[1] = str(int(parts[1]) + delta)
        return ":".join(parts)

    return replace(
        m,
        line=m.line + delta,
        params=list(m.params),
        assigns=[Assign(a.attr, a.line + delta, a.kind, a.detail) for a in m.assigns],
        self_calls=list(m.self_calls),
        base_inits=list(m.base_inits),
        cuda_line=m.cuda_line + delta if m.cuda_line else 0,
        callees=list(m.callees),
        loader_attrs=[at(e, 1) for e in m.loader_attrs],
        device_uses=[at(e, 1) for e in m.device_uses],
        device_flows=list(m.device_flows),
        makes=list(m.makes),
        keeps=[at(e, 2) for e in m.keeps],
        loader_datasets=[at(e, 1) for e in m.loader_datasets],
        forwards=list(m.forwards),
        loader_fns=[e.rpartition("|")[0] + "|" + str(int(e.rpartition("|")[2]) + delta) for e in m.loader_fns],
        transient=list(m.transient),
        seeds=list(m.seeds),
    )


# --------------------------------------------------------------------------------------------------
# the index's cheap side: a module read as text, for a proof that resolution cannot find a dataset

_CLASS_DEF = re.compile(r"class\s+(\w+)")
_FUNC_DEF = re.compile(r"def\s+(\w+)")
_IMPORT_WORD = re.compile(r"import\b")
_FROM_BEFORE = re.compile(r"\bfrom\s+([\w.\s]*)$")
_KEYWORD_CONTINUED = re.compile(r"\b(?:class|def|import|from)[ \t]*\\")
_KEYWORD_BEFORE = re.compile(r"\b(?:class|def|import|from)[ \t]*$")


def _keyword_continued(text: str) -> bool:
    """``_KEYWORD_CONTINUED.search(text)``, found from the backslashes (a search that starts with
    ``\\b`` and an alternation scans every character slowly; a file has few backslashes)."""
    i = text.find("\\")
    while i >= 0:
        if _KEYWORD_BEFORE.search(text, text.rfind("\n", 0, i) + 1, i):
            return True
        i = text.find("\\", i + 1)
    return False
_DOTTED_TEXT = re.compile(r"[^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*")
_SPACE = re.compile(r"\s+")
_SPACED_DOT = re.compile(r"\s*\.\s*")
_KEYWORD_EQ = re.compile(r"(?<![=!<>])=(?!=)")
TEXT_WALK_LIMIT = 4000  # qualified names a proof may follow before it gives up (then: resolve)


def reach_words(k: Knowledge) -> Tuple[str, ...]:
    """Every word a name that resolution produces must contain for ``has_project_dataset`` to say
    yes: the last part of each dataset base (a qualified base, a configured simple name), each
    dataset name suffix, and the DataLoader keywords ``Method.loader_attrs`` is made of."""
    words = {q.rsplit(".", 1)[-1] for q in k.dataset_bases} | set(k.dataset_base_suffixes) | {"collate_fn", "worker_init_fn"}
    # a word holding another (``IterableDataset`` holds ``Dataset``) adds no answer, only a scan
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


def _words(pattern: "re.Pattern[str]", text: str) -> Iterable["re.Match[str]"]:
    """``re.finditer(r"\\b" + pattern, text)`` for a pattern that starts with a word character: a
    search for the keyword first (several times faster than one that starts with ``\\b``); a
    match inside a longer word is skipped and the search goes on from its next character."""
    pos = 0
    search = pattern.search
    while True:
        m = search(text, pos)
        if m is None:
            return
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            pos = start + 1
            continue
        yield m
        pos = m.end()


def _dotted_text(s: str) -> Optional[str]:
    """``s`` when it is a dotted name (whitespace around the dots allowed, outer parentheses
    dropped, as the parser reads them), else None."""
    s = s.strip()
    while s.startswith("(") and s.endswith(")"):
        s = s[1:-1].strip()
    if _DOTTED_TEXT.fullmatch(s):
        return _SPACE.sub("", s)
    return None


class TextModule:
    """What a module may bind, read from its text without parsing, over-approximated: every import
    (``import``/``from`` statements anywhere, in strings too), every ``class X(...)`` with the base
    expressions written there, every ``def``; ``unclear`` when the text uses a form this reading
    does not follow (a keyword continued by a backslash). Used only to prove that resolution cannot
    reach a dataset (``ProjectIndex.cannot_reach_dataset``): extra bindings only make the proof
    fail, never wrong. A binding form ``_Summariser`` learns (``names``, ``classes``, ``functions``)
    must be read here too (tests/test_index_cost.py holds the forms read)."""

    def __init__(self, module: str, is_package: bool, text: str, words: Tuple[str, ...]) -> None:
        self.module = module
        self.text = text
        self.interesting = any(w in text for w in words)
        self.unclear = _keyword_continued(text)
        self.imports: Dict[str, Set[str]] = {}
        self.classes: Dict[str, Optional[List[str]]] = {}  # name -> base expressions (None: not read)
        self.defs: Set[str] = {m.group(1) for m in _words(_FUNC_DEF, text)}
        self._aliases: Dict[str, Optional[Set[str]]] = {}
        if self.interesting or self.unclear:
            self.text = ""
            return  # no proof through this module: nothing else is read
        self._read_imports(is_package)
        self._read_classes()

    def _read_imports(self, is_package: bool) -> None:
        text = self.text
        for m in _words(_IMPORT_WORD, text):
            start = text.rfind("\n", 0, m.start()) + 1
            before = text[start : m.start()]
            while start > 0 and text[:start].rstrip("\r\n").endswith("\\"):  # `from x \` + newline
                prev = text.rfind("\n", 0, start - 1) + 1
                before = text[prev : start].rstrip("\r\n")[:-1] + " " + before
                start = prev
            i = j = m.end()
            while True:  # spaces, and backslash-newlines, before a parenthesised list
                while j < len(text) and text[j] in " \t":
                    j += 1
                if text.startswith("\\\n", j) or text.startswith("\\\r\n", j):
                    j = text.index("\n", j) + 1
                    continue
                break
            if j < len(text) and text[j] == "(":
                j, parts = j + 1, []
                while j < len(text) and text[j] != ")":
                    if text[j] == "#":
                        j = text.find("\n", j)
                        if j < 0:
                            break
                    parts.append(text[j])
                    j += 1
                names = "".join(parts)
            else:
                end = text.find("\n", i)
                names = text[i : end if end >= 0 else len(text)]
                while names.rstrip("\r").endswith("\\") and end >= 0:
                    nxt = text.find("\n", end + 1)
                    names = names.rstrip("\r")[:-1] + " " + text[end + 1 : nxt if nxt >= 0 else len(text)]
                    end = nxt
                names = names.split("#", 1)[0].split(";", 1)[0].replace("(", " ").replace(")", " ")
            fm = _FROM_BEFORE.search(before)
            if fm is not None:
                spec = _SPACE.sub("", fm.group(1))
                level = len(spec) - len(spec.lstrip("."))
                mod = absolute_module(self.module, is_package, level, spec[level:] or None)
            elif before.strip() == "" or before.rstrip().endswith((";", ":")):
                mod = None
            else:
                continue  # prose ("we import x"), not a statement
            for entry in names.split(","):
                toks = _SPACED_DOT.sub(".", entry.strip()).split()
                if not toks or not _DOTTED_TEXT.fullmatch(toks[0]):
                    continue
                if len(toks) == 3 and toks[1] == "as":
                    local = toks[2]
                elif len(toks) == 1:
                    local = toks[0]
                else:
                    continue
                if mod is not None:
                    target = f"{mod}.{toks[0]}" if mod else toks[0]
                elif len(toks) == 3:
                    target = toks[0]
                else:
                    local = target = toks[0].split(".", 1)[0]
                self.imports.setdefault(local, set()).add(target)

    def _read_classes(self) -> None:
        text = self.text
        for m in _words(_CLASS_DEF, text):
            name = m.group(1)
            i = m.end()
            while i < len(text) and text[i] in " \t":
                i += 1
            got = self.classes.setdefault(name, [])
            if i >= len(text) or text[i] == ":":
                continue
            if text[i] != "(":
                if text[i] == "[":  # type parameters: not read
                    self.classes[name] = None
                continue  # prose ("the class Foo is ..."), not a statement
            j, depth, item, items = i + 1, 0, [], []
            while j < len(text):
                c = text[j]
                if c in "\"'":
                    got = None  # a string in the bases: not read
                    break
                if c == "#":
                    j = text.find("\n", j)
                    if j < 0:
                        break
                    continue
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    if depth == 0:
                        items.append("".join(item))
                        break
                    depth -= 1
                elif c == "," and depth == 0:
                    items.append("".join(item))
                    item = []
                    j += 1
                    continue
                item.append(c)
                j += 1
            else:
                got = None
            if got is None or self.classes.get(name) is None:
                self.classes[name] = None
                continue
            for it in items:
                it = it.replace("\\\n", " ").strip()
                if not it or it.startswith("*") or _KEYWORD_EQ.search(it):
                    continue  # keyword (metaclass=...), *bases, **kwargs: not a base name
                if it.endswith("]") and "[" in it:
                    it = it[: it.index("[")]  # Generic[T] -> Generic
                d = _dotted_text(it)
                if d is not None:
                    got.append(d)

    def aliases(self, name: str) -> Optional[Set[str]]:
        """The dotted values ``name = <dotted>`` / ``name: T = <dotted>`` may bind (as written);
        None when an assignment to ``name`` is not read (a value continued on the next line)."""
        if name in self._aliases:
            return self._aliases[name]
        out: Optional[Set[str]] = set()
        text = self.text
        # a literal first (fast); `(name) = ...` is a binding too (the parentheses are not in the tree)
        for m in re.finditer(re.escape(name) + r"(?:\s*\))*[ \t]*(?::[^\n=]*)?=(?!=)", text):
            if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_."):
                continue  # part of a longer name, or an attribute (`x.name = ...`: not a binding)
            end = text.find("\n", m.end())
            rhs = text[m.end() : end if end >= 0 else len(text)].split("#", 1)[0].split(";", 1)[0].strip()
            d = _dotted_text(rhs)
            if d is not None:
                out.add(d)
            elif not rhs or rhs.endswith("\\") or rhs.startswith("("):
                out = None
                break
        self._aliases[name] = out
        return out


# --------------------------------------------------------------------------------------------------
# the project


_CLASS_HEAD = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?")  # at a line start: _line_start_matches
_DEF = re.compile(r"def[ \t]+(\w+)")  # at a line start (an ``async`` before it): _line_start_matches
_TOP_END = re.compile(r"\n(?:async[ \t]+def|def|class|@)")  # where a module-level def's text ends (the next line)
_ALIAS = re.compile(r"\b(\w+)[ \t]+as[ \t]+(\w+)")
_KEEPING = re.compile(r"self\.\w+(?:\.\w+)*(?:\[[^\]\n]*\])?[ \t]*(?::[^=\n]*)?(?:=(?!=)|\.(?:append|extend|add|insert|setdefault|update)\()")
_RETURNING = re.compile(r"return\b")
_LOCAL_ASSIGN = re.compile(r"\n[ \t]+(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")  # ``name = ...`` in a body (``_line_matches``)
_CALL_WORD = re.compile(r"(\w+)[ \t]*\(")


def _imported_heads(text: str, module: str = "", is_package: bool = False) -> Set[str]:
    """The first names of the modules the text's import statements (at line starts) import from:
    ``from a.b import c`` and ``import a.b, d``: {"a", "d"}; a relative import's is resolved from
    ``module`` (else its first written name, or "")."""
    heads = {absolute_module(module, is_package, len(dots), mod or None).split(".", 1)[0] for dots, mod, _ in _at_line_starts(_FROM_IMPORT, text)}
    return heads | {m.strip().split(".", 1)[0] for line in _at_line_starts(_IMPORT, text) for m in line.split(",")}


def _returned_words(body: str, pattern: "re.Pattern[str]") -> Set[str]:
    """The words ``pattern`` finds on the lines of ``body`` that hold ``return``."""
    return {w for line in body.splitlines() if "return" in line for w in pattern.findall(line)}


def _statement_rest(text: str, pos: int, limit: int = 40) -> str:
    """The text from ``pos`` to the end of its statement: the rest of the line, and the next lines
    while brackets opened there are not closed (strings are not told apart: an approximation that
    at worst reads a few lines more or less, ``limit`` lines at most)."""
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    seg = text[pos:end]
    depth = sum(seg.count(c) for c in "([{") - sum(seg.count(c) for c in ")]}")
    n = 0
    while depth > 0 and end < len(text) and n < limit:
        nxt = text.find("\n", end + 1)
        nxt = len(text) if nxt < 0 else nxt
        line = text[end + 1 : nxt]
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        end, n = nxt, n + 1
    return text[pos:end]


_NAME_ALIAS = re.compile(r"\n(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*([\w.]+)[ \t]*(?:#[^\n]*)?$", re.M)  # X = a.Y (``_line_matches``)
_WORD = re.compile(r"\w+")


def _library_markers(modules: Sequence[str]) -> Tuple[str, ...]:
    """A word every import of each module (or of a name from it) holds: its longest part
    (``torchvision`` of ``torchvision.datasets``, ``datapipes`` of ``torch.utils.data.datapipes.iter``)."""
    return tuple(sorted({max(m.split("."), key=len) for m in modules}))


def _library_dataset_words(text: str, modules: Sequence[str]) -> Set[str]:
    """The local names the import statements of ``text`` bind to a module of ``modules``, to a module
    below one, or to a name imported from one (``from torchvision import datasets``, ``from
    torchvision.datasets import ImageFolder as F``, ``import torchvision.datasets as D``)."""
    out: Set[str] = set()

    def library(mod: str) -> bool:
        return any(mod == m or mod.startswith(m + ".") for m in modules)

    for dots, mod, imported in _at_line_starts(_FROM_IMPORT, text):
        if dots:
            continue
        for n in _imported_names(imported):
            if library(mod) or library(f"{mod}.{n[0]}"):
                out.add(n[-1])
    for imported in _at_line_starts(_IMPORT, text):
        for n in _imported_names(imported):
            if len(n) == 3 and library(n[0]):
                out.add(n[2])  # ``import torchvision.datasets as D``; a plain ``import torchvision``
                # leaves ``torchvision.datasets.X(...)`` in the text (``_DatasetText.may_make``)
    return out


class _DatasetText:
    """What the text of a package says about which of its names may make a dataset (an
    over-approximation, so that ``ProjectIndex.may_make_dataset`` is False only when the summaries
    would find no dataset either): a class is a candidate when a word of its base list is a dataset
    base's name (``rules/*.toml``: ``Dataset``, ``IterDataPipe``, a ``...Dataset`` suffix), an alias of
    one (``Dataset as TorchDataset``) or another candidate class; a module-level function when its
    text names a candidate class or, on a ``return`` line, another such function."""

    def __init__(self, k: Knowledge, files: Sequence[Path], read: Callable[[Path], str], top: str = "") -> None:
        self.read = read
        self.inner_defs: Set[str] = set()  # functions defined at any depth (under an if / try too)
        self.assigned: Dict[str, Set[str]] = {}  # `X = a.Y` at module level: X -> {"Y"}
        self.files = files
        bases_of: Dict[str, Set[str]] = {}
        aliases: Dict[str, Set[str]] = {}
        self.defs: Dict[str, List[Tuple[Path, int, int]]] = {}
        # the files that name a DataLoader (a loader's name or suffix), with their texts:
        # ``ProjectIndex.loader_feed`` looks for the loaders given a class there
        self.loader_texts: List[Tuple[Path, str]] = []
        loaders = k.derived("index.loader_words", _loader_words)
        # the names the package binds to a library dataset module or its classes (``from
        # torchvision.datasets import ImageFolder``, ``from torchvision import datasets``): a function
        # naming one may return a library dataset (``ProjectIndex._library_datasets``)
        # (the package's own modules are no library: torch's datapipes, read as torch's package)
        library = tuple(m for m in k.dataset_modules if m.split(".", 1)[0] != top)
        self.library_words: Set[str] = set()
        self.library_modules = tuple(m + "." for m in library)
        library_markers = _library_markers(library)
        for p in files:
            text = read(p)
            if any(w in text for w in loaders):
                self.loader_texts.append((p, text))
            if "class" in text:
                for _, m in _line_start_matches(_CLASS_HEAD, text):
                    bases_of.setdefault(m.group(1), set()).update(_WORD.findall(m.group(2) or ""))
            if " as " in text:  # in import statements only (not "such as" in prose)
                imported = [g[2] for g in _at_line_starts(_FROM_IMPORT, text)] + _at_line_starts(_IMPORT, text)
                for names in imported:
                    if " as " in names:
                        for m in _ALIAS.finditer(names):
                            aliases.setdefault(m.group(1), set()).add(m.group(2))
            if "def" in text:
                for line, m in _line_start_matches(_DEF, text, after_async=True):
                    self.inner_defs.add(m.group(1))
                    if text[line] not in " \t":  # a module-level def
                        end = _TOP_END.search(text, m.end())
                        self.defs.setdefault(m.group(1), []).append((p, m.end(), end.start() + 1 if end else len(text)))
            if "=" in text:
                for m in _line_matches(_NAME_ALIAS, text):
                    self.assigned.setdefault(m.group(1), set()).add(m.group(2).rsplit(".", 1)[-1])
            if any(w in text for w in library_markers):
                self.library_words |= _library_dataset_words(text, library)

        base_names = {b.rsplit(".", 1)[-1] for b in k.dataset_bases}
        suffixes = tuple(k.dataset_base_suffixes)
        names: Set[str] = set()

        def base_like(w: str) -> bool:
            return w in names or w in base_names or w.endswith(suffixes)

        changed = True
        while changed:
            changed = False
            for w, als in aliases.items():
                if base_like(w) and not als <= names:
                    names |= als
                    changed = True
            for c, ws in bases_of.items():
                if c not in names and any(base_like(w) for w in ws):
                    names.add(c)
                    changed = True
        self.classes = frozenset(bases_of)
        self.bases_of = bases_of  # class name -> the words of its base list
        self._subclasses: Optional[Dict[str, Set[str]]] = None
        self.candidates = frozenset(names)
        self.base_names, self.suffixes = base_names, suffixes
        self._factories: Dict[str, bool] = {}
        self._cuda_defs: Optional[FrozenSet[str]] = None
        self._kept_results: Optional[FrozenSet[str]] = None
        self._loader_makers: Optional[FrozenSet[str]] = None
        self._maker_pattern: Optional["re.Pattern[str]"] = None

    def loader_makers(self, k: Knowledge) -> FrozenSet[str]:
        """Module-level functions whose text builds a DataLoader (a loader class's name followed by
        ``(``), or returns a call of such a function (``def cifar10_train(): return
        get_data_loader(...)``): the only names whose call may give a loader (a second reading of
        the package's text, done only when asked)."""
        if self._loader_makers is None:
            names = {q.rsplit(".", 1)[-1] for q in k.loaders}
            word = re.compile(r"(?:" + "|".join(map(re.escape, sorted(names | set(k.loader_suffixes)))) + r")[ \t]*\(")
            makers: Set[str] = set()
            returned: Dict[str, Set[str]] = {}
            by_file: Dict[Path, List[Tuple[str, int, int]]] = {}
            for name, spans in self.defs.items():
                for p, start, end in spans:
                    by_file.setdefault(p, []).append((name, start, end))
            for p, spans_of in by_file.items():
                text = self.read(p)
                builds = word.search(text) is not None
                if not builds and "return" not in text:
                    continue
                for name, start, end in spans_of:
                    body = text[start:end]
                    if builds and word.search(body):
                        makers.add(name)
                    elif "return" in body:
                        returned.setdefault(name, set()).update(_returned_words(body, _CALL_WORD))
            changed = True
            while changed:
                changed = False
                for name, calls in returned.items():
                    if name not in makers and calls & makers:
                        makers.add(name)
                        changed = True
            self._loader_makers = frozenset(makers)
        return self._loader_makers

    def names_loader_maker(self, k: Knowledge, text: str) -> bool:
        """``text`` names one of ``loader_makers`` as a word (one compiled search)."""
        if self._maker_pattern is None:
            makers = self.loader_makers(k)
            self._maker_pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(makers))) + r")\b") if makers else re.compile("(?!)")
        return self._maker_pattern.search(text) is not None

    @property
    def kept_results(self) -> FrozenSet[str]:
        """The names whose call result may end up kept on ``self``: called in what is kept
        (``self.x = f(...)``, ``self.xs.append(f(...))``), or returned by a function whose result
        may be (``self.fn = build(m)``, ``def build(m): return make(m)``: ``build`` and ``make``).
        A second reading of the package's text, done only when asked."""
        if self._kept_results is None:
            kept: Set[str] = set()
            returned: Dict[str, Set[str]] = {}  # function name (at any depth) -> names it returns a call of
            for p in self.files:
                text = self.read(p)
                if "self." in text:
                    for m in _word_matches(_KEEPING, text):
                        kept.update(_CALL_WORD.findall(_statement_rest(text, m.end())))
                if "return" not in text:
                    continue
                heads = [(line, _indent(text, line), m.group(1)) for line, m in _line_start_matches(_DEF, text, after_async=True)]
                starts = [h[0] for h in heads]
                for m in _word_matches(_RETURNING, text):
                    line = text.rfind("\n", 0, m.start()) + 1
                    indent = m.start() - line
                    i = bisect.bisect_right(starts, line) - 1
                    while i >= 0 and heads[i][1] >= indent:
                        i -= 1  # the def this return belongs to: the nearest one indented less
                    owner = heads[i][2] if i >= 0 else ""
                    rest = _statement_rest(text, m.end())
                    words = returned.setdefault(owner, set())
                    returned_words = set(_WORD.findall(rest))
                    words.update(returned_words)  # called or not: ``return EncodedVideoPyAV``
                    if i >= 0:  # ``f = cls._crop(...); return f``, ``cls_ = pick(d); return cls_(p)``:
                        body = text[heads[i][0] : m.start()]  # what a returned local was given
                        for a in _line_matches(_LOCAL_ASSIGN, body):
                            if a.group(1) in returned_words:
                                words.update(_WORD.findall(_statement_rest(body, a.end())))
            out = set(kept)
            todo = list(out)
            while todo:
                for w in returned.get(todo.pop(), ()):
                    if w not in out:
                        out.add(w)
                        todo.append(w)
            self._kept_results = frozenset(out)
        return self._kept_results

    def cuda_defs(self, top: str, tops: Set[str]) -> FrozenSet[str]:
        """The package's module-level functions that may use CUDA as ``ProjectIndex.function_cuda``
        finds it (a literal ``torch.cuda.X()``, ``.cuda()``, ``"cuda"``: each spelled with "cuda"):
        those of a module whose text says "cuda" (the word may be in an import), and those that call
        (by name) one of them, or that are in a module importing another top package ``tops`` of the
        project (its functions are not read here). The package is ``top``."""
        if self._cuda_defs is None:
            by_file: Dict[Path, List[Tuple[str, int, int]]] = {}
            for name, spans in self.defs.items():
                for p, a, b in spans:
                    by_file.setdefault(p, []).append((name, a, b))
            maybe: Set[str] = set()
            calls: Dict[str, Set[str]] = {}
            others = tops - {top}
            for p, spans in by_file.items():
                text = self.read(p)
                foreign = bool(others) and not others.isdisjoint(_imported_heads(text))
                for name, a, b in spans:
                    if foreign or "cuda" in text:
                        maybe.add(name)
                    else:
                        calls.setdefault(name, set()).update(_CALL_WORD.findall(text, a, b))
            changed = True
            while changed:
                changed = False
                for name, ws in calls.items():
                    if name not in maybe and not ws.isdisjoint(maybe):
                        maybe.add(name)
                        changed = True
            self._cuda_defs = frozenset(maybe)
        return self._cuda_defs

    def may_be_kept(self, name: str) -> bool:
        """Objects of the class ``name`` (or of a subclass of it in the package) may be kept on
        ``self`` somewhere in the package: it, or a function returning it, is named where something
        is kept (``kept_results``). False: no dataset keeps them (``ProjectIndex.keepers`` would find
        none), and the class need not be summarised as a handle holder."""
        kept = self.kept_results
        if self._subclasses is None:
            subs: Dict[str, Set[str]] = {}
            for c, ws in self.bases_of.items():
                for w in ws:
                    subs.setdefault(w, set()).add(c)
            self._subclasses = subs
        todo, seen = [name], set()
        while todo:
            n = todo.pop()
            if n in kept:
                return True
            seen.add(n)
            todo += [c for c in self._subclasses.get(n, ()) if c not in seen]
        return False

    def may_make(self, name: str, depth: int = 0) -> bool:
        """A name the index may find to be a dataset class (a base itself, ``Dataset(...)``, or a
        class derived from one), a function that returns one, or an alias of one (``X = a.Y``); a
        function defined under an ``if`` / ``try`` may. Anything else (a class no chain ties to a
        dataset base, a name bound to a call's result, a name of a C extension, nothing the text
        defines) is not one the index could resolve to a dataset either."""
        if name in self.candidates or name in self.base_names or name.endswith(self.suffixes):
            return True
        if depth < 4 and any(self.may_make(t, depth + 1) for t in self.assigned.get(name, ()) if t != name):
            return True
        if name not in self.defs:
            return name in self.inner_defs and name not in self.classes
        got = self._factories.get(name)
        if got is None:
            self._factories[name] = False  # a cycle gives nothing
            got = False
            for p, start, end in self.defs[name]:
                body = self.read(p)[start:end]
                words = set(_WORD.findall(body))
                if words & self.candidates or words & self.library_words or any(m in body for m in self.library_modules):
                    got = True
                    break
                if depth < 3:
                    returned = _returned_words(body, _WORD)
                    if any(w != name and w in self.defs and self.may_make(w, depth + 1) for w in returned):
                        got = True
                        break
            self._factories[name] = got
        return got


def _stamps(files: Iterable[Path]) -> List[Tuple[str, int, int]]:
    """(path, size, mtime) of each file that can be read: what says a text reading is still true."""
    out: List[Tuple[str, int, int]] = []
    for p in files:
        try:
            st = os.stat(p)
        except OSError:
            continue
        out.append((str(p), st.st_size, st.st_mtime_ns))
    return out


def _py_files_below(d: Path) -> List[Path]:
    """The ``.py`` files below the directory ``d``, sorted, none in a hidden directory near them."""
    return sorted(p for p in d.rglob("*.py") if not any(x.startswith(".") for x in p.parts[-4:-1]))


def project_root(path: str) -> Path:
    """The nearest directory holding pyproject.toml / setup.cfg / setup.py; else the directory
    above the top package (the highest chain of ``__init__.py`` directories); else the file's dir."""
    isfile, join, up = os.path.isfile, os.path.join, os.path.dirname  # not pathlib: 3x cheaper per file
    d = up(os.path.realpath(path))
    cand = d
    while True:
        if any(isfile(join(cand, m)) for m in ROOT_MARKERS):
            return Path(cand)
        if up(cand) == cand:
            break
        cand = up(cand)
    top = d
    while isfile(join(top, "__init__.py")) and up(top) != top:
        top = up(top)
    return Path(top)


@dataclass(frozen=True)
class ClassRef:
    qname: str
    path: str
    line: int
    summary: ClassSummary = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.qname.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class MethodRef:
    cls: str  # qualified class name
    name: str
    path: str
    line: int

    @property
    def label(self) -> str:
        return f"{self.cls.rsplit('.', 1)[-1]}.{self.name}"


@dataclass(frozen=True)
class AttrFact:
    """What a (base) ``__init__`` stores on ``self.attr``: kind as ``Assign.kind`` after following
    calls (a ``self._open()`` that returns a handle gives "factory")."""

    attr: str
    kind: str
    detail: str
    path: str
    line: int
    where: MethodRef


class ProjectIndex:
    def __init__(self, root: Path, knowledge: Knowledge, cache_dir: Optional[Path] = None) -> None:
        self.root = Path(root).resolve()
        self.k = knowledge
        self.cache_dir = cache_dir
        self.summaries: Dict[str, ModuleSummary] = {}  # module name -> summary
        self._paths: Dict[str, Optional[Path]] = {}
        self.summarised = 0  # files summarised in this process (cache misses)
        self.cache_hits = 0
        self.errors: List[str] = []
        self._digests: Dict[str, str] = {}
        self._dep_info: Dict[str, Tuple[str, List[str]]] = {}  # module -> (content digest, project imports)
        self._reach_memo: Dict[str, FrozenSet[str]] = {}  # module -> project modules it reaches
        self._extra_roots: List[Path] = []
        self._installed_tops: Dict[Path, Set[str]] = {}  # site-packages root -> top packages of checked files
        self._tops: Optional[Set[str]] = None
        self._texts: Dict[str, Tuple[tuple, Optional[TextModule]]] = {}  # module -> ((path, size, mtime), reading)
        self._offered: Optional[Tuple[str, ast.Module, str]] = None  # (real path, the gate's tree, its text)
        # answers of canonical / base_chain: a first summary of a module changes none (a query that
        # reads a module summarises it first); a summary replaced or a new source root forgets them
        self._memo: Dict[Tuple[str, str], object] = {}
        self._file_texts: Dict[Path, str] = {}  # project files read by ``keepers``
        # top package -> (its files' (path, size, mtime) when read, what their text says: _DatasetText)
        self._text_tables: Dict[str, Tuple[List[Tuple[str, int, int]], "_DatasetText"]] = {}
        # top package -> (its text reading, the (path, size, mtime) of the tests / examples / scripts
        # files read, the files giving collate_fn= / worker_init_fn= something with their words)
        self._loader_fn_tables: Dict[str, Tuple["_DatasetText", List[Tuple[str, int, int]], Dict[Path, FrozenSet[str]]]] = {}
        self._statements: Dict[str, StatementMemo] = {}  # real path -> its definitions' summaries (update_text)
        # real path -> (the lines of the text last summarised by update_text, its top-level statements'
        # spans): an edit inside one definition is summarised from that definition alone
        self._documents: Dict[str, Tuple[List[str], List["_Span"]]] = {}
        self.one_definition_updates = 0  # update_text calls answered from one definition's text
        self._namespaces: Dict[Tuple[str, str, str], int] = {}  # _namespace_levels
        self._namespace_tops: Set[str] = set()  # namespace packages (PEP 420) module names start with

    # -- modules and paths
    def source_roots(self) -> List[Path]:
        """Where top-level modules are looked for: the root, ``root/src``, and the directory above
        every top package a checked file lives in (a tree of packages below the root)."""
        roots = [self.root]
        if (self.root / "src").is_dir():
            roots.append(self.root / "src")
        return roots + [r for r in self._extra_roots if r not in roots]

    def top_packages(self) -> Set[str]:
        """Names of the project's top-level packages and modules (for the cheap text test)."""
        if self._tops is None:
            tops: Set[str] = set()
            for r in self.source_roots():
                if r.name in _INSTALL_DIRS:  # not one project: only the packages checked files are in
                    tops |= self._installed_tops.get(r, set())
                    continue
                try:
                    for e in os.scandir(r):
                        if e.name.endswith(".py"):
                            tops.add(e.name[:-3])
                        elif e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py")):
                            tops.add(e.name)
                except OSError:
                    pass
            self._tops = tops | self._namespace_tops
        return self._tops

    def project_constructed(self, path: str, text: str) -> List[str]:
        """A cheap text reading, like ``project_bases``: the qualified names of classes and functions
        imported from the project (``from .tasks import TaskSet``) that the file calls (``TaskSet(``)."""
        module, is_package = self.module_for(path)
        tops = self.top_packages() | {module.split(".", 1)[0]}
        out: List[str] = []
        for dots, mod, imported in _at_line_starts(_FROM_IMPORT, text):
            if not (dots or mod.split(".", 1)[0] in tops):
                continue
            base_mod = absolute_module(module, is_package, len(dots), mod or None)
            for n in _imported_names(imported):
                if _calls_name(text, n[-1]):
                    q = f"{base_mod}.{n[0]}" if base_mod else n[0]
                    if q not in out:
                        out.append(q)
        return out

    def project_bases(self, path: str, text: str) -> List[str]:
        """A cheap text reading of a file the pre-filter rejected, without parsing it: the qualified
        names of class bases imported from the project (a relative import or a project package)."""
        bases: List[str] = []
        for found in _at_line_starts(_CLASS_BASES, text):
            for b in found.split(","):
                b = b.strip().split("[", 1)[0].strip()
                if b and "=" not in b and b not in bases:
                    bases.append(b)
        if not bases:
            return []
        heads = {b.split(".", 1)[0] for b in bases}
        module, is_package = self.module_for(path)
        tops = self.top_packages() | {module.split(".", 1)[0]}
        names: Dict[str, str] = {}
        for dots, mod, imported in _at_line_starts(_FROM_IMPORT, text):
            if dots or mod.split(".", 1)[0] in tops:
                base_mod = absolute_module(module, is_package, len(dots), mod or None)
                for n in _imported_names(imported):
                    if n[-1] in heads:
                        names[n[-1]] = f"{base_mod}.{n[0]}" if base_mod else n[0]
        for imported in _at_line_starts(_IMPORT, text):
            for n in _imported_names(imported):
                if n[0].split(".", 1)[0] in tops:
                    local = n[-1] if len(n) == 3 else n[0].split(".", 1)[0]
                    if local in heads:
                        names[local] = n[0] if len(n) == 3 else local
        out = []
        for b in bases:
            head, _, rest = b.partition(".")
            if head in names:
                out.append(f"{names[head]}.{rest}" if rest else names[head])
        return out

    def may_have_project_base(self, path: str, text: str) -> bool:
        return bool(self.project_bases(path, text))

    def module_for(self, path: str) -> Tuple[str, bool]:
        """(module name, is_package) of a file: the chain of ``__init__.py`` directories above it."""
        real = os.path.realpath(path)
        p = Path(real)
        is_package = p.name == "__init__.py"
        parts = [] if is_package else [p.stem]
        isfile, join, up = os.path.isfile, os.path.join, os.path.dirname
        top = up(real)
        while isfile(join(top, "__init__.py")) and up(top) != top:
            parts.append(os.path.basename(top))
            top = up(top)
        if parts and top != up(real):
            for _ in range(self._namespace_levels(top, parts[-1], real)):  # texar/torch/...: "texar.torch..."
                parts.append(os.path.basename(top))
                top = up(top)
        d = Path(top)
        if d != p.parent or is_package:
            if d not in self._extra_roots and d != self.root:
                self._extra_roots.append(d)
                self._paths = {k: v for k, v in self._paths.items() if v is not None}
                self._tops = None
                self._memo.clear()
            if d.name in _INSTALL_DIRS and parts[-1] not in self._installed_tops.setdefault(d, set()):
                self._installed_tops[d].add(parts[-1])
                self._tops = None
            return ".".join(reversed(parts)), is_package
        # a plain directory: relative to the root (or root/src)
        for r in sorted(self.source_roots(), key=lambda r: -len(r.parts)):
            try:
                rel = p.with_suffix("").relative_to(r)
            except ValueError:
                continue
            return ".".join(rel.parts), is_package
        return p.stem, is_package

    def _namespace_levels(self, top: str, package: str, path: str) -> int:
        """How many directories above the top regular package ``package`` (in ``top``, a directory
        without ``__init__.py``) are namespace packages (PEP 420) of the module names: ``texar/`` for
        ``texar/torch/__init__.py`` when the package's own code imports itself as ``texar.torch``
        (read from the package's ``__init__.py`` or the file ``path``; no such import: none). Up to
        three levels; remembered per directory and package."""
        key = ("namespace", top, package)
        got = self._namespaces.get(key)
        if got is not None:
            return got
        levels, names, d = 0, [package], top
        texts = [self._read_text(Path(top, package, "__init__.py")), self._read_text(Path(path))]
        up = os.path.dirname
        while levels < 3 and up(d) != d and not os.path.isfile(os.path.join(d, "__init__.py")):
            dotted = f"{os.path.basename(d)}.{'.'.join(names)}"
            if not os.path.basename(d).isidentifier() or not any(
                re.search(rf"(?m)^[ \t]*(?:from|import)[ \t]+{re.escape(dotted)}\b", t) for t in texts
            ):
                break
            names.insert(0, os.path.basename(d))
            levels += 1
            self._namespace_tops.add(names[0])
            self._tops = None
            d = up(d)
        self._namespaces[key] = levels
        return levels

    def path_for(self, module: str) -> Optional[Path]:
        if module in self._paths:
            return self._paths[module]
        found = None
        parts = module.split(".")
        if module and all(parts):
            for r in self.source_roots():
                base = os.path.join(r, *parts)
                for cand in (base + ".py", os.path.join(base, "__init__.py")):
                    if os.path.isfile(cand):
                        found = Path(cand)
                        break
                if found:
                    break
        elif module:  # an empty part ("a..b"): as pathlib reads it
            rel = Path(*parts)
            for r in self.source_roots():
                for c in (r / rel.with_suffix(".py"), r / rel / "__init__.py"):
                    if c.is_file():
                        found = c
                        break
                if found:
                    break
        self._paths[module] = found
        return found

    # -- summarising
    def _cache_file(self, digest: str) -> Optional[Path]:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"index-v{SCHEMA}" / digest[:2] / f"{digest}.json"

    def offer_tree(self, path: Optional[str], tree: Optional[ast.Module] = None, text: str = "") -> None:
        """The ast the gate parsed of the file being checked (``engine.check_source``), for
        ``summarise_file`` to use instead of parsing that file again when the analysis asks for its
        summary (and the file on disk is that text); ``offer_tree(None)`` withdraws it."""
        self._offered = None if path is None or tree is None else (os.path.realpath(path), tree, text)

    def offered_returned_callables(self, path: str) -> Optional[List[str]]:
        """``returned_callables`` of the file being checked, read from the gate's tree it was offered
        (``offer_tree``), or None when it has none of that file."""
        offered = self._offered
        if offered is None or offered[0] != os.path.realpath(path):
            return None
        return returned_callables(offered[1], offered[2]) if may_return_callable(offered[2]) else []

    def summarise_file(
        self,
        path: Path,
        tree: Optional[ast.Module] = None,
        data: Optional[bytes] = None,
        lines: Optional[List[str]] = None,
        memo: Optional[StatementMemo] = None,
    ) -> ModuleSummary:
        module, is_package = self.module_for(str(path))
        if module in self.summaries:
            self._memo.clear()  # a summary replaced (unsaved text, flake8's tree): answers may change
            self._file_texts.clear()
        shown = os.path.relpath(path, self.root) if Path(path).resolve().is_relative_to(self.root) else str(path)
        try:
            if data is None:
                data = Path(path).read_bytes()
        except OSError as exc:
            s = ModuleSummary(module, shown, is_package, error=f"cannot read: {exc.strerror or exc}")
            self.summaries[module] = s
            return s
        digest = self._digests[module] = _digest(data, module, is_package)
        cf = self._cache_file(digest)
        if cf is not None and tree is None:
            try:
                with open(cf, encoding="utf-8") as fh:
                    s = ModuleSummary.from_json(json.load(fh))
                s.path = shown
                self.cache_hits += 1
                self.summaries[module] = s
                return s
            except (OSError, ValueError, KeyError, TypeError):
                pass
        self.summarised += 1
        offered = self._offered
        if tree is None and offered is not None and offered[0] == os.path.realpath(path):
            if offered[2].encode("utf-8", "surrogatepass") == data:  # the checked text is the file's
                tree = offered[1]
        if tree is None:
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                line = getattr(exc, "lineno", None)
                msg = f"syntax error at line {line}" if line else "cannot parse"
                s = ModuleSummary(module, shown, is_package, error=msg)
                self.errors.append(f"{shown}: index: skipped: {msg}")
                self.summaries[module] = s
                if cf is not None:
                    self._store(cf, s)  # a broken file is not re-parsed until it changes
                return s
        s = summarise(tree, module, self.k, is_package, shown, lines, memo)
        self.summaries[module] = s
        if cf is not None:
            self._store(cf, s)
        return s

    def _store(self, cf: Path, s: ModuleSummary) -> None:
        try:
            cf.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cf.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({**s.to_json(), "path": ""}, fh)
            os.replace(tmp, cf)
        except OSError:
            self.cache_dir = None  # read-only tree: keep going without a cache

    def update_text(self, path: str, text: str) -> None:
        """Re-summarise one file from unsaved text (the language server's open document): the
        definitions whose code and context did not change keep their summaries (``StatementMemo``);
        an edit inside one top-level ``def`` / ``class`` that leaves it one statement of the same
        name parses and summarises that statement alone (``_update_one_definition``)."""
        data = text.encode("utf-8", "surrogatepass")
        real = os.path.realpath(path)
        lines = split_lines(text)
        if self._update_one_definition(real, path, data, lines):
            return
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return  # keep the last good summary
        memo = self._statements.setdefault(real, StatementMemo())
        self.summarise_file(Path(path), tree=tree, data=data, lines=lines, memo=memo)
        memo.done()
        self._documents[real] = (lines, _spans(tree))

    def _update_one_definition(self, real: str, path: str, data: bytes, lines: List[str]) -> bool:
        """The document's summary brought up to ``lines`` when they differ from the last summarised
        ones inside a single top-level ``def`` / ``class`` (its first line, the one with its name,
        unchanged), which still parses alone as that one statement: that statement is summarised in
        the module's context (its imports and names, which such an edit cannot change) and the
        definitions, handles and spans after it move by the lines added. False: nothing done."""
        last = self._documents.get(real)
        module, is_package = self.module_for(path)
        old_s = self.summaries.get(module)
        if last is None or old_s is None or old_s.error:
            return False
        old, spans = last
        n_old, n_new = len(old), len(lines)
        p = 0
        while p < n_old and p < n_new and old[p] == lines[p]:
            p += 1
        if p == n_old == n_new:
            return True  # the same text
        q = 0
        while q < n_old - p and q < n_new - p and old[n_old - 1 - q] == lines[n_new - 1 - q]:
            q += 1
        delta = n_new - n_old
        # the changed lines (1-based, old numbering): p+1 .. n_old-q; inside one definition, past its
        # first line (a decorator or the ``def``/``class`` line itself)
        span = next((sp for sp in spans if sp.kind and sp.start - 1 < p and n_old - q <= sp.end), None)
        if span is None or span.name_line > p or sum(sp.name == span.name for sp in spans if sp.kind) > 1:
            return False  # the first line changed; or a name defined twice (the last one is the module's)
        end = span.end + delta
        rest = next((ln for ln in lines[end:] if ln.strip() and not ln.lstrip().startswith("#")), "")
        if rest[:1] in (" ", "\t"):
            return False  # an indented line after it: the definition may go on
        try:
            tree = ast.parse("\n" * (span.start - 1) + "".join(lines[span.start - 1 : end]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if len(tree.body) != 1:
            return False
        node = tree.body[0]
        if span.kind != type(node).__name__ or getattr(node, "name", None) != span.name or (node.end_lineno or 0) != end:
            return False
        sm = _Summariser(self.k, module, is_package)
        sm.s = ModuleSummary(
            module, old_s.path, is_package, dict(old_s.names), dict(old_s.classes), dict(old_s.functions),
            [a if a.line <= span.end else Assign(a.attr, a.line + delta, a.kind, a.detail) for a in old_s.handles],
        )
        s = sm.s
        for table in (s.classes, s.functions):
            for name, x in table.items():
                if x.line > span.end:
                    table[name] = _moved(x, delta)  # type: ignore[assignment]
        sm.definition(node)  # type: ignore[arg-type]
        self.one_definition_updates += 1
        self._memo.clear()
        self._file_texts.clear()
        self._digests[module] = _digest(data, module, is_package)
        self.summaries[module] = _compacted(s)
        moved = []
        for sp in spans:
            if sp.start > span.end:  # a statement after the edited one
                sp = replace(sp, start=sp.start + delta, name_line=sp.name_line + delta, end=sp.end + delta)
            elif sp is span:
                sp = replace(sp, end=end)
            moved.append(sp)
        self._documents[real] = (lines, moved)
        return True

    def summarise_all(self, paths: Iterable[str]) -> None:
        """Eager mode (``forksafe check DIR``): every given file under the root."""
        for p in paths:
            if p.endswith(".py"):
                self.summarise_file(Path(p))

    def summary(self, module: str) -> Optional[ModuleSummary]:
        """The module's summary, summarising its file on first request (lazy mode)."""
        s = self.summaries.get(module)
        if s is None:
            path = self.path_for(module)
            if path is None:
                return None
            s = self.summarise_file(path)
        return s

    def module_device(self, qname: str) -> Optional[Tuple[str, int]]:
        """Where the project's module-level name ``qname`` (``pkg.constants.DEFAULT_DEVICE``,
        followed through re-exports) is set to a value that may be a CUDA device: (path, line), or
        None."""
        q = self.canonical(qname)
        mod, _, name = q.rpartition(".")
        s = self.summary(mod) if mod and mod.split(".", 1)[0] in self.top_packages() else None
        if s is None:
            return None
        for h in s.handles:
            if h.attr == name and h.kind == "device":
                return s.path, h.line
        return None

    def summary_of_path(self, path: str) -> ModuleSummary:
        """The summary of the file itself (summarised now if it is not yet)."""
        module, _ = self.module_for(path)
        s = self.summaries.get(module)
        return s if s is not None else self.summarise_file(Path(path))

    # -- proofs from the text (no parsing)
    def text_module(self, module: str) -> Optional[TextModule]:
        """The module's text reading, read again when the file changed (size, mtime: a language
        server lives long); None when it has no file or is not UTF-8."""
        path = self.path_for(module)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (str(path), st.st_size, st.st_mtime_ns)
        got = self._texts.get(module)
        if got is not None and got[0] == stamp:
            return got[1]
        try:
            text: Optional[str] = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        tm = None
        if text is not None:
            tm = TextModule(module, path.name == "__init__.py", text, self.k.derived("index.reach_words", reach_words))
        self._texts[module] = (stamp, tm)
        return tm

    def _text_qualify(self, tm: TextModule, d: str, depth: int = 0) -> Optional[Set[str]]:
        """Every qualified name ``_Summariser.qualify`` can give the dotted name ``d`` written in
        ``tm``'s module: through any import or ``X = <dotted>`` alias of its head, the module's own
        class or function of that name, or ``d`` itself. None: an alias this reading cannot follow."""
        head, _, rest = d.partition(".")
        tail = f".{rest}" if rest else ""
        out = {d}
        for t in tm.imports.get(head, ()):
            out.add(t + tail)
        if head in tm.classes or head in tm.defs:
            out.add(f"{tm.module}.{head}{tail}" if tm.module else d)
        aliases = tm.aliases(head)
        if aliases is None or depth > MAX_DEPTH:
            return None
        for a in aliases:
            got = self._text_qualify(tm, a, depth + 1) if a.partition(".")[0] != head else {a}
            if got is None:
                return None
            out |= {g + tail for g in got}
        return out

    def cannot_reach_dataset(self, qnames: Iterable[str]) -> bool:
        """A proof, from the text of modules (nothing parsed), that resolving ``qnames`` (as
        ``has_project_dataset`` does: ``resolve_class``, ``derives_from``, ``passes_self_to_loader``,
        through re-exports, aliases and bases in any module) meets no name holding a
        ``reach_words`` word and no class passing ``self.X`` to a DataLoader: then it finds no
        dataset. Every module that resolution would summarise is read instead (its summary when it
        has one already, e.g. of unsaved text): one holding a word, or written in a form the text
        reading does not follow, ends the proof (False: resolve)."""
        words = self.k.derived("index.reach_words", reach_words)
        seen: Set[str] = set()
        work = list(qnames)
        while work:
            q = work.pop()
            if q in seen:
                continue
            seen.add(q)
            if len(seen) > TEXT_WALK_LIMIT or any(w in q for w in words):
                return False
            parts = q.split(".")
            for i in range(len(parts) - 1, 0, -1):  # the modules `canonical` tries, longest first
                mod, head, rest = ".".join(parts[:i]), parts[i], parts[i + 1 :]
                s = self.summaries.get(mod)
                if s is not None:  # what resolution will read
                    c = s.classes.get(head)
                    if c is not None:
                        if any(m.loader_attrs for m in c.methods.values()):
                            return False
                        work += [b for b in c.bases if b]
                    elif head not in s.functions and head in s.names:
                        work.append(".".join([s.names[head], *rest]))
                    break
                if self.path_for(mod) is None:
                    continue
                tm = self.text_module(mod)
                if tm is None or tm.interesting or tm.unclear:
                    return False
                if head in tm.classes:
                    bases = tm.classes[head]
                    if bases is None:
                        return False
                    for b in bases:
                        got = self._text_qualify(tm, b)
                        if got is None:
                            return False
                        work += got
                targets = {t for t in tm.imports.get(head, ())}
                aliases = tm.aliases(head)
                if aliases is None:
                    return False
                for a in aliases:
                    got = self._text_qualify(tm, a)
                    if got is None:
                        return False
                    targets |= got
                work += [".".join([t, *rest]) for t in targets]
                break
        return True

    # -- queries
    def canonical(self, qname: str) -> str:
        """Follow re-exports and aliases inside the project: ``pkg.data.Base`` imported in
        ``pkg/data/__init__.py`` from ``.base`` becomes ``pkg.data.base.Base``; a name that leaves
        the project (``pkg.data.Dataset`` re-exporting torch's) becomes the outside name."""
        key = ("canonical", qname)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._canonical(qname)
        return got  # type: ignore[return-value]

    def _canonical(self, qname: str) -> str:
        seen: Set[str] = set()
        while qname not in seen and len(seen) < MAX_DEPTH:
            seen.add(qname)
            parts = qname.split(".")
            moved = False
            for i in range(len(parts) - 1, 0, -1):
                mod, rest = ".".join(parts[:i]), parts[i:]
                s = self.summary(mod)
                if s is None:
                    continue
                head = rest[0]
                if head in s.classes or head in s.functions:
                    return qname
                target = s.names.get(head)
                if target is not None:
                    qname = ".".join([target, *rest[1:]])
                    moved = True
                break
            if not moved:
                return qname
        return qname

    def resolve_class(self, qname: str) -> Optional[ClassRef]:
        q = self.canonical(qname)
        mod, _, name = q.rpartition(".")
        s = self.summary(mod) if mod else None
        if s is None or name not in s.classes:
            return None
        c = s.classes[name]
        return ClassRef(q, s.path, c.line, c)

    def base_chain(self, qname: str) -> Tuple[List[ClassRef], List[str]]:
        """(the class and its project bases, depth-first in base order; the outside bases reached,
        as canonical qualified names). Cycles between modules end the walk."""
        key = ("base_chain", qname)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = tuple(map(tuple, self._base_chain(qname)))
        chain, outside = got  # type: ignore[misc]
        return list(chain), list(outside)

    def _base_chain(self, qname: str) -> Tuple[List[ClassRef], List[str]]:
        chain: List[ClassRef] = []
        outside: List[str] = []
        seen: Set[str] = set()

        def walk(q: str, depth: int) -> None:
            if depth > MAX_DEPTH:
                return
            ref = self.resolve_class(q)
            if ref is None:
                c = self.canonical(q)
                if c and c not in outside:
                    outside.append(c)
                return
            if ref.qname in seen:
                return
            seen.add(ref.qname)
            chain.append(ref)
            for b in ref.summary.bases:
                if b:
                    walk(b, depth + 1)

        walk(qname, 0)
        return chain, outside

    def derives_from(self, qname: str, is_base: Callable[[str], bool]) -> bool:
        """The class (through bases in other modules) derives from a base ``is_base`` accepts
        (e.g. a torch dataset base); the class itself is not tested."""
        chain, outside = self.base_chain(qname)
        return any(is_base(o) for o in outside) or any(is_base(c.qname) for c in chain[1:])

    def resolve_method(self, qname: str, name: str, after: Optional[str] = None) -> Optional[MethodRef]:
        chain, _ = self.base_chain(qname)
        if after is not None:
            idx = next((i for i, c in enumerate(chain) if c.qname == after), None)
            chain = chain[idx + 1 :] if idx is not None else []
        for c in chain:
            m = c.summary.methods.get(name)
            if m is not None:
                return MethodRef(c.qname, name, c.path, m.line)
        return None

    def method(self, ref: MethodRef) -> Optional[Method]:
        c = self.resolve_class(ref.cls)
        return c.summary.methods.get(ref.name) if c else None

    def init_reach(self, qname: str) -> List[MethodRef]:
        """The methods ``__init__`` of the class reaches (self.m() calls resolved from the class,
        super().__init__ and Base.__init__(self) into bases in any module), with where each is."""
        start = self.resolve_method(qname, "__init__")
        out: List[MethodRef] = []
        work = [start] if start else []
        seen: Set[Tuple[str, str]] = set()
        while work:
            ref = work.pop(0)
            if (ref.cls, ref.name) in seen:
                continue
            seen.add((ref.cls, ref.name))
            out.append(ref)
            m = self.method(ref)
            if m is None:
                continue
            for name in m.self_calls:
                t = self.resolve_method(qname, name)
                if t is not None:
                    work.append(t)
            if m.super_init:
                t = self.resolve_method(qname, ref.name, after=ref.cls)
                if t is not None:
                    work.append(t)
            for b in m.base_inits:
                bc = self.resolve_class(b)
                if bc is not None:
                    t = self.resolve_method(bc.qname, "__init__")
                    if t is not None:
                        work.append(t)
        return out

    def returns(self, callee: str, cls: Optional[str] = None, depth: int = 0) -> Tuple[str, str]:
        """What a call returns: ("factory", name), ("generator", ""), ("rng", ""), ("cuda", ""),
        or ("other", ""). ``self.m`` is resolved from ``cls``; a qualified name in the project."""
        if depth > 6:
            return "other", ""
        m: Optional[Method] = None
        if callee.startswith("self.") and cls:
            ref = self.resolve_method(cls, callee[5:])
            m = self.method(ref) if ref else None
        else:
            got = self.callable_at(callee)
            m = got[0] if got is not None else None
        if m is None or not m.returns:
            return "other", ""
        kind, _, detail = m.returns.partition(":")
        if kind == "call":
            return self.returns(detail, cls, depth + 1)
        return kind, detail

    def function_cuda(self, qname: str, depth: int = 0, seen: Optional[Set[str]] = None) -> Optional[Tuple[str, str, str, int]]:
        """Whether the project function ``qname`` (a module-level function, followed through
        re-exports) uses CUDA, itself or through the project functions it calls: (the CUDA call,
        the function that makes it, its path, line), or None."""
        if seen is None and depth == 0:  # a question from outside: answered once per name
            key = ("function_cuda", qname)
            if key not in self._memo:
                self._memo[key] = self._function_cuda(qname, 0, set())
            return self._memo[key]  # type: ignore[return-value]
        return self._function_cuda(qname, depth, set() if seen is None else seen)

    def _function_cuda(self, qname: str, depth: int, seen: Set[str]) -> Optional[Tuple[str, str, str, int]]:
        if depth > 4 or qname in seen or len(seen) > 64:
            return None
        top, _, rest = qname.partition(".")
        tops = self.top_packages()
        if depth == 0 and rest and top in tops and not self.holder_search_too_big(qname):
            # what the package's text proves uses no CUDA: no summary (a package too big to read
            # whole, torch's own, is summarised instead: a few modules, not every file read)
            table = self._dataset_text_table(qname)
            name = qname.rsplit(".", 1)[-1]
            if name in table.defs and name not in table.cuda_defs(top, tops):
                return None
        seen.add(qname)
        q = self.canonical(qname)
        mod, _, name = q.rpartition(".")
        s = self.summary(mod) if mod else None
        m = s.functions.get(name) if s else None
        if m is None:
            return None
        if m.cuda:
            return m.cuda, q, s.path, m.cuda_line
        for callee in m.callees:
            got = self.function_cuda(callee, depth + 1, seen)
            if got is not None:
                return got
        return None

    def device_param(self, callee: str, key: str) -> Optional[Tuple[str, str, int]]:
        """Whether the argument ``key`` (a keyword, or ``#i`` for the i-th positional) of a call of
        the project callable ``callee`` reaches CUDA work in that call: for a class, in the methods
        its ``__init__`` reaches (the parameter itself, or the ``self.X`` it is stored in, moved to the
        device, given as ``device=``/``map_location=``, passed on to a callable that does so or that
        the index cannot follow); for a function, in its body and what it passes the value to.
        (CUDA call's owner ``Class.method``, path, line) when it does, ``("", "", 0)`` when the value
        is only stored or compared, None when the callee or the parameter cannot be resolved."""
        key_ = ("device_param", callee, key)
        if key_ not in self._memo:
            try:
                self._memo[key_] = self._device_param(callee, key, 0, set())
            except RecursionError:
                self._memo[key_] = None
        return self._memo[key_]  # type: ignore[return-value]

    _UNKNOWN = ("?", "", 0)

    def _device_param(self, callee: str, key: str, depth: int, seen: Set[str]) -> Optional[Tuple[str, str, int]]:
        if depth > 6 or len(seen) > 64:
            return None
        q = self.canonical(callee)
        c = self.resolve_class(q)
        if c is not None:
            ref = self.resolve_method(c.qname, "__init__")
            if ref is None:
                return None
            m = self.method(ref)
            cls: Optional[str] = c.qname
            path, label, offset = ref.path, ref.label, 1
        else:
            mod, _, name = q.rpartition(".")
            s = self.summary(mod) if mod else None
            m = s.functions.get(name) if s else None
            cls, path, label, offset = None, (s.path if s else ""), q, 0
        if m is None:
            return None
        p = self._param_for(m, key, offset)
        if p is None:
            return None
        if cls is not None:  # an __init__ that uses CUDA whatever it is given
            for r in self.init_reach(cls):
                mm = self.method(r)
                if mm is not None and mm.cuda:
                    return (r.label, r.path, mm.cuda_line)
        return self._reaches(cls, m, label, path, p, depth, seen)

    @staticmethod
    def _param_for(m: Method, key: str, offset: int) -> Optional[str]:
        if key.startswith("#"):
            i = int(key[1:]) + offset
            return m.params[i] if i < len(m.params) else None
        return key if key in m.params else None

    def _reaches(
        self, cls: Optional[str], m: Method, label: str, path: str, src: str, depth: int, seen: Set[str]
    ) -> Optional[Tuple[str, str, int]]:
        """Where ``src`` (a parameter of ``m`` or ``self.X``) reaches CUDA work; ("", "", 0) when not."""
        tag = f"{label}:{src}"
        if tag in seen:
            return ("", "", 0)
        seen.add(tag)
        stored: List[str] = []
        for u in m.device_uses:
            name, _, line = u.rpartition(":")
            if name == "*":  # a body not followed: it has no ``self`` (a classmethod), so it reads no self.X
                if src.startswith("self."):
                    return ("", "", 0)
                return self._UNKNOWN
            if name == src:
                return (label, path, int(line))
        for fl in m.device_flows:
            name, _, dest = fl.partition(">")
            if name != src:
                continue
            if dest.startswith("self.") and "|" not in dest:
                stored.append(dest)
                continue
            target, _, key = dest.partition("|")
            if target.startswith("self."):
                if cls is None:
                    return self._UNKNOWN
                ref = self.resolve_method(cls, target[5:])
                mm = self.method(ref) if ref else None
                p = self._param_for(mm, key, 1) if mm else None
                if mm is None or p is None:
                    return self._UNKNOWN
                got = self._reaches(cls, mm, ref.label, ref.path, p, depth + 1, seen)
            else:
                got = self._device_param(target, key, depth + 1, seen)
            if got is None:
                return self._UNKNOWN
            if got[0]:
                return got
        if stored and cls is not None:  # kept on self: what __init__ and the methods it reaches do with it
            for ref in self.init_reach(cls):
                mm = self.method(ref)
                if mm is None:
                    continue
                for attr in stored:
                    got = self._reaches(cls, mm, ref.label, ref.path, attr, depth + 1, seen)
                    if got is None:
                        return self._UNKNOWN
                    if got[0]:
                        return got
        return ("", "", 0)

    # -- handle holders: objects that keep a handle, built and kept by a dataset in another module

    def dataset_factory(self, qname: str, is_base: Callable[[str], bool]) -> Optional[Tuple[List[str], Set[str], str]]:
        """A project function (not a class, not a method) whose return values are instances of
        project dataset classes (``def TaskSet(x, trsf=None, target_trsf=None): ... return
        ArrayTaskSet(x, trsf=trsf, target_trsf=target_trsf)``): (its parameters; those of them that a
        made dataset's ``__init__`` keeps on ``self``, itself or through a base ``__init__`` it calls
        (``stored_init_params``); where: `` (kept by the datasets TaskSet makes, tasks.py:15)``).
        Memoised per name: a call site asks it up to three times (is it a dataset constructor, what
        it keeps, what it only uses)."""
        key = ("dataset_factory", qname)
        if key not in self._memo:
            self._memo[key] = self._dataset_factory(qname, is_base)  # type: ignore[assignment]
        return self._memo[key]  # type: ignore[return-value]

    def factory_drops(self, qname: str, is_base: Callable[[str], bool]) -> FrozenSet[str]:
        """The parameters of the dataset factory ``qname`` (``dataset_factory``) that none of the
        datasets it makes keeps, proven: a project class's ``__init__`` does not store it
        (``stored_init_params``), a library class's model says it only uses it (``transient``:
        ``ImageFolder(is_valid_file=...)``; the parameter taken to go on under its own name)."""
        got = self._dataset_made(qname, is_base)
        if got is None:
            return frozenset()
        fn, _, made = got
        left = set(fn.params)
        for c in made:
            left -= self.stored_init_params(c)
        libraries = self._library_datasets(fn, is_base)
        if not libraries:
            return frozenset(left)
        # a library dataset it returns too (``return datasets.ImageFolder(...)``) keeps what it is
        # given: a parameter is dropped only when it goes on under a keyword the library's model
        # says is only used, or is named like one (``**kwargs`` and other shapes the summary does
        # not record as they are)
        only_used: Set[str] = set()
        handed: Set[str] = set()
        for e in fn.forwards:
            callee, p, keyword = e.split("|")
            if callee not in libraries:
                continue
            if keyword and keyword in self.k.library_transient(callee):
                only_used.add(p)
            else:
                handed.add(p)
        named: Set[str] = set()
        for what in libraries:
            named |= self.k.library_transient(what)
        return frozenset(left & ((only_used - handed) | (named - handed)))

    def _dataset_made(self, qname: str, is_base: Callable[[str], bool]) -> Optional[Tuple[Method, str, List[str]]]:
        """(the factory function ``qname``, its canonical name, the dataset classes it makes), or None."""
        key = ("dataset_made", qname)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = None
        top = qname.split(".", 1)[0]
        if top in self.top_packages() and not self.may_make_dataset(qname):
            return None  # the package's text proves it makes no dataset: nothing summarised
        got = self.callable_at(qname)
        if got is None or got[1] is not None:
            return None
        q = self.canonical(qname)
        made = [c for c in sorted(self.instances(q)) if is_base(c) or self.derives_from(c, is_base)]
        if made or self._library_datasets(got[0], is_base):
            self._memo[key] = (got[0], q, made)
        return self._memo[key]  # type: ignore[return-value]

    def _library_datasets(self, fn: Method, is_base: Callable[[str], bool]) -> List[str]:
        """The library dataset classes the function ``fn`` returns objects of (``return
        datasets.ImageFolder(root, transform=transform)``): a dataset base name, or a class of a
        ``dataset_modules`` module (``torchvision.datasets``), not defined in the project."""
        out: List[str] = []
        tops = self.top_packages()
        for e in fn.makes:
            kind, _, what = e.partition(":")
            if kind != "call" or what in out or what.split(".", 1)[0] in tops or self.k.not_a_dataset(what):
                continue
            if is_base(what) or self.k.in_dataset_module(what):
                out.append(what)
        return out

    def _dataset_factory(self, qname: str, is_base: Callable[[str], bool]) -> Optional[Tuple[List[str], Set[str], str]]:
        got = self._dataset_made(qname, is_base)
        if got is None:
            return None
        fn, q, made = got
        params = list(fn.params)
        kept: Set[str] = set()
        for c in made:
            kept |= self.stored_init_params(c) & set(params)
        libraries = self._library_datasets(fn, is_base)
        for e in fn.forwards:  # a library dataset keeps what it is given, but what its model says it only uses
            callee, p, keyword = e.split("|")
            if callee in libraries and not (keyword and keyword in self.k.library_transient(callee)):
                kept.add(p)
        s = self.summary(q.rpartition(".")[0])
        return params, kept, f" (kept by the datasets {fn.name}() makes, {s.path if s else '?'}:{fn.line})"

    def stored_init_params(self, qname: str) -> Set[str]:
        """The parameters the ``__init__`` of the project class ``qname`` keeps on ``self`` as they are,
        with those of the base ``__init__`` it calls (``super().__init__(x, trsf, target_trsf)``: a
        parameter is taken to go on under its own name), up to four classes up."""
        out: Set[str] = set()
        after: Optional[str] = None
        for _ in range(4):
            ref = self.resolve_method(qname, "__init__", after=after)
            m = self.method(ref) if ref is not None else None
            if m is None or ref is None:
                break
            out |= {x.detail for x in m.assigns if x.kind == "param"}
            if not (m.super_init or m.base_inits):
                break
            after = ref.cls
        return out

    def callable_at(self, qname: str) -> Optional[Tuple[Method, Optional[str]]]:
        """The project function or method ``qname`` names (``mod.f``, ``mod.Class.m``, followed
        through re-exports and base classes) and its class, or None."""
        q = self.canonical(qname)
        mod, _, name = q.rpartition(".")
        s = self.summary(mod) if mod else None
        if s is not None and name in s.functions:
            return s.functions[name], None
        c = self.resolve_class(mod) if mod else None
        if c is not None:
            ref = self.resolve_method(c.qname, name)
            m = self.method(ref) if ref else None
            if m is not None:
                return m, c.qname
        return None

    def seeding_function(self, qname: str) -> Optional[Tuple[str, List[str], str, str, int]]:
        """A project function that passes one of its parameters as it is to a seeder
        (``def set_global_seed(seed): random.seed(seed); np.random.seed(seed)``): (that parameter,
        its parameters, its qualified name, path, line), or None."""
        got = self.callable_at(qname)
        if got is None or got[1] is not None or not got[0].seeds:
            return None
        q = self.canonical(qname)
        s = self.summary(q.rpartition(".")[0])
        return got[0].seeds[0], list(got[0].params), q, s.path if s is not None else "", got[0].line

    def instances(self, callee: str, cls: Optional[str] = None, depth: int = 0) -> FrozenSet[str]:
        """The project classes whose instances (alone or in a container) a call of ``callee`` may
        give: the class itself, or what a function/method returns (``Method.makes``) followed."""
        key = ("instances", f"{callee}|{cls or ''}")
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = frozenset()  # a cycle gives nothing
        out: Set[str] = set()
        if depth <= 8:
            if callee.startswith(("self.", "cls.")) and cls:
                ref = self.resolve_method(cls, callee.split(".", 1)[1])
                got = (self.method(ref), cls) if ref else None
            else:
                c = self.resolve_class(self.canonical(callee))
                if c is not None:
                    out.add(c.qname)
                got = None if c is not None else self.callable_at(callee)
            if got is not None and got[0] is not None:
                m, owner = got
                for e in m.makes:
                    kind, _, what = e.partition(":")
                    if kind == "call":
                        out |= self.instances(what, owner, depth + 1)
                    elif kind == "callret":
                        for o in self.objects(what, owner, depth + 1):
                            out.add(o)
        self._memo[key] = frozenset(out)
        return self._memo[key]  # type: ignore[return-value]

    def objects(self, callee: str, cls: Optional[str], depth: int) -> Set[str]:
        """The project classes a call of ``callee`` may return as class objects (``return Cls``)."""
        if depth > 8:
            return set()
        if callee.startswith(("self.", "cls.")) and cls:
            ref = self.resolve_method(cls, callee.split(".", 1)[1])
            got = (self.method(ref), cls) if ref else None
        else:
            got = self.callable_at(callee)
        out: Set[str] = set()
        if got is not None and got[0] is not None:
            for e in got[0].makes:
                kind, _, what = e.partition(":")
                if kind == "obj":
                    c = self.resolve_class(self.canonical(what))
                    if c is not None:
                        out.add(c.qname)
                elif kind == "call":
                    out |= self.objects(what, got[1], depth + 1)
        return out

    def returned_handle(self, callee: str) -> Optional[Tuple[str, str, str, int]]:
        """A project function (or static/class method) whose return value is a handle from a
        factory, itself or through what it returns: (factory, function, path, line of its def)."""
        got = self.callable_at(callee)
        if got is None:
            return None
        kind, detail = self.returns(callee, got[1])
        if kind != "factory":
            return None
        q = self.canonical(callee)
        mod = q.rpartition(".")[0]
        s = self.summary(mod)
        if s is None:
            c = self.resolve_class(mod)
            path = c.path if c is not None else ""
        else:
            path = s.path
        return detail, q, path, got[0].line

    def holder(self, qname: str, kind: str = "factory") -> Optional[AttrFact]:
        """The first handle (``Assign.kind`` "factory"; ``kind`` "rng": RNG object) the class's
        ``__init__`` keeps on ``self``."""
        key = ("holder", qname, kind)
        if key not in self._memo:
            self._memo[key] = next((f for f in self.init_assigns(qname) if f.kind == kind), None)
        return self._memo[key]  # type: ignore[return-value]

    def holds(self, qname: str) -> bool:
        """The class's ``__init__`` keeps a handle (FRK101) or an RNG object (FRK601) on ``self``."""
        return self.holder(qname) is not None or self.holder(qname, "rng") is not None

    def _package_files(self, qname: str) -> List[Path]:
        """The project files under the top-level package of ``qname`` (all of them for a top-level
        module): where a dataset keeping its objects is looked for."""
        top = qname.split(".", 1)[0]
        key = ("package_files", top)
        if key not in self._memo:
            init = self.path_for(top)
            if init is not None and init.name == "__init__.py":
                files = _py_files_below(init.parent)
            elif init is not None:
                files = sorted(init.parent.glob("*.py"))
            elif top in self._namespace_tops:  # a namespace package: every package below it
                d = next((r / top for r in self.source_roots() if (r / top).is_dir()), None)
                files = [] if d is None else _py_files_below(d)
            else:
                files = []
            self._memo[key] = files
        return self._memo[key]  # type: ignore[return-value]

    def _file_text(self, p: Path) -> str:
        """The text of a project file found by listing a package (``_package_files``): only a regular
        file is read (a FIFO named ``x.py`` would block the run forever), and one over
        ``MAX_TEXT_BYTES`` counts as empty (it is not a module anybody imports)."""
        t = self._file_texts.get(p)
        if t is None:
            t = self._file_texts[p] = self._read_text(p)
        return t

    def _dataset_text_table(self, qname: str) -> "_DatasetText":
        """One text reading of the files of the top-level package of ``qname`` (not kept): the
        classes with their base words, the ``X as Y`` aliases and where each module-level function's
        text is; the class names that may be datasets follow from them (``_DatasetText``)."""
        top = qname.split(".", 1)[0]
        key = ("dataset_text", top)
        got = self._memo.get(key)
        if got is None:  # kept across the answers a replaced summary forgets while no file changed on disk
            files = self._package_files(qname)
            stamp = _stamps(files)
            kept = self._text_tables.get(top)
            if kept is not None and kept[0] == stamp:
                got = kept[1]
            else:
                got = _DatasetText(self.k, files, self._read_text, top)
                self._text_tables[top] = (stamp, got)
            self._memo[key] = got
        return got  # type: ignore[return-value]

    @staticmethod
    def _read_text(p: Path) -> str:
        """A project file's text, not kept (``_file_text`` keeps what it reads)."""
        try:
            st = os.stat(p)
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_TEXT_BYTES:
                return p.read_bytes().decode("utf-8", "replace")
        except (OSError, ValueError):
            pass
        return ""

    def may_make_dataset(self, qname: str) -> bool:
        """Whether a call of the project name ``qname`` may make a dataset, read from the text of its
        package (no summary made): False only for a class no class chain of the package's text ties
        to a dataset base name, or a module-level function whose body (and the functions it returns,
        three deep) names no such class. Anything the text reading does not find (an assigned name, a
        name of a C extension) may (the summaries decide)."""
        return self._dataset_text_table(qname).may_make(qname.rsplit(".", 1)[-1])

    def may_be_kept(self, qname: str) -> bool:
        """Whether objects of the project class ``qname`` may be kept on ``self`` anywhere in its
        package, read from the package's text (``_DatasetText.may_be_kept``): a class no text keeps
        is no handle holder any dataset keeps, and is not summarised to find out."""
        return self._dataset_text_table(qname).may_be_kept(qname.rsplit(".", 1)[-1])

    def holder_search_too_big(self, qname: str) -> bool:
        """The package of ``qname`` has more than ``MAX_HOLDER_PACKAGE_BYTES`` of files: no search
        for datasets keeping a holder's objects there (no finding rather than a slow search)."""
        top = qname.split(".", 1)[0]
        key = ("package_bytes", top)
        if key not in self._memo:
            total = 0
            for p in self._package_files(qname):
                try:
                    total += os.stat(p).st_size
                except OSError:
                    pass
                if total > MAX_HOLDER_PACKAGE_BYTES:
                    break
            self._memo[key] = total > MAX_HOLDER_PACKAGE_BYTES
        return bool(self._memo[key])

    def importers(self, path: str, limit: int = 3) -> Optional[List[str]]:
        """Up to ``limit`` project files (relative to the root) that import the module of ``path``
        (``import m``, ``from m import x``, ``from pkg import m``, or a submodule of the package
        ``m``), read as text as ``dependency_digest`` reads imports; None when the project's files
        add up to more than ``MAX_HOLDER_PACKAGE_BYTES`` (not searched)."""
        module, _ = self.module_for(path)
        if not module:
            return []
        key = ("importers", module)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        me = os.path.realpath(path)
        last = module.rpartition(".")[2].encode()
        out: List[str] = []
        total = 0
        for top, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _NOT_PROJECT_DIRS)
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                p = Path(top) / name
                try:
                    st = os.stat(p)
                    if not stat.S_ISREG(st.st_mode) or os.path.realpath(p) == me:
                        continue
                    total += st.st_size
                    if total > MAX_HOLDER_PACKAGE_BYTES:
                        self._memo[key] = None
                        return None
                    if st.st_size > MAX_TEXT_BYTES or last not in p.read_bytes():
                        continue
                except OSError:
                    continue
                m, is_package = self.module_for(str(p))
                if module in self._imports_of(m, is_package, p)[1]:
                    out.append(os.path.relpath(p, self.root))
                    if len(out) >= limit:
                        self._memo[key] = out
                        return out
        self._memo[key] = out
        return out

    def results(self, callee: str, cls: Optional[str] = None, depth: int = 0) -> FrozenSet[str]:
        """The project callables whose return values a call of ``callee`` may give: the callable
        itself (qualified: ``mod.f``, ``mod.Class.m``) and, followed through ``Method.makes``, the
        ones whose results it returns (``def build(mode): return make(mode)``)."""
        key = ("results", f"{callee}|{cls or ''}")
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = frozenset()  # a cycle gives nothing
        out: Set[str] = set()
        if depth <= 8:
            got: Optional[Tuple[Optional[Method], Optional[str]]] = None
            if callee.startswith(("self.", "cls.")) and cls:
                ref = self.resolve_method(cls, callee.split(".", 1)[1])
                if ref is not None:
                    got = (self.method(ref), ref.cls)
                    out.add(f"{ref.cls}.{ref.name}")
            elif self.resolve_class(self.canonical(callee)) is None:
                got = self.callable_at(callee)
                if got is not None:
                    out.add(self.canonical(callee))
            if got is not None and got[0] is not None:
                for e in got[0].makes:
                    kind, _, what = e.partition(":")
                    if kind == "call":
                        out |= self.results(what, got[1], depth + 1)
        self._memo[key] = frozenset(out)
        return self._memo[key]  # type: ignore[return-value]

    def callable_keepers(self, fq: str) -> Optional[Tuple[str, str, str, int, str]]:
        """A dataset of the project that keeps on ``self`` what the project function (or static /
        class method) ``fq`` returns, called on the parent side, directly or through functions
        returning its result (clean-fid: ``ResizeDataset.__init__`` keeps ``build_resizer(mode)``,
        which returns a lambda or ``make_resizer(...)``'s local function): what ``keepers`` gives."""
        return self.keepers(fq, kind="callable")

    def loader_callable_user(self, qname: str, kind: str) -> Optional[Tuple[str, str, int]]:
        """A DataLoader of the project whose ``num_workers`` is not 0 given what the project
        function or method ``qname`` returns as its ``collate_fn`` / ``worker_init_fn``: called
        (``kind`` "call": ``collate_fn=make_collate(pad)``, ``collate_fn=Batch.collate()``) or, for a
        property, read (``kind`` "attr": ``collate_fn=ds.batch_padding_collator``): (keyword, path,
        line), or None. Looked for in the files of its top-level package and of the project's
        ``tests`` / ``examples`` / ``scripts`` directories whose text gives the name to one of
        those keywords; a method's name given on an object the summary cannot type counts."""
        key = ("loader_callable_user", f"{qname}|{kind}")
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = None
        name = qname.rsplit(".", 1)[-1]
        files = [p for p, words in self._loader_fn_files(qname).items() if name in words]
        if not files:
            return None
        target = self.canonical(qname)
        owner = target.rpartition(".")[0]
        is_method = self.resolve_class(owner) is not None
        found: Optional[Tuple[str, str, int]] = None
        for p in files:
            s = self.summary(self.module_for(str(p))[0])
            if s is None:
                continue
            bodies = list(s.functions.values()) + [m for c in s.classes.values() for m in c.methods.values()]
            for m in bodies:
                for e in m.loader_fns:
                    k, qual, last, keyword, line = e.split("|")
                    if k != kind or last != name:
                        continue
                    if qual:
                        q = self.canonical(qual)
                        if q != target:
                            cls = self.resolve_class(q.rpartition(".")[0]) if is_method else None
                            ref = self.resolve_method(cls.qname, name) if cls is not None else None
                            if ref is None or f"{ref.cls}.{name}" != target:
                                continue
                    elif not is_method:
                        continue
                    found = (keyword, s.path, int(line))
                    break
                if found:
                    break
            if found:
                break
        self._memo[key] = found
        return found

    def _loader_fn_files(self, qname: str) -> Dict[Path, FrozenSet[str]]:
        """The files that give ``collate_fn=`` / ``worker_init_fn=`` something, with the words of
        their text, among the files of the top-level package of ``qname`` and of the project's
        tests / examples / scripts directories (next to that package, or in the project's root);
        read once."""
        top = qname.split(".", 1)[0]
        key = ("loader_fn_files", top)
        if key not in self._memo:
            # the package's files that name a loader, as its text reading kept them; the others
            # read here, their words kept while the files are unchanged (the language server asks
            # again after every edit), their texts not
            table = self._dataset_text_table(qname)
            init = self.path_for(top)
            bases = [init.parent.parent if init.name == "__init__.py" else init.parent] if init is not None else []
            extra: List[Path] = []
            for r in dict.fromkeys(bases + [self.root]):
                for d in ("tests", "test", "examples", "scripts"):
                    if (r / d).is_dir() and d != top:
                        extra += _py_files_below(r / d)[:MAX_LOADER_FN_FILES]
            stamp = _stamps(extra)
            kept = self._loader_fn_tables.get(top)
            if kept is not None and kept[0] is table and kept[1] == stamp:
                out = kept[2]
            else:
                out = {}
                for p, text in list(table.loader_texts) + [(p, self._read_text(p)) for p in extra]:
                    if "_fn" in text and _LOADER_FN_TEXT.search(text):
                        out[p] = frozenset(_WORD.findall(text))
                self._loader_fn_tables[top] = (table, stamp, out)
            self._memo[key] = out
        return self._memo[key]  # type: ignore[return-value]

    def keepers(self, holder: str, depth: int = 0, kind: str = "class") -> Optional[Tuple[str, str, str, int, str]]:
        """A dataset of the project that keeps instances of the class ``holder`` (made on the parent
        side: in the methods its ``__init__`` reaches, possibly through project functions that build
        them, in a container too), directly or through objects of another class that keep them the
        same way (torcheeg: a dataset keeps ``EEGSignalIO`` objects, each keeping an
        ``LMDBEEGSignalIO``; two such steps at most): (dataset, attribute, path, line of the keeping
        assignment, the class in between or ""), or None. Only the modules that name the holder, or
        a callable found to return its objects, as a word are read, and in them only the callables
        and classes whose summaries name one of those."""
        key = ("keepers", holder, kind)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = None
        if self.holder_search_too_big(holder):
            return None
        if kind == "callable":  # no text of the package keeps or returns its result: no search
            if holder.rsplit(".", 1)[-1] not in self._dataset_text_table(holder).kept_results:
                return None
        known = {holder.rsplit(".", 1)[-1]}
        new = set(known)
        mods: Dict[Path, ModuleSummary] = {}
        found: Optional[Tuple[str, str, str, int]] = None

        def names(entries: Iterable[str]) -> bool:
            return any(e.rsplit(".", 1)[-1] in known for e in entries)

        # a method holder's class (``BloscInterface`` of ``...BloscInterface._fixed_crop``): a method
        # of one of its bases calling ``cls._fixed_crop()`` gives the holder when called on it
        owner = holder.rpartition(".")[0] if kind == "callable" else ""
        owner_bases = {c.qname for c in self.base_chain(owner)[0]} if owner and self.resolve_class(owner) else set()

        def gives(callee: str, cls: Optional[str]) -> bool:  # a call of callee may give the holder
            if kind == "callable":
                if holder in self.results(callee, cls):
                    return True
                if cls is not None and cls != owner and cls in owner_bases:  # inherited by the holder's class
                    return holder in self.results(f"{owner}.{callee.rsplit('.', 1)[-1]}", owner)
                return False
            return holder in self.instances(callee, cls) or holder in self.objects(callee, cls, 0)

        for _ in range(8):
            if found is not None or not new:
                break
            pat = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, new))) + r")\b")
            new_, new = new, set()
            for p in self._package_files(holder):
                if p not in mods:
                    text = self._file_text(p)
                    if not any(n in text for n in new_) or not pat.search(text):  # `in` first: fast
                        continue
                    if len(mods) >= MAX_KEEPER_MODULES:
                        break  # a name too common to follow: no finding rather than a slow search
                    s = self.summary(self.module_for(str(p))[0])
                    if s is None:
                        continue
                    mods[p] = s
            for s in mods.values():
                for fname, f in s.functions.items():
                    fq = f"{s.module}.{fname}"
                    if fname not in known and names(f.makes) and gives(fq, None):
                        new.add(fname)
                for c in s.classes.values():
                    cq = f"{s.module}.{c.name}" if s.module else c.name
                    for mname, mm in c.methods.items():
                        mq = f"{cq}.{mname}"
                        if mname not in known and mname != "__init__" and names(mm.makes) and gives(mq, cq):
                            new.add(mname)
                    if found is None and cq != holder and any(names(mm.keeps) for mm in c.methods.values()):
                        if self.derives_from(cq, lambda b: is_dataset_base_name(b, self.k)):
                            site = self._keeping(cq, holder, kind)
                            found = (c.name, *site, "") if site else None
                        elif depth < 2 and self._keeping(cq, holder, kind) is not None:
                            outer = self.keepers(cq, depth + 1)  # a holder of holders
                            found = (*outer[:4], outer[4] or c.name) if outer else None
            known |= new
        self._memo[key] = found
        return found

    def holder_keepers(self, holder: str) -> Optional[Tuple[Tuple[str, str, str, int, str], str]]:
        """``keepers`` of the class ``holder``, or else of a subclass of it in its module that keeps
        the same handle through the inherited ``__init__`` (slideflow's datasets keep
        ``IndexedExampleIterator`` objects, whose base ``IndexedTFRecordIterator.__init__`` opens the
        file): (what ``keepers`` gives, that subclass's name or "")."""
        got = self.keepers(holder)
        if got is not None:
            return got, ""
        mod = holder.rpartition(".")[0]
        s = self.summary(mod) if mod else None
        for name, c in (s.classes.items() if s is not None else ()):
            sub = f"{mod}.{name}"
            if sub != holder and holder in c.bases and self.holds(sub):
                got = self.keepers(sub)
                if got is not None:
                    return got, name
        return None

    def loader_feed(self, qname: str) -> Optional[Tuple[str, str, int]]:
        """A DataLoader of the project whose ``num_workers`` is not 0 is given objects of the class
        ``qname`` (a class with ``__getitem__``/``__iter__`` and no dataset base, a DataLoader's
        dataset by duck typing), in another module: through a parameter or a field annotated with the class
        (``dataset: Dataset``; ``DataLoader(self.dataset, **kwargs)``) or a call building one:
        (where, "Datastream.data_loader", its path, the loader call's line), or None. Only the
        modules that name the class and a loader as words are read."""
        key = ("loader_feed", qname)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        self._memo[key] = None
        if self.holder_search_too_big(qname):
            return None
        name = qname.rsplit(".", 1)[-1]
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        found: Optional[Tuple[str, str, int]] = None
        seen = 0
        for p, text in self._dataset_text_table(qname).loader_texts:
            if name not in text or not word.search(text):
                continue
            seen += 1
            if seen > MAX_KEEPER_MODULES:
                break  # a name too common to follow: no finding rather than a slow search
            s = self.summary(self.module_for(str(p))[0])
            if s is None or s.module == qname.rpartition(".")[0]:
                continue  # its own module's loaders: the analysis of that file reads them
            found = self._loader_given(s, qname)
            if found is not None:
                break
        self._memo[key] = found
        return found

    def _loader_given(self, s: ModuleSummary, qname: str) -> Optional[Tuple[str, str, int]]:
        """The first DataLoader call of the module ``s`` given objects of the class ``qname``
        (``Method.loader_datasets``): (its function or method, the module's path, its line)."""
        owners: List[Tuple[Optional[ClassSummary], str, Method]] = [(None, fname, f) for fname, f in s.functions.items()]
        owners += [(c, f"{c.name}.{mname}", m) for c in s.classes.values() for mname, m in c.methods.items()]
        for c, label, m in owners:
            for e in m.loader_datasets:
                src, _, line = e.rpartition(":")
                how, _, what = src.partition(".")
                if how == "self":
                    what = self._field_type(s, c, what) if c is not None else ""
                if what and self.canonical(what) == qname:
                    return label, s.path, int(line)
        return None

    def _field_type(self, s: ModuleSummary, c: ClassSummary, attr: str) -> str:
        """The declared type of ``self.<attr>`` of the class ``c`` of the module ``s``, looking into its
        project bases too (``ClassSummary.fields``); "" when none declares it."""
        typ = c.fields.get(attr)
        if typ:
            return typ
        for ref in self.base_chain(f"{s.module}.{c.name}" if s.module else c.name)[0][1:]:
            typ = ref.summary.fields.get(attr)
            if typ:
                return typ
        return ""

    def _keeping(self, cq: str, holder: str, kind: str = "class") -> Optional[Tuple[str, str, int]]:
        """Where the class ``cq`` keeps instances of ``holder`` (``kind`` "callable": what the
        callable ``holder`` returns) on ``self`` in the methods its ``__init__`` reaches: (attribute,
        path, line), or None."""
        for ref in self.init_reach(cq):
            m = self.method(ref)
            for kp in m.keeps if m else ():
                attr, line, entry = kp.split(":", 2)
                how, _, what = entry.partition(":")
                if how == "call" and holder in (self.results(what, cq) if kind == "callable" else self.instances(what, cq)):
                    return (attr, ref.path, int(line))
        return None

    def init_assigns(self, qname: str) -> List[AttrFact]:
        """What the methods ``__init__`` reaches store on ``self``: a handle from factory F, None,
        a parameter, a generator, an RNG, a CUDA value (calls followed through the project)."""
        out: List[AttrFact] = []
        for ref in self.init_reach(qname):
            m = self.method(ref)
            if m is None:
                continue
            for a in m.assigns:
                kind, detail = a.kind, a.detail
                if kind == "call":
                    kind, detail = self.returns(detail, qname)
                out.append(AttrFact(a.attr, kind, detail, ref.path, a.line, ref))
        return out

    def passes_self_to_loader(self, qname: str) -> bool:
        """The class or a project base of it passes ``self.X`` to a DataLoader as ``collate_fn`` /
        ``worker_init_fn`` (``Method.loader_attrs``)."""
        chain, _ = self.base_chain(qname)
        return any(m.loader_attrs for c in chain for m in c.summary.methods.values())

    def dependency_digest(self, path: str) -> str:
        """A digest of the contents of every project module the file depends on, for keying cached
        findings: the modules it imports, what those import, and so on (bases, helpers, re-exports
        through package ``__init__`` files, transitively), each with the packages above it. Read from
        the files' text (imports found by the same cheap reading as ``project_bases``), without
        parsing: an edit to a base class or helper any number of modules away invalidates the file."""
        module, is_package = self.module_for(path)
        deps = self._imports_of(module, is_package, Path(path))[1]
        reach: Set[str] = set()
        for d in deps:
            reach |= self._reach(d)
        reach.discard(module)
        parts = sorted(f"{m}:{self._dep_info[m][0]}" for m in reach)
        text = self._file_text(Path(path))
        if "__init__" in text and self.k.derived("index.holder_text", _holder_text).search(text):
            # a class here may be a handle holder whose objects a dataset elsewhere in its package
            # keeps (``keepers``): modules that import this one decide its findings too
            top = module or Path(path).stem
            for p in [] if self.holder_search_too_big(top) else self._package_files(top):
                if str(p) != str(path):
                    parts.append(f"{p}:{hashlib.sha1(self._file_text(p).encode()).hexdigest()}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def _reach(self, start: str) -> FrozenSet[str]:
        """The project modules reachable from ``start`` through imports (``start`` included),
        memoised per strongly connected component of the import graph (iterative Tarjan)."""
        got = self._reach_memo.get(start)
        if got is not None:
            return got
        index: Dict[str, int] = {}
        low: Dict[str, int] = {}
        stack: List[str] = []
        on: Set[str] = set()

        def deps_of(m: str) -> List[str]:
            p = self.path_for(m)
            if p is None:
                return []
            return [d for d in self._imports_of(m, p.name == "__init__.py", p)[1]]

        if self.path_for(start) is None:
            self._reach_memo[start] = frozenset()
            return frozenset()
        work: List[Tuple[str, int]] = [(start, 0)]
        children: Dict[str, List[str]] = {}
        while work:
            m, i = work.pop()
            if i == 0:
                index[m] = low[m] = len(index)
                stack.append(m)
                on.add(m)
                children[m] = deps_of(m)
            ch = children[m]
            recurse = False
            while i < len(ch):
                d = ch[i]
                i += 1
                if d in self._reach_memo:
                    continue
                if d not in index:
                    work.append((m, i))
                    work.append((d, 0))
                    recurse = True
                    break
                if d in on:
                    low[m] = min(low[m], index[d])
            if recurse:
                continue
            if low[m] == index[m]:  # m roots a component: pop it, its reach is shared
                comp: List[str] = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == m:
                        break
                r: Set[str] = set(comp)
                for x in comp:
                    for d in children[x]:
                        if d not in r:
                            r |= self._reach_memo.get(d, frozenset())
                fr = frozenset(r)
                for x in comp:
                    self._reach_memo[x] = fr
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[m])
        return self._reach_memo.get(start, frozenset())

    def _imports_of(self, module: str, is_package: bool, path: Path) -> Tuple[str, List[str]]:
        """(content digest, the project modules the file imports, with the packages above them);
        read once per process."""
        got = self._dep_info.get(module)
        if got is not None:
            return got
        try:
            data = path.read_bytes()
        except OSError:
            got = self._dep_info[module] = ("unreadable", [])
            return got
        text = data.decode("utf-8", "surrogateescape")
        cands: List[str] = []
        for dots, mod, imported in _at_line_starts(_FROM_IMPORT, text):
            base = absolute_module(module, is_package, len(dots), mod or None)
            if base:
                cands.append(base)
            for n in _imported_names(imported):
                if n[0].isidentifier():
                    cands.append(f"{base}.{n[0]}" if base else n[0])  # a submodule imported by name
        for imported in _at_line_starts(_IMPORT, text):
            cands.extend(n[0] for n in _imported_names(imported))
        if "." in module or is_package:  # the packages above the module run first and may re-export
            cands.append(module if is_package else module.rpartition(".")[0])
        deps: List[str] = []
        for c in cands:
            parts = c.split(".")
            for i in range(len(parts), 0, -1):
                m = ".".join(parts[:i])
                if m != module and m not in deps and self.path_for(m) is not None:
                    deps.append(m)
        got = self._dep_info[module] = (hashlib.sha256(data).hexdigest(), deps)
        return got


_INDEXES: Dict[Tuple[Path, int], ProjectIndex] = {}


def index_for(path: str, knowledge: Knowledge, use_cache: bool = True, roots: Optional[Dict[Any, Path]] = None) -> ProjectIndex:
    """The per-process index of a file's project (one per project root and knowledge): the flake8
    plugin and the language server keep one per project for the life of the process. ``roots``: a
    directory -> project root memo held by a caller for whom files do not come and go during its
    use (one ``forksafe check`` run): then the root is looked for once per directory."""
    if roots is None:
        root = project_root(path)
    else:
        # the root depends on the file's real directory only: a file that is not a link has the
        # real directory of its directory as written (one lstat, not realpath's one per component)
        raw = None if os.path.islink(path) else ("dir", os.path.dirname(os.path.abspath(path)))
        root = roots.get(raw) if raw is not None else None  # type: ignore[assignment]
        if root is None:
            d = os.path.dirname(os.path.realpath(path))
            root = roots.get(d)  # type: ignore[assignment]
            if root is None:
                root = roots[d] = project_root(path)
            if raw is not None:
                roots[raw] = root  # type: ignore[index]
    key = (root, id(knowledge))
    ix = _INDEXES.get(key)
    if ix is None or ix.k is not knowledge:
        ix = _INDEXES[key] = ProjectIndex(root, knowledge, root / CACHE_DIR if use_cache else None)
    return ix


def is_dataset_base_name(qname: str, k: Knowledge) -> bool:
    """The same test as ``Analysis._is_dataset_base_name``: a known base, a configured simple name,
    or a name ending with a dataset suffix."""
    if qname in k.dataset_bases:
        return True
    if k.not_a_dataset(qname):
        return False
    last = qname.rsplit(".", 1)[-1]
    return last in k.dataset_bases or last.endswith(tuple(k.dataset_base_suffixes))


def has_project_dataset(index: ProjectIndex, path: str, k: Knowledge, text: Optional[str] = None) -> bool:
    """A class of the file derives, through a base defined in another module of the project, from
    a dataset base (the gate's question for files it would otherwise skip)."""
    is_base = lambda q: is_dataset_base_name(q, k)  # noqa: E731
    if text is not None:  # without parsing the file: its bases read from the text
        bases = index.project_bases(path, text)
        if not bases or index.cannot_reach_dataset(bases):
            return False  # proved from the text of the modules on the way: nothing to summarise
        for q in bases:
            ref = index.resolve_class(q)
            if ref is not None and (is_base(ref.qname) or index.derives_from(ref.qname, is_base)):
                return True
            if ref is not None and ("lambda" in text or "def " in text) and index.passes_self_to_loader(ref.qname):
                return True  # FRK201/202: a base that gives self.collate_fn to a DataLoader
        return False
    s = index.summary_of_path(path)
    for name, c in s.classes.items():
        if any(b and b.rpartition(".")[0] != s.module and index.resolve_class(b) for b in c.bases):
            if index.derives_from(f"{s.module}.{name}" if s.module else name, lambda q: is_dataset_base_name(q, k)):
                return True
    return False


_DEF_WORD = re.compile(r"def[ \t]")
_CLASS_WORD = re.compile(r"class[ \t]")


def _holds_def(seg: str) -> bool:
    """A line of ``seg`` starts a def or class statement (after spaces, tabs or ``async``)."""
    for pattern in (_DEF_WORD, _CLASS_WORD):
        for _ in _line_start_matches(pattern, seg, after_async=True):
            return True
    return False


def lambda_scope_calls(tree: ast.Module, text: str) -> Optional[Set[str]]:
    """The names called as ``Name(...)`` in the top-level statements of the module that hold a lambda
    or a function or class defined inside a function (what FRK201/202 follow into a constructor stays
    within such a statement: a local, ``self.x`` set in another method of the same class, a method of
    the class that returns a lambda); None (every call) when a module-level statement outside a def
    or class holds a lambda (a module-level lambda may be passed from anywhere). Each statement's
    lines are searched as text (over-approximated: a word in a string or comment counts); only the
    statements that hold a candidate are walked."""
    lines = split_lines(text)

    def lines_of(first: int, last: int) -> str:
        return "".join(lines[first - 1 : last])

    def holds(st: ast.stmt) -> bool:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            head = st.decorator_list[0].lineno if st.decorator_list else st.lineno
            body = lines_of(st.body[0].lineno, st.end_lineno or st.lineno)
            return "lambda" in lines_of(head, st.end_lineno or st.lineno) or _holds_def(body)
        if isinstance(st, ast.ClassDef):
            decorators = "".join(lines[d.lineno - 1] for d in st.decorator_list)
            return "lambda" in decorators or any(holds(b) for b in st.body)
        seg = lines_of(st.lineno, st.end_lineno or st.lineno)  # a statement of a class body
        return "lambda" in seg or _holds_def(seg)

    out: Set[str] = set()
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not holds(st):
                continue
        else:
            seg = lines_of(st.lineno, st.end_lineno or st.lineno)
            if "lambda" in seg:
                return None
            if not _holds_def(seg):
                continue
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                out.add(n.func.id)
    return out


def constructs_project_dataset(
    index: ProjectIndex, path: str, k: Knowledge, text: str, tree: Optional[ast.Module] = None
) -> bool:
    """The file calls a dataset class imported from another module of the project and has a lambda
    or a nested def (FRK201/202: passed into that constructor, which may keep it). Only the names
    called in the statements holding such a lambda or def are resolved (``lambda_scope_calls``);
    ``tree``: the file's ast when the caller has it (the gate's, flake8's), else it is parsed here."""
    if "lambda" not in text and not re.search(r"\n[ \t]+def ", text):
        return False
    # what the package's text proves cannot make a dataset is not resolved (nor the file parsed)
    constructed = [q for q in index.project_constructed(path, text) if index.may_make_dataset(q)]
    if not constructed:
        return False
    is_base = lambda q: is_dataset_base_name(q, k)  # noqa: E731

    def makes_dataset(q: str) -> bool:
        ref = index.resolve_class(q)
        if ref is not None:
            return is_base(ref.qname) or index.derives_from(ref.qname, is_base)
        return index.dataset_factory(q, is_base) is not None

    if tree is None and len(text) > _PARSE_AFTER_RESOLVING:
        # a big file: its parse costs more than the summaries of the modules it imports from (which
        # the other files share), so the names are resolved first and the file parsed only when one
        # of them makes a dataset
        constructed = [q for q in constructed if makes_dataset(q)]
        if not constructed:
            return False
    if tree is None:  # a parse costs less than the summaries that resolving every name would make
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    scoped = lambda_scope_calls(tree, text) if tree is not None else None
    for q in constructed:
        if scoped is not None and q.rpartition(".")[2] not in scoped:
            continue
        if makes_dataset(q):  # memoised by the index: asked again after resolving first
            return True
    return False


# characters: over this, a file the gate rejects has its imported names resolved before it is parsed
# (check --jobs 1, session 15, alternately: torch 10.5-11.3 -> 9.0-9.1 CPU s, the dataset corpus
# 24.2-27.1 -> 23.9-25.2 s; 0, resolving first for every file: torch 9.2 s, dataset corpus 24.8 s)
_PARSE_AFTER_RESOLVING = 20_000


def returned_callables(tree: ast.Module, text: str = "") -> List[str]:
    """The functions of the module (``f``) and methods of its classes (``C.m``) that may return a
    lambda or a function or class they define, themselves or by returning what another such
    function of the module returns (``def build(mode): return make(mode)``), read from the ast.
    With ``text`` (the module's source), only the functions whose lines hold a lambda, a nested
    ``def`` / ``class`` or a call of such a function are walked."""
    units: List[Tuple[str, ast.AST]] = []
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            units.append((st.name, st))
        elif isinstance(st, ast.ClassDef):
            units += [
                (f"{st.name}.{b.name}", b)
                for b in st.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name != "__init__"
            ]
    lines = split_lines(text) if text else []

    def segment(fn: ast.AST) -> str:
        return "".join(lines[fn.lineno - 1 : fn.end_lineno or fn.lineno])  # type: ignore[attr-defined]

    found: Dict[str, bool] = {}
    calls: Dict[str, Set[str]] = {}
    rest: List[Tuple[str, ast.AST, str]] = []
    for name, fn in units:
        seg = segment(fn) if lines else ""
        if lines and "return" not in seg:
            continue
        if lines and "lambda" not in seg and not _holds_def(seg[seg.find("\n") + 1 :]):
            rest.append((name, fn, seg))  # may return what another function returns
            continue
        inner: Set[str] = set()
        values: List[ast.AST] = []
        called: Set[str] = set()
        for n in ast.walk(fn):
            if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner.add(n.name)
            elif isinstance(n, ast.Return) and n.value is not None:
                values.append(n.value)
                if isinstance(n.value, ast.Call):
                    called.add(_dotted(n.value.func) or "")
        found[name] = any(isinstance(v, ast.Lambda) or (isinstance(v, ast.Name) and v.id in inner) for v in values)
        calls[name] = called
    for _ in range(3):  # what another function of the module returns, a few calls deep
        makers = [n for n, yes in found.items() if yes]
        if not makers:
            break
        words = re.compile(r"\b(?:" + "|".join(re.escape(n.rpartition(".")[2]) for n in makers) + r")\s*\(")
        for name, fn, seg in rest:
            if name not in found and (not lines or words.search(seg)):
                called = {_dotted(n.value.func) or "" for n in ast.walk(fn) if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)}
                calls[name] = called
                found[name] = False
        for name, called in calls.items():
            if not found[name] and any(found.get(c) or found.get(c.partition(".")[2]) for c in called):  # f(), self.m(), C.m()
                found[name] = True
    return [name for name, yes in found.items() if yes]


_MODULE_LEVEL_FOR = re.compile(r"^(?:async[ \t]+)?for[ \t]", re.M)


def iterates_project_loader(index: ProjectIndex, path: str, k: Knowledge, text: str, tree: Optional[ast.Module] = None) -> bool:
    """Module-level code (outside the ``__main__`` guard) calls a function of another module of the
    project that returns a DataLoader (the index: ``Method.returns`` "loader:..."), and the text has
    a module-level ``for`` loop or a call of a training framework's loader-consuming method
    (``trainer.train(model, train_loader=dataloaders.cifar10_train())``): FRK401 decides on the
    libcst analysis whether such a loader has workers and is iterated there."""
    if not _MODULE_LEVEL_FOR.search(text) and not any(f".{m}(" in text for m in k.loader_consumer_methods):
        return False
    module, is_package = index.module_for(path)
    tops = index.top_packages() | {module.split(".", 1)[0]}
    imported = _imported_heads(text, module, is_package)
    if not any(index._dataset_text_table(top).names_loader_maker(k, text) for top in imported & tops):
        return False  # no function of the project packages it imports that may return a loader is named here
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    reader = _Summariser(k, module, is_package)  # the module-level imports, read as summaries read them
    for st in tree.body:
        reader.imports(st)
    stmts = [
        st
        for st in tree.body
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
        and not (isinstance(st, ast.If) and "__main__" in ast.dump(st.test))
    ]

    # what a loader may be: the iterables of module-level loops and what loader-consuming methods
    # are given, and the values of the module-level names they use
    used: List[ast.AST] = []
    for st in stmts:
        for n in ast.walk(st):
            if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                used.append(n.iter)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in k.loader_consumer_methods:
                used += [*n.args, *(kw.value for kw in n.keywords)]
    if not used:
        return False
    wanted = {n.id for e in used for n in ast.walk(e) if isinstance(n, ast.Name)}
    values = list(used)
    for st in stmts:
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if any(isinstance(n, ast.Name) and n.id in wanted for t in targets for n in ast.walk(t)):
                values.append(st.value)
    for e in values:
        for n in ast.walk(e):
            if not isinstance(n, ast.Call):
                continue
            d = _dotted(n.func)
            if not d or d.partition(".")[0] not in reader.s.names:
                continue  # only imported names
            q = reader.qualify(d) or d
            if q.split(".", 1)[0] in tops and index.returns(q)[0] == "loader":
                return True
    return False


_RETURNED_NAME = re.compile(r"return[ \t]+\(?[ \t]*(\w+)")  # literal first: re scans for it fast
_DEF_NAME = re.compile(r"(?:def|class)[ \t]+(\w+)")


def may_return_callable(text: str) -> bool:
    """The text has ``return lambda ...`` or returns a name that a nested ``def`` / ``class``
    defines (``def make(): def func(x): ...; return func``): a function of the module may return a
    lambda or a local function (``returned_callables`` reads the ast to know). The patterns start
    with their keyword (no ``\\b`` or ``^``), which the regular expression engine finds by a fast
    literal search; what stands before a match is tested here."""
    if "return" not in text:
        return False
    returned = {m.group(1) for m in _RETURNED_NAME.finditer(text) if not _word_before(text, m.start())}
    if "lambda" in returned:
        return True
    if not returned:
        return False
    for m in _DEF_NAME.finditer(text):
        if m.group(1) in returned:
            start = m.start()
            before = text[text.rfind("\n", 0, start) + 1 : start]  # the line up to ``def``: indented
            if before[:1] in (" ", "\t") and before.strip() in ("", "async"):
                return True
    return False


def _word_before(text: str, pos: int) -> bool:
    return pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] == "_")


def returns_kept_callable(
    index: ProjectIndex, path: str, text: str, tree: Optional[ast.Module] = None
) -> bool:
    """A function or method of the file returns a lambda or a local function or class, and a
    dataset of another module of the project keeps what it returns (FRK201/202 report the lambda
    or def here: ``ProjectIndex.callable_keepers``), or a DataLoader with workers is given it
    (``ProjectIndex.loader_callable_user``)."""
    if not may_return_callable(text):
        return False
    module = index.module_for(path)[0]
    if not module or index.holder_search_too_big(module):
        return False
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    for name in returned_callables(tree, text):
        if name.rpartition(".")[2].startswith("__"):
            continue
        q = f"{module}.{name}"
        if index.callable_keepers(q) is not None:
            return True
        # given to a DataLoader with workers (called, or read: a property); the check tells which
        if index.loader_callable_user(q, "call") is not None or index.loader_callable_user(q, "attr") is not None:
            return True
    return False


def _holder_text(k: Knowledge) -> "re.Pattern[str]":
    """``self.x = <factory>(`` on one line: a factory's dotted name as written (``h5py.File(``,
    ``open(`` for a builtin), or a distinctive class name however qualified (``TiffFile(``)."""
    dotted, bare = set(), set()
    for q in k.factories:
        q = q[9:] if q.startswith("builtins.") else q
        last = q.rsplit(".", 1)[-1]
        if "." in q:
            dotted.add(q)
        if last[:1].isupper() and any(ch.isupper() for ch in last[1:]):  # TiffFile, OpenSlide, VideoCapture
            bare.add(last)
    for q in k.rng_constructors:  # an RNG object kept by a helper a dataset keeps (FRK601)
        bare.add(q.rsplit(".", 1)[-1])
    alts = [r"(?<![\w.])(?:" + "|".join(map(re.escape, sorted(dotted | {q for q in k.factories if "." not in q} | {"open"}))) + ")"]
    if bare:
        alts.append(r"[\w.]*\b(?:" + "|".join(map(re.escape, sorted(bare))) + ")")
    return re.compile(r"self\.\w+\s*=\s*(?:" + "|".join(alts) + r")\(")


def has_kept_holder(index: ProjectIndex, path: str, k: Knowledge, text: str) -> bool:
    """A class of the file keeps a handle in ``__init__`` and a dataset in another module of the
    project keeps its objects (``ProjectIndex.keepers``): the gate's question for a file without a
    dataset of its own. Asked only when the text has ``self.x = <factory>(`` on one line."""
    if "__init__" not in text or not k.derived("index.holder_text", _holder_text).search(text):
        return False
    module = index.module_for(path)[0]
    if index.holder_search_too_big(module or Path(path).stem):
        return False
    s = index.summary_of_path(path)
    for name, c in s.classes.items():
        if not any(a.kind in ("factory", "call", "rng") for m in c.methods.values() for a in m.assigns):
            continue  # its own methods keep no handle nor RNG (nor a call's result that may be one)
        q = f"{s.module}.{name}" if s.module else name
        if index.holds(q) and index.holder_keepers(q) is not None:
            return True
    return False

