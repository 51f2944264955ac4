"""Hoisting a lambda, a nested function or a nested class to module level (FRK201, FRK202).

Shared pieces:

- free-variable analysis: which names a node reads from the scopes around it (``reads``), where the
  node sits (``locate``: its top-level statement and the chain of enclosing scopes), and which of its
  free names are locals of an enclosing function (``captures``), with the conditions under which
  such a local can be bound early with ``functools.partial`` without changing what the code computes;
- unique module-level names (``NameAllocator``);
- the rewrite itself (``Hoister``): replace lambdas, remove nested definitions from their function,
  rename references, insert the new module-level statements right before the top-level statement that
  contained them, and add ``import functools`` when a ``functools.partial`` is needed.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import comp_fors

COMPS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
Scope = Union[cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp]


# --------------------------------------------------------------------------------------------------
# a fast walk: libcst's own visitors rebuild every node they pass, which is far too slow for the
# check path; this reads the dataclass fields directly and skips whitespace and punctuation.

_TRIVIA = frozenset(
    {
        "leading_lines", "lines_after_decorators", "header", "footer", "lpar", "rpar", "comma",
        "semicolon", "trailing_whitespace", "equal", "colon", "dot", "operator", "asynchronous",
        "newline", "indent", "default_indent", "default_newline", "encoding", "has_trailing_newline",
        "star", "whitespace",
    }
)
_FIELDS: Dict[type, Tuple[str, ...]] = {}
_IS_NODE: Dict[type, bool] = {}
_SEQ = (list, tuple)


def iter_children(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """The child nodes of ``node`` that can hold names, in field order (source order for bodies,
    targets before values)."""
    t = type(node)
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(
            f.name for f in dataclasses.fields(node) if f.name not in _TRIVIA and not f.name.startswith("whitespace")
        )
    for n in names:
        v = getattr(node, n)
        vt = type(v)
        if vt in _SEQ:
            for x in v:
                xt = type(x)
                ok = _IS_NODE.get(xt)
                if ok is None:
                    ok = _IS_NODE[xt] = isinstance(x, cst.CSTNode)
                if ok:
                    yield x
        else:
            ok = _IS_NODE.get(vt)
            if ok is None:
                ok = _IS_NODE[vt] = isinstance(v, cst.CSTNode)
            if ok:
                yield v


COMP_TYPES = frozenset({cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})
SCOPE_TYPES = COMP_TYPES | {cst.FunctionDef, cst.Lambda, cst.ClassDef}


# --------------------------------------------------------------------------------------------------
# names read


def _params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    out += list(params.kwonly_params)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def param_names(params: cst.Parameters) -> Set[str]:
    return {p.name.value for p in _params(params)}


def target_names(node: cst.CSTNode) -> List[str]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``); attributes and subscripts bind none."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        out: List[str] = []
        for el in node.elements:
            out += target_names(el.value)
        return out
    if isinstance(node, cst.StarredElement):
        return target_names(node.value)
    return []


def reads(node: cst.CSTNode) -> Dict[str, None]:
    """Names ``node`` reads from the scope it is evaluated in (an insertion-ordered set): loads in it,
    plus the free names of the functions, lambdas, classes and comprehensions inside it. Stores of the
    node's own scope are included for plain statements (callers subtract the scope's bindings)."""
    out: Dict[str, None] = {}
    _reads(node, out)
    return out


def _add(out: Dict[str, None], names: Iterable[str]) -> None:
    for n in names:
        out.setdefault(n, None)


def _reads(node: cst.CSTNode, out: Dict[str, None]) -> None:
    t = type(node)
    if t is cst.Name:
        out.setdefault(node.value, None)
        return
    if t is cst.Attribute:
        _reads(node.value, out)
        return
    if t is cst.Arg:
        _reads(node.value, out)
        return
    if t in _NO_READS:
        return
    if t is cst.Lambda:
        for p in _params(node.params):
            if p.default is not None:
                _reads(p.default, out)
        inner = reads(node.body)
        own = param_names(node.params)
        _add(out, (n for n in inner if n not in own))
        return
    if t is cst.FunctionDef:
        def_outer_reads(node, out)
        _add(out, function_free(node))
        return
    if t is cst.ClassDef:
        class_outer_reads(node, out)
        _add(out, class_free(node))
        return
    if t in COMP_TYPES:
        fors = comp_fors(node)
        _reads(fors[0].iter, out)
        inner: Dict[str, None] = {}
        bound: Set[str] = set()
        for i, f in enumerate(fors):
            bound.update(target_names(f.target))
            if i:
                _reads(f.iter, inner)
            for cond in f.ifs:
                _reads(cond.test, inner)
        if t is cst.DictComp:
            _reads(node.key, inner)
            _reads(node.value, inner)
        else:
            _reads(node.elt, inner)
        _add(out, (n for n in inner if n not in bound))
        return
    for child in iter_children(node):
        _reads(child, out)


_NO_READS = frozenset({cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal})


def def_outer_reads(node: cst.FunctionDef, out: Dict[str, None]) -> None:
    """What a ``def`` statement evaluates in its enclosing scope: decorators, defaults, annotations."""
    for d in node.decorators:
        _reads(d.decorator, out)
    for p in _params(node.params):
        if p.default is not None:
            _reads(p.default, out)
        if p.annotation is not None:
            _reads(p.annotation.annotation, out)
    if node.returns is not None:
        _reads(node.returns.annotation, out)


def class_outer_reads(node: cst.ClassDef, out: Dict[str, None]) -> None:
    for d in node.decorators:
        _reads(d.decorator, out)
    for arg in (*node.bases, *node.keywords):
        _reads(arg.value, out)


def function_free(node: cst.FunctionDef) -> Dict[str, None]:
    """Free names of a function body: read but not bound in it (``nonlocal`` names are free,
    ``global`` ones are not)."""
    r = reads(node.body)
    info = bindings(node)
    return {n: None for n in r if (n not in info.names and n not in info.globals) or n in info.nonlocals}


def class_free(node: cst.ClassDef) -> Dict[str, None]:
    """Free names of a class body. Names bound in the class body are visible to its direct statements
    but not to the functions defined in it."""
    direct: Dict[str, None] = {}
    deferred: Dict[str, None] = {}
    for stmt in _block(node.body):
        if isinstance(stmt, cst.FunctionDef):
            def_outer_reads(stmt, direct)
            _add(deferred, function_free(stmt))
        else:
            _reads(stmt, direct)
    own = bindings(node).names
    out = {n: None for n in direct if n not in own}
    _add(out, deferred)
    return out


def _block(body: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()


# --------------------------------------------------------------------------------------------------
# bindings of one scope, in textual order


@dataclass
class Binding:
    kind: str  # param, assign, lambda, def, class, import, for, with, except, aug, del, walrus, match
    order: int  # textual order inside the scope (after the value for assignments)
    loops: Tuple[int, ...]  # ids of the for/while loops of the scope around the binding
    node: Optional[cst.CSTNode] = None  # for imports: the Import/ImportFrom and the alias


@dataclass
class ScopeBindings:
    names: Dict[str, List[Binding]] = field(default_factory=dict)
    globals: Set[str] = field(default_factory=set)
    nonlocals: Set[str] = field(default_factory=set)  # declared nonlocal in this scope
    nonlocal_in_nested: Set[str] = field(default_factory=set)  # declared nonlocal by a nested function
    targets: Dict[int, Tuple[int, Tuple[int, ...]]] = field(default_factory=dict)  # id -> (order, loops)


class _Binder:
    """Walks one scope; bindings are recorded for the scope itself, not for scopes nested in it
    (except the names of nested defs and classes, which the scope binds)."""

    def __init__(self, scope: cst.CSTNode, targets: Set[int]) -> None:
        self.scope = scope
        self.want = targets
        self.info = ScopeBindings()
        self.order = 0
        self.loops: List[int] = []

    def bind(self, name: str, kind: str, node: Optional[cst.CSTNode] = None) -> None:
        self.info.names.setdefault(name, []).append(Binding(kind, self.order, tuple(self.loops), node))

    def walk(self, node: cst.CSTNode, nested: bool = False) -> None:
        self.order += 1
        if self.want and id(node) in self.want:
            self.info.targets[id(node)] = (self.order, tuple(self.loops))
        t = type(node)
        if node is not self.scope and t in SCOPE_TYPES:
            if not nested and t is cst.FunctionDef:
                self.bind(node.name.value, "def")
            elif not nested and t is cst.ClassDef:
                self.bind(node.name.value, "class")
            for child in iter_children(node):
                self.walk(child, True)
            return
        if nested:
            if t is cst.Nonlocal:
                self.info.nonlocal_in_nested.update(n.name.value for n in node.names)
            elif t in _NEEDS_WALK or len(self.info.targets) < len(self.want):
                for child in iter_children(node):
                    self.walk(child, True)
            return
        loop = t is cst.For or t is cst.While
        if loop:
            self.loops.append(id(node))
        self._binding(node, t)
        for child in iter_children(node):
            self.walk(child)
        if loop:
            self.loops.pop()
        self.order += 1
        # assignments bind after their value is evaluated
        if t is cst.Assign:
            kind = "lambda" if type(node.value) is cst.Lambda else "assign"
            for tg in node.targets:
                for n in target_names(tg.target):
                    self.bind(n, kind)
        elif t is cst.AnnAssign and node.value is not None:
            kind = "lambda" if type(node.value) is cst.Lambda else "assign"
            for n in target_names(node.target):
                self.bind(n, kind)
        elif t is cst.AugAssign:
            for n in target_names(node.target):
                self.bind(n, "aug")
        elif t is cst.NamedExpr:
            for n in target_names(node.target):
                self.bind(n, "walrus")

    def _binding(self, node: cst.CSTNode, t: type) -> None:
        if t is cst.For:
            for n in target_names(node.target):
                self.bind(n, "for")
        elif t is cst.WithItem:
            if node.asname is not None:
                for n in target_names(node.asname.name):
                    self.bind(n, "with")
        elif t is cst.ExceptHandler:
            if node.name is not None:
                for n in target_names(node.name.name):
                    self.bind(n, "except")
        elif t is cst.Import:
            for alias in node.names:
                if alias.asname is not None:
                    for n in target_names(alias.asname.name):
                        self.bind(n, "import", (node, alias))
                else:
                    head = alias.name
                    while isinstance(head, cst.Attribute):
                        head = head.value
                    if isinstance(head, cst.Name):
                        self.bind(head.value, "import", (node, alias))
        elif t is cst.ImportFrom:
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if alias.asname is not None:
                        for n in target_names(alias.asname.name):
                            self.bind(n, "import", (node, alias))
                    elif isinstance(alias.name, cst.Name):
                        self.bind(alias.name.value, "import", (node, alias))
        elif t is cst.Del:
            for n in target_names(node.target):
                self.bind(n, "del")
        elif t is cst.Global:
            self.info.globals.update(n.name.value for n in node.names)
        elif t is cst.Nonlocal:
            self.info.nonlocals.update(n.name.value for n in node.names)
        elif (t is cst.MatchAs or t is cst.MatchStar) and node.name is not None:
            self.bind(node.name.value, "match")


# inside nested scopes only `nonlocal` statements matter: walk statements, not expressions
_NEEDS_WALK = frozenset(
    {
        cst.FunctionDef, cst.ClassDef, cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine,
        cst.If, cst.Else, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.ExceptHandler,
        cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase,
    }
)


def bindings(scope: Scope, targets: Iterable[cst.CSTNode] = ()) -> ScopeBindings:
    """The names ``scope`` binds (params first), minus its ``global``/``nonlocal`` declarations, and the
    textual position of ``targets`` inside it."""
    binder = _Binder(scope, {id(t) for t in targets})
    t = type(scope)
    if t is cst.FunctionDef or t is cst.Lambda:
        for p in _params(scope.params):
            binder.info.names.setdefault(p.name.value, []).append(Binding("param", 0, ()))
        binder.walk(scope.body)
    elif t is cst.ClassDef:
        binder.walk(scope.body)
    elif t in COMP_TYPES:
        for f in comp_fors(scope):
            for n in target_names(f.target):
                binder.info.names.setdefault(n, []).append(Binding("for", 0, (id(scope),)))
        for child in iter_children(scope):
            binder.walk(child, True)
    else:  # the module
        for stmt in scope.body:
            binder.walk(stmt)
    info = binder.info
    for n in info.globals | info.nonlocals:
        info.names.pop(n, None)
    return info


# --------------------------------------------------------------------------------------------------
# where a node sits


@dataclass
class Location:
    top: cst.CSTNode  # the statement of module.body that contains it
    index: int  # its index in module.body
    scopes: Tuple[cst.CSTNode, ...]  # enclosing scopes, outermost first (the node's own excluded)
    parent_block: Optional[cst.CSTNode] = None  # the IndentedBlock holding it, for a statement


def locate(
    module: cst.Module, targets: Iterable[cst.CSTNode], hints: Optional[Dict[int, cst.CSTNode]] = None
) -> Dict[int, Location]:
    """Top-level statement and enclosing scopes of each target (by id). Decorators, defaults and
    annotations of a def are in the enclosing scope, as Python evaluates them. ``hints`` maps a
    target to the top-level statement that probably holds it (searched first)."""
    want = {id(t) for t in targets}
    out: Dict[int, Location] = {}
    if not want:
        return out
    index = {id(s): i for i, s in enumerate(module.body)}
    first: List[int] = []
    for tid in want:
        top = (hints or {}).get(tid)
        if top is not None and id(top) in index and index[id(top)] not in first:
            first.append(index[id(top)])
    order = first + [i for i in range(len(module.body)) if i not in first]
    for i in order:
        top = module.body[i]
        _locate(top, top, i, (), None, want, out)
        if len(out) == len(want):
            break
    return out


def _locate(node, top, index, chain, block, want, out) -> None:
    if id(node) in want:
        out[id(node)] = Location(top, index, chain, block)
    t = type(node)
    if t is cst.FunctionDef:
        for d in node.decorators:
            _locate(d, top, index, chain, None, want, out)
        for p in _params(node.params):
            if p.default is not None:
                _locate(p.default, top, index, chain, None, want, out)
            if p.annotation is not None:
                _locate(p.annotation, top, index, chain, None, want, out)
        if node.returns is not None:
            _locate(node.returns, top, index, chain, None, want, out)
        _locate(node.body, top, index, chain + (node,), None, want, out)
        return
    if t is cst.ClassDef:
        for d in node.decorators:
            _locate(d, top, index, chain, None, want, out)
        for arg in (*node.bases, *node.keywords):
            _locate(arg, top, index, chain, None, want, out)
        _locate(node.body, top, index, chain + (node,), None, want, out)
        return
    if t is cst.Lambda:
        for p in _params(node.params):
            if p.default is not None:
                _locate(p.default, top, index, chain, None, want, out)
        _locate(node.body, top, index, chain + (node,), None, want, out)
        return
    if t in COMP_TYPES:
        fors = comp_fors(node)
        _locate(fors[0].iter, top, index, chain, None, want, out)
        inner = chain + (node,)
        for i, f in enumerate(fors):
            _locate(f.target, top, index, inner, None, want, out)
            if i:
                _locate(f.iter, top, index, inner, None, want, out)
            for cond in f.ifs:
                _locate(cond, top, index, inner, None, want, out)
        if t is cst.DictComp:
            _locate(node.key, top, index, inner, None, want, out)
            _locate(node.value, top, index, inner, None, want, out)
        else:
            _locate(node.elt, top, index, inner, None, want, out)
        return
    blk = node if t is cst.IndentedBlock else None
    for child in iter_children(node):
        _locate(child, top, index, chain, blk, want, out)


# --------------------------------------------------------------------------------------------------
# captured locals


@dataclass
class Captures:
    partial: List[str] = field(default_factory=list)  # locals to bind with functools.partial
    imports: List[cst.SimpleStatementLine] = field(default_factory=list)  # local imports to repeat
    problem: Optional[str] = None  # why it cannot be hoisted automatically


def _function_scopes(loc: Location) -> List[cst.CSTNode]:
    """Enclosing scopes whose names the node can see, innermost first (class bodies are skipped)."""
    return [s for s in reversed(loc.scopes) if not isinstance(s, cst.ClassDef)]


def captures(
    loc: Location,
    target: cst.CSTNode,
    free: Iterable[str],
    *,
    allow_partial: bool,
    own_name: Optional[str] = None,
    outer: Iterable[str] = (),
    allow_imports: bool = True,
) -> Captures:
    """Classify the free names of ``target`` (at ``loc``) that are locals of an enclosing function.

    ``free``: names read when the hoisted code runs (a lambda's body, a def's body). ``outer``: names
    evaluated when the definition is (defaults, decorators): they may not be locals at all.
    ``own_name``: the name a hoisted def/class binds (its own recursive references are fine).
    A captured local can be bound early (``allow_partial``) only when it is bound before the node is
    created, never rebound afterwards, not in a loop around the node, not a comprehension variable, and
    not a local function, class or lambda (which would not pickle either). A local import is repeated
    in the hoisted function instead (``allow_imports``).
    """
    out = Captures()
    scopes = _function_scopes(loc)
    cache: Dict[int, ScopeBindings] = {}

    def owner(name: str):
        for s in scopes:
            info = cache.get(id(s))
            if info is None:
                info = cache[id(s)] = bindings(s, [target])
            if name in info.names:
                return s, info
        return None, None

    for name in outer:
        s, _ = owner(name)
        if s is not None:
            out.problem = f"its default or decorator uses the local name {name!r}"
            return out
    for name in free:
        if name == own_name:
            continue
        if name in ("super", "__class__"):
            # zero-argument super() needs the class cell of an enclosing class; a class provides its own
            if not isinstance(target, cst.ClassDef) and any(isinstance(x, cst.ClassDef) for x in loc.scopes):
                out.problem = "it uses super()"
                return out
            continue
        s, info = owner(name)
        if s is None:
            continue  # a module-level name or a builtin
        if name == "self" or _is_instance_param(loc, s, name):
            out.problem = f"it uses {name!r} (the instance)"
            return out
        if isinstance(s, COMPS):
            out.problem = f"it uses the comprehension variable {name!r}"
            return out
        if isinstance(s, cst.Lambda):
            if not allow_partial:
                out.problem = f"it uses the local name {name!r}"
                return out
            out.partial.append(name)
            continue
        bs = info.names[name]
        kinds = {b.kind for b in bs}
        if kinds & {"def", "class", "lambda"}:
            out.problem = f"it uses the local function or class {name!r}"
            return out
        if kinds == {"import"} and len(bs) == 1 and allow_imports:
            imp, alias = bs[0].node
            out.imports.append(_import_line(imp, alias))
            continue
        if not allow_partial:
            out.problem = f"it uses the local name {name!r}"
            return out
        pos = info.targets.get(id(target))
        if name in info.nonlocal_in_nested or pos is None:
            out.problem = f"the local name {name!r} may change after it is created"
            return out
        order, loops = pos
        for b in bs:
            # bound once before the node is created, not in a loop around it: binding it early is exact
            if b.order >= order or set(b.loops) & set(loops):
                out.problem = f"the local name {name!r} may change after it is created"
                return out
        out.partial.append(name)
    return out


def _is_instance_param(loc: Location, scope: cst.CSTNode, name: str) -> bool:
    """``name`` is the first parameter of a method (``self`` by another name)."""
    if not isinstance(scope, cst.FunctionDef) or not scope.params.params:
        return False
    if scope.params.params[0].name.value != name:
        return False
    i = loc.scopes.index(scope)
    if i == 0 or not isinstance(loc.scopes[i - 1], cst.ClassDef):
        return False
    deco = {cst.Module([]).code_for_node(d.decorator) for d in scope.decorators}
    return not deco & {"staticmethod", "classmethod"}


def _import_line(imp: Union[cst.Import, cst.ImportFrom], alias: cst.ImportAlias) -> cst.SimpleStatementLine:
    alias = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if isinstance(imp, cst.Import):
        stmt: cst.BaseSmallStatement = cst.Import(names=[alias])
    else:
        stmt = cst.ImportFrom(module=imp.module, names=[alias], relative=imp.relative)
    return cst.SimpleStatementLine([stmt])


# --------------------------------------------------------------------------------------------------
# names


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class NameAllocator:
    """Unique module-level names for hoisted code."""

    def __init__(self, module: cst.Module) -> None:
        c = _NameCollector()
        module.visit(c)
        self.taken: Set[str] = c.names  # every identifier of the module: no local shadows a new global
        self.module_level: Set[str] = module_bindings(module)
        self.handed: Set[str] = set()

    def fresh(self, base: str) -> str:
        """``base`` if no identifier of the module is spelled so, else ``base_2``, ``base_3``..."""
        name = base
        i = 2
        while name in self.taken or name in self.handed:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        self.handed.add(name)
        return name

    def keep(self, name: str) -> str:
        """A moved definition keeps its name unless a module-level name (or one handed out already)
        is spelled so."""
        if name not in self.module_level and name not in self.handed:
            self.handed.add(name)
            return name
        return self.fresh(name)


def function_name(base: str, in_lambda_call: bool) -> str:
    """``_transform_fn`` for ``transform``, ``_collate_fn`` for ``collate_fn``, ``_transform_lambda``
    for a lambda wrapped in ``transforms.Lambda``."""
    base = re.sub(r"\W", "_", base).strip("_") or "lambda"
    if base[0].isdigit():
        base = "lambda_" + base
    if in_lambda_call:
        return f"_{base}" if base.endswith("lambda") else f"_{base}_lambda"
    if base.endswith(("fn", "func", "function")) or base == "lambda":
        return f"_{base}" if base != "lambda" else "_lambda_fn"
    return f"_{base}_fn"


def defined_after(module: cst.Module, index: int, names: Iterable[str]) -> Optional[str]:
    """The first of ``names`` that the module binds, but only at or after ``module.body[index]``: code
    moved before that statement and evaluated at import time would not find it."""
    names = [n for n in names]
    if not names:
        return None
    top = module.body[index]
    info = bindings(module, [top])
    at, _ = info.targets.get(id(top), (0, ()))
    for n in names:
        bs = info.names.get(n)
        if bs and all(b.order >= at for b in bs):
            return n
    return None


def module_bindings(module: cst.Module) -> Set[str]:
    """Names bound at module level (definitions, assignments, imports)."""
    return set(bindings(module).names)


# --------------------------------------------------------------------------------------------------
# building the module-level function for a lambda


def lambda_to_def(lam: cst.Lambda, name: str, caps: Captures, module: cst.Module) -> cst.FunctionDef:
    params = lam.params
    if caps.partial:
        extra = [cst.Param(cst.Name(n)) for n in caps.partial]
        star = params.star_arg
        params = params.with_changes(kwonly_params=list(params.kwonly_params) + extra)
        # a trailing comma on the last positional parameter is re-rendered by libcst
        if isinstance(star, cst.MaybeSentinel):
            params = params.with_changes(star_arg=cst.ParamStar())
        params = _clean_param_commas(params)
    body_expr = lam.body
    ret = cst.Return(value=body_expr)
    if not _parses_as_statement(module, ret):
        body_expr = body_expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        ret = cst.Return(value=body_expr)
    stmts: List[cst.BaseStatement] = list(caps.imports) + [cst.SimpleStatementLine([ret])]
    return cst.FunctionDef(name=cst.Name(name), params=params, body=cst.IndentedBlock(stmts))


def _clean_param_commas(params: cst.Parameters) -> cst.Parameters:
    """Drop explicit commas so that libcst places them (the lambda's own layout may end without one)."""

    def clean(p):
        return p.with_changes(comma=cst.MaybeSentinel.DEFAULT) if isinstance(p, cst.Param) else p

    star = params.star_arg
    if isinstance(star, cst.ParamStar):
        star = cst.ParamStar()
    elif isinstance(star, cst.Param):
        star = clean(star)
    return params.with_changes(
        posonly_params=[clean(p) for p in params.posonly_params],
        params=[clean(p) for p in params.params],
        star_arg=star,
        kwonly_params=[clean(p) for p in params.kwonly_params],
        star_kwarg=clean(params.star_kwarg) if params.star_kwarg is not None else None,
    )


def _parses_as_statement(module: cst.Module, stmt: cst.BaseSmallStatement) -> bool:
    code = "def _hoisted():\n " + module.code_for_node(stmt) + "\n"
    try:
        compile(code, "<hoist>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def partial_call(func_name: str, names: Sequence[str], partial_ref: cst.BaseExpression) -> cst.Call:
    args = [cst.Arg(cst.Name(func_name))]
    for n in names:
        args.append(
            cst.Arg(
                value=cst.Name(n),
                keyword=cst.Name(n),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            )
        )
    return cst.Call(func=partial_ref, args=args)


# --------------------------------------------------------------------------------------------------
# imports


def _top_imports(module: cst.Module):
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small


def partial_reference(module: cst.Module) -> Tuple[cst.BaseExpression, bool]:
    """How module-level code spells ``functools.partial`` here, and whether ``import functools`` must
    be added."""
    for imp in _top_imports(module):
        if isinstance(imp, cst.Import):
            for alias in imp.names:
                if module.code_for_node(alias.name) == "functools":
                    local = alias.asname.name.value if alias.asname is not None else "functools"
                    return cst.Attribute(cst.Name(local), cst.Name("partial")), False
        elif imp.relative == () or not imp.relative:
            if imp.module is not None and module.code_for_node(imp.module) == "functools":
                if isinstance(imp.names, cst.ImportStar):
                    return cst.Name("partial"), False
                for alias in imp.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "partial":
                        local = alias.asname.name.value if alias.asname is not None else "partial"
                        return cst.Name(local), False
    return cst.Attribute(cst.Name("functools"), cst.Name("partial")), True


# --------------------------------------------------------------------------------------------------
# references to a renamed local


def reference_nodes(node: cst.CSTNode, name: str) -> List[cst.Name]:
    """Name nodes in ``node`` that refer to ``name`` of the scope ``node`` belongs to (nested scopes
    that bind ``name`` themselves are skipped)."""
    out: List[cst.Name] = []
    _refs(node, name, out)
    return out


def _refs(node: cst.CSTNode, name: str, out: List[cst.Name]) -> None:
    t = type(node)
    if t is cst.Name:
        if node.value == name:
            out.append(node)
        return
    if t is cst.Attribute or t is cst.Arg:
        _refs(node.value, name, out)
        return
    if t in _NO_READS:
        return
    if t is cst.Lambda:
        for p in _params(node.params):
            if p.default is not None:
                _refs(p.default, name, out)
        if name not in param_names(node.params):
            _refs(node.body, name, out)
        return
    if t is cst.FunctionDef:
        for d in node.decorators:
            _refs(d.decorator, name, out)
        for p in _params(node.params):
            if p.default is not None:
                _refs(p.default, name, out)
            if p.annotation is not None:
                _refs(p.annotation.annotation, name, out)
        if node.returns is not None:
            _refs(node.returns.annotation, name, out)
        info = bindings(node)
        if name not in info.names or name in info.nonlocals:
            _refs(node.body, name, out)
        return
    if t is cst.ClassDef:
        for d in node.decorators:
            _refs(d.decorator, name, out)
        for arg in (*node.bases, *node.keywords):
            _refs(arg.value, name, out)
        if name not in bindings(node).names:
            _refs(node.body, name, out)
        return
    if t in COMP_TYPES:
        fors = comp_fors(node)
        _refs(fors[0].iter, name, out)
        if any(name in target_names(f.target) for f in fors):
            return
        for i, f in enumerate(fors):
            if i:
                _refs(f.iter, name, out)
            for cond in f.ifs:
                _refs(cond.test, name, out)
        if t is cst.DictComp:
            _refs(node.key, name, out)
            _refs(node.value, name, out)
        else:
            _refs(node.elt, name, out)
        return
    for child in iter_children(node):
        _refs(child, name, out)


# --------------------------------------------------------------------------------------------------
# the rewrite


class Hoister(cst.CSTTransformer):
    """Applies a batch of hoists to a module in one pass.

    - ``replace[id(node)] = expr``: an expression node (a lambda) replaced by ``expr``;
    - ``remove``: ids of statements (nested defs/classes) removed from their block;
    - ``rename[id(name_node)] = new``: Name nodes renamed;
    - ``insert[index] = [statements]``: new statements placed before ``module.body[index]``;
    - ``need_functools``: add ``import functools`` where isort would put it (``edit.ensure_imports``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.replace: Dict[int, cst.BaseExpression] = {}
        self.remove: Set[int] = set()
        self.rename: Dict[int, str] = {}
        self.insert: Dict[int, List[cst.BaseStatement]] = {}
        self.need_functools = False

    def add(self, index: int, stmt: cst.BaseStatement) -> None:
        self.insert.setdefault(index, []).append(stmt)

    def on_leave(self, original_node, updated_node):
        new = self.replace.get(id(original_node))
        if new is not None:
            # `(lambda x: ...)` becomes `_fn`: its parentheses go too, unless they hold comments/newlines
            if isinstance(original_node, cst.BaseExpression) and any(
                not isinstance(ws, cst.SimpleWhitespace)
                for ws in [p.whitespace_after for p in original_node.lpar]
                + [p.whitespace_before for p in original_node.rpar]
            ):
                new = new.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)
            return new
        return super().on_leave(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.rename.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        if not any(id(s) in self.remove for s in original_node.body):
            return updated_node
        body = [u for o, u in zip(original_node.body, updated_node.body) if id(o) not in self.remove]
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        elif id(original_node.body[0]) in self.remove:
            # the block now starts with what followed: no blank line right after the header
            blank, comments = _split_leading(body[0].leading_lines)
            body[0] = body[0].with_changes(leading_lines=comments)
        return updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body: List[cst.BaseStatement] = []
        for i, stmt in enumerate(updated_node.body):
            new = self.insert.get(i)
            if new:
                blank, comments = _split_leading(stmt.leading_lines)
                first_blank = list(blank)
                if i > 0 and len(first_blank) < 2:
                    first_blank = [cst.EmptyLine(), cst.EmptyLine()]
                for k, n in enumerate(new):
                    _, own_comments = _split_leading(n.leading_lines)
                    lead = first_blank if k == 0 else [cst.EmptyLine(), cst.EmptyLine()]
                    body.append(n.with_changes(leading_lines=lead + list(own_comments)))
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()] + list(comments))
            body.append(stmt)
        module = updated_node.with_changes(body=body)
        if self.need_functools:  # in its isort group, as the file orders it
            from flake8_forksafe.edit import ensure_imports

            module = ensure_imports(module, ["functools"])
        return module


def _split_leading(lines: Sequence[cst.EmptyLine]) -> Tuple[List[cst.EmptyLine], List[cst.EmptyLine]]:
    """Blank lines before the first comment, and the rest."""
    for i, line in enumerate(lines):
        if line.comment is not None:
            return list(lines[:i]), list(lines[i:])
    return list(lines), []
