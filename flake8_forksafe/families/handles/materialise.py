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

The second fix (``plan_lazy_generator``) is for the generators materialising cannot take: one whose
source reads a handle (``(json.loads(l) for l in open(p))``, ``os.scandir(root)``, a cursor's rows) and a
call of a generator function of the project (``read_records(path)``). It keeps the recipe, not the
generator: the attribute becomes the handles family's per-process property (``lazy.py``), which builds
the generator on first use in the current process and again when ``os.getpid()`` changes, and
``__getstate__`` leaves it out. Each worker then opens its own handle and iterates its own generator,
from the start; within one process the attribute is one generator object, as before, so every use of it
keeps its meaning: ``for`` loops, ``yield from``, ``next()``, ``zip``, returning it or passing it on,
and a second pass still finds it exhausted (one-shot, as the original). What changes:

* when the generator object is created: on first use instead of in ``__init__``. For a generator
  function that is invisible: its arguments are still evaluated in ``__init__`` (kept in
  ``self._<attr>_args``) and its body never runs before the first ``next()`` either way. So that fix
  is **safe**. A generator expression evaluates its first source in ``__init__`` (``open(p)`` opens
  the file there: a missing file raised in the constructor, the file read is the one that existed
  then), and ``os.scandir`` opens the directory at the call: there the open moves to the first use,
  so those fixes are **unsafe**;
* a worker no longer inherits the parent's generator: it starts its own from the beginning instead
  of continuing from wherever the parent left it (exhausted, after a sanity pass with
  ``num_workers=0``) or sharing the parent's file offset: that is the hazard being fixed. If the
  parent had started it, dropping the inherited copy in the worker runs its cleanup there (a ``with``
  block closes the worker's copy of the file).

Declined (with the reason): the parent side reads the attribute (``__init__`` after the assignment,
``__len__``, what they call: a fresh generator per process would lose what the parent consumed, e.g. a
header line skipped with ``next()``); the attribute is assigned or deleted elsewhere; the expression is
not the whole value of a plain assignment at the top of the method; it reads an ``__init__`` local that
is rebound, bound by a loop, ``with`` or import, or is itself a handle (keeping it on the instance
would keep the handle); a ``self.`` attribute it reads is assigned outside ``__init__``; it holds a
lambda, an assignment expression, or a string that spans lines; a decorated generator function (a
cache would hand out the parent's generator); and what ``lazy.py`` declines (``__slots__``,
``__reduce__``, a ``__getstate__`` it cannot extend).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, SelfAssign, factory_of, handle_source, self_attr
from flake8_forksafe.edit import module_level_names
from flake8_forksafe.families.getstate import assignment_line, related_classes
from flake8_forksafe.families.handles.lazy import LazyPlan, plan_lazy

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


# --------------------------------------------------------------------------------------------------
# the lazy fix: a generator that reads a handle, or a generator function's, built per process

OPENS_DIRECTORY = {"os.scandir", "os.fwalk"}


def _source_reads_handle(a: Analysis, g: cst.GeneratorExp, fn: FuncInfo) -> bool:
    """A source of the generator expression (a ``for ... in <source>``, at any depth) opens or reads a
    handle: a handle factory call in it, ``os.scandir``, or a handle (``self.conn.execute(q)``)."""
    found = False

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if factory_of(a, node) is not None or a.qualify(node.func) in OPENS_DIRECTORY:
                found = True

    comp: Optional[cst.CompFor] = g.for_in
    while comp is not None:
        if handle_source(a, comp.iter, fn) is not None:
            return True
        comp.iter.visit(Calls())
        comp = comp.inner_for_in
    return found


def _target_names(t: cst.BaseExpression) -> List[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for el in t.elements for n in _target_names(el.value)]
    if isinstance(t, (cst.StarredElement, cst.Element)):
        return _target_names(t.value)
    return []


class _Loads(cst.CSTVisitor):
    """The names a generator expression reads and binds, the ``self.`` attributes it reads, and what
    the fix cannot move."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.loads: List[str] = []
        self.bound: Set[str] = set()
        self.self_attrs: Set[str] = set()
        self.bad: Optional[str] = None

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == self.me:
            self.self_attrs.add(node.attr.value)
        node.value.visit(self)
        return False  # .attr is not a name

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False  # keyword= is not a name

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bound.update(_target_names(node.target))

    def visit_Name(self, node: cst.Name) -> None:
        self.loads.append(node.value)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.bad = self.bad or "it holds a lambda"
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bad = self.bad or "it holds an assignment expression (:=)"

    def visit_Await(self, node: cst.Await) -> None:
        self.bad = self.bad or "it awaits"

    def _string(self, node: cst.CSTNode) -> None:
        if "\n" in cst.Module([]).code_for_node(node):
            self.bad = self.bad or "a string in it spans lines"

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._string(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._string(node)


class _Bindings(cst.CSTVisitor):
    """Every binding of a name in a function's own scope (nested functions, classes and lambdas are
    their own scopes; an assignment expression in a comprehension binds here)."""

    def __init__(self) -> None:
        self.found: Dict[str, List[cst.CSTNode]] = {}

    def _add(self, names: Sequence[str], node: cst.CSTNode) -> None:
        for n in names:
            self.found.setdefault(n, []).append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._add(_target_names(t.target), node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(_target_names(node.target), node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(_target_names(node.target), node)

    def visit_For(self, node: cst.For) -> None:
        self._add(_target_names(node.target), node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._add(_target_names(node.asname.name), node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._add(_target_names(node.name.name), node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(_target_names(node.target), node)

    def visit_Del(self, node: cst.Del) -> None:
        self._add(_target_names(node.target), node)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None:
            self._add(_target_names(node.asname.name), node)
            return
        n: cst.BaseExpression = node.name
        while isinstance(n, cst.Attribute):
            n = n.value
        if isinstance(n, cst.Name):
            self._add([n.value], node)

    def visit_Global(self, node: cst.Global) -> None:
        self._add([x.name.value for x in node.names], node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._add([x.name.value for x in node.names], node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._add([node.name.value], node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._add([node.name.value], node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _params_and_bindings(fn: FuncInfo) -> Tuple[Set[str], "_Bindings"]:
    """``fn``'s parameters (``*args`` and ``**kwargs`` too) and the names its body binds."""
    ps = fn.node.params
    params = set(fn.params) | {x.name.value for x in (ps.star_arg, ps.star_kwarg) if isinstance(x, cst.Param)}
    b = _Bindings()
    fn.node.body.visit(b)
    return params, b


def _recipe_names(
    a: Analysis, owner: ClassInfo, fn: FuncInfo, line: cst.SimpleStatementLine, g: cst.GeneratorExp, attr: str
) -> Union[List[str], str]:
    """The ``__init__`` locals the generator expression reads, in order (kept on the instance, for the
    property to rebuild it with them); or why it cannot be moved out of ``fn``."""
    me = fn.self_name or "self"
    v = _Loads(me)
    g.visit(v)
    if v.bad:
        return v.bad
    body = fn.node.body
    if not isinstance(body, cst.IndentedBlock) or not any(s is line for s in body.body):
        return "it is assigned inside a block, not at the top of the method"
    here = next(i for i, s in enumerate(body.body) if s is line)
    params, b = _params_and_bindings(fn)
    local = params | set(b.found)
    if v.bound & local:
        return f"{sorted(v.bound & local)[0]} is both a name of {fn.name} and bound inside the generator"
    if attr in v.self_attrs:
        return f"it reads self.{attr} itself"
    for c in related_classes(a, owner):
        for h in c.methods.values():
            if h is fn:
                continue
            for s in h.self_assigns:
                if s.attr in v.self_attrs:
                    return f"self.{s.attr}, which it reads, is also assigned in {c.name}.{h.name}"
    top = module_level_names(a.module)
    out: List[str] = []
    for name in v.loads:
        if name in v.bound or name == me or name in out:
            continue
        if name in local:
            bindings = b.found.get(name, [])
            if name in params:
                if bindings:
                    return f"the argument {name} is rebound in {fn.name}"
            else:
                first = bindings[0] if len(bindings) == 1 else None
                plain = (
                    isinstance(first, cst.Assign)
                    and len(first.targets) == 1
                    and isinstance(first.targets[0].target, cst.Name)
                    and any(isinstance(s, cst.SimpleStatementLine) and any(x is first for x in s.body)
                            for s in body.body[:here])
                )
                if not plain:
                    return f"the local {name} is not assigned once, plainly, before it in {fn.name}"
            if name in ("os", "getattr"):  # a local of that name would shadow what the property calls
                return f"it reads a local named {name} (the fix calls {name} in the property)"
            if handle_source(a, cst.Name(name), fn) is not None:
                return f"{name} is a handle opened outside the generator (keeping it would keep the handle)"
            out.append(name)
        elif name not in top and not hasattr(builtins, name):
            return f"{name} is not defined where the fix can see it"
    return out


def plan_lazy_generator(
    a: Analysis, fn: FuncInfo, sa: SelfAssign, node: cst.CSTNode, parent_reads: bool
) -> Union[LazyPlan, str, None]:
    """The per-process lazy fix for the generator ``node`` kept by ``sa`` when it reads a handle or is a
    generator function's (see the module docstring); why not (a short phrase); or None when the
    generator is of neither kind (materialising's reason then stands). ``parent_reads``: the parent
    side reads the attribute."""
    if isinstance(node, cst.GeneratorExp):
        if not _source_reads_handle(a, node, fn):
            return None
        recipe, what, unsafe = True, "generator", True
    elif isinstance(node, cst.Call):
        q = a.qualify(node.func)
        target = None
        if isinstance(node.func, cst.Name) and node.func.value not in a.aliases:
            target = a.function_named(node.func.value, fn)
        elif isinstance(node.func, cst.Attribute) and fn.self_name and self_attr(node.func, fn.self_name):
            cls = a.owner_class(fn)
            target = a.resolve_method(cls, node.func.attr.value) if cls is not None else None
        if target is not None and target.is_generator and isinstance(node.func, cst.Name):
            params, b = _params_and_bindings(fn)
            if node.func.value in params or node.func.value in b.found:
                return f"{node.func.value} is a name of {fn.name} (the property could not call it)"
        if target is not None and target.is_generator:
            decorated = [d for d in target.node.decorators
                         if not (isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod")]
            if decorated:
                return f"the generator function {target.name}() is decorated"
            recipe, what, unsafe = False, f"{target.name}() generator", False
        elif q in OPENS_DIRECTORY:
            recipe, what, unsafe = False, f"{q}() iterator", True
        else:
            return None
        for arg in node.args:
            if handle_source(a, arg.value, fn) is not None:
                return "an argument is a handle (keeping it on the instance would keep the handle)"
    else:
        return None
    owner = fn.cls
    if owner is None:
        return "it is not assigned in a method"
    if parent_reads:
        return f"the parent side uses self.{sa.attr}: a fresh generator per process would lose what it consumed"
    if sa.kind != "assign" or sa.value is not node:
        return "the generator is not the whole value assigned to the attribute"
    names = None
    if recipe:
        assert isinstance(node, cst.GeneratorExp)
        line = assignment_line(fn, sa, node, "generator")
        if isinstance(line, str):
            return line
        got = _recipe_names(a, owner, fn, line, node, sa.attr)
        if isinstance(got, str):
            return got
        names = got
    plan = plan_lazy(a, fn, sa, node, what, None, recipe=names)  # type: ignore[arg-type]
    if isinstance(plan, LazyPlan):
        plan.generator = True
        plan.unsafe = unsafe
    return plan
