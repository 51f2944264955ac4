"""The per-process lazy handle: the fix shared by FRK101, FRK103 and FRK203, and the facts it needs.

What the fix produces (measured with real DataLoader workers under fork, spawn and forkserver for
LMDB, HDF5 and plain files; nothing less works under all three):

1. the constructor's arguments are kept on the instance (picklable: ``self._env_args = (path,)``);
2. the attribute becomes a property that opens the handle on first use in the current process and
   reopens it when ``os.getpid()`` differs from the pid that opened it; a handle inherited through
   fork is closed in the child first (LMDB refuses a second environment on the same path in one
   process);
3. a handle that ``__init__`` used to read metadata is closed before ``__init__`` returns;
4. ``__getstate__`` returns a copy of the state without the handle (an existing ``__getstate__`` of
   the form ``state = self.__dict__.copy() ... return state`` is extended instead).

Every existing use of the attribute (``self.env.begin()``, ``self.f["x"]``) keeps working unchanged.
FRK103's lazy handles keep their attribute: the lazy test gains the PID check (closing the inherited
handle first) and ``__getstate__`` resets the attribute.
"""

from __future__ import annotations

import builtins
import weakref
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    ClassInfo,
    FuncInfo,
    KeptHandle,
    SelfAssign,
    attrs_tested,
    comp_fors,
    container_elements,
    dotted,
    factory_of,
    handle_source,
    is_docstring,
    self_attr,
    string_value,
)

# --------------------------------------------------------------------------------------------------
# facts about a class and an attribute (used by the checks to decide what to report)


class _Loads(cst.CSTVisitor):
    """``self.<attr>`` reads of a function body (assignment / del targets excluded, nested defs
    included: a closure reading the attribute runs where the function runs)."""

    def __init__(self, self_name: str) -> None:
        self.self_name = self_name
        self.reads: Dict[str, int] = {}
        self.targets: Set[int] = set()
        self.with_items: Set[str] = set()

    def _mark(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._mark(el.value)
        else:
            self.targets.add(id(target))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._mark(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._mark(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        name = self_attr(node.item, self.self_name)
        if name:
            self.with_items.add(name)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) in self.targets:
            return
        name = self_attr(node, self.self_name)
        if name:
            self.reads[name] = self.reads.get(name, 0) + 1


_LOADS_CACHE: "weakref.WeakKeyDictionary[FuncInfo, _Loads]" = weakref.WeakKeyDictionary()


def _loads(fn: FuncInfo) -> _Loads:
    got = _LOADS_CACHE.get(fn)
    if got is None:
        got = _Loads(fn.self_name or "self")
        if fn.self_name:
            fn.node.body.visit(got)
        _LOADS_CACHE[fn] = got
    return got


def reads_attr(fns: Iterable[FuncInfo], attr: str) -> bool:
    """Some function reads ``self.attr`` (not only assigns it)."""
    return any(_loads(fn).reads.get(attr) for fn in fns if fn.self_name)


def closed_by_with(fns: Iterable[FuncInfo], attr: str) -> bool:
    """``with self.attr:`` closes the handle when the block ends."""
    return any(attr in _loads(fn).with_items for fn in fns if fn.self_name)


def related_classes(a: Analysis, cls: ClassInfo) -> List[ClassInfo]:
    """``cls``, its same-file bases and the same-file classes derived from it."""
    out = list(a.mro(cls))
    for c in a.classes:
        if c not in out and cls in a.mro(c):
            out.append(c)
    return out


def _mentions(fn: FuncInfo) -> Tuple[Set[str], bool, bool]:
    """(strings, copies the whole ``__dict__``, filters it with a condition) for a ``__getstate__``."""
    strings: Set[str] = set()
    flags = {"whole": False, "filtered": False}

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            v = string_value(node)
            if v:
                strings.add(v)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value in ("__dict__", "__getstate__"):
                flags["whole"] = True

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "vars":
                flags["whole"] = True

        def visit_DictComp(self, node: cst.DictComp) -> None:
            if any(f.ifs for f in comp_fors(node)):
                flags["filtered"] = True

    fn.node.visit(V())
    return strings, flags["whole"], flags["filtered"]


def getstate_leaves_out(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """Pickling an instance of ``cls`` leaves ``self.attr`` out (or resets it): a ``__reduce__``, or
    a ``__getstate__`` that names the attribute, builds the state from an allow-list, or filters
    ``__dict__`` with a condition."""
    for c in a.mro(cls):
        if c.defines_reduce:
            return True
        fn = c.methods.get("__getstate__")
        if fn is not None:
            strings, whole, filtered = _mentions(fn)
            return attr in strings or not whole or filtered
    return False


class _AttrNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.attrs: Set[str] = set()
        self.calls: Set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attrs.add(node.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.calls.add(node.func.attr.value)


def reopens_per_process(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """The class reopens ``self.attr`` in each process: a function that calls ``os.getpid()`` reaches
    code mentioning the attribute, or a ``worker_init_fn`` resets it (``ds.env = None``,
    ``ds.open()``)."""
    fns = a.class_functions(cls)
    for g in fns:
        if g.getpid:
            for h in a.closure(cls, [g]):
                if attr in h.self_reads or any(s.attr == attr for s in h.self_assigns):
                    return True
    assigners = {f.name for f in fns if any(s.attr == attr and s.kind == "assign" for s in f.self_assigns)}
    for wf in a.worker_functions:
        v = _AttrNames()
        wf.node.body.visit(v)
        if attr in v.attrs or v.calls & assigners:
            return True
    return False


class _Contains(cst.CSTVisitor):
    def __init__(self, target: cst.CSTNode) -> None:
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    if node is target:
        return True
    v = _Contains(target)
    node.visit(v)
    return v.found


def _exits(block: cst.BaseSuite) -> bool:
    """The block ends with ``return`` / ``raise`` / ``continue`` / ``break``."""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = body[-1] if body else None
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return bool(smalls) and isinstance(smalls[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _suites(st: cst.CSTNode) -> List[cst.BaseSuite]:
    out = []
    for name in ("body", "orelse", "finalbody"):
        sub = getattr(st, name, None)
        if isinstance(sub, cst.BaseSuite):
            out.append(sub)
        elif isinstance(sub, (cst.Else, cst.Finally)):
            out.append(sub.body)
        elif isinstance(sub, cst.If):  # elif
            out.append(cst.IndentedBlock(body=[sub]))
    for h in getattr(st, "handlers", ()) or ():
        out.append(h.body)
    return out


def guard_attrs(fn: FuncInfo, target: cst.CSTNode) -> Optional[Set[str]]:
    """Attributes tested before ``target`` runs in ``fn``: by an enclosing ``if``/``while``, or by
    an earlier ``if`` of an enclosing block that returns (``if self.f is not None: return self.f``).
    None when ``target`` is not in ``fn``'s own body."""
    me = fn.self_name or "self"

    def walk(stmts: Sequence[cst.CSTNode], inherited: Set[str]) -> Optional[Set[str]]:
        acc = set(inherited)
        for st in stmts:
            if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                if _contains(st, target):
                    return acc
                continue
            if isinstance(st, (cst.FunctionDef, cst.ClassDef)):
                continue
            test = getattr(st, "test", None)
            tested = attrs_tested(test, me) if isinstance(test, cst.BaseExpression) else set()
            if test is not None and _contains(test, target):
                return acc
            for suite in _suites(st):
                inner = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
                got = walk(inner, acc | tested)
                if got is not None:
                    return got
            if isinstance(st, cst.If) and _exits(st.body):
                acc |= tested
        return None

    body = fn.node.body
    return walk(body.body if isinstance(body, cst.IndentedBlock) else [body], set())


def _value_tests(value: Optional[cst.BaseExpression], me: str) -> Set[str]:
    """``self.x = self.x or open(p)`` / ``... if self.x is None else self.x``: the value tests itself."""
    if isinstance(value, cst.BooleanOperation):
        return attrs_tested(value, me)
    if isinstance(value, cst.IfExp):
        return attrs_tested(value.test, me)
    return set()


def is_lazy(a: Analysis, cls: ClassInfo, fn: FuncInfo, sa: SelfAssign, depth: int = 0) -> bool:
    """``self.attr = ...`` runs only once a test of the attribute found it unset: inside an
    ``if self.env is None:`` / ``if not hasattr(self, "env"):`` block or after an early return in
    ``fn``, or wherever ``fn`` is called (every call of it, or every use of the property, is so
    guarded). Outside ``__init__``, a test of another attribute the same function sets counts too
    (``if self.txn is None: self.env = ...; self.txn = self.env.begin()``)."""
    me = fn.self_name or "self"
    allowed = {sa.attr}
    if fn.name != "__init__":
        allowed |= {s.attr for s in fn.self_assigns if s.kind == "assign"}
    found = guard_attrs(fn, sa.stmt)
    if (found and found & allowed) or _value_tests(sa.value, me) & {sa.attr}:
        return True
    return _called_lazily(a, cls, fn, allowed, depth)


def _called_lazily(a: Analysis, cls: ClassInfo, fn: FuncInfo, allowed: Set[str], depth: int) -> bool:
    if depth > 2 or not fn.is_method or fn.name.startswith("__"):
        return False
    props = set()
    for c in a.mro(cls):
        props |= c.properties
    uses: List[Tuple[FuncInfo, cst.CSTNode]] = []
    for g in a.class_functions(cls):
        if g is fn or not g.self_name:
            continue
        if fn.name in props:
            v = _SelfAttrNodes(g.self_name, fn.name)
            g.node.body.visit(v)
            uses += [(g, n) for n in v.nodes]
        else:
            for site in g.calls:
                f = site.node.func
                if isinstance(f, cst.Attribute) and self_attr(f, g.self_name) == fn.name:
                    uses.append((g, site.node))
    if not uses:
        return False
    for g, node in uses:
        if g.name == "__init__":
            return False
        found = guard_attrs(g, node)
        if found and found & allowed:
            continue
        if not _called_lazily(a, cls, g, allowed, depth + 1):
            return False
    return True


class _SelfAttrNodes(cst.CSTVisitor):
    def __init__(self, me: str, name: str) -> None:
        self.me, self.name = me, name
        self.nodes: List[cst.CSTNode] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self_attr(node, self.me) == self.name:
            self.nodes.append(node)


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        self.values: List[cst.BaseExpression] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)


def returned_handle(a: Analysis, call: cst.Call, fn: FuncInfo):
    """``(factory call, factory)`` when ``call`` is a same-module helper (``open_env(p)``,
    ``self._open_env()``) whose return value is a handle; else None."""
    target: Optional[FuncInfo] = None
    f = call.func
    if isinstance(f, cst.Name) and f.value not in a.aliases:
        target = a.function_named(f.value, fn)
    elif isinstance(f, cst.Attribute) and fn.self_name and self_attr(f, fn.self_name):
        cls = a.owner_class(fn)
        if cls is not None:
            target = a.resolve_method(cls, f.attr.value)
    if target is None or target is fn or target.is_generator:
        return None
    v = _Returns()
    target.node.body.visit(v)
    for value in v.values:
        hit = handle_source(a, value, target)
        if hit is not None:
            return hit[0], hit[1]
    return None


def _strip_derived(a: Analysis, value: cst.BaseExpression) -> Optional[cst.Call]:
    """The call at the root of ``call()["x"]`` / ``call().begin()`` (subscripts that are not data
    slices, method calls on the result), or None."""
    from flake8_forksafe.analysis import _is_data_slice

    depth = 0
    while depth < 8:
        depth += 1
        if isinstance(value, cst.Subscript):
            if _is_data_slice(value):
                return None
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(
            value.func.value, (cst.Call, cst.Subscript)
        ):
            value = value.func.value
        elif isinstance(value, cst.Call):
            return value
        else:
            return None
    return None


def helper_handles(a: Analysis, sa: SelfAssign, fn: FuncInfo) -> List[KeptHandle]:
    """Handles a same-module helper returns, kept on the instance: ``self.env = open_env(p)``,
    ``env = self.connect_db(p); self.envs.append(env)``, ``self.envs = [open_env(p) for p in ps]``,
    and objects derived from them (``self.x = self.file()["x"]``). The call of a directly kept
    handle is the helper call; a derived object's is the factory call inside the helper."""
    value = sa.value
    container = sa.kind == "container"
    elements: List[cst.BaseExpression] = []
    stored = container_elements(value)
    if stored is not None:
        elements, container = stored, True
    elif value is not None:
        elements = [value]
    out: List[KeptHandle] = []
    for el in elements:
        direct = not container and el is value
        cands: List[cst.BaseExpression] = [el]
        if isinstance(el, cst.Name) and el.value not in fn.with_names:
            cands, direct = list(fn.local_assigns.get(el.value, [])), False
        for c in cands:
            if isinstance(c, cst.Call):
                ret = returned_handle(a, c, fn)
                if ret is not None:
                    out.append(KeptHandle(c, ret[1], direct=direct and sa.kind == "assign", container=container))
                    continue
            root = _strip_derived(a, c)
            if root is not None and root is not c:
                ret = returned_handle(a, root, fn)
                if ret is not None and _derivable(a, c, root, ret[1]):
                    out.append(KeptHandle(ret[0], ret[1], direct=False, container=container))
    return out


def _derivable(a: Analysis, value: cst.BaseExpression, root: cst.Call, factory) -> bool:
    """Every step from ``root`` to ``value`` derives a handle (a subscript of a subscriptable
    handle, a ``derived`` method of the factory)."""
    while value is not root:
        if isinstance(value, cst.Subscript):
            if not factory.subscript:
                return False
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value not in factory.derived:
                return False
            value = value.func.value
        else:
            return False
    return True


def lazy_open_calls(a: Analysis, cls: ClassInfo) -> Set[int]:
    """ids of factory calls that a class assigns to an attribute lazily (FRK103's handles)."""
    out: Set[int] = set()
    for fn in a.class_functions(cls):
        for sa in fn.self_assigns:
            if sa.kind != "assign" or not isinstance(sa.value, cst.Call):
                continue
            if factory_of(a, sa.value) is not None and is_lazy(a, cls, fn, sa):
                out.add(id(sa.value))
    return out


# --------------------------------------------------------------------------------------------------
# module-level helpers for the rewrite


def module_level_names(module: cst.Module) -> Set[str]:
    """Names bound at module level (imports, defs, classes, assignments; inside top-level if/try)."""
    names: Set[str] = set()

    def bind_target(t: cst.BaseExpression) -> None:
        if isinstance(t, cst.Name):
            names.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                bind_target(el.value)

    def walk(stmts: Sequence[cst.CSTNode]) -> None:
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        names.update(_bound_by_import(small))
                    elif isinstance(small, cst.Assign):
                        for t in small.targets:
                            bind_target(t.target)
                    elif isinstance(small, cst.AnnAssign):
                        bind_target(small.target)
            elif isinstance(s, (cst.FunctionDef, cst.ClassDef)):
                names.add(s.name.value)
            elif isinstance(s, (cst.If, cst.Try, cst.With)):
                for block in _blocks(s):
                    walk(block)

    walk(module.body)
    return names


def _blocks(s: cst.CSTNode) -> List[Sequence[cst.CSTNode]]:
    out: List[Sequence[cst.CSTNode]] = []
    if isinstance(s, (cst.If, cst.With, cst.Try)):
        if isinstance(s.body, cst.IndentedBlock):
            out.append(s.body.body)
    if isinstance(s, cst.If) and s.orelse is not None:
        if isinstance(s.orelse, cst.If):
            out += _blocks(s.orelse)
        elif isinstance(s.orelse.body, cst.IndentedBlock):
            out.append(s.orelse.body.body)
    if isinstance(s, cst.Try):
        for h in s.handlers:
            if isinstance(h.body, cst.IndentedBlock):
                out.append(h.body.body)
        for extra in (s.orelse, s.finalbody):
            if extra is not None and isinstance(extra.body, cst.IndentedBlock):
                out.append(extra.body.body)
    return out


def _bound_by_import(small: Union[cst.Import, cst.ImportFrom]) -> List[str]:
    out = []
    if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
        return out
    for alias in small.names:  # type: ignore[union-attr]
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            out.append(alias.asname.name.value)
        else:
            d = dotted(alias.name) or ""
            out.append(d.split(".")[0] if isinstance(small, cst.Import) else d)
    return out


def _local_import(fn: Optional[FuncInfo], head: str) -> Optional[cst.BaseSmallStatement]:
    """A one-name copy of the import that binds ``head`` inside ``fn`` (or a function enclosing it)."""
    while fn is not None:
        found: List[cst.BaseSmallStatement] = []

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn.node  # noqa: B023 - fn is fixed for this walk

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def visit_Import(self, node: cst.Import) -> None:
                for alias in node.names:
                    if head in _bound_by_import(cst.Import(names=[alias])):
                        found.append(cst.Import(names=[alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)]))

            def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                if isinstance(node.names, cst.ImportStar):
                    return
                for alias in node.names:
                    if head in _bound_by_import(cst.ImportFrom(module=node.module, names=[alias])):
                        found.append(
                            node.with_changes(
                                names=[alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
                                lpar=None,
                                rpar=None,
                            )
                        )

        fn.node.visit(V())
        if found:
            return found[0]
        fn = fn.parent
    return None


def ensure_imports(module: cst.Module, names: Sequence[str]) -> cst.Module:
    """Add ``import NAME`` for each module missing a top-level ``import NAME``, after the leading
    imports block (after the docstring and ``from __future__`` imports when there is none)."""
    have: Set[str] = set()
    for s in module.body:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.asname is None:
                            have.add(dotted(alias.name) or "")
    missing = [n for n in names if n not in have]
    if not missing:
        return module
    body = list(module.body)
    insert_at = 0
    for i, s in enumerate(body):
        if i == 0 and is_docstring(s):
            insert_at = 1
            continue
        if isinstance(s, cst.SimpleStatementLine) and all(
            isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body
        ):
            insert_at = i + 1
            continue
        break
    new = [cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=_name_expr(n))])]) for n in missing]
    body[insert_at:insert_at] = new
    return module.with_changes(body=body)


def _name_expr(name: str) -> Union[cst.Name, cst.Attribute]:
    return cst.parse_expression(name)  # type: ignore[return-value]


def line_of(fn: FuncInfo, small: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    """The statement line holding a small statement of ``fn``'s body."""
    found: List[cst.SimpleStatementLine] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            if any(s is small for s in node.body):
                found.append(node)
            return False

    fn.node.body.visit(V())
    return found[0] if found else None


def _is_constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return _is_constant(node.left) and _is_constant(node.right)  # type: ignore[arg-type]
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _is_constant(node.expression)
    return False


# --------------------------------------------------------------------------------------------------
# the per-process lazy attribute (FRK101, FRK203)


@dataclass
class Names:
    attr: str

    @property
    def core(self) -> str:
        return self.attr.lstrip("_")

    @property
    def state(self) -> str:
        return "_" + self.attr if not self.attr.startswith("_") else self.attr + "_local"

    @property
    def pid(self) -> str:
        return f"_{self.core}_pid"

    @property
    def args(self) -> str:
        return f"_{self.core}_args"

    @property
    def kwargs(self) -> str:
        return f"_{self.core}_kwargs"

    @property
    def close(self) -> str:
        return f"_close_{self.core}"

    def private(self) -> Set[str]:
        return {self.state, self.pid, self.args, self.kwargs, self.close}


@dataclass(eq=False)
class LazyPlan:
    owner: ClassInfo  # gets the property (the class whose method kept the value)
    fn: FuncInfo
    attr: str
    line: cst.SimpleStatementLine
    small: cst.BaseSmallStatement
    call: cst.Call
    what: str  # "lmdb.open()" for docstrings
    close: Optional[str]  # the handle's close method; None for locks and queues
    import_stmt: Optional[cst.BaseSmallStatement]
    close_in: List[FuncInfo] = field(default_factory=list)  # __init__s that read the handle
    extend: List[Tuple[FuncInfo, cst.SimpleStatementLine, str]] = field(default_factory=list)
    add_getstate: bool = False
    derived: List["DerivedProp"] = field(default_factory=list)  # become read-only properties

    @property
    def names(self) -> Names:
        return Names(self.attr)


@dataclass(eq=False)
class DerivedProp:
    """``self.images = self.file["images"]`` in ``__init__``: the line goes, and ``images`` becomes a
    property returning the same expression (derived from this process's handle on each use)."""

    sa: SelfAssign
    line: cst.SimpleStatementLine


def _literal_chain(value: cst.BaseExpression, me: str, attr: str) -> bool:
    """``value`` is ``self.attr`` followed by string subscripts and method calls whose arguments
    are literals only (``self.file["images"]``, ``self.env.begin(write=False)``)."""
    depth = 0
    while depth < 8:
        depth += 1
        if isinstance(value, cst.Subscript):
            if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
                return False
            key = value.slice[0].slice.value
            if not isinstance(key, (cst.SimpleString, cst.ConcatenatedString)) or not _is_constant(key):
                return False
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if any(x.star or not _is_constant(x.value) for x in value.args):
                return False
            value = value.func.value
        else:
            return self_attr(value, me) == attr and isinstance(value, cst.Attribute)
    return False


def plan_derived(
    a: Analysis, fn: FuncInfo, sa: SelfAssign, derived: Sequence[Tuple[FuncInfo, SelfAssign]]
) -> Optional[List[DerivedProp]]:
    """The ``derived`` attributes (kept objects derived from ``self.<sa.attr>``) as read-only
    properties, or None when one of them cannot be: each must be assigned once, with a plain ``=``
    on a line of its own at the top of ``fn`` (an ``__init__``, the handle's own method), from an
    expression of nothing but ``self.<sa.attr>`` and literals, in a class that does not define it."""
    owner = fn.cls
    if owner is None or fn.name != "__init__" or fn.self_name != "self":
        return None
    if not isinstance(fn.node.body, cst.IndentedBlock):
        return None
    related = related_classes(a, owner)
    out: List[DerivedProp] = []
    seen: Set[str] = set()
    for dfn, d in derived:
        if dfn is not fn or d.kind != "assign" or d.value is None or d.attr in seen:
            return None
        seen.add(d.attr)
        if d.attr.startswith("__") or d.attr in Names(sa.attr).private() | {sa.attr}:
            return None
        if not _literal_chain(d.value, "self", sa.attr):
            return None
        line = assignment_line(fn, d, d.value, "value")
        if isinstance(line, str) or len(line.body) != 1 or not any(s is line for s in fn.node.body.body):
            return None
        for c in related:
            if d.attr in c.methods or d.attr in c.properties or class_body_binds(c, d.attr):
                return None
            for g in c.methods.values():
                if any(s.attr == d.attr and s is not d for s in g.self_assigns):
                    return None
                pickling = g.name in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")
                if pickling and d.attr in _mentions(g)[0]:
                    return None
        out.append(DerivedProp(d, line))
    return out


def assignment_line(
    fn: FuncInfo, sa: SelfAssign, value: cst.BaseExpression, what: str
) -> Union[cst.SimpleStatementLine, str]:
    """The statement line of ``self.attr = value`` when the fix can replace it (``value`` is the
    whole value of a plain, unmangled ``=`` assignment); else why not (``what`` names the value)."""
    if sa.attr.startswith("__"):
        return "the attribute name is mangled"
    small = sa.stmt
    if isinstance(small, cst.Assign):
        if len(small.targets) != 1 or small.value is not value:
            return f"the {what} is not the whole assigned value"
    elif isinstance(small, cst.AnnAssign):
        if small.value is not value:
            return f"the {what} is not the whole assigned value"
    else:
        return "the value is not assigned with ="
    line = line_of(fn, small)
    if line is None:
        return "the assignment is not a plain statement"
    return line


def _getstate_copy_line(fn: FuncInfo) -> Optional[Tuple[cst.SimpleStatementLine, str]]:
    """``state = self.__dict__.copy()`` (or ``dict(self.__dict__)``, ``copy.copy(...)``,
    ``{**self.__dict__}``, ``vars(self).copy()``) as a top-level statement of ``fn``, assigned once."""
    if not isinstance(fn.node.body, cst.IndentedBlock) or not fn.self_name:
        return None
    me = fn.self_name

    def whole(e: cst.BaseExpression) -> bool:
        if isinstance(e, cst.Attribute) and e.attr.value == "__dict__":
            return isinstance(e.value, cst.Name) and e.value.value == me
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value == "vars":
            return len(e.args) == 1 and isinstance(e.args[0].value, cst.Name) and e.args[0].value.value == me
        return False

    def is_copy(v: cst.BaseExpression) -> bool:
        if isinstance(v, cst.Call):
            f = v.func
            if isinstance(f, cst.Attribute) and f.attr.value == "copy" and not v.args:
                return whole(f.value)
            if (dotted(f) in ("dict", "copy.copy")) and len(v.args) == 1 and not v.args[0].keyword:
                return whole(v.args[0].value)
        if isinstance(v, cst.Dict) and len(v.elements) == 1 and isinstance(v.elements[0], cst.StarredDictElement):
            return whole(v.elements[0].value)
        return False

    for stmt in fn.node.body.body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            s = stmt.body[0]
            if (
                isinstance(s, cst.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0].target, cst.Name)
                and is_copy(s.value)
            ):
                name = s.targets[0].target.value
                if len(fn.local_assigns.get(name, [])) == 1:
                    return stmt, name
    return None


def _harmless_mentions(fn: FuncInfo, attr: str, state: str) -> bool:
    """Every mention of ``"attr"`` in a ``__getstate__`` is ``state["attr"] = None`` or
    ``state.pop("attr", default)``: still harmless once the attribute has moved."""
    ok = True

    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.allowed: Set[int] = set()

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                tt = t.target
                if (
                    isinstance(tt, cst.Subscript)
                    and isinstance(tt.value, cst.Name)
                    and tt.value.value == state
                    and len(tt.slice) == 1
                    and isinstance(tt.slice[0].slice, cst.Index)
                ):
                    self.allowed.add(id(tt.slice[0].slice.value))

        def visit_Call(self, node: cst.Call) -> None:
            f = node.func
            if (
                isinstance(f, cst.Attribute)
                and f.attr.value == "pop"
                and isinstance(f.value, cst.Name)
                and f.value.value == state
                and len(node.args) == 2
            ):
                self.allowed.add(id(node.args[0].value))

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            nonlocal ok
            if string_value(node) == attr and id(node) not in self.allowed:
                ok = False

    fn.node.visit(V())
    return ok


def class_body_binds(cls: ClassInfo, name: str) -> bool:
    """The class body assigns ``name`` itself (``__slots__ = ...``, ``rng: Any = None``)."""
    body = cls.node.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for stmt in body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets: List[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    return True
    return False


def _has_slots(cls: ClassInfo) -> bool:
    """``__slots__`` in the class body (a one-line body counts: the fix cannot add members to it)."""
    return not isinstance(cls.node.body, cst.IndentedBlock) or class_body_binds(cls, "__slots__")


def _getstate_plan(
    a: Analysis, owner: ClassInfo, attr_names: Sequence[str]
) -> Union[str, Tuple[List[Tuple[FuncInfo, cst.SimpleStatementLine, str]], bool]]:
    """The ``__getstate__`` functions to extend and whether ``owner`` needs a new one; or why not."""
    extend = []
    for c in related_classes(a, owner):
        if c.defines_reduce:
            return f"{c.name} defines __reduce__"
        g = c.methods.get("__getstate__")
        if g is None:
            continue
        found = _getstate_copy_line(g)
        if found is None:
            return f"{c.name}.__getstate__ does not start from a copy of self.__dict__"
        if not all(_harmless_mentions(g, n, found[1]) for n in attr_names):
            return f"{c.name}.__getstate__ deletes the attribute"
        extend.append((g, found[0], found[1]))
    return extend, a.resolve_method(owner, "__getstate__") is None


def plan_lazy(
    a: Analysis,
    fn: FuncInfo,
    sa: SelfAssign,
    call: cst.Call,
    what: str,
    close: Optional[str],
    derived: Sequence[DerivedProp] = (),
) -> Union[LazyPlan, str]:
    """How to turn ``self.attr = call`` into a per-process lazy attribute, or why it cannot be done
    automatically (a short phrase). ``derived`` (see ``plan_derived``) become properties too."""
    owner = fn.cls
    attr = sa.attr
    if owner is not None and owner.in_function is not None:
        return "the class is defined inside a function"
    if owner is None or not fn.is_method or not fn.self_name:
        return "it is not assigned in a method"
    line = assignment_line(fn, sa, call, "call")
    if isinstance(line, str):
        return line
    small = sa.stmt
    names = Names(attr)
    related = related_classes(a, owner)
    for c in related:
        if _has_slots(c):
            return f"{c.name} defines __slots__"
        if attr in c.methods or names.close in c.methods:
            return f"{c.name} already defines {attr if attr in c.methods else names.close}"
        for g in c.methods.values():
            for s in g.self_assigns:
                if s is sa:
                    continue
                if s.attr == attr and s.kind in ("assign", "del"):
                    return f"self.{attr} is also assigned in {c.name}.{g.name}"
                if s.attr in names.private():
                    return f"self.{s.attr} is already used"
            if g.self_reads & (names.private() - {names.close}):
                return "the names the fix needs are already used"
    # derived handles kept from the attribute (self.txn = self.env.begin()) would outlive the fix
    head = dotted(call.func)
    if head is None:
        return "the callee is not a plain name"
    head_name = head.split(".")[0]
    import_stmt = None
    if head_name == fn.self_name:  # self._open_env(...): a helper method returning the handle
        if head_name != "self":
            return "the helper is called on a receiver not named self"
    elif head_name not in module_level_names(a.module) and not hasattr(builtins, head_name):
        import_stmt = _local_import(fn, head_name)
        if import_stmt is None:
            return f"{head_name} is not a module-level name"
    gs = _getstate_plan(a, owner, [attr])
    if isinstance(gs, str):
        return gs
    extend, add = gs
    plan = LazyPlan(
        owner=owner,
        fn=fn,
        attr=attr,
        line=line,
        small=small,
        call=call,
        what=what,
        close=close,
        import_stmt=import_stmt,
        extend=extend,
        add_getstate=add,
        derived=list(derived),
    )
    if close:
        plan.close_in = _inits_reading(a, owner, attr, [(fn, d.sa) for d in derived])
    return plan


def _reads_attr_besides(
    fns: Sequence[FuncInfo], attr: str, derived: Sequence[Tuple[FuncInfo, SelfAssign]]
) -> bool:
    """Some function reads ``self.attr`` other than in the ``derived`` assignments that the fix
    removes, or reads one of the derived attributes (now properties reading ``self.attr``)."""
    if not derived:
        return reads_attr(fns, attr)
    n = sum(_loads(f).reads.get(attr, 0) for f in fns if f.self_name)
    for dfn, d in derived:
        if any(f is dfn for f in fns) and d.value is not None and dfn.self_name:
            v = _SelfAttrNodes(dfn.self_name, attr)
            d.value.visit(v)
            n -= len(v.nodes)
    return n > 0 or any(reads_attr(fns, d.attr) for _, d in derived)


def _inits_reading(
    a: Analysis, owner: ClassInfo, attr: str, derived: Sequence[Tuple[FuncInfo, SelfAssign]] = ()
) -> List[FuncInfo]:
    """The ``__init__`` methods (of ``owner`` and its same-file subclasses) whose own code reads
    ``self.attr``: code an ``__init__`` reaches through another listed ``__init__`` (``super()``)
    is that one's, which closes the handle at its own end."""
    cands: List[Tuple[FuncInfo, List[FuncInfo]]] = []
    for c in a.classes:
        init = c.methods.get("__init__")
        if init is None or owner not in a.mro(c) or not isinstance(init.node.body, cst.IndentedBlock):
            continue
        cands.append((init, a.closure(c, [init])))
    out = []
    for init, reach in cands:
        inner = set()
        for other, other_reach in cands:
            if other is not init and other in reach:
                inner |= {id(f) for f in other_reach}
        if _reads_attr_besides([f for f in reach if id(f) not in inner], attr, derived):
            out.append(init)
    return out


def _stmt(code: str, module: cst.Module) -> cst.BaseStatement:
    return cst.parse_statement(code, config=module.config_for_parsing)


def _small(code: str, module: cst.Module) -> cst.BaseSmallStatement:
    line = _stmt(code, module)
    assert isinstance(line, cst.SimpleStatementLine)
    return line.body[0]


def _comments(node: cst.CSTNode) -> List[cst.EmptyLine]:
    found: List[cst.EmptyLine] = []

    class V(cst.CSTVisitor):
        def visit_Comment(self, c: cst.Comment) -> None:
            found.append(cst.EmptyLine(comment=c))

    node.visit(V())
    return found


def _split_args(module: cst.Module, plan: LazyPlan) -> Tuple[List[str], List[str], List[str]]:
    """(stored positional sources, stored keyword sources, the call's new argument sources)."""
    code = module.code_for_node
    args = list(plan.call.args)
    names = plan.names
    pos = [x for x in args if x.keyword is None and x.star != "**"]
    kws = [x for x in args if x.keyword is not None or x.star == "**"]
    var_pos = [i for i, x in enumerate(pos) if x.star == "*" or not _is_constant(x.value)]
    if var_pos and var_pos != list(range(var_pos[0], var_pos[-1] + 1)):
        var_pos = list(range(var_pos[0], var_pos[-1] + 1))
    stored_pos = [("*" if pos[i].star == "*" else "") + code(pos[i].value) for i in var_pos]
    stored_kw = []
    new_args: List[str] = []
    for i, x in enumerate(pos):
        if var_pos and i == var_pos[0]:
            new_args.append(f"*self.{names.args}")
        elif i not in var_pos:
            new_args.append(code(x.value))
    kept_kw = []
    for x in kws:
        if x.star == "**":
            stored_kw.append("**" + code(x.value))
        elif _is_constant(x.value):
            kept_kw.append(f"{x.keyword.value}={code(x.value)}")  # type: ignore[union-attr]
        else:
            stored_kw.append(f"{x.keyword.value}={code(x.value)}")  # type: ignore[union-attr]
    new_args += kept_kw
    if stored_kw:
        new_args.append(f"**self.{names.kwargs}")
    return stored_pos, stored_kw, new_args


def _init_lines(module: cst.Module, plan: LazyPlan, stored_pos: List[str], stored_kw: List[str]) -> List[str]:
    n = plan.names
    me = plan.fn.self_name
    out = []
    if stored_pos:
        tup = ", ".join(stored_pos) + ("," if len(stored_pos) == 1 else "")
        out.append(f"{me}.{n.args} = ({tup})")
    if stored_kw:
        out.append(f"{me}.{n.kwargs} = dict({', '.join(stored_kw)})")
    if not out:
        out.append(f"{me}.{n.state} = {me}.{n.pid} = None")
    return out


def _members(module: cst.Module, plan: LazyPlan, new_args: List[str]) -> List[str]:
    n = plan.names
    ind = module.default_indent
    nl = "\n"
    func = module.code_for_node(plan.call.func)
    call = f"{func}({', '.join(new_args)})"
    if len(call) + 3 * len(ind) + len(n.state) + 10 > 100 and new_args:
        call = f"{func}({nl}" + "".join(f"{ind * 3}{x},{nl}" for x in new_args) + f"{ind * 2})"
    imp = module.code_for_node(plan.import_stmt) if plan.import_stmt is not None else None
    body = [f'if getattr(self, "{n.pid}", None) != os.getpid():']
    if plan.close:
        doc = f'"""The {plan.what} handle of this process: opened on first use, reopened after a fork."""'
        body.append(f"{ind}self.{n.close}()")
    else:
        doc = f'"""The {plan.what} of this process: created on first use, never shared with a fork."""'
    if imp:
        body.append(f"{ind}{imp}")
    body += [f"{ind}self.{n.state} = {call}", f"{ind}self.{n.pid} = os.getpid()", f"return self.{n.state}"]
    prop = f"@property{nl}def {plan.attr}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in [doc] + body)
    out = [prop]
    if plan.close:
        close_body = [
            f'"""Close this process\'s {plan.what} handle if it is open (the next use reopens it)."""',
            f'handle = getattr(self, "{n.state}", None)',
            f"self.{n.state} = self.{n.pid} = None",
            "if handle is not None:",
            f"{ind}handle.{plan.close}()",
        ]
        out.append(f"def {n.close}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in close_body))
    for d in plan.derived:
        assert d.sa.value is not None
        body = [f"# {c.value.lstrip('#').strip()}" for c in _line_comments(d.line)]
        body.append(f"return {module.code_for_node(d.sa.value)}")
        out.append(f"@property{nl}def {d.sa.attr}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in body))
    return out


def _line_comments(line: cst.SimpleStatementLine) -> List[cst.Comment]:
    """The comments above and at the end of a line (they move with the line into its property)."""
    out = [e.comment for e in line.leading_lines if e.comment is not None]
    if line.trailing_whitespace.comment is not None:
        out.append(line.trailing_whitespace.comment)
    return out


def _with_blank_line(stmt: cst.BaseStatement) -> cst.BaseStatement:
    return stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])  # type: ignore[call-arg]


def _getstate_home(a: Analysis, owner: ClassInfo, adders: Sequence[ClassInfo]) -> ClassInfo:
    """The class that gets the new ``__getstate__``: ``owner``, or its most basic same-file base
    that gets one in this round too (``adders``; a subclass's own would hide the base's)."""
    home = owner
    for c in adders:
        if c is not home and c in a.mro(home):
            home = c
    return home


class ClassRewrite(cst.CSTTransformer):
    """What the per-process rewrites (lazy handles, PID checks, per-worker RNGs) share: lines that
    reset attributes, added to existing ``__getstate__`` functions right after their
    ``state = self.__dict__.copy()`` line, and members appended to classes (properties, a new
    ``__getstate__`` with the ``getstate_doc`` docstring)."""

    getstate_doc = ""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        # __getstate__ node -> (its copy line, lines to add after it)
        self.extends: Dict[int, Tuple[cst.SimpleStatementLine, List[str]]] = {}
        self.members: Dict[int, List[str]] = {}  # class node -> member sources
        self.new_getstate: Dict[int, List[Tuple[str, str]]] = {}  # class node -> reset ops of its new one

    def add_resets(
        self,
        extend: Sequence[Tuple[FuncInfo, cst.SimpleStatementLine, str]],
        ops: Sequence[Tuple[str, str]],
        home: Optional[ClassInfo],
    ) -> None:
        """Reset ``ops`` (see ``_reset_src``) in the existing ``__getstate__`` functions ``extend``
        and, when ``home`` is given, in the new ``__getstate__`` of ``home``; each line once."""
        for g, line, var in extend:
            entry = self.extends.setdefault(id(g.node), (line, []))
            for op in ops:
                src = _reset_src(var, op)
                if src not in entry[1]:
                    entry[1].append(src)
        if home is not None:
            lst = self.new_getstate.setdefault(id(home.node), [])
            lst.extend(op for op in ops if op not in lst)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        key = id(original_node)
        if key not in self.extends:
            return updated_node
        copy_line, srcs = self.extends[key]
        body = list(updated_node.body.body)
        # the copy line itself is unchanged by the rewrites: find it by position
        idx = next(i for i, s in enumerate(original_node.body.body) if s is copy_line)
        body[idx + 1 : idx + 1] = [_stmt(src, self.module) for src in srcs]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        key = id(original_node)
        members = list(self.members.get(key, []))
        ops = self.new_getstate.get(key)
        if ops:
            ind = self.module.default_indent
            body = [f'"""{self.getstate_doc}"""', "state = self.__dict__.copy()"]
            body += [_reset_src("state", op) for op in ops] + ["return state"]
            members.append("def __getstate__(self):\n" + "".join(f"{ind}{x}\n" for x in body))
        if not members:
            return updated_node
        new = [_with_blank_line(_stmt(m, self.module)) for m in members]
        block = updated_node.body
        assert isinstance(block, cst.IndentedBlock)
        return updated_node.with_changes(body=block.with_changes(body=[*block.body, *new]))


def _append_before_return(block: cst.IndentedBlock, new: Sequence[cst.BaseStatement]) -> cst.IndentedBlock:
    body = list(block.body)
    at = len(body)
    last = body[-1] if body else None
    if (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
        and last.body[0].value is None
    ):
        at -= 1
    body[at:at] = list(new)
    return block.with_changes(body=body)


class _LazyTransformer(ClassRewrite):
    getstate_doc = "Leave the per-process objects out of the pickle: each process makes its own on first use."

    def __init__(self, a: Analysis, plans: Sequence[LazyPlan]) -> None:
        module = a.module
        super().__init__(module)
        self.a = a
        self.plans = list(plans)
        self.by_line: Dict[int, List[LazyPlan]] = {}
        self.removed: Set[int] = set()  # derived lines that became properties
        for p in self.plans:
            self.by_line.setdefault(id(p.line), []).append(p)
            self.removed |= {id(d.line) for d in p.derived}
        self.closes: Dict[int, List[str]] = {}  # __init__ node -> close calls to append
        self.self_name: Dict[int, str] = {}
        self.new_args: Dict[int, Tuple[List[str], List[str], List[str]]] = {}
        adders = [p.owner for p in self.plans if p.add_getstate]
        for p in self.plans:
            split = _split_args(module, p)
            self.new_args[id(p)] = split
            n = p.names
            self.members.setdefault(id(p.owner.node), []).extend(_members(module, p, split[2]))
            for init in p.close_in:
                calls = self.closes.setdefault(id(init.node), [])
                if n.close not in calls:
                    calls.append(n.close)
                self.self_name[id(init.node)] = init.self_name or "self"
            home = _getstate_home(self.a, p.owner, adders) if p.add_getstate else None
            self.add_resets(p.extend, [("pop", n.state), ("pop", n.pid)], home)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement], cst.RemovalSentinel]:
        if id(original_node) in self.removed:
            return cst.RemovalSentinel.REMOVE
        plans = self.by_line.get(id(original_node))
        if not plans:
            return updated_node
        smalls: List[cst.BaseSmallStatement] = []
        comments: List[cst.EmptyLine] = []  # comments inside the rewritten call move above it
        for orig, upd in zip(original_node.body, updated_node.body):
            plan = next((p for p in plans if p.small is orig), None)
            if plan is None:
                smalls.append(upd)
                continue
            stored_pos, stored_kw, _ = self.new_args[id(plan)]
            smalls += [_small(c, self.module) for c in _init_lines(self.module, plan, stored_pos, stored_kw)]
            comments += _comments(plan.call)
        if len(original_node.body) == 1:
            lines = [cst.SimpleStatementLine(body=[s]) for s in smalls]
            lines[0] = lines[0].with_changes(leading_lines=[*updated_node.leading_lines, *comments])
            lines[-1] = lines[-1].with_changes(trailing_whitespace=updated_node.trailing_whitespace)
            return cst.FlattenSentinel(lines)
        smalls = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in smalls]
        return updated_node.with_changes(body=smalls, leading_lines=[*updated_node.leading_lines, *comments])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        key = id(original_node)
        updated_node = super().leave_FunctionDef(original_node, updated_node)
        if key in self.closes:
            me = self.self_name[key]
            new = [
                _stmt(f"{me}.{c}()  # each process reopens it on first use", self.module) for c in self.closes[key]
            ]
            updated_node = updated_node.with_changes(body=_append_before_return(updated_node.body, new))
        return updated_node


def apply_lazy(a: Analysis, plans: Sequence[LazyPlan]) -> cst.Module:
    """Rewrite every planned attribute into a per-process lazy one."""
    if not plans:
        return a.module
    module = a.module.visit(_LazyTransformer(a, plans))
    return ensure_imports(module, ["os"])


# --------------------------------------------------------------------------------------------------
# FRK103: add the PID check / the __getstate__ reset to an existing lazy handle


@dataclass(eq=False)
class PidPlan:
    owner: ClassInfo
    fn: FuncInfo
    attr: str
    if_node: Optional[cst.If]  # the lazy `if` (None when only __getstate__ is missing)
    line: Optional[cst.SimpleStatementLine]
    close: str
    add_pid: bool
    resets: List[Tuple[str, str]]  # ("none", attr): state[attr] = None; ("pop", attr): state.pop(attr)
    extend: List[Tuple[FuncInfo, cst.SimpleStatementLine, str]] = field(default_factory=list)
    add_getstate: bool = False

    @property
    def names(self) -> Names:
        return Names(self.attr)


def _lazy_if(fn: FuncInfo, line: cst.SimpleStatementLine, attrs: Set[str]) -> Optional[cst.If]:
    """The ``if`` whose test tests one of ``attrs`` and whose block holds ``line`` directly."""
    found: List[cst.If] = []
    me = fn.self_name or "self"

    class V(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            if isinstance(node.body, cst.IndentedBlock) and any(s is line for s in node.body.body):
                if attrs & attrs_tested(node.test, me):
                    found.append(node)

    fn.node.body.visit(V())
    return found[0] if found else None


def _tests_presence(test: cst.BaseExpression, me: str, attr: str) -> bool:
    """The lazy test asks whether the attribute exists (``hasattr``/``getattr``/``__dict__``)."""
    found = False

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if isinstance(node.func, cst.Name) and node.func.value in ("hasattr", "getattr"):
                if len(node.args) >= 2 and string_value(node.args[1].value) == attr:
                    found = True

        def visit_Comparison(self, node: cst.Comparison) -> None:
            nonlocal found
            if string_value(node.left) == attr:
                found = True

    test.visit(V())
    return found


def plan_pid(
    a: Analysis,
    cls: ClassInfo,
    fn: FuncInfo,
    sa: SelfAssign,
    close: str,
    need_pid: bool,
    need_drop: bool,
    derived: Sequence[SelfAssign] = (),
) -> Union[PidPlan, str]:
    """How to add what a lazy handle lacks: the PID check in its ``if`` (``sa`` is the handle's own
    assignment) and a ``__getstate__`` resetting it and the ``derived`` attributes set with it."""
    owner = fn.cls
    if owner is not None and owner.in_function is not None:
        return "the class is defined inside a function"
    if owner is None or not fn.is_method or not fn.self_name:
        return "it is not opened in a method"
    me = fn.self_name
    attrs = {sa.attr} | {d.attr for d in derived}
    line = line_of(fn, sa.stmt)
    if_node = _lazy_if(fn, line, attrs) if line is not None else None
    if need_pid and (if_node is None or len(line.body) != 1):  # type: ignore[union-attr]
        return "the lazy open is not directly inside its `if self.x is None:` block"
    for d in derived:
        if if_node is None or not _contains(if_node.body, d.stmt):
            return f"self.{d.attr}, derived from the handle, is set outside the lazy block"
    names = Names(sa.attr)
    for c in related_classes(a, owner):
        for g in c.methods.values():
            if names.pid in g.self_reads:
                return f"self.{names.pid} is already used"
    resets: List[Tuple[str, str]] = []
    extend: List[Tuple[FuncInfo, cst.SimpleStatementLine, str]] = []
    add = False
    if need_drop:
        for attr in [sa.attr] + [d.attr for d in derived if d.attr != sa.attr]:
            if if_node is not None and _tests_presence(if_node.test, me, attr):
                kind = "pop"
            elif if_node is not None or _set_to_none(a, owner, attr):
                kind = "none"
            else:
                kind = "pop"
            resets.append((kind, attr))
        gs = _getstate_plan(a, owner, [])
        if isinstance(gs, str):
            return gs
        extend, add = gs
    return PidPlan(
        owner=owner,
        fn=fn,
        attr=sa.attr,
        if_node=if_node if need_pid else None,
        line=line if need_pid else None,
        close=close,
        add_pid=need_pid,
        resets=resets,
        extend=extend,
        add_getstate=add,
    )


def _set_to_none(a: Analysis, owner: ClassInfo, attr: str) -> bool:
    return any(
        s.attr == attr and s.kind == "assign" and isinstance(s.value, cst.Name) and s.value.value == "None"
        for g in a.class_functions(owner)
        for s in g.self_assigns
    )


class _PidTransformer(ClassRewrite):
    getstate_doc = "Pickle without the open handles: each process opens its own on first use."

    def __init__(self, a: Analysis, plans: Sequence[PidPlan]) -> None:
        super().__init__(a.module)
        self.ifs: Dict[int, List[PidPlan]] = {}
        self.lines: Dict[int, PidPlan] = {}
        adders = [q.owner for q in plans if q.add_getstate and q.resets]
        for p in plans:
            if p.add_pid and p.if_node is not None and p.line is not None:
                self.ifs.setdefault(id(p.if_node), []).append(p)
                self.lines[id(p.line)] = p
            if p.resets:
                home = _getstate_home(a, p.owner, adders) if p.add_getstate else None
                self.add_resets(p.extend, _reset_ops(p), home)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        plans = self.ifs.get(id(original_node))
        if not plans:
            return updated_node
        test = updated_node.test
        if isinstance(test, (cst.IfExp, cst.NamedExpr, cst.Lambda)) and not test.lpar:
            test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        for p in plans:
            n = p.names
            me = p.fn.self_name
            extra = cst.parse_expression(f'getattr({me}, "{n.pid}", None) != os.getpid()')
            test = cst.BooleanOperation(left=test, operator=cst.Or(), right=extra)
        return updated_node.with_changes(test=test)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement]]:
        p = self.lines.get(id(original_node))
        if p is None:
            return updated_node
        me = p.fn.self_name
        n = p.names
        ind = self.module.default_indent
        plain = (
            p.if_node is not None
            and p.attr in attrs_tested(p.if_node.test, me)
            and not _tests_presence(p.if_node.test, me, p.attr)
        )  # `if self.env is None`: the attribute exists whenever the test runs
        exists = f"{me}.{p.attr} is not None" if plain else f'getattr({me}, "{p.attr}", None) is not None'

        before = _stmt(
            f"if {exists}:\n"
            f"{ind}{me}.{p.attr}.{p.close}()  # inherited through fork: close it before reopening\n",
            self.module,
        )
        before = before.with_changes(leading_lines=updated_node.leading_lines)
        after = _stmt(f"{me}.{n.pid} = os.getpid()", self.module)
        return cst.FlattenSentinel([before, updated_node.with_changes(leading_lines=[]), after])


def _reset_ops(p: PidPlan) -> List[Tuple[str, str]]:
    ops = list(p.resets)
    if p.add_pid:
        ops.append(("pop", p.names.pid))
    return ops


def _reset_src(var: str, op: Tuple[str, str]) -> str:
    kind, key = op
    if kind == "none":
        return f'{var}["{key}"] = None'
    return f'{var}.pop("{key}", None)'


def apply_pid(a: Analysis, plans: Sequence[PidPlan]) -> cst.Module:
    if not plans:
        return a.module
    module = a.module.visit(_PidTransformer(a, plans))
    if any(p.add_pid for p in plans):
        module = ensure_imports(module, ["os"])
    return module
