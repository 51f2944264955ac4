"""The one shared analysis of a module that every rule reads.

One libcst walk collects imports, classes, functions, calls, assignments to ``self`` and lambdas with
their enclosing scopes; everything else (dataset-like classes, parent-side and worker-side code,
DataLoader calls and their ``num_workers``, the ``__main__`` guard) is derived from that index on
first use and cached. No scope or qualified-name metadata providers: import resolution here is a
dictionary lookup.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.knowledge import Knowledge

if TYPE_CHECKING:  # pragma: no cover
    from flake8_forksafe.index import AttrFact, MethodRef, ProjectIndex

PARENT_ROOTS = ("__init__", "__post_init__", "__len__")  # __post_init__: a dataclass's constructor
WORKER_ROOTS = ("__getitem__", "__getitems__", "__iter__", "__next__")


# --------------------------------------------------------------------------------------------------
# small expression helpers


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def string_value(node: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        try:
            v = node.evaluated_value
        except Exception:  # pragma: no cover - libcst only raises on odd prefixes
            return None
        return v if isinstance(v, str) else None
    return None


def int_value(node: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = int_value(node.expression)
        return -v if v is not None else None
    return None


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def positional(call: cst.Call) -> List[cst.Arg]:
    out = []
    for arg in call.args:
        if arg.keyword is not None or arg.star == "**":
            break
        if arg.star == "*":
            break
        out.append(arg)
    return out


def self_attr(node: cst.BaseExpression, self_name: str = "self") -> Optional[str]:
    """``attr`` for ``self.attr``."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == self_name
    ):
        return node.attr.value
    return None


def chain_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """The innermost receiver of ``a.b(...)[k].c``."""
    while True:
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return node


def attrs_tested(test: cst.BaseExpression, self_name: str) -> Set[str]:
    """Attributes a condition checks for presence: ``self.x is None``, ``not self.x``,
    ``hasattr(self, "x")``, ``getattr(self, "x", None) is None`` (any polarity, inside and/or)."""
    out: Set[str] = set()
    stack = [test]
    while stack:
        t = stack.pop()
        if isinstance(t, cst.BooleanOperation):
            stack += [t.left, t.right]
        elif isinstance(t, cst.UnaryOperation):
            stack.append(t.expression)
        elif isinstance(t, cst.Comparison):
            stack.append(t.left)
            stack += [c.comparator for c in t.comparisons]
        elif isinstance(t, cst.Attribute):
            a = self_attr(t, self_name)
            if a:
                out.add(a)
        elif isinstance(t, cst.Call) and isinstance(t.func, cst.Name) and t.func.value in ("hasattr", "getattr"):
            if len(t.args) >= 2 and isinstance(t.args[0].value, cst.Name) and t.args[0].value.value == self_name:
                name = string_value(t.args[1].value)
                if name:
                    out.add(name)
    return out


def is_main_guard(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.If):
        return False
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comp = test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return False
    left, right = test.left, comp.comparator
    pair = {dotted(left) or string_value(left), dotted(right) or string_value(right)}
    return pair == {"__name__", "__main__"}


def is_docstring(stmt: cst.CSTNode) -> bool:
    """A statement line holding only a string literal (the docstring, where it comes first)."""
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def comp_fors(
    comp: Union[cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp],
) -> List[cst.CompFor]:
    """The ``for`` clauses of a comprehension, outermost first."""
    out = []
    f: Optional[cst.CompFor] = comp.for_in
    while f is not None:
        out.append(f)
        f = f.inner_for_in
    return out


def container_elements(value: Optional[cst.BaseExpression]) -> Optional[List[cst.BaseExpression]]:
    """The element expressions of a container display or comprehension (a dict's values); None
    when ``value`` is neither."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [value.elt]
    if isinstance(value, cst.DictComp):
        return [value.value]
    return None


# --------------------------------------------------------------------------------------------------
# the index


@dataclass(eq=False)
class CallSite:
    node: cst.Call
    qname: Optional[str]  # resolved callee, e.g. "lmdb.open", "torch.utils.data.DataLoader"
    func: Optional["FuncInfo"]  # enclosing function (None at module level)
    stmt: cst.CSTNode  # enclosing simple statement (or compound header)
    top: Optional[cst.CSTNode]  # enclosing top-level statement of the module

    @property
    def last(self) -> Optional[str]:
        f = self.node.func
        if isinstance(f, cst.Attribute):
            return f.attr.value
        if isinstance(f, cst.Name):
            return f.value
        return None


@dataclass(eq=False)
class SelfAssign:
    """``self.attr = value`` (also augmented / annotated), or a container mutation of ``self.attr``."""

    attr: str
    value: Optional[cst.BaseExpression]
    stmt: cst.CSTNode
    kind: str  # "assign", "container" (self.x.append(v), self.x[k] = v), "del"


@dataclass(eq=False)
class AttrStore:
    """``name.attr = value`` (any receiver name, ``self`` included), in ``func`` (None: module level)."""

    func: Optional["FuncInfo"]
    name: str
    attr: str
    value: cst.BaseExpression
    stmt: cst.CSTNode


@dataclass(eq=False)
class FuncInfo:
    node: cst.FunctionDef
    name: str
    cls: Optional["ClassInfo"]
    parent: Optional["FuncInfo"]
    self_name: Optional[str] = None
    calls: List[CallSite] = field(default_factory=list)
    self_calls: Set[str] = field(default_factory=set)
    self_reads: Set[str] = field(default_factory=set)
    name_calls: Set[str] = field(default_factory=set)
    self_assigns: List[SelfAssign] = field(default_factory=list)
    local_assigns: Dict[str, List[cst.BaseExpression]] = field(default_factory=dict)
    with_names: Set[str] = field(default_factory=set)  # names bound by `with ... as name`
    closed: Set[str] = field(default_factory=set)  # `x.close()` / `self.x.close()` receivers
    params: Tuple[str, ...] = ()
    is_generator: bool = False
    nested: List["FuncInfo"] = field(default_factory=list)
    lambdas: List[cst.Lambda] = field(default_factory=list)
    super_init: bool = False  # calls super().__init__
    explicit_base_inits: Set[str] = field(default_factory=set)  # Base.__init__(self)
    getpid: bool = False
    has_global: bool = False  # a ``global`` statement in its body (not in a nested def)
    tests: List[cst.BaseExpression] = field(default_factory=list)  # if / ternary conditions

    @property
    def is_method(self) -> bool:
        return self.cls is not None and self.parent is None


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    bases: List[cst.BaseExpression]
    base_qnames: List[Optional[str]]
    methods: Dict[str, FuncInfo] = field(default_factory=dict)
    properties: Set[str] = field(default_factory=set)
    in_function: Optional[FuncInfo] = None
    defines_reduce: bool = False


# -- the direct walk of the index (not libcst's generic visitor dispatch)
#
# ``module.visit(visitor)`` rebuilds every node it passes (``_visit_and_replace_children`` constructs
# and validates a copy) and dispatches through ``on_visit`` / ``visit_<Node>`` / per-field hooks: most
# of an analysis's time. The index needs none of that: ``_Indexer.walk`` calls its own hooks in the
# order libcst's visitor would (same nodes, same order), reading each node's fields directly, and
# never enters tokens (whitespace, commas, operators, brackets), names or literals, which hold no
# node the index looks at. The order of a node type's fields is libcst's own, recorded from
# ``_visit_and_replace_children`` once per type (tests/test_analysis_walk.py compares both walks on
# every fixture, corpus file and rule example).

_LEAVES = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.Comma,
    cst.Semicolon,
    cst.Colon,
    cst.Dot,
    cst.AssignEqual,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
    cst.ImportStar,
    cst.Asynchronous,
    cst.Name,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
)
_STATEMENTS = (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.SimpleStatementLine)


_VISITED_FIELD = re.compile(
    r'visit_(?:required|optional|sentinel|sequence|body_sequence|iterable|body_iterable)\(\s*self,\s*"(\w+)"'
)


class _TypeWalk:
    """How the walk treats one node type: leaf or not, statement or not, its hooks, and the fields
    libcst's visitor enters, in its order (read once per type from libcst's own
    ``_visit_and_replace_children``; None: unreadable, the node's ``children`` are used)."""

    __slots__ = ("leaf", "stmt", "visit", "leave", "order")

    def __init__(self, t: type) -> None:
        self.leaf = issubclass(t, _LEAVES)
        self.stmt = issubclass(t, _STATEMENTS)
        self.visit = getattr(_Indexer, f"visit_{t.__name__}", None)
        self.leave = getattr(_Indexer, f"leave_{t.__name__}", None)
        self.order: Optional[Tuple[str, ...]] = None if self.leaf else _field_order(t)


def _field_order(t: type) -> Optional[Tuple[str, ...]]:
    import inspect

    try:
        src = inspect.getsource(t._visit_and_replace_children)  # type: ignore[attr-defined]
    except (OSError, TypeError, AttributeError):  # pragma: no cover - libcst installed without sources
        return None
    return tuple(dict.fromkeys(_VISITED_FIELD.findall(src)))


_TYPES: Dict[type, _TypeWalk] = {}
# what a field's value is, by its type (``isinstance`` against libcst's abstract node classes goes
# through ``ABCMeta.__instancecheck__``: millions of calls per corpus): a node the walk enters, a
# leaf or another value it skips, or a sequence of nodes
_NODE, _SKIP, _SEQUENCE = "node", "skip", "sequence"
_KINDS: Dict[type, str] = {}


def _kind(t: type) -> str:
    if issubclass(t, cst.CSTNode):
        k = _SKIP if issubclass(t, _LEAVES) else _NODE
    elif issubclass(t, (tuple, list)):
        k = _SEQUENCE
    else:
        k = _SKIP
    _KINDS[t] = k
    return k


class _Indexer(cst.CSTVisitor):
    def __init__(self, a: "Analysis") -> None:
        self.a = a
        self.func_stack: List[FuncInfo] = []
        self.class_stack: List[Optional[ClassInfo]] = []
        self.stmt_stack: List[cst.CSTNode] = []
        self.top: Optional[cst.CSTNode] = None

    # The attribute-level hooks (visit_<Node>_<field>) are unused: skip libcst's per-field dispatch.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None

    # -- statements
    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.SimpleStatementLine)):
            if self.top is None and node in self.a.module_body_set:
                self.top = node
            self.stmt_stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if isinstance(
            original_node, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.SimpleStatementLine)
        ):
            self.stmt_stack.pop()
            if original_node is self.top:
                self.top = None

    @property
    def func(self) -> Optional[FuncInfo]:
        return self.func_stack[-1] if self.func_stack else None

    def walk(self, node: cst.CSTNode) -> None:
        """``node.visit(self)`` without libcst's rebuilding and dispatch: the same hooks, nodes, order."""
        t = type(node)
        tw = _TYPES.get(t)
        if tw is None:
            tw = _TYPES[t] = _TypeWalk(t)
        if tw.leaf:
            return
        stmt = tw.stmt
        if stmt:
            if self.top is None and node in self.a.module_body_set:
                self.top = node
            self.stmt_stack.append(node)
        if tw.visit is not None:
            tw.visit(self, node)
        walk = self.walk
        order = tw.order
        if order is None:  # pragma: no cover - see _field_order
            for c in node.children:
                walk(c)
        else:
            kinds = _KINDS
            for name in order:
                v = getattr(node, name)
                k = kinds.get(type(v))
                if k is None:
                    k = _kind(type(v))
                if k is _NODE:
                    walk(v)
                elif k is _SEQUENCE:
                    for c in v:
                        walk(c)
        if tw.leave is not None:
            tw.leave(self, node)
        if stmt:
            self.stmt_stack.pop()
            if node is self.top:
                self.top = None

    # -- imports
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.a.aliases[alias.asname.name.value] = full
                self.a.module_aliases.add(alias.asname.name.value)
            else:
                head = full.split(".")[0]
                self.a.aliases.setdefault(head, head)
                self.a.module_aliases.add(head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        mod = dotted(node.module) if node.module is not None else ""
        if node.relative:
            mod = "." * len(node.relative) + (mod or "")
        if isinstance(node.names, cst.ImportStar):
            self.a.star_imports.append(mod or "")
            return
        for alias in node.names:
            name = dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.a.aliases[local] = f"{mod}.{name}" if mod else name

    # -- definitions
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.top is not None:
            self.a.tops[id(node)] = self.top
        # a generic base (`Dataset[T_co]`, `Base[int]`) is its unsubscripted class
        bases = [
            arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value
            for arg in node.bases
            if arg.keyword is None and not arg.star
        ]
        info = ClassInfo(
            node=node,
            name=node.name.value,
            bases=bases,
            base_qnames=[],  # resolved after the walk, once every import is known
            in_function=self.func,
        )
        self.a.classes.append(info)
        if self.func is None and not self.class_stack:
            self.a.module_classes[info.name] = info
        self.class_stack.append(info)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.top is not None:
            self.a.tops[id(node)] = self.top
        # a def directly in a class body is a method (a def's body pushes None on the class stack)
        cls = self.class_stack[-1] if self.class_stack else None
        parent = self.func
        info = FuncInfo(node=node, name=node.name.value, cls=cls, parent=parent)
        params = [p.name.value for p in node.params.posonly_params] + [p.name.value for p in node.params.params]
        info.params = tuple(params) + tuple(p.name.value for p in node.params.kwonly_params)
        if cls is not None:
            deco = {dotted(d.decorator) for d in node.decorators if not isinstance(d.decorator, cst.Call)}
            if params and not deco & {"staticmethod", "classmethod"}:
                info.self_name = params[0]
            if deco & {"property", "functools.cached_property", "cached_property"}:
                cls.properties.add(info.name)
            cls.methods[info.name] = info
            if info.name in ("__reduce__", "__reduce_ex__"):
                cls.defines_reduce = True
        elif parent is None:
            self.a.module_functions[info.name] = info
        if parent is not None:
            parent.nested.append(info)
            self.a.nested_functions.append(info)
        self.a.functions.append(info)
        self.func_stack.append(info)
        self.class_stack.append(None)  # a def's body is not a class body

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.func_stack.pop()
        self.class_stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self.top is not None:
            self.a.tops[id(node)] = self.top
        self.a.lambdas.append((node, self.func, self.stmt_stack[-1] if self.stmt_stack else None))
        if self.func is not None:
            self.func.lambdas.append(node)

    def visit_If(self, node: cst.If) -> None:
        if self.func is not None:
            self.func.tests.append(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self.func is not None:
            self.func.tests.append(node.test)

    def visit_Yield(self, node: cst.Yield) -> None:
        if self.func is not None:
            self.func.is_generator = True

    def visit_Global(self, node: cst.Global) -> None:
        if self.func is not None:
            self.func.has_global = True

    # -- calls
    def visit_Call(self, node: cst.Call) -> None:
        fn = self.func
        site = CallSite(
            node=node,
            qname=self.a.qualify(node.func),
            func=fn,
            stmt=self.stmt_stack[-1] if self.stmt_stack else node,
            top=self.top,
        )
        self.a.calls.append(site)
        if site.qname == "os.getpid":
            if fn is not None:
                fn.getpid = True
        if fn is None:
            return
        fn.calls.append(site)
        f = node.func
        if isinstance(f, cst.Name):
            fn.name_calls.add(f.value)
        elif isinstance(f, cst.Attribute):
            if fn.self_name and isinstance(f.value, cst.Name) and f.value.value == fn.self_name:
                fn.self_calls.add(f.attr.value)
            elif (
                f.attr.value == "__init__"
                and isinstance(f.value, cst.Call)
                and isinstance(f.value.func, cst.Name)
                and f.value.func.value == "super"
            ):
                fn.super_init = True
            elif f.attr.value == "__init__" and isinstance(f.value, cst.Name):
                fn.explicit_base_inits.add(f.value.value)
            if f.attr.value in ("close", "release"):
                recv = f.value
                if isinstance(recv, cst.Name):
                    fn.closed.add(recv.value)
                elif fn.self_name and self_attr(recv, fn.self_name):
                    fn.closed.add("self." + self_attr(recv, fn.self_name))
            if fn.self_name and self_attr(f.value, fn.self_name) and f.attr.value in CONTAINER_METHODS:
                for arg in node.args:
                    fn.self_assigns.append(
                        SelfAssign(self_attr(f.value, fn.self_name), arg.value, site.stmt, "container")
                    )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        fn = self.func
        if fn is not None and fn.self_name and isinstance(node.value, cst.Name) and node.value.value == fn.self_name:
            fn.self_reads.add(node.attr.value)

    # -- assignments
    def _target(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], stmt, kind="assign"):
        fn = self.func
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._target(el.value, None, stmt, kind)
            return
        if isinstance(target, cst.Attribute) and kind == "assign":
            self.a.attr_targets.append(target)
            if isinstance(target.value, cst.Name) and value is not None:
                self.a.attr_stores.append(AttrStore(fn, target.value.value, target.attr.value, value, stmt))
        if fn is None:
            if isinstance(target, cst.Name) and value is not None:
                self.a.module_assigns.setdefault(target.value, []).append(value)
            return
        if isinstance(target, cst.Name):
            if value is not None:
                fn.local_assigns.setdefault(target.value, []).append(value)
            return
        if fn.self_name is None:
            return
        attr = self_attr(target, fn.self_name)
        if attr is not None:
            fn.self_assigns.append(SelfAssign(attr, value, stmt, kind))
            return
        if isinstance(target, cst.Subscript):
            attr = self_attr(target.value, fn.self_name)
            if attr is not None:
                fn.self_assigns.append(SelfAssign(attr, value, stmt, "container"))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._target(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node.value, node, "container")

    def visit_Del(self, node: cst.Del) -> None:
        fn = self.func
        if fn is None or fn.self_name is None:
            return
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            attr = self_attr(t, fn.self_name)
            if attr:
                fn.self_assigns.append(SelfAssign(attr, None, node, "del"))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        fn = self.func
        if fn is not None and node.asname is not None and isinstance(node.asname.name, cst.Name):
            fn.with_names.add(node.asname.name.value)
            fn.local_assigns.setdefault(node.asname.name.value, []).append(node.item)


_FIELDS: Dict[type, Tuple[str, ...]] = {}  # node type -> its dataclass field names


class OwnScope(cst.CSTVisitor):
    """A visitor of one function's own code: nested functions, classes and lambdas are not entered
    (visit the function node itself, ``own``)."""

    def __init__(self, own: Optional[cst.CSTNode]) -> None:
        self.own = own

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.own

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


class _Returns(OwnScope):
    def __init__(self, own: cst.CSTNode) -> None:
        super().__init__(own)
        self.values: List[cst.BaseExpression] = []

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)


def returned_values(fn: "FuncInfo") -> List[cst.BaseExpression]:
    """The values of ``fn``'s own ``return`` statements (not those of functions nested in it),
    memoised on ``fn``."""
    got = fn.__dict__.get("_returned_values")
    if got is None:
        v = _Returns(fn.node)
        fn.node.visit(v)
        got = fn.__dict__["_returned_values"] = v.values
    return got


def push_children(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
    """Push the child nodes of ``n`` onto ``stack`` (a depth-first walk without libcst's visitor:
    its dispatch costs more than the walk)."""
    t = type(n)
    names = _FIELDS.get(t)
    if names is None:
        import dataclasses

        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    for name in names:
        v = getattr(n, name)
        if isinstance(v, (tuple, list)):
            stack.extend(c for c in v if isinstance(c, cst.CSTNode))
        elif isinstance(v, cst.CSTNode):
            stack.append(v)


def _per_class(method: Callable[["Analysis", ClassInfo], List[Any]]) -> Callable[["Analysis", ClassInfo], List[Any]]:
    """Answer once per class and analysis (the rules ask for a dataset's parent side, hooks and
    library bases again and again; the index behind them is not free); callers get a copy."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: "Analysis", cls: ClassInfo) -> List[Any]:
        key = (name, id(cls))
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = method(self, cls)
        return list(got)

    return wrapper


CONTAINER_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"})


class Analysis:
    """Everything the rules need to know about one module, computed once."""

    def __init__(
        self, module: cst.Module, knowledge: Knowledge, path: str = "<string>", index: Optional["ProjectIndex"] = None
    ) -> None:
        self.module = module
        self.knowledge = knowledge
        self.path = path
        self.index = index  # the project's modules (index.py); None: this file alone
        self.is_package_main = path.replace("\\", "/").rsplit("/", 1)[-1] == "__main__.py"
        # the code runs in a __main__ without a file: a notebook, a jupytext notebook (engine.analyse)
        self.interactive_main = False
        # the module is a file reduced to what findings can involve (slicing.py; engine.check_source):
        # a rule that plans over every top-level statement (FRK401) only detects here, and is run
        # again on the whole file when it finds something
        self.reduced = False
        self.module_body_set = _IdSet(module.body)
        self.aliases: Dict[str, str] = {}
        self.module_aliases: Set[str] = set()
        self.star_imports: List[str] = []
        self.classes: List[ClassInfo] = []
        self.module_classes: Dict[str, ClassInfo] = {}
        self.functions: List[FuncInfo] = []
        self.module_functions: Dict[str, FuncInfo] = {}
        self.nested_functions: List[FuncInfo] = []
        self.calls: List[CallSite] = []
        self.lambdas: List[Tuple[cst.Lambda, Optional[FuncInfo], Optional[cst.CSTNode]]] = []
        self.module_assigns: Dict[str, List[cst.BaseExpression]] = {}
        self.attr_stores: List["AttrStore"] = []  # `name.attr = value` (loader.collate_fn = fn, ...)
        self.attr_targets: List[cst.Attribute] = []  # every `<expr>.attr = ...` / `: T = ...` target
        # id of a lambda, def or class -> its top-level statement (a report's position is looked up there)
        self.tops: Dict[int, cst.CSTNode] = {}
        self._memo: Dict[Tuple[str, Any], Any] = {}  # per-class answers the rules ask again and again
        # imports are collected in the same walk; qualify() needs them, so walk imports first
        self._collect_imports()
        _Indexer(self).walk(module)
        for c in self.classes:
            c.base_qnames = [self.qualify(b) for b in c.bases]

    def release(self) -> None:
        """Break the reference cycles of the per-file records (a function's call sites point back
        at it, a class's methods at the class, a memoised answer at this analysis), so that the
        libcst tree is freed by reference counting when the analysis is dropped instead of waiting
        for the cyclic collector to traverse all of it. ``engine.check_source`` calls it once the
        findings are located; the analysis is unusable afterwards."""
        records: List[Any] = [*self.functions, *self.nested_functions, *self.classes, *self.calls]
        for c in self.classes:
            records.extend(c.methods.values())
        for r in records:
            d = getattr(r, "__dict__", None)
            if d is not None:
                d.clear()
        self._memo.clear()
        self.__dict__.clear()

    def _collect_imports(self) -> None:
        # Imports anywhere in the file count (local imports inside functions included); a cheap
        # pre-pass over statements so that call sites can be resolved during the main walk.
        _ImportCollector(self).collect(self.module.body)

    # -- names
    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        d = dotted(node)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return d
        return f"{target}.{rest}" if rest else target

    def is_module_alias(self, name: str) -> bool:
        return name in self.module_aliases

    # -- classes
    def class_named(self, name: str, near: Optional[ClassInfo] = None) -> Optional[ClassInfo]:
        if name in self.module_classes:
            return self.module_classes[name]
        for c in self.classes:
            if c.name == name:
                return c
        return None

    def local_base(self, base: cst.BaseExpression) -> Optional[ClassInfo]:
        if isinstance(base, cst.Name) and base.value not in self.aliases:
            return self.class_named(base.value)
        return None

    def mro(self, cls: ClassInfo) -> List[ClassInfo]:
        """The class and its bases defined in this file, depth first in base order (each once).
        Iterative: a recursive local function is a reference cycle holding the analysis, and with it
        the whole libcst tree, until the cyclic collector finds it."""
        out: List[ClassInfo] = []
        seen: Set[int] = set()
        stack = [cls]
        while stack:
            c = stack.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            out.append(c)
            local = [lb for lb in (self.local_base(b) for b in c.bases) if lb is not None]
            stack.extend(reversed(local))
        return out

    def resolve_method(self, cls: ClassInfo, name: str, after: Optional[ClassInfo] = None) -> Optional[FuncInfo]:
        chain = self.mro(cls)
        if after is not None:
            try:
                chain = chain[chain.index(after) + 1 :]
            except ValueError:
                chain = []
        for c in chain:
            if name in c.methods:
                return c.methods[name]
        return None

    def annotated_class_param(self, cls: ClassInfo, base: cst.BaseExpression) -> Optional[str]:
        """For a class defined inside a function whose base is a parameter of an enclosing function
        annotated ``Type[X]`` / ``type[X]`` (``def with_index(DatasetClass: Type[Dataset])``), the
        qualified ``X``: the class derives from some ``X``."""
        if not isinstance(base, cst.Name) or cls.in_function is None:
            return None
        got = self.param_annotation(cls.in_function, base.value)
        ann = got[1] if got is not None else None
        if isinstance(ann, cst.SimpleString):  # a quoted annotation: "type[Dataset]"
            ann = parsed_annotation(ann)
        if (
            isinstance(ann, cst.Subscript)
            and (dotted(ann.value) or "").rsplit(".", 1)[-1] in ("Type", "type")
            and len(ann.slice) == 1
            and isinstance(ann.slice[0].slice, cst.Index)
        ):
            return self.qualify(ann.slice[0].slice.value)
        return None

    @staticmethod
    def param_annotation(scope: Optional[FuncInfo], name: str) -> Optional[Tuple[FuncInfo, Optional[cst.BaseExpression]]]:
        """(the function, ``scope`` or one around it, whose parameter ``name`` is; that parameter's
        annotation, or None), or None when no enclosing function has such a parameter."""
        f = scope
        while f is not None:
            ps = f.node.params
            for p in (*ps.posonly_params, *ps.params, *ps.kwonly_params):
                if p.name.value == name:
                    return f, (p.annotation.annotation if p.annotation is not None else None)
            f = f.parent
        return None

    def _is_dataset_base_name(self, qname: Optional[str]) -> bool:
        if not qname:
            return False
        k = self.knowledge
        if qname in k.dataset_bases:
            return True
        if k.not_a_dataset(qname):  # xarray.Dataset, datasets.Dataset, tf.data.Dataset: by import, not name
            return False
        last = qname.rsplit(".", 1)[-1]
        if last in k.dataset_bases:  # a simple name configured by the user
            return True
        return any(last.endswith(s) for s in k.dataset_base_suffixes)

    def is_loader_name(self, qname: Optional[str]) -> bool:
        if not qname:
            return False
        k = self.knowledge
        if k.not_a_loader(qname):
            return False
        if qname in k.loaders or qname.rsplit(".", 1)[-1] in k.loaders:
            return True
        last = qname.rsplit(".", 1)[-1]
        if any(last.endswith(s) for s in k.loader_suffixes):
            return True
        c = self.module_classes.get(qname)
        return c is not None and c in self.loader_classes

    @cached_property
    def loader_classes(self) -> List[ClassInfo]:
        out: List[ClassInfo] = []
        changed = True
        while changed:
            changed = False
            for c in self.classes:
                if c in out:
                    continue
                for b, q in zip(c.bases, c.base_qnames):
                    lb = self.local_base(b)
                    if (lb is not None and lb in out) or (lb is None and q and self._loader_qname(q)):
                        out.append(c)
                        changed = True
                        break
        return out

    def _loader_qname(self, q: str) -> bool:
        k = self.knowledge
        if k.not_a_loader(q):
            return False
        last = q.rsplit(".", 1)[-1]
        return q in k.loaders or any(last.endswith(s) for s in k.loader_suffixes)

    @cached_property
    def dataset_classes(self) -> List[ClassInfo]:
        """Dataset-like classes: by base chain, or stored by a dataset, or passed to a DataLoader."""
        return self._datasets[0]

    @cached_property
    def kept_by(self) -> Dict[int, str]:
        """id of a class that is dataset-like only because a dataset keeps its objects -> why."""
        return self._datasets[1]

    @cached_property
    def kept_in(self) -> Dict[int, List[Tuple[ClassInfo, str]]]:
        """id of a class in ``kept_by`` because a dataset of this module keeps its objects -> (that
        dataset, the attribute it keeps them in), each keeper."""
        return self._datasets[2]

    @cached_property
    def fed_by(self) -> Dict[int, str]:
        """id of a class that is dataset-like because a DataLoader in another module of the project
        is given its objects -> where (`` (given to a DataLoader in Datastream.data_loader,
        datastream/datastream.py:175)``); filled by ``dataset_classes``."""
        return {}

    @cached_property
    def _datasets(self) -> Tuple[List[ClassInfo], Dict[int, str], Dict[int, List[Tuple[ClassInfo, str]]]]:
        out: List[ClassInfo] = []
        ids: Set[int] = set()
        kept_by: Dict[int, str] = {}
        kept_in: Dict[int, List[Tuple[ClassInfo, str]]] = {}
        fed_by = self.fed_by

        def add(c: ClassInfo) -> None:
            if id(c) not in ids:
                ids.add(id(c))
                out.append(c)

        changed = True
        while changed:
            changed = False
            for c in self.classes:
                if id(c) in ids:
                    continue
                for b, q in zip(c.bases, c.base_qnames):
                    lb = self.local_base(b)
                    if lb is not None:
                        if id(lb) in ids:
                            add(c)
                            changed = True
                            break
                    elif (
                        self._is_dataset_base_name(q)
                        or self.project_dataset_base(q)
                        or self._is_dataset_base_name(self.annotated_class_param(c, b))
                    ):
                        add(c)
                        changed = True
                        break
        # classes with __getitem__/__iter__ that a dataset stores or that are given to a DataLoader
        itemish = self.itemish
        changed = True
        while changed:
            changed = False
            for c in list(out):
                for fn in self.class_functions(c):
                    for sa in fn.self_assigns:
                        for v in _stored_values(sa.value):  # ShardReader(p), [ShardReader(p) for p in ps]
                            if isinstance(v, cst.Call) and isinstance(v.func, cst.Name):
                                t = self.module_classes.get(v.func.value)
                                if t is not None and id(t) in kept_in and not any(
                                    k is c and attr == sa.attr for k, attr in kept_in[id(t)]
                                ):
                                    kept_in[id(t)].append((c, sa.attr))
                                if t is not None and id(t) not in ids and itemish(t):
                                    add(t)
                                    kept_by[id(t)] = f"dataset {c.name} keeps its objects"
                                    kept_in[id(t)] = [(c, sa.attr)]
                                    changed = True
            for lc in self.loader_calls:
                t = lc.dataset_class
                if t is not None and id(t) not in ids and itemish(t):
                    add(t)
                    changed = True
            if self.index is not None:  # given to a DataLoader in another module of the project
                for c in self.classes:
                    if id(c) not in ids and c.in_function is None and itemish(c):
                        via = self.project_loader_feed(c)
                        if via:
                            add(c)
                            fed_by[id(c)] = via
                            changed = True
            for c in list(out):
                for t in self.registry_classes(c):
                    if id(t) not in ids and itemish(t):
                        add(t)
                        kept_by[id(t)] = f"dataset {c.name} builds its objects from a module-level registry and keeps them"
                        changed = True
        if self.index is not None:  # a handle holder whose objects a dataset in another module keeps
            for c in self.classes:
                if id(c) not in ids:
                    via = self.project_keeper(c)
                    if via:
                        add(c)
                        kept_by[id(c)] = via
                        keeper = self._same_file_keeper(c)
                        if keeper is not None:
                            kept_in[id(c)] = [keeper]
        return out, kept_by, kept_in

    def itemish(self, cls: ClassInfo) -> bool:
        """The class (or a same-file base) has ``__getitem__`` or ``__iter__``: what a DataLoader
        takes as a dataset."""
        return any(self.resolve_method(cls, n) for n in ("__getitem__", "__iter__"))

    def project_returned_handle(self, value: Optional[cst.BaseExpression]) -> Optional[Tuple[str, str, str, int]]:
        """``value`` is a call of a function (or static/class method) defined in another module of
        the project that returns a handle (``ProjectIndex.returned_handle``): (factory, function,
        path, line)."""
        if self.index is None or not isinstance(value, cst.Call) or self_attr(value.func) is not None:
            return None
        q = self.absolute(self.qualify(value.func))
        if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins") or q.rpartition(".")[0] == self.module_name[0]:
            return None
        key = ("project_returned_handle", q)
        if key not in self._memo:
            try:
                self._memo[key] = self.index.returned_handle(q)
            except RecursionError:
                self._memo[key] = None
        return self._memo[key]

    def project_loader_feed(self, cls: ClassInfo) -> str:
        """Where a DataLoader with workers in another module of the project is given objects of
        ``cls`` (``ProjectIndex.loader_feed``), as a message says it; "" if nowhere."""
        q = self.class_qname(cls)
        if q is None or self.index is None:
            return ""
        try:
            got = self.index.loader_feed(q)
        except RecursionError:
            return ""
        if got is None:
            return ""
        return f" (given to a DataLoader in {got[0]}, {got[1]}:{got[2]})"

    def project_keeper(self, cls: ClassInfo) -> str:
        """For a class whose ``__init__`` keeps a handle: which dataset of the project keeps its
        objects on the parent side (``ProjectIndex.keepers``), as FRK101's message says it; "" if none."""
        q = self.class_qname(cls)
        if q is None or (self.project_class_qname(cls) is None and not self._keeps_calls(cls)):
            return ""  # what its own methods keep on self holds no call: no handle (nor the summary asked)
        if self.index.holder_search_too_big(q) or not self.index.may_be_kept(q):
            return ""  # not searched (holder_keepers); no text of its package keeps its objects: no dataset does
        if not self.index.holds(q):
            return ""  # keeps neither a handle (FRK101) nor an RNG object (FRK601) from __init__
        found = self.index.holder_keepers(q)
        if found is None:
            return ""
        (ds, attr, path, line, via), sub = found
        if sub:
            return f"dataset {ds} keeps objects of its subclass {sub} in self.{attr}, {path}:{line}"
        if via:
            return f"dataset {ds} keeps {via} objects, which keep its objects, in self.{attr}, {path}:{line}"
        return f"dataset {ds} keeps its objects in self.{attr}, {path}:{line}"

    def _same_file_keeper(self, cls: ClassInfo) -> Optional[Tuple[ClassInfo, str]]:
        """The dataset ``project_keeper`` found, and its attribute, when it is a class of this very
        file that keeps the objects itself (no class in between)."""
        got = self.index.keepers(self.class_qname(cls))
        if got is None or got[4]:
            return None
        ds, attr, path, _, _ = got
        keeper = self.module_classes.get(ds)
        same = os.path.realpath(os.path.join(self.index.root, path)) == os.path.realpath(self.path)
        return (keeper, attr) if keeper is not None and same else None

    def _keeps_calls(self, cls: ClassInfo) -> bool:
        """A method of the class or its same-file bases stores on ``self`` a value holding a call
        (the index's "factory"/"call" kinds need one)."""
        for c in self.mro(cls):
            for fn in c.methods.values():
                for sa in fn.self_assigns:
                    stack: List[cst.CSTNode] = [sa.value] if sa.value is not None else []
                    while stack:
                        n = stack.pop()
                        if isinstance(n, cst.Call):
                            return True
                        push_children(n, stack)
        return False

    def registry_classes(self, cls: ClassInfo) -> List[ClassInfo]:
        """Classes of this module listed in a module-level registry (a dict / list / tuple literal,
        nested, ``dict(func=Reader)`` included: ``DATA_TYPES = {"hdf5": dict(func=H5FileWrapper)}``)
        that the parent side of ``cls`` reads: it builds its readers from the registry and keeps them."""
        registries = self._registries
        if not registries:
            return []
        names: Set[str] = set()
        for fn in self.closure(cls, [self.resolve_method(cls, n) for n in PARENT_ROOTS]):
            if fn.cls is None and fn.parent is None:
                continue  # module-level helpers: only the class's own methods
            names |= {n for n in _names_in(fn.node.body) if n in registries and n not in fn.params}
        out: List[ClassInfo] = []
        for name in sorted(names):
            for t in registries[name]:
                if t is not cls and t not in out:
                    out.append(t)
        return out

    @cached_property
    def _registries(self) -> Dict[str, List[ClassInfo]]:
        """Module-level names bound to a registry literal holding classes of this module."""
        out: Dict[str, List[ClassInfo]] = {}
        for name, values in self.module_assigns.items():
            for value in values:
                if not isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.Call)):
                    continue
                if isinstance(value, cst.Call) and not (isinstance(value.func, cst.Name) and value.func.value == "dict"):
                    continue
                for n in _registry_names(value):
                    t = self.module_classes.get(n)
                    if t is not None and n not in self.aliases and t not in out.get(name, []):
                        out.setdefault(name, []).append(t)
        return out

    # -- other modules of the project (through the index)
    @cached_property
    def module_name(self) -> Tuple[str, bool]:
        """(this file's module name, is it a package ``__init__``), from the index."""
        if self.index is None:
            return "", False
        return self.index.module_for(self.path)

    def absolute(self, qname: Optional[str]) -> Optional[str]:
        """A qualified name as ``qualify`` gives it (``.base.DetectionBase``) made absolute."""
        if not qname or self.index is None:
            return qname
        from flake8_forksafe.index import absolute_module

        mod, is_pkg = self.module_name
        if qname.startswith("."):
            level = len(qname) - len(qname.lstrip("."))
            part, _, name = qname[level:].rpartition(".")
            base = absolute_module(mod, is_pkg, level, part or None)
            return f"{base}.{name}" if base else name
        head = qname.split(".", 1)[0]
        if head not in self.aliases and (head in self.module_classes or head in self.module_assigns):
            return f"{mod}.{qname}" if mod else qname
        return qname

    def project_dataset_base(self, qname: Optional[str]) -> bool:
        """A base named here and defined in another module of the project (or re-exported by one)
        that derives from a dataset base there."""
        if self.index is None or not qname:
            return False
        q = self.absolute(qname)
        ref = self.index.resolve_class(q)
        if ref is None:
            c = self.index.canonical(q)
            return c != q and self._is_dataset_base_name(c)
        return self.index.derives_from(ref.qname, self._is_dataset_base_name)

    def class_qname(self, cls: ClassInfo) -> Optional[str]:
        if self.index is None or self.module_classes.get(cls.name) is not cls:
            return None
        mod = self.module_name[0]
        return f"{mod}.{cls.name}" if mod else cls.name

    def outside_bases(self, cls: ClassInfo) -> List[str]:
        """The bases of ``cls`` and of its same-file bases that are not defined in this file, made
        absolute (what the index resolves)."""
        out: List[str] = []
        for c in self.mro(cls):
            for b, q in zip(c.bases, c.base_qnames):
                if q and self.local_base(b) is None:
                    q = self.absolute(q)
                    if q not in out:
                        out.append(q)
        return out

    def project_class_qname(self, cls: ClassInfo) -> Optional[str]:
        """``class_qname`` for a class with a base (through its same-file bases) defined in another
        module of the project, else None: the questions about what such bases add (their methods,
        hooks, what their ``__init__`` keeps) have no answer for another class, and asking them would
        summarise this very file for the index (a quarter of the index's time on dataset code)."""
        q = self.class_qname(cls)
        if q is None:
            return None
        key = ("project_class", id(cls))
        got = self._memo.get(key)
        if got is None:
            try:
                got = self._memo[key] = any(self.index.resolve_class(b) is not None for b in self.outside_bases(cls))
            except RecursionError:
                got = self._memo[key] = False
        return q if got else None

    def base_method(self, cls: ClassInfo, name: str) -> Optional["MethodRef"]:
        """Where ``cls`` gets method ``name`` from when a base in another module defines it
        (path, line, qualified class); None when it is defined in this file or nowhere known."""
        if self.resolve_method(cls, name) is not None:
            return None
        q = self.project_class_qname(cls)
        if q is None:
            return None
        ref = self.index.resolve_method(q, name)
        if ref is None or ref.cls == q:
            return None
        return ref

    def project_init_handles(self, cls: ClassInfo) -> List["AttrFact"]:
        """Handles that methods in other modules of the project, reached from this class's
        ``__init__``, open and keep on ``self`` (``self.env = lmdb.open(...)`` in a base class's
        ``_load()``), unless that module reports them itself (its class is a dataset there and
        its own ``__init__`` reaches the method)."""
        return self.project_init_kept(cls, ("factory",))

    def project_init_kept(self, cls: ClassInfo, kinds: Sequence[str]) -> List["AttrFact"]:
        """Values of the index's ``Assign.kind`` in ``kinds`` ("factory", "generator", "rng", "cuda")
        kept on ``self`` by methods in other modules of the project that this class's ``__init__``
        reaches, unless that module reports them itself."""
        q = self.project_class_qname(cls)
        if q is None:
            return []
        me = self.module_name[0]
        out = []
        for fact in self.index.init_assigns(q):
            if fact.kind not in kinds or fact.where.cls.rpartition(".")[0] == me:
                continue
            owner = fact.where.cls
            if self.index.derives_from(owner, self._is_dataset_base_name) and any(
                r == fact.where for r in self.index.init_reach(owner)
            ):
                continue
            out.append(fact)
        return out

    def project_call_cuda(self, site: "CallSite") -> Optional[Tuple[str, str, str, int]]:
        """A call of a function defined in another module of the project that uses CUDA, itself or
        through the project functions it calls (``utils.move_to_cuda(x)``, whose body calls
        ``torch.cuda.current_device()``): (the CUDA call, that function, its path, line)."""
        if self.index is None or not site.qname or isinstance(site.node.func, cst.Attribute) and self_attr(site.node.func.value) is not None:
            return None
        q = self.absolute(site.qname)
        if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins"):
            return None
        mod = self.module_name[0]
        if q.rpartition(".")[0] == mod:
            return None  # same module: the closure follows it
        key = ("project_call_cuda", q)
        if key not in self._memo:
            try:
                self._memo[key] = self.index.function_cuda(q)
            except RecursionError:
                self._memo[key] = None
        return self._memo[key]

    def called_helper(self, call: cst.Call, fn: FuncInfo) -> Optional[FuncInfo]:
        """The same-module function (``open_env(p)``) or method of ``fn``'s class (``self._open()``)
        that ``call`` in ``fn`` names, when it is not ``fn`` itself nor a generator; else None."""
        target: Optional[FuncInfo] = None
        f = call.func
        if isinstance(f, cst.Name) and f.value not in self.aliases:
            target = self.function_named(f.value, fn)
        elif isinstance(f, cst.Attribute) and fn.self_name and self_attr(f, fn.self_name):
            cls = self.owner_class(fn)
            if cls is not None:
                target = self.resolve_method(cls, f.attr.value)
        if target is None or target is fn or target.is_generator:
            return None
        return target

    def project_function_returns(self, call: cst.Call, kind: str) -> Optional[Tuple[str, str]]:
        """``call`` calls a function of another module of the project whose return value is of the
        index's ``kind`` ("rng": ``get_random_range(rng, seed)`` returning the ``random.Random()`` it
        makes): (its detail, e.g. the constructor, or ""; "name() (path:line)" of that function)."""
        if self.index is None or isinstance(call.func, cst.Attribute) and self_attr(call.func.value) is not None:
            return None
        q = self.absolute(self.qualify(call.func) or "")
        if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins", "random"):
            return None
        if q.rpartition(".")[0] == self.module_name[0]:
            return None  # same module: ``called_helper`` follows it
        key = ("project_function_returns", q, kind)
        if key not in self._memo:
            got = None
            try:
                k, detail = self.index.returns(q)
                if k == kind:
                    fn = self.index.callable_at(q)
                    s = self.index.summary(self.index.canonical(q).rpartition(".")[0])
                    if fn is not None and fn[1] is None and s is not None:
                        got = (detail, f"{fn[0].name}() ({s.path}:{fn[0].line})")
            except RecursionError:
                got = None
            self._memo[key] = got
        return self._memo[key]

    def project_loader_attrs(self, cls: ClassInfo) -> Dict[str, Tuple[str, str, int]]:
        """``self.X`` attributes that a base class of ``cls`` in another module of the project passes
        to a DataLoader as ``collate_fn``/``worker_init_fn`` (``num_workers`` not literally 0):
        attribute -> (``Base.method``, path, line)."""
        q = self.project_class_qname(cls)
        if q is None:
            return {}
        me = self.module_name[0]
        out: Dict[str, Tuple[str, str, int]] = {}
        chain, _ = self.index.base_chain(q)
        for ref in chain[1:]:
            if ref.qname.rpartition(".")[0] == me:
                continue  # a same-file base: the file's own analysis sees it
            for name, m in ref.summary.methods.items():
                for entry in m.loader_attrs:
                    attr, _, line = entry.rpartition(":")
                    out.setdefault(attr, (f"{ref.name}.{name}", ref.path, int(line)))
        return out

    def class_functions(self, cls: ClassInfo) -> List[FuncInfo]:
        """Methods of the class and its same-file bases (MRO order, overridden ones skipped)."""
        seen: Set[str] = set()
        out = []
        for c in self.mro(cls):
            for name, fn in c.methods.items():
                if name not in seen:
                    seen.add(name)
                    out.append(fn)
        return out

    # -- reachability
    def closure(self, cls: Optional[ClassInfo], roots: Iterable[FuncInfo]) -> List[FuncInfo]:
        """Functions reachable from roots: self.method() calls and property reads resolved in cls's
        MRO, super().__init__ / Base.__init__(self), same-module helper functions, and functions
        defined inside them."""
        out: List[FuncInfo] = []
        seen: Set[int] = set()
        work = [r for r in roots if r is not None]
        while work:
            fn = work.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            out.append(fn)
            if cls is not None and fn.self_name:
                for name in fn.self_calls | (fn.self_reads & self._all_properties(cls)):
                    t = self.resolve_method(cls, name)
                    if t is not None:
                        work.append(t)
                if fn.super_init and fn.cls is not None:
                    t = self.resolve_method(cls, fn.name, after=fn.cls)
                    if t is not None:
                        work.append(t)
                for base in fn.explicit_base_inits:
                    bc = self.module_classes.get(base)
                    if bc is not None:
                        t = self.resolve_method(bc, "__init__")
                        if t is not None:
                            work.append(t)
            for name in fn.name_calls:
                t = self.module_functions.get(name)
                if t is not None:
                    work.append(t)
                for nested in fn.nested:
                    if nested.name == name:
                        work.append(nested)
        return out

    def _all_properties(self, cls: ClassInfo) -> Set[str]:
        props: Set[str] = set()
        for c in self.mro(cls):
            props |= c.properties
        return props

    @_per_class
    def library_bases(self, cls: ClassInfo) -> List[str]:
        """The bases of ``cls`` outside this file (through same-file bases), as qualified names; with
        the project index, the bases outside the project reached through project base classes too."""
        out: List[str] = []
        for c in self.mro(cls):
            for b, q in zip(c.bases, c.base_qnames):
                if q and self.local_base(b) is None and q not in out:
                    out.append(q)
        if self.class_qname(cls) is None:
            return out
        me = self.project_class_qname(cls)
        # a class without project bases: the outside names its outside bases canonically have
        outs = self.index.base_chain(me)[1] if me is not None else [
            o for q in self.outside_bases(cls) for o in self.index.base_chain(q)[1]
        ]
        for o in outs:
            if o not in out:
                out.append(o)
        return out

    @_per_class
    def init_hooks(self, cls: ClassInfo) -> List[str]:
        """Methods of ``cls`` that a base ``__init__`` outside this file calls on self: the hooks of a
        library model (PyG ``Dataset.__init__`` -> ``process()``), or what a project base class's
        ``__init__`` in another module reaches (``self._load()``)."""
        k = self.knowledge
        names: List[str] = []
        for q in self.library_bases(cls):
            names += [h for h in k.library_hooks(q) if h not in names]
        me = self.project_class_qname(cls)
        if me is not None:
            names += [r.name for r in self.index.init_reach(me) if r.cls == me and r.name not in names]
        return names

    def transient_args(self, qname: Optional[str], cls: Optional[ClassInfo] = None) -> FrozenSet[str]:
        """Constructor arguments a modelled library class uses without keeping them (torchvision
        ``ImageFolder(is_valid_file=...)``): of the class ``qname`` names, or of ``cls``'s library bases."""
        k = self.knowledge
        out: Set[str] = set(k.library_transient(qname)) if qname else set()
        if cls is not None:
            for q in self.library_bases(cls):
                out |= k.library_transient(q)
        return frozenset(out)

    @_per_class
    def parent_side(self, cls: ClassInfo) -> List[FuncInfo]:
        names = PARENT_ROOTS + tuple(self.init_hooks(cls))
        roots = [self.resolve_method(cls, n) for n in names]
        return self.closure(cls, [r for r in roots if r is not None])

    @_per_class
    def worker_side(self, cls: ClassInfo) -> List[FuncInfo]:
        names = WORKER_ROOTS
        bases = self.library_bases(cls)
        if any((q or "").endswith("DataPipe") for c in self.mro(cls) for q in c.base_qnames):
            bases = bases + ["torch.utils.data.IterDataPipe"]  # reset(), set_seed(): rules/libraries.toml
        for q in bases:  # PyG Dataset.__getitem__ -> self.get(idx)
            names = names + tuple(h for h in self.knowledge.library_worker_hooks(q) if h not in names)
        names = names + tuple(n for n in self.collate_methods(cls) if n not in names)
        if id(cls) in self.kept_by:  # not a dataset, kept by one: its workers may call any public method
            public = [f.name for f in self.class_functions(cls) if not f.name.startswith("_")]
            names = names + tuple(n for n in public if n not in names)
        roots = [self.resolve_method(cls, n) for n in names]
        return self.closure(cls, [r for r in roots if r is not None])

    def collate_methods(self, cls: ClassInfo) -> List[str]:
        """Methods of the dataset (and its same-file bases) that are its loader's ``collate_fn`` by
        convention (``rules/datasets.toml`` ``collate_method_words``: ``collater``, ``collate_fn``)."""
        words = self.knowledge.collate_method_words
        return [f.name for f in self.class_functions(cls) if any(w in f.name.lower() for w in words)]

    @cached_property
    def worker_functions(self) -> List[FuncInfo]:
        """Module-level functions given to a DataLoader as collate_fn / worker_init_fn, and what they call."""
        roots = []
        for lc in self.loader_calls:
            for kw in ("collate_fn", "worker_init_fn"):
                arg = keyword(lc.node, kw)
                if arg is not None and isinstance(arg.value, cst.Name):
                    fn = self.function_named(arg.value.value, lc.site.func)
                    if fn is not None:
                        roots.append(fn)
        return self.closure(None, roots)

    def function_named(self, name: str, scope: Optional[FuncInfo]) -> Optional[FuncInfo]:
        f = scope
        while f is not None:
            for n in f.nested:
                if n.name == name:
                    return n
            f = f.parent
        return self.module_functions.get(name)

    # -- values
    def local_values(self, name: str, scope: Optional[FuncInfo]) -> List[cst.BaseExpression]:
        f = scope
        while f is not None:
            if name in f.local_assigns:
                return f.local_assigns[name]
            if name in f.params:
                return []
            f = f.parent
        return self.module_assigns.get(name, [])

    def eval_int(self, node: Optional[cst.BaseExpression], scope: Optional[FuncInfo]) -> Optional[int]:
        v = int_value(node)
        if v is not None:
            return v
        if isinstance(node, cst.Name):
            vals = self.local_values(node.value, scope)
            if len(vals) == 1:
                return int_value(vals[0])
        return None

    @cached_property
    def loader_calls(self) -> List["LoaderCall"]:
        out = []
        for site in self.calls:
            if self.is_loader_name(site.qname):
                out.append(LoaderCall(self, site))
        return out

    @cached_property
    def all_loaders_zero(self) -> bool:
        """True when the module builds DataLoaders and every one of them has num_workers=0."""
        return bool(self.loader_calls) and all(lc.workers == "zero" for lc in self.loader_calls)

    @cached_property
    def statement_codes(self) -> List[str]:
        """The code of each top-level statement, its comment and blank lines before it included
        (FRK401's plan remembers statements by it; ``engine.locate`` counts lines with it)."""
        code_for = self.module.code_for_node
        return [code_for(s) for s in self.module.body]

    # -- the __main__ guard
    @cached_property
    def guarded_statements(self) -> Set[int]:
        return {id(s) for s in self.module.body if is_main_guard(s)}

    def is_guarded(self, top: Optional[cst.CSTNode]) -> bool:
        return top is not None and id(top) in self.guarded_statements

    @cached_property
    def torch_import_index(self) -> Optional[int]:
        """Index in module.body of the first top-level statement importing torch."""
        for i, stmt in enumerate(self.module.body):
            if imports_torch(stmt):
                return i
        return None

    def body_index(self, top: Optional[cst.CSTNode]) -> Optional[int]:
        for i, s in enumerate(self.module.body):
            if s is top:
                return i
        return None

    @cached_property
    def uses_cuda(self) -> bool:
        k = self.knowledge
        for site in self.calls:
            q = site.qname or ""
            if q.startswith("torch.cuda.") or site.last in k.cuda_methods:
                return True
            if self.is_cuda_value(site.node, None):
                return True
            for arg in site.node.args:
                if arg.keyword is not None and arg.keyword.value in k.device_keywords:
                    if self.is_cuda_value(arg.value, site.func):
                        return True
            if site.last in k.move_methods and site.node.args:
                if self.is_cuda_value(site.node.args[0].value, site.func):
                    return True
        return False

    def is_cuda_value(self, node: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0) -> bool:
        """A device expression that is (or may be, on a GPU machine) CUDA."""
        return self.cuda_value(node, scope, depth) is not None

    def cuda_value(
        self, node: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0
    ) -> Optional[Tuple[str, str, int]]:
        """Whether a device expression is (or may be, on a GPU machine) CUDA: None when it is not;
        ``("", "", 0)`` when this file says so; (name, path, line) when a module-level name of
        another module of the project does (``device=DEFAULT_DEVICE`` imported from a module that
        sets ``DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"``: the project index)."""
        here = ("", "", 0)
        if node is None or depth > 8:
            return None
        s = string_value(node)
        if s is not None:
            return here if s.startswith("cuda") else None
        if isinstance(node, cst.Integer):
            return here  # a bare device index: `.to(0)`, `device=0` mean cuda:0
        if isinstance(node, cst.FormattedString):  # f"cuda:{rank}"
            first = node.parts[0] if node.parts else None
            ok = isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda")
            return here if ok else None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):  # "cuda:" + str(rank)
            return self.cuda_value(node.left, scope, depth + 1)
        if isinstance(node, cst.Call):
            q = self.qualify(node.func)
            if q == "torch.device" and node.args:
                return self.cuda_value(node.args[0].value, scope, depth + 1)
            return here if q == "torch.cuda.current_device" else None
        if isinstance(node, cst.IfExp):
            return self.cuda_value(node.body, scope, depth + 1) or self.cuda_value(node.orelse, scope, depth + 1)
        if isinstance(node, cst.BooleanOperation):  # `device or "cuda"`
            return self.cuda_value(node.left, scope, depth + 1) or self.cuda_value(node.right, scope, depth + 1)
        if isinstance(node, cst.Name):
            values = self.local_values(node.value, scope)
            if not values:  # a parameter: its default value (`def __init__(self, device="cuda")`)
                values = [d for d in [param_default(scope, node.value)] if d is not None]
            for v in values:
                got = self.cuda_value(v, scope, depth + 1)
                if got is not None:
                    return got
            if not values and node.value in self.aliases:
                return self._imported_cuda_device(node)
            return None
        if isinstance(node, cst.Attribute) and scope is not None and scope.self_name:
            attr = self_attr(node, scope.self_name)
            cls = self.owner_class(scope)
            if attr and cls is not None:
                for fn in self.class_functions(cls):
                    for sa in fn.self_assigns:
                        if sa.attr == attr and sa.kind == "assign":
                            got = self.cuda_value(sa.value, fn, depth + 1)
                            if got is not None:
                                return got
                return here if self.stored_cuda_device(cls, attr, depth) else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value in self.aliases:
            return self._imported_cuda_device(node)  # `constants.DEFAULT_DEVICE` of an imported module
        return None

    def _imported_cuda_device(self, node: cst.BaseExpression) -> Optional[Tuple[str, str, int]]:
        """A name imported from another module of the project that is set there, at module level, to
        a value that may be a CUDA device (``ProjectIndex.module_device``)."""
        if self.index is None:
            return None
        q = self.absolute(self.qualify(node))
        if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins", "os"):
            return None
        try:
            got = self.index.module_device(q)
        except RecursionError:
            return None
        return (dotted(node) or q, got[0], got[1]) if got is not None else None

    def stored_cuda_device(self, cls: ClassInfo, attr: str, depth: int = 0) -> bool:
        """``self.attr`` holds a CUDA device stored by a method the class itself does not see through
        ``class_functions``: an overridden same-file base method (``Base.__init__`` setting
        ``self.device = "cuda"``, called through ``super().__init__()``), or a base class's method in
        another module of the project (the index)."""
        for c in self.mro(cls):
            for fn in c.methods.values():
                for sa in fn.self_assigns:
                    if sa.attr == attr and sa.kind == "assign" and self.is_cuda_value(sa.value, fn, depth + 1):
                        return True
        q = self.class_qname(cls)
        if q is None:
            return False
        try:
            return any(f.attr == attr and f.kind == "device" for f in self.index.init_assigns(q))
        except RecursionError:
            return False

    def owner_class(self, fn: Optional[FuncInfo]) -> Optional[ClassInfo]:
        while fn is not None:
            if fn.cls is not None:
                return fn.cls
            fn = fn.parent
        return None

    def is_module_object(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value in self.module_aliases


def _names_in(node: cst.CSTNode) -> Set[str]:
    """Names read anywhere in ``node``."""
    out: Set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)  # `x.attr`: the attribute's name is not a read of a name
            return False

    node.visit(V())
    return out


def _registry_names(value: cst.BaseExpression, depth: int = 0) -> List[str]:
    """Bare names held as values in a (nested) registry literal: dict values, list / tuple elements,
    ``dict(key=Name)`` arguments; keys and other expressions are not followed."""
    if depth > 4:
        return []
    if isinstance(value, cst.Name):
        return [value.value]
    out: List[str] = []
    if isinstance(value, cst.Dict):
        for el in value.elements:
            if isinstance(el, cst.DictElement):
                out += _registry_names(el.value, depth + 1)
    elif isinstance(value, (cst.List, cst.Tuple)):
        for el in value.elements:
            out += _registry_names(el.value, depth + 1)
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        for arg in value.args:
            if arg.keyword is not None:
                out += _registry_names(arg.value, depth + 1)
    return out


def _stored_values(value: Optional[cst.BaseExpression]) -> List[cst.BaseExpression]:
    """The value itself and, for a container display or comprehension, its element expressions."""
    if value is None:
        return []
    return [value] + (container_elements(value) or [])


class _IdSet:
    def __init__(self, items: Sequence[cst.CSTNode]) -> None:
        self.ids = {id(i) for i in items}

    def __contains__(self, item: cst.CSTNode) -> bool:
        return id(item) in self.ids


class _ImportCollector:
    """First pass: imports only (function and class bodies included), so qualify() works during
    the index walk. A walk over statement bodies, not a visitor: expressions cannot import."""

    def __init__(self, a: Analysis) -> None:
        self.ix = _Indexer(a)

    def collect(self, body: Sequence[cst.CSTNode]) -> None:
        for stmt in body:  # in source order: a later import of a name wins, as in Python
            if isinstance(stmt, cst.SimpleStatementLine):
                self._smalls(stmt.body)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                for suite in _bodies(stmt):
                    if isinstance(suite, cst.IndentedBlock):
                        self.collect(suite.body)
                    elif isinstance(suite, cst.SimpleStatementSuite):
                        self._smalls(suite.body)

    def _smalls(self, smalls: Sequence[cst.BaseSmallStatement]) -> None:
        for small in smalls:
            if isinstance(small, cst.Import):
                self.ix.visit_Import(small)
            elif isinstance(small, cst.ImportFrom):
                self.ix.visit_ImportFrom(small)


def _bodies(stmt: cst.BaseCompoundStatement) -> List[cst.BaseSuite]:
    body = getattr(stmt, "body", None)  # `match` has only cases
    out = [body] if body is not None else []
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:
        out.append(orelse.body)
        orelse = getattr(orelse, "orelse", None) if isinstance(orelse, cst.If) else None
    for h in getattr(stmt, "handlers", ()) or ():
        out.append(h.body)
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        out.append(final.body)
    for case in getattr(stmt, "cases", ()) or ():
        out.append(case.body)
    return out


def imports_torch(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            if any((dotted(a.name) or "").split(".")[0] == "torch" for a in small.names):
                return True
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            if (dotted(small.module) or "").split(".")[0] == "torch":
                return True
    return False


@dataclass(eq=False)
class LoaderCall:
    a: Analysis
    site: CallSite

    @property
    def node(self) -> cst.Call:
        return self.site.node

    def arg(self, name: str, index: Optional[int] = None) -> Optional[cst.BaseExpression]:
        kw = keyword(self.node, name)
        if kw is not None:
            return kw.value
        if index is not None:
            pos = positional(self.node)
            if len(pos) > index:
                return pos[index].value
        return None

    def given(self, name: str, index: Optional[int] = None) -> Optional[cst.BaseExpression]:
        """``arg``, or the value a ``**kwargs`` dict of the call carries for ``name`` (``kwarg_value``)."""
        node = self.arg(name, index)
        if node is None and has_star_kwargs(self.node):
            node = kwarg_value(self.a, self.node, name)
        return node

    @cached_property
    def workers(self) -> str:
        """"zero", "positive" or "unknown" for num_workers."""
        node = self.arg("num_workers", 5)
        if node is None:
            if has_star_kwargs(self.node):
                flowed = int_value(kwarg_value(self.a, self.node, "num_workers"))  # a literal only: the
                if flowed is not None:  # dict may be built in another method, where names mean other things
                    return "zero" if flowed == 0 else "positive"
            if has_star_kwargs(self.node) or any(a.star == "*" for a in self.node.args):
                return "unknown"
            # a subclass may pass num_workers itself; the plain DataLoader default is 0
            if self.site.qname and self.a.module_classes.get(self.site.qname) in self.a.loader_classes:
                return "unknown"
            return "zero"
        v = self.a.eval_int(node, self.site.func)
        if v is None:
            return "unknown"
        return "zero" if v == 0 else "positive"

    @cached_property
    def dataset_class(self) -> Optional[ClassInfo]:
        ds = self.arg("dataset", 0)
        cands: List[cst.BaseExpression] = [ds] if ds is not None else []
        if isinstance(ds, cst.Name):
            cands = list(self.a.local_values(ds.value, self.site.func))
        for c in cands:
            if isinstance(c, cst.Call) and isinstance(c.func, cst.Name):
                t = self.a.module_classes.get(c.func.value)
                if t is not None:
                    return t
        if isinstance(ds, cst.Name) and not cands:  # ``def split(dataset: PatchCamelyon): DataLoader(dataset)``
            got = self.a.param_annotation(self.site.func, ds.value)
            if got is not None and isinstance(got[1], cst.Name) and ds.value not in got[0].local_assigns:
                return self.a.module_classes.get(got[1].value)
        return None


def loaders_of(a: Analysis, cls: ClassInfo) -> List[LoaderCall]:
    """The module's DataLoader calls given ``cls`` or a same-file subclass of it."""
    return [lc for lc in a.loader_calls if lc.dataset_class is not None and cls in a.mro(lc.dataset_class)]


def no_worker_processes(a: Analysis, cls: ClassInfo) -> bool:
    """True when the dataset never reaches a worker process in this module: every DataLoader given
    it (or, when none names it, every DataLoader of the module, if there are any) has
    ``num_workers=0``."""
    mine = loaders_of(a, cls)
    if mine:
        return all(lc.workers == "zero" for lc in mine)
    return a.all_loaders_zero


def callable_target(
    a: Analysis, expr: Optional[cst.BaseExpression], scope: Optional[FuncInfo], depth: int = 0
) -> Tuple[Optional[Union[FuncInfo, cst.Lambda]], Optional[cst.Call]]:
    """What a callable argument (``collate_fn=``, ``worker_init_fn=``) runs, when it is in this module:
    a function named (nested or module-level), ``functools.partial(f, ...)`` of one, ``self.method``
    of the enclosing class, or a lambda. Returns (target, the ``partial`` call or None)."""
    if depth > 4:
        return None, None
    if isinstance(expr, cst.Lambda):
        return expr, None
    if isinstance(expr, cst.IfExp):  # `partial(f, ...) if seed is not None else None`
        for branch in (expr.body, expr.orelse):
            hit = callable_target(a, branch, scope, depth + 1)
            if hit[0] is not None:
                return hit
        return None, None
    if isinstance(expr, cst.Call) and a.qualify(expr.func) == "functools.partial" and expr.args:
        inner, _ = callable_target(a, expr.args[0].value, scope, depth + 1)
        return inner, expr
    if isinstance(expr, cst.Name):
        fn = a.function_named(expr.value, scope)
        if fn is not None:
            return fn, None
        vals = a.local_values(expr.value, scope)
        if len(vals) == 1 and vals[0] is not expr:
            return callable_target(a, vals[0], scope, depth + 1)
        return None, None
    if isinstance(expr, cst.Attribute) and scope is not None and scope.self_name:
        attr = self_attr(expr, scope.self_name)
        cls = a.owner_class(scope)
        if attr and cls is not None:
            return a.resolve_method(cls, attr), None
    return None, None


# --------------------------------------------------------------------------------------------------
# handles (FRK1xx) — shared by FRK101, FRK102, FRK103 and the per-process lazy fix


@dataclass(eq=False)
class KeptHandle:
    call: cst.Call  # the factory call
    factory: "object"  # knowledge.Factory
    direct: bool  # the kept value is the factory call itself (not derived, not in a container)
    container: bool
    # a handle a same-module helper returns (``self.env = self._open()``): ``call`` is the helper call
    # (what the fix rewrites), ``at`` the factory call inside the helper (where the finding points,
    # RULES.md "Where a finding points")
    at: Optional[cst.Call] = None
    # a handle a local function or lambda kept on the instance captures (``f = open(p); def load(i):
    # f.seek(i) ...; self.load = load``): "load()" / "a lambda" (no automatic fix)
    captured: str = ""
    # kept under a condition: ``self.f = h5py.File(p) if p else None``, ``self.f = f or open(p)``
    # (either branch may be the one that runs; no automatic fix)
    conditional: bool = False

    @property
    def site(self) -> cst.Call:
        """Where a finding about this handle points: the factory call."""
        return self.at if self.at is not None else self.call

    @property
    def helper(self) -> str:
        """The name of the helper that returns the handle (``_open``), or ""."""
        if self.at is None:
            return ""
        return (dotted(self.call.func) or "").rsplit(".", 1)[-1]


def _is_data_slice(sub: cst.Subscript) -> bool:
    """``ds[:]``, ``ds[()]``, ``ds[..., 0]``, ``ds[i]`` with an int: reads data, not a handle."""
    for el in sub.slice:
        sl = el.slice
        if isinstance(sl, cst.Slice):
            return True
        if isinstance(sl, cst.Index):
            v = sl.value
            if isinstance(v, (cst.Ellipsis, cst.Integer, cst.Tuple)):
                return True
    return False


def _ends_in_npz(node: cst.BaseExpression) -> bool:
    """A path expression naming an ``.npz`` file: ``"a.npz"``, ``f"{root}/a.npz"``,
    ``os.path.join(root, "a.npz")``, ``root / "a.npz"``, ``prefix + ".npz"``."""
    s = string_value(node)
    if s is not None:
        return s.endswith(".npz")
    if isinstance(node, cst.FormattedString):
        last = node.parts[-1] if node.parts else None
        return isinstance(last, cst.FormattedStringText) and last.value.endswith(".npz")
    if isinstance(node, cst.BinaryOperation):
        return _ends_in_npz(node.right)
    if isinstance(node, cst.Call) and node.args and dotted(node.func) in ("os.path.join", "path.join", "Path"):
        return _ends_in_npz(node.args[-1].value)
    return False


def kwarg_value(a: Analysis, call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value of keyword ``name`` of ``call``: given directly, or through ``**kw`` where ``kw`` is
    a dict literal (``{"chunksize": n}``) or ``dict(chunksize=n)``, directly or bound to a local
    name of the enclosing function (or the module), or added to it later (``kw["chunksize"] = n``,
    ``kw.update({...})``, ``kw.update(chunksize=n)``, ``kw.setdefault("chunksize", n)``); ``kw`` may
    be an attribute of ``self`` (``**self.kwargs``), built and filled in any method of the class."""
    arg = keyword(call, name)
    if arg is not None:
        return arg.value
    stars = [arg.value for arg in call.args if arg.star == "**"]
    if not stars:
        return None
    sites = a.__dict__.setdefault("_flow_sites", {})
    if not sites:
        sites.update({id(s.node): s for s in a.calls})
    site = sites.get(id(call))
    scope = site.func if site is not None else None
    for star in stars:
        values = [star]
        attr = self_attr(star, scope.self_name) if scope is not None and scope.self_name else None
        if isinstance(star, cst.Name):
            values = a.local_values(star.value, scope) if scope is not None else list(a.module_assigns.get(star.value, ()))
            item = _item_assign(a, scope, star.value, name)  # `kw["worker_init_fn"] = ...` later on
            if item is not None:
                return item
        elif attr is not None and scope is not None:  # **self.kwargs
            fns = [scope] + [f for f in (a.class_functions(scope.cls) if scope.cls is not None else ()) if f is not scope]
            for fn in fns:
                item = _item_assign(a, fn, f"{fn.self_name}.{attr}", name) if fn.self_name else None
                if item is not None:
                    return item
            values = [
                sa.value for fn in fns for sa in fn.self_assigns if sa.attr == attr and sa.kind == "assign" and sa.value is not None
            ]
        for v in values:
            if isinstance(v, cst.Dict):
                for el in v.elements:
                    if isinstance(el, cst.DictElement) and string_value(el.key) == name:
                        return el.value
            elif isinstance(v, cst.Call) and dotted(v.func) == "dict":
                k = keyword(v, name)
                if k is not None:
                    return k.value
    return None


def _item_assign(a: Analysis, scope: Optional[FuncInfo], var: str, key: str) -> Optional[cst.BaseExpression]:
    """The value of the last ``var["key"] = value`` (or ``var.update({"key": value})``,
    ``var.update(key=value)``, ``var.setdefault("key", value)``) in ``scope``'s own body (not nested
    functions), or None: a keyword added to a ``**kwargs`` dict after it was built. ``var``: a name
    or a dotted attribute (``self.kwargs``)."""
    if scope is None:
        return None
    cache = a.__dict__.setdefault("_flow_item_assigns", {})
    items = cache.get(id(scope))
    if items is None:
        found: Dict[Tuple[str, str], cst.BaseExpression] = {}

        class Items(OwnScope):
            def visit_Assign(self, node: cst.Assign) -> None:
                for t in node.targets:
                    tgt = t.target
                    if isinstance(tgt, cst.Subscript) and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index):
                        k = string_value(tgt.slice[0].slice.value)
                        d = dotted(tgt.value)
                        if k is not None and d is not None:
                            found[(d, k)] = node.value

            def visit_Call(self, node: cst.Call) -> None:
                f = node.func
                if not isinstance(f, cst.Attribute) or f.attr.value not in ("update", "setdefault"):
                    return
                d = dotted(f.value)
                if d is None:
                    return
                if f.attr.value == "setdefault":
                    pos = positional(node)
                    k = string_value(pos[0].value) if len(pos) == 2 else None
                    if k is not None:
                        found[(d, k)] = pos[1].value
                    return
                for arg in node.args:
                    if arg.keyword is not None:
                        found[(d, arg.keyword.value)] = arg.value
                    elif not arg.star and isinstance(arg.value, cst.Dict):
                        for el in arg.value.elements:
                            k = string_value(el.key) if isinstance(el, cst.DictElement) else None
                            if k is not None:
                                found[(d, k)] = el.value

        scope.node.visit(Items(scope.node))
        items = cache[id(scope)] = found
    return items.get((var, key))


def npz_by_use(a: Analysis, call: cst.Call) -> bool:
    """``x = np.load(path)`` (or ``self.x = ...``) where ``x`` is elsewhere indexed by a string key
    (``x["arr_0"]``) or has ``.files`` read: an ``NpzFile``, which holds the zip file open."""
    used = a.__dict__.get("_flow_npz_used")
    if used is None:

        class Uses(cst.CSTVisitor):
            def __init__(self) -> None:
                self.names: Set[str] = set()

            def _mark(self, e: cst.BaseExpression) -> None:
                if isinstance(e, cst.Name):
                    self.names.add(e.value)
                elif isinstance(e, cst.Attribute):
                    self.names.add("." + e.attr.value)

            def visit_Subscript(self, node: cst.Subscript) -> None:
                sl = node.slice
                if len(sl) == 1 and isinstance(sl[0].slice, cst.Index) and string_value(sl[0].slice.value) is not None:
                    self._mark(node.value)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value == "files":
                    self._mark(node.value)

        v = Uses()
        a.module.visit(v)
        used = a.__dict__["_flow_npz_used"] = v.names
    if not used:
        return False
    sites = a.__dict__.setdefault("_flow_sites", {})
    if not sites:
        sites.update({id(s.node): s for s in a.calls})
    site = sites.get(id(call))
    stmt = site.stmt if site is not None else None
    if not isinstance(stmt, cst.Assign) or stmt.value is not call:
        return False
    for t in stmt.targets:
        e = t.target
        if isinstance(e, cst.Name) and e.value in used:
            return True
        if isinstance(e, cst.Attribute) and "." + e.attr.value in used:
            return True
    return False


def factory_of(a: Analysis, call: cst.Call) -> Optional["object"]:
    q = a.qualify(call.func)
    if q is None:
        return None
    f = a.knowledge.factories.get(q)
    if f is None and q.startswith("builtins."):
        f = a.knowledge.factories.get(q[len("builtins.") :])
    if f is None:
        return None
    if f.when == "npz":
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        if kwarg_value(a, call, "mmap_mode") is not None:
            return None
        if first is None or not (_ends_in_npz(first) or npz_by_use(a, call)):
            return None
    elif f.when == "chunked":
        chunk = kwarg_value(a, call, "chunksize")
        it = kwarg_value(a, call, "iterator")
        if not (
            (chunk is not None and not (isinstance(chunk, cst.Name) and chunk.value == "None"))
            or (it is not None and isinstance(it, cst.Name) and it.value == "True")
        ):
            return None
    return f


def handle_source(a: Analysis, expr: Optional[cst.BaseExpression], fn: Optional[FuncInfo], depth: int = 0):
    """If ``expr`` evaluates to a handle, return (factory call, factory, direct)."""
    if expr is None or depth > 6:
        return None
    if isinstance(expr, cst.Call):
        f = factory_of(a, expr)
        if f is not None:
            return expr, f, True
        func = expr.func
        if isinstance(func, cst.Attribute):
            inner = handle_source(a, func.value, fn, depth + 1)
            if inner is not None and func.attr.value in inner[1].derived:
                return inner[0], inner[1], False
        return None
    if isinstance(expr, cst.Subscript):
        if _is_data_slice(expr):
            return None
        inner = handle_source(a, expr.value, fn, depth + 1)
        if inner is not None and inner[1].subscript:
            return inner[0], inner[1], False
        return None
    if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
        # `h5py.File(p) if p else None`, `f or open(p)`: either branch may be the one that runs
        for part in (expr.body, expr.orelse) if isinstance(expr, cst.IfExp) else (expr.left, expr.right):
            hit = handle_source(a, part, fn, depth + 1)
            if hit is not None:
                return hit[0], hit[1], False
        return None
    if isinstance(expr, cst.Name) and fn is not None:
        if expr.value in fn.with_names:
            return None  # a `with` block closes it
        vals = a.local_values(expr.value, fn)
        for v in vals:
            hit = handle_source(a, v, fn, depth + 1)
            if hit is not None:
                return hit[0], hit[1], False
        return None
    if isinstance(expr, cst.Attribute) and fn is not None and fn.self_name:
        attr = self_attr(expr, fn.self_name)
        if attr:
            for sa in fn.self_assigns:
                if sa.attr == attr and sa.kind == "assign" and sa.value is not expr:
                    hit = handle_source(a, sa.value, fn, depth + 1)
                    if hit is not None:
                        return hit[0], hit[1], False
    return None


def kept_handles(a: Analysis, sa: SelfAssign, fn: FuncInfo) -> List[KeptHandle]:
    """Handles kept on the instance by one ``self.x = ...`` (or container store)."""
    value = sa.value
    if value is None:
        return []
    hit = handle_source(a, value, fn)
    if hit is not None:
        # `self.x = self.x.begin()`-style chains on an attribute already reported are not new
        if isinstance(value, cst.Attribute) and fn.self_name and self_attr(value, fn.self_name):
            return []
        return [KeptHandle(hit[0], hit[1], direct=hit[2] and sa.kind == "assign", container=sa.kind == "container",
                           conditional=isinstance(value, (cst.IfExp, cst.BooleanOperation)))]
    out: List[KeptHandle] = []
    for el in container_elements(value) or []:
        hit = handle_source(a, el, fn)
        if hit is not None:
            out.append(KeptHandle(hit[0], hit[1], direct=False, container=True))
    return out or _captured_handles(a, value, fn)


def _captured_handles(a: Analysis, value: cst.BaseExpression, fn: FuncInfo) -> List[KeptHandle]:
    """Handles a local function of ``fn`` (``value`` names it) or a lambda reads from ``fn``'s
    locals: kept with the closure that captures them."""
    if isinstance(value, cst.Lambda):
        body: cst.CSTNode = value.body
        bound = {p.name.value for p in (*value.params.posonly_params, *value.params.params, *value.params.kwonly_params)}
        label = "a lambda"
    elif isinstance(value, cst.Name):
        inner = next((n for n in fn.nested if n.name == value.value), None)
        if inner is None or value.value in fn.params:
            return []
        body, bound, label = inner.node.body, set(inner.params) | set(inner.local_assigns), f"{inner.name}()"
    else:
        return []
    names: List[cst.Name] = []

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in fn.local_assigns and node.value not in bound:
                names.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # ``f.seek``: ``f``, not ``seek``
            return False

    body.visit(_Reads())
    for n in names:
        hit = handle_source(a, n, fn)
        if hit is not None:
            return [KeptHandle(hit[0], hit[1], direct=False, container=False, captured=label)]
    return []


def parsed_annotation(s: cst.SimpleString) -> Optional[cst.BaseExpression]:
    """A quoted annotation's expression (``"Dataset[T]"``), or None when it holds none."""
    try:
        return cst.parse_expression(s.evaluated_value)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - not an expression (nor a str)
        return None


def param_default(scope: Optional[FuncInfo], name: str) -> Optional[cst.BaseExpression]:
    """The default value of parameter ``name`` of ``scope`` or of a function enclosing it."""
    f = scope
    while f is not None:
        if name in f.params:
            p = f.node.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                if param.name.value == name:
                    return param.default
            return None
        if name in f.local_assigns:
            return None
        f = f.parent
    return None


def bound_in_scope(fn: Optional[FuncInfo], name: str) -> bool:
    """``name`` is a parameter or a local of ``fn`` or of a function enclosing it."""
    f = fn
    while f is not None:
        if name in f.params or name in f.local_assigns:
            return True
        f = f.parent
    return False


def is_none(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def released_in(fns: Sequence[FuncInfo], attr: str) -> bool:
    """``self.attr.close()``, ``del self.attr``, or ``self.attr = None`` after it was stored."""
    for fn in fns:
        if "self." + attr in fn.closed:
            return True
        stored = False
        for sa in fn.self_assigns:
            if sa.attr != attr:
                continue
            if sa.kind == "del" or (stored and is_none(sa.value)):
                return True
            stored = stored or not is_none(sa.value)
    return False


def calls_within(a: Analysis, node: cst.CSTNode) -> List[CallSite]:
    """The call sites inside ``node`` (a lambda, say), in source order."""
    ids = call_ids(node)
    return [site for site in a.calls if id(site.node) in ids]


def call_ids(node: cst.CSTNode) -> Set[int]:
    ids: Set[int] = set()

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            ids.add(id(n))

    node.visit(V())
    return ids
