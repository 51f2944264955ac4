"""FRK203's fix for a generator or one-shot iterator kept on a dataset: materialise it in ``__init__``.

``self.files = (p for p in paths if p.suffix == ".wav")`` becomes ``[p for p in paths if ...]``, and
``self.files = Path(root).glob("*.wav")`` (``rglob``, ``iterdir``, ``os.walk``, ``glob.iglob``, ``map``,
``filter``, ``zip``) becomes ``list(...)``: a list pickles for spawn and forkserver workers, and every fork
worker gets the same items instead of a copy of a generator in whatever state the parent left it.

The fix is **unsafe** (``--unsafe-fixes``), because it does change what the program does:

* the items are computed once in ``__init__`` (the directory is listed, the source read, the condition
  evaluated there), not when the first pass starts;
* a second pass in one process sees the items again, where the exhausted generator yielded nothing
  (``num_workers=0`` for two epochs, or ``persistent_workers=True``).

It is declined (reported without a fix, with the reason) when the items may be endless (``itertools.count``,
``cycle``, ``repeat``, ``iter(f, sentinel)``), when the source reads a handle (``open()``, a database
cursor, ``os.scandir``: materialising keeps objects that still cannot be pickled, or reads a file eagerly
that the code streams), when it calls code the linter cannot see through (a generator function, an unknown
call), and when the attribute is used as an iterator rather than iterated (``next(self.files)``, returned
from ``__iter__``, passed on): a list there would raise or behave differently at once.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import List, Optional, Sequence, Set, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, SelfAssign, handle_source, self_attr
from flake8_forksafe.edit import module_level_names
from flake8_forksafe.families.getstate import assignment_line, related_classes

# calls whose result is a finite, picklable collection or a finite iterator over their arguments
FINITE_CALLS = {
    "range", "sorted", "list", "tuple", "set", "frozenset", "dict", "enumerate", "zip", "map", "filter",
    "reversed", "os.listdir", "glob.glob", "os.walk", "glob.iglob",
}
# finite calls whose first argument is the source of the items
ITEM_SOURCES = {"sorted", "list", "tuple", "set", "frozenset", "dict", "enumerate", "reversed"}
# pathlib methods and the iterator functions the fix may materialise (a directory listing, finite)
PATH_METHODS = {"glob", "rglob", "iterdir"}
MATERIALISE_CALLS = {"os.walk", "glob.iglob", "map", "filter", "zip", "pathlib.Path.glob", "pathlib.Path.rglob",
                     "pathlib.Path.iterdir"}
# string / mapping methods whose result is a finite collection or view
FINITE_METHODS = {"split", "rsplit", "splitlines", "items", "keys", "values", "readlines"}
ENDLESS = {"itertools.count", "itertools.cycle", "itertools.repeat"}
# iteration positions in which a list behaves as the generator did on its first pass
ITERATING_CALLS = {"iter", "list", "tuple", "sorted", "set", "frozenset", "enumerate", "zip", "map", "filter",
                   "sum", "min", "max", "any", "all", "dict"}


@dataclass(eq=False)
class MaterialisePlan:
    attr: str
    value: cst.BaseExpression  # the generator expression or the call


def _builtin(a: Analysis, fn: FuncInfo, func: cst.BaseExpression) -> Optional[str]:
    """The builtin's name when ``func`` is a plain, unshadowed builtin name."""
    if not isinstance(func, cst.Name) or not hasattr(builtins, func.value):
        return None
    name = func.value
    f: Optional[FuncInfo] = fn
    while f is not None:
        if name in f.params or name in f.local_assigns:
            return None
        f = f.parent
    if name in a.aliases or name in a.module_classes or a.function_named(name, fn) is not None:
        return None
    if name in module_level_names(a.module):
        return None
    return name


def _why_not_finite(a: Analysis, e: cst.BaseExpression, fn: FuncInfo, depth: int = 0) -> Optional[str]:
    """None when ``e`` evidently yields finitely many items without reading a handle; else why not."""
    if depth > 4:
        return "its source is too far to follow"
    if handle_source(a, e, fn) is not None:
        return "it reads a handle (materialising would read it eagerly, or keep objects that cannot be pickled)"
    if isinstance(e, (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
                      cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Subscript)):
        return _comp_sources(a, e, fn, depth) if isinstance(e, (cst.ListComp, cst.SetComp, cst.DictComp)) else None
    if isinstance(e, cst.GeneratorExp):
        return _comp_sources(a, e, fn, depth)
    if isinstance(e, cst.Name):
        if e.value in fn.params:
            return None  # an argument: the caller's collection
        vals = a.local_values(e.value, fn)
        if not vals:
            return f"{e.value} is not a local of {fn.name}"
        for v in vals:
            why = _why_not_finite(a, v, fn, depth + 1)
            if why:
                return why
        return None
    if isinstance(e, cst.Attribute) and fn.self_name and self_attr(e, fn.self_name) and fn.cls is not None:
        attr = self_attr(e, fn.self_name)
        for c in related_classes(a, fn.cls):
            for g in c.methods.values():
                for s in g.self_assigns:
                    if s.attr == attr and s.value is not None:
                        why = _why_not_finite(a, s.value, g, depth + 1)
                        if why:
                            return f"self.{attr}: {why}"
        return None
    if isinstance(e, cst.Call):
        b = _builtin(a, fn, e.func)
        if b == "iter" and len(e.args) == 2:
            return "iter(f, sentinel) may be endless"
        q = b or a.qualify(e.func)
        if q in ENDLESS:
            return f"{q}() is endless"
        if q in ("os.scandir", "os.fwalk"):
            return f"{q}() holds an open directory and yields objects that cannot be pickled"
        if q in FINITE_CALLS or (isinstance(e.func, cst.Attribute) and e.func.attr.value in PATH_METHODS | FINITE_METHODS):
            # the items come from the iterable arguments (zip(xs, ys), map(f, xs)); a path or pattern
            # argument (glob.iglob(pattern), os.walk(root), range(n)) is not a source of items
            pos = [x.value for x in e.args if x.keyword is None and not x.star]
            sources = pos if q == "zip" else pos[1:] if q in ("map", "filter") else pos[:1] if q in ITEM_SOURCES else []
            for arg in sources:
                if not _scalar(arg):
                    why = _why_not_finite(a, arg, fn, depth + 1)
                    if why:
                        return why
            return None
        label = q or "a call"
        return f"it calls {label}, which may be endless or read a handle"
    return "its source is not evidently finite"


def _scalar(e: cst.BaseExpression) -> bool:
    return isinstance(e, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString,
                          cst.Lambda)) or (isinstance(e, cst.Name) and e.value in ("None", "True", "False"))


def _comp_sources(a: Analysis, e: cst.BaseExpression, fn: FuncInfo, depth: int) -> Optional[str]:
    comp = getattr(e, "for_in", None)
    while comp is not None:
        why = _why_not_finite(a, comp.iter, fn, depth + 1)
        if why:
            return why
        comp = comp.inner_for_in
    return None


class _Uses(cst.CSTVisitor):
    """Reads of ``self.<attr>`` that are not an iteration (``for``, a comprehension, ``yield from``, the
    argument of ``iter``/``list``/``sorted``/...)."""

    def __init__(self, a: Analysis, fn: FuncInfo, attr: str) -> None:
        self.a = a
        self.fn = fn
        self.me = fn.self_name or "self"
        self.attr = attr
        self.ok: Set[int] = set()
        self.bad: List[str] = []

    def _mark(self, node: cst.BaseExpression) -> None:
        if self_attr(node, self.me) == self.attr:
            self.ok.add(id(node))

    def visit_For(self, node: cst.For) -> None:
        self._mark(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._mark(node.iter)

    def visit_From(self, node: cst.From) -> None:
        self._mark(node.item)

    def visit_Call(self, node: cst.Call) -> None:
        b = _builtin(self.a, self.fn, node.func)
        if b in ITERATING_CALLS and not (b == "iter" and len(node.args) != 1):
            for arg in node.args:
                if arg.keyword is None and not arg.star:
                    self._mark(arg.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.ok.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self_attr(node, self.me) == self.attr and id(node) not in self.ok:
            self.bad.append(self.fn.name)


def _used_as_iterator(a: Analysis, cls: ClassInfo, attr: str) -> Optional[str]:
    for c in related_classes(a, cls):
        for g in a.class_functions(c):
            if not g.self_name:
                continue
            v = _Uses(a, g, attr)
            g.node.body.visit(v)
            if v.bad:
                return f"self.{attr} is used as an iterator in {c.name}.{v.bad[0]} (not only iterated)"
    return None


def plan_materialise(
    a: Analysis, cls: ClassInfo, fn: FuncInfo, sa: SelfAssign, node: cst.CSTNode
) -> Union[MaterialisePlan, str]:
    """How to materialise the generator ``node`` kept by ``sa``, or why not (a short phrase)."""
    if sa.kind != "assign" or sa.value is not node:
        return "the generator is not the whole value assigned to the attribute"
    if not isinstance(node, (cst.GeneratorExp, cst.Call)):
        return "it is not a generator expression or an iterator call"
    line = assignment_line(fn, sa, node, "generator")
    if isinstance(line, str):
        return line
    owner = fn.cls or cls
    for c in related_classes(a, owner):
        for g in c.methods.values():
            if any(s.attr == sa.attr and s is not sa for s in g.self_assigns):
                return f"self.{sa.attr} is also assigned in {c.name}.{g.name}"
    if isinstance(node, cst.Call):
        b = _builtin(a, fn, node.func)
        q = b or a.qualify(node.func) or ""
        f = node.func
        path_method = isinstance(f, cst.Attribute) and f.attr.value in PATH_METHODS and not (
            isinstance(f.value, cst.Name) and a.is_module_alias(f.value.value))
        if q not in MATERIALISE_CALLS and not path_method:
            if q in ("os.scandir", "os.fwalk"):
                return f"{q}() holds an open directory and yields objects that cannot be pickled"
            return f"{q or 'the call'} may be endless or read a handle"
        why = _why_not_finite(a, node, fn)
    else:
        why = _why_not_finite(a, node, fn)
    if why:
        return why
    if isinstance(node, cst.Call) and _builtin(a, fn, cst.Name("list")) is None:
        return "the name list is rebound here"
    why = _used_as_iterator(a, owner, sa.attr)
    if why:
        return why
    return MaterialisePlan(sa.attr, node)


class _Materialise(cst.CSTTransformer):
    def __init__(self, plans: Sequence[MaterialisePlan]) -> None:
        self.by_node = {id(p.value): p for p in plans}

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp, updated_node: cst.GeneratorExp) -> cst.BaseExpression:
        if id(original_node) not in self.by_node:
            return updated_node
        lpar = updated_node.lpar[0] if updated_node.lpar else None
        rpar = updated_node.rpar[0] if updated_node.rpar else None
        return cst.ListComp(
            elt=updated_node.elt,
            for_in=updated_node.for_in,
            lbracket=cst.LeftSquareBracket(whitespace_after=lpar.whitespace_after) if lpar else cst.LeftSquareBracket(),
            rbracket=cst.RightSquareBracket(whitespace_before=rpar.whitespace_before) if rpar else cst.RightSquareBracket(),
        )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) not in self.by_node:
            return updated_node
        return cst.Call(func=cst.Name("list"), args=[cst.Arg(updated_node)])


def apply_materialise(module: cst.Module, plans: Sequence[MaterialisePlan]) -> cst.Module:
    if not plans:
        return module
    return module.visit(_Materialise(plans))
