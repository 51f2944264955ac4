"""Facts of the pickling family about notebooks (FRK405, and FRK201 which leaves a notebook's lambdas
to it): the classes, functions and lambdas defined in a notebook (a ``__main__`` without a file) that
DataLoader workers must unpickle."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, LoaderCall, loaders_of, string_value
from flake8_forksafe.families.constructors import dataset_constructor
from flake8_forksafe.families.pickling.facts import Keeper, loader_sites

WORKER_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))
MAX_DEPTH = 6
Definition = Union[FuncInfo, ClassInfo, cst.Lambda]


def notebook_definitions(a: Analysis) -> Dict[int, Tuple[cst.CSTNode, str]]:
    """id(node) -> (node, message) for each definition of the notebook that reaches a DataLoader
    with workers (none outside notebooks)."""
    if not a.interactive_main:
        return {}
    loaders = [lc for lc in loader_sites(a) if lc.workers != "zero"]
    if not loaders or global_fork(a):
        return {}
    live = [lc for lc in loaders if not fork_context(a, lc)]
    if not live:
        return {}
    found: Dict[int, Tuple[cst.CSTNode, str]] = {}

    def add(d: Definition, what: str) -> None:
        node = d if isinstance(d, cst.Lambda) else d.node
        if id(node) not in found:
            found[id(node)] = (node, _message(d, what))

    # 1. dataset classes of the notebook whose instances reach a loader with workers
    bases = {id(b) for c in a.dataset_classes for b in a.mro(c)[1:]}
    for cls in a.dataset_classes:
        if cls.in_function is not None or _sampler(cls):
            continue  # a local class: FRK202
        named = loaders_of(a, cls)
        if named:
            if any(lc in live for lc in named) and any(lc.dataset_class is cls for lc in named):
                add(cls, "its instances are sent to DataLoader workers")
        elif id(cls) not in bases:
            add(cls, "its instances are sent to DataLoader workers")
    # 2. collate_fn / worker_init_fn of a loader with workers
    keeper = Keeper(a)
    for lc in live:
        for kw, index in WORKER_CALLABLES:
            value = lc.arg(kw, index)
            if value is not None:
                for d in definitions(a, keeper, value, lc.site.func):
                    add(d, f"passed as {kw} to a DataLoader whose num_workers is not 0")
    # 3. functions, classes and lambdas kept on a dataset: constructor arguments, self.x = ...
    for site in a.calls:
        name = dataset_constructor(a, site)
        if name is None or not _reaches(a, site, live):
            continue
        for arg in site.node.args:
            for d in definitions(a, keeper, arg.value, site.func):
                add(d, f"kept by the dataset {name}()")
    for cls in a.dataset_classes:
        if _sampler(cls) or cls.in_function is not None or not _class_reaches(a, cls, live):
            continue
        for fn in cls.methods.values():
            for sa in fn.self_assigns:
                if sa.value is None or sa.kind == "del":
                    continue
                for d in definitions(a, keeper, sa.value, fn):
                    add(d, f"kept on dataset {cls.name} (self.{sa.attr})")
    return found


def _message(d: Definition, what: str) -> str:
    if isinstance(d, cst.Lambda):
        shown, ref = "a lambda", "<lambda>"
    elif isinstance(d, ClassInfo):
        shown, ref = f"class {d.name}", d.name
    else:
        shown, ref = f"function {d.name}()", d.name
    return (
        f"{shown} is defined in the notebook and {what}: spawn/forkserver workers (macOS, Windows, "
        f"Linux from Python 3.14) cannot find it (\"Can't get attribute '{ref}' on <module '__main__' ...>\"); "
        "move it into a module next to the notebook and import it"
    )


def _sampler(cls: ClassInfo) -> bool:
    return any((q or "").rsplit(".", 1)[-1].endswith("Sampler") for q in cls.base_qnames)


def _class_reaches(a: Analysis, cls: ClassInfo, live: List[LoaderCall]) -> bool:
    named = loaders_of(a, cls)
    return any(lc in live for lc in named) if named else bool(live)


def _reaches(a: Analysis, site, live: List[LoaderCall]) -> bool:
    """The dataset ``site`` builds reaches a live loader (when no loader names it: any live loader)."""
    mine = []
    for lc in loader_sites(a):
        ds = lc.arg("dataset", 0)
        if ds is site.node or (
            isinstance(ds, cst.Name) and any(v is site.node for v in a.local_values(ds.value, lc.site.func))
        ):
            mine.append(lc)
    return any(lc in live for lc in mine) if mine else bool(live)


def definitions(
    a: Analysis, keeper: Keeper, expr: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0
) -> List[Definition]:
    """The module-level functions and classes of this notebook, and the lambdas, whose objects
    ``expr`` keeps (through calls that wrap their arguments, containers and module variables)."""
    out: List[Definition] = []
    if expr is None or depth > MAX_DEPTH:
        return out
    go = lambda e, s=scope: definitions(a, keeper, e, s, depth + 1)  # noqa: E731
    if isinstance(expr, cst.Lambda):
        out.append(expr)
    elif isinstance(expr, cst.Name):
        name = expr.value
        if scope is not None and (name in scope.params or name in scope.local_assigns):
            for v in scope.local_assigns.get(name, ()):
                out += go(v)
            return out
        if name in a.aliases:
            return out  # imported: pickled by its module's name
        fn = a.module_functions.get(name)
        if fn is not None:
            out.append(fn)
            return out
        cls = a.module_classes.get(name)
        if cls is not None and cls.in_function is None:
            out.append(cls)
            return out
        for v in a.module_assigns.get(name, ()):
            out += go(v, None)
    elif isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Lambda) or keeper.is_transient(expr):
            return out
        if isinstance(expr.func, cst.Name) and expr.func.value not in a.aliases:
            cls = a.module_classes.get(expr.func.value)
            if cls is not None and cls.in_function is None and cls not in a.dataset_classes:
                out.append(cls)  # an instance of a notebook class (a callable transform, a collator)
        for arg in expr.args:
            out += go(arg.value)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for el in expr.elements:
            out += go(el.value)
    elif isinstance(expr, cst.Dict):
        for el in expr.elements:
            out += go(el.value)
    elif isinstance(expr, cst.IfExp):
        out += go(expr.body) + go(expr.orelse)
    elif isinstance(expr, cst.BooleanOperation):
        out += go(expr.left) + go(expr.right)
    return out


def _fork_value(a: Analysis, expr: Optional[cst.BaseExpression]) -> bool:
    if expr is None:
        return False
    if string_value(expr) == "fork":
        return True
    if isinstance(expr, cst.Call) and a.qualify(expr.func) in a.knowledge.get_context and expr.args:
        return string_value(expr.args[0].value) == "fork"
    if isinstance(expr, cst.Name):
        vals = a.module_assigns.get(expr.value, ())
        return len(vals) == 1 and _fork_value(a, vals[0])
    return False


def fork_context(a: Analysis, lc: LoaderCall) -> bool:
    """The loader's ``multiprocessing_context`` is ``"fork"`` or ``get_context("fork")``."""
    return _fork_value(a, lc.arg("multiprocessing_context"))


def global_fork(a: Analysis) -> bool:
    """``set_start_method("fork")`` in the notebook: every loader forks."""
    for site in a.calls:
        if site.qname in a.knowledge.start_method_setters and site.node.args:
            first = site.node.args[0]
            if first.keyword is None or first.keyword.value == "method":
                if string_value(first.value) == "fork":
                    return True
    return False
