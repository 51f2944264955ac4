"""Facts of the handles family (FRK101, FRK103, FRK203): whether an attribute is already opened
lazily per process, which helper or property returns a handle, which methods read or close it."""

from __future__ import annotations

import weakref
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

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
    factory_of,
    handle_source,
    push_children,
    returned_values,
    self_attr,
    string_value,
)


class _Loads:
    """``self.<attr>`` reads of a function body (assignment / del targets excluded, nested defs
    included: a closure reading the attribute runs where the function runs), and the ``with
    self.<attr>:`` items. One direct walk of the body (a parent before its children, as libcst's
    visitor goes, without its dispatch)."""

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

    def walk(self, root: cst.CSTNode) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = type(node)
            if t is cst.Assign:
                for tg in node.targets:  # type: ignore[attr-defined]
                    self._mark(tg.target)
            elif t is cst.AnnAssign or t is cst.Del:
                self._mark(node.target)  # type: ignore[attr-defined]
            elif t is cst.WithItem:
                name = self_attr(node.item, self.self_name)  # type: ignore[attr-defined]
                if name:
                    self.with_items.add(name)
            elif t is cst.Attribute and id(node) not in self.targets:
                name = self_attr(node, self.self_name)  # type: ignore[arg-type]
                if name:
                    self.reads[name] = self.reads.get(name, 0) + 1
            push_children(node, stack)


_LOADS_CACHE: "weakref.WeakKeyDictionary[FuncInfo, _Loads]" = weakref.WeakKeyDictionary()


def loads(fn: FuncInfo) -> _Loads:
    got = _LOADS_CACHE.get(fn)
    if got is None:
        got = _Loads(fn.self_name or "self")
        if fn.self_name:
            got.walk(fn.node.body)
        _LOADS_CACHE[fn] = got
    return got


def reads_attr(fns: Iterable[FuncInfo], attr: str) -> bool:
    """Some function reads ``self.attr`` (not only assigns it)."""
    return any(loads(fn).reads.get(attr) for fn in fns if fn.self_name)


def closed_by_with(fns: Iterable[FuncInfo], attr: str) -> bool:
    """``with self.attr:`` closes the handle when the block ends."""
    return any(attr in loads(fn).with_items for fn in fns if fn.self_name)


def mentions(fn: FuncInfo) -> Tuple[Set[str], bool, bool]:
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
            strings, whole, filtered = mentions(fn)
            return attr in strings or not whole or filtered
    return False


def recreated_on_unpickle(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """The nearest ``__setstate__`` of ``cls`` assigns ``self.attr``, itself or through what it calls
    (``self.tl = threading.local()``, ``self._do_init(state)`` that reopens the file): an unpickled
    copy (a spawn worker's) gets a fresh object of its own."""
    for c in a.mro(cls):
        fn = c.methods.get("__setstate__")
        if fn is not None:
            return any(
                s.attr == attr and s.kind == "assign" for g in a.closure(cls, [fn]) for s in g.self_assigns
            )
    return False


def worker_uses_attr(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """Worker-side code of ``cls`` (``__getitem__``, ``__iter__`` and what they reach) reads ``self.attr``."""
    return any(attr in fn.self_reads for fn in a.worker_side(cls))


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


def contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
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
                if contains(st, target):
                    return acc
                continue
            if isinstance(st, (cst.FunctionDef, cst.ClassDef)):
                continue
            test = getattr(st, "test", None)
            tested = attrs_tested(test, me) if isinstance(test, cst.BaseExpression) else set()
            if test is not None and contains(test, target):
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
            v = SelfAttrNodes(g.self_name, fn.name)
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


class SelfAttrNodes(cst.CSTVisitor):
    def __init__(self, me: str, name: str) -> None:
        self.me, self.name = me, name
        self.nodes: List[cst.CSTNode] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self_attr(node, self.me) == self.name:
            self.nodes.append(node)


def returned_handle(a: Analysis, call: cst.Call, fn: FuncInfo):
    """``(factory call, factory)`` when ``call`` is a same-module helper (``open_env(p)``,
    ``self._open_env()``) whose return value is a handle; else None."""
    target = a.called_helper(call, fn)
    if target is None:
        return None
    for value in returned_values(target):
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
                    out.append(KeptHandle(c, ret[1], direct=direct and sa.kind == "assign", container=container,
                                          at=ret[0]))
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
