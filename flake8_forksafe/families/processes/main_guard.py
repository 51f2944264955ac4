"""FRK401's fix: move a script's executable top-level statements under ``if __name__ == "__main__":``.

What stays at module level: the docstring, imports (``__future__`` ones included), ``def`` / ``class``,
constants (assignments of literal-like values), and every other statement that a kept statement
needs, found with libcst's scope analysis (a function that reads a module global would break in
spawned workers, which import the module as ``__mp_main__`` without running the guard). To keep the
script's behaviour, the order of execution is preserved: a statement that does not start workers
and runs before a kept statement stays too. The fix is refused (``fixable=False``) when a statement
that starts workers would have to stay, or would have to move past a kept statement it may depend
on or that rebinds one of its names. A statement never moves past a kept statement that rebinds a
name it reads (``batch_size = 8`` after the loader built with ``batch_size``): then everything from
the first moved statement on moves, in order, or the fix is refused when a definition is among it.

The moved statements go, in their order, to the top of the first existing guard that follows them
(statements after the last guard go to its end); without a guard, to a new one at the end of the
module. Comments attached to them move with them.
"""

from __future__ import annotations

import ast
import keyword
import re
import symtable
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from flake8_forksafe.analysis import Analysis, is_main_guard, push_children

PURE, EXEC, MIXED = "pure", "exec", "mixed"


@dataclass
class GuardPlan:
    fixable: bool
    moved: List[int] = field(default_factory=list)  # indices in module.body, in order
    reason: str = ""


def importers_reason(a: Analysis) -> str:
    """Why the guard fix changes what the program does although the script, run, does the same: a
    module of the project imports this one, and the moved code would no longer run on import (its
    names would no longer exist there). "" when no project module imports it, or the file is not
    on disk (no project to look in). The project index reads the imports as text; ``forksafe fix``
    runs without one, so it is made here."""
    path = a.path
    if not path or path.startswith("<"):
        return ""
    from pathlib import Path

    ix = a.index
    try:
        if ix is None:
            if not Path(path).is_file():
                return ""
            from flake8_forksafe.index import index_for

            ix = index_for(path, a.knowledge, use_cache=False)
        got = ix.importers(path)
    except (OSError, ValueError, RecursionError):
        return "the project's modules could not be read to see whether one imports this module"
    if got is None:
        return "the project is too big to look for modules importing this one"
    if not got:
        return ""
    return f"{', '.join(got)} import{'s' if len(got) == 1 else ''} this module, and the moved code would no longer run on import"


# --------------------------------------------------------------------------------------------------
# classification


def _constant(expr: Optional[cst.BaseExpression]) -> bool:
    """A value computed without calling anything: literals, names, attributes, operators on them."""
    if expr is None:
        return True
    if isinstance(
        expr,
        (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Name, cst.Ellipsis),
    ):
        return True
    if isinstance(expr, cst.Attribute):
        return _constant(expr.value)
    if isinstance(expr, cst.FormattedString):
        return all(
            _constant(p.expression) for p in expr.parts if isinstance(p, cst.FormattedStringExpression)
        )
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(_constant(e.value) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(
            isinstance(e, cst.DictElement) and _constant(e.key) and _constant(e.value) for e in expr.elements
        )
    if isinstance(expr, cst.UnaryOperation):
        return _constant(expr.expression)
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        return _constant(expr.left) and _constant(expr.right)
    if isinstance(expr, cst.Comparison):
        return _constant(expr.left) and all(_constant(c.comparator) for c in expr.comparisons)
    if isinstance(expr, cst.IfExp):
        return _constant(expr.test) and _constant(expr.body) and _constant(expr.orelse)
    if isinstance(expr, cst.Subscript):
        return _constant(expr.value) and all(
            isinstance(s.slice, cst.Index) and _constant(s.slice.value) for s in expr.slice
        )
    if isinstance(expr, cst.Lambda):
        return True  # a definition, like a def
    return False


def _small_kind(small: cst.BaseSmallStatement) -> str:
    if isinstance(small, (cst.Import, cst.ImportFrom, cst.Pass, cst.Global, cst.Nonlocal)):
        return PURE
    if isinstance(small, cst.Expr):
        return PURE if isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)) else EXEC
    if isinstance(small, cst.Assign):
        return PURE if _constant(small.value) and all(_simple_target(t.target) for t in small.targets) else EXEC
    if isinstance(small, cst.AnnAssign):
        return PURE if _constant(small.value) and _simple_target(small.target) else EXEC
    if isinstance(small, cst.AugAssign):
        return PURE if _constant(small.value) and _simple_target(small.target) else EXEC
    return EXEC


def _simple_target(t: cst.BaseExpression) -> bool:
    if isinstance(t, cst.Name):
        return True
    if isinstance(t, (cst.Tuple, cst.List)):
        return all(_simple_target(e.value) for e in t.elements)
    return False


def _block_statements(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return block.body if isinstance(block, cst.IndentedBlock) else [block]


def classify(stmt: cst.CSTNode) -> str:
    """PURE: defines things only (stays); EXEC: runs code (moves); MIXED: a line with both."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return PURE
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        kinds = {_small_kind(s) for s in stmt.body}
        if kinds == {PURE}:
            return PURE
        if PURE in kinds and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            return MIXED
        return EXEC
    if isinstance(stmt, cst.If) and not is_main_guard(stmt):
        parts: List[cst.CSTNode] = list(_block_statements(stmt.body))
        orelse = stmt.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                parts += list(_block_statements(orelse.body))
                orelse = orelse.orelse
            else:
                parts += list(_block_statements(orelse.body))
                orelse = None
        return PURE if _constant(stmt.test) and all(classify(p) == PURE for p in parts) else EXEC
    if isinstance(stmt, cst.Try):
        parts = list(_block_statements(stmt.body))
        for h in stmt.handlers:
            parts += list(_block_statements(h.body))
        if stmt.orelse is not None:
            parts += list(_block_statements(stmt.orelse.body))
        if stmt.finalbody is not None:
            parts += list(_block_statements(stmt.finalbody.body))
        return PURE if all(classify(p) == PURE for p in parts) else EXEC
    return EXEC


# --------------------------------------------------------------------------------------------------
# the plan


# --------------------------------------------------------------------------------------------------
# module-level names: who binds and who reads them, one top-level statement at a time
#
# libcst's ScopeProvider on the whole module says, for each module-level binding, which names read it:
# a read at module level reads the bindings before it, a read inside a def, class, lambda or
# comprehension reads every binding of the name. What one statement binds and reads is the
# statement's own business, except for two things the rest of the module decides: whether a name is
# bound at module level at all, and which dotted names (``import a.b``) are, which decides what
# ``a.b.c`` reads. So each statement is resolved in a module of its own, after one ``import x`` for
# every identifier it holds (every module-level read then shows as a read of that stand-in) and for
# every dotted name the other statements bind whose parts it holds. What it binds, which names it
# reads at module level and which from inside, and which of its module-level reads read its own
# earlier binding, are kept by the statement's code (the language server sees the same statements
# again after an edit elsewhere); the module's facts combine them in order.
# tests/test_main_guard_names.py compares them with the whole module's ScopeProvider.


class StatementNames(NamedTuple):
    binds: FrozenSet[str]  # module-level names the statement binds
    nested: FrozenSet[str]  # names read from inside a def / class / lambda / comprehension, resolved to module level
    ordered: FrozenSet[str]  # names read at module level
    own: FrozenSet[str]  # names read at module level after the statement's own binding of them


_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_NOT_NAMES = frozenset(keyword.kwlist) | {"__debug__"}  # not importable names
# code -> (the dotted names it was resolved with, its names, and for a symbol-table reading the names
# ScopeProvider may read outward from it: ``_definition_names``; None for ScopeProvider's reading)
_NAMES: "OrderedDict[str, Tuple[FrozenSet[str], StatementNames, Optional[FrozenSet[str]]]]" = OrderedDict()
NAMES_KEPT = 4096  # statements remembered (least recently used first out)


def _owners(stmts: Sequence[cst.CSTNode], first: int) -> Dict[int, int]:
    """id(node) -> index of the statement holding it (``first`` for ``stmts[0]``)."""
    out: Dict[int, int] = {}
    for i, stmt in enumerate(stmts, first):
        stack = [stmt]
        while stack:
            n = stack.pop()
            out[id(n)] = i
            push_children(n, stack)
    return out


def _import(name: str) -> cst.SimpleStatementLine:
    """``import <name>`` (a dotted name too)."""
    parts = name.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=expr)])])  # type: ignore[arg-type]


def _dotted_for(dotted: FrozenSet[str], idents: FrozenSet[str]) -> FrozenSet[str]:
    return frozenset(d for d in dotted if all(p in idents for p in d.split(".")))


def _resolve(module: cst.Module, stmts: List[cst.BaseStatement], idents: Set[str], dotted: Set[str]) -> List[StatementNames]:
    """The names of ``stmts`` (resolved together, after the stand-in imports)."""
    from libcst.metadata import MetadataWrapper, ScopeProvider

    stubs = [_import(n) for n in sorted(idents) + sorted(dotted)]  # built, not parsed
    stub_ids = {id(s.body[0]) for s in stubs}
    alone = module.with_changes(header=(), body=tuple(stubs) + tuple(stmts), footer=())
    scopes = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(ScopeProvider)
    g = scopes[alone]
    owner = _owners(stmts, 0)
    n = len(stmts)
    binds: List[Set[str]] = [set() for _ in range(n)]
    nested: List[Set[str]] = [set() for _ in range(n)]
    ordered: List[Set[str]] = [set() for _ in range(n)]
    own: List[Set[str]] = [set() for _ in range(n)]
    for asg in g.assignments:
        node = getattr(asg, "node", None)
        if node is None:
            continue
        if id(node) in stub_ids:
            for ref in asg.references:
                u = owner.get(id(ref.node))
                if u is not None:
                    (ordered if ref.scope is g else nested)[u].add(asg.name)
            continue
        b = owner.get(id(node))
        if b is None:
            continue
        binds[b].add(asg.name)
        for ref in asg.references:
            if ref.scope is g and owner.get(id(ref.node)) == b:
                own[b].add(asg.name)
    return [
        StatementNames(frozenset(binds[i]), frozenset(nested[i]), frozenset(ordered[i]), frozenset(own[i]))
        for i in range(n)
    ]


def _declined(tree: ast.AST) -> bool:
    """Whether the symbol table's reading of this code may differ from ScopeProvider's in a way
    ``_read_outward`` does not cover: a ``global`` / ``nonlocal`` statement or an assignment
    expression (a binding outside the scope it is written in); a private ``__name`` (the symbol table
    has it mangled inside a class, ScopeProvider not); a string ScopeProvider parses as code and
    reads names in (in an annotation, in a subscript of a capitalised name such as ``List["Item"]``,
    an argument of ``cast`` / ``TypeVar`` / ``NewType``)."""

    def has_str(n: Optional[ast.AST]) -> bool:
        return n is not None and any(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in ast.walk(n))

    def private(name: Optional[str]) -> bool:
        return bool(name) and name.startswith("__") and not name.endswith("__")  # type: ignore[union-attr]

    for n in ast.walk(tree):
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.NamedExpr)):
            return True
        if isinstance(n, ast.Name):
            if private(n.id):
                return True
        elif isinstance(n, ast.arg):
            if private(n.arg) or has_str(n.annotation):
                return True
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if private(n.name) or has_str(getattr(n, "returns", None)):
                return True
        elif isinstance(n, ast.alias):
            if private(n.asname or n.name):
                return True
        elif isinstance(n, ast.AnnAssign):
            if has_str(n.annotation):
                return True
        elif isinstance(n, ast.Subscript):
            v = n.value
            last = v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else ""
            if last[:1].isupper() and has_str(n.slice):
                return True
        elif isinstance(n, ast.Call):
            f = n.func
            last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if last in ("cast", "TypeVar", "NewType") and any(has_str(a) for a in (*n.args, *n.keywords)):
                return True
    return False


def _definition_names(code: str) -> Optional[Tuple[StatementNames, FrozenSet[str]]]:
    """(``StatementNames``, the names ScopeProvider may read outward: ``_read_outward``) of a
    ``def`` / ``class`` statement (its code alone, ``code_for_node``) from CPython's symbol table
    instead of libcst's ScopeProvider, which takes ~50 ms on a 300-line class: the one statement an
    edit in the language server changed. What its name binds, the names read at module level
    (decorators, defaults, annotations, bases: the statement's top scope), and those its functions,
    class body, lambdas and comprehensions read that resolve to module level. The two readings
    differ where ScopeProvider resolves a name an inner scope binds to module level as well (it
    orders a scope's bindings and reads: a parameter read before it is rebound, ``x = x + 1``), so
    a caller uses this reading only while no top-level statement (itself included) binds one of
    those names (``statement_names``). None where the symbol table cannot tell: a syntax error, what
    ``_declined`` lists, type-parameter and annotation scopes (Python 3.12+ / 3.14).
    ``tests/test_main_guard_names.py`` compares both readings on the fixtures, the corpus and edits."""
    if sys.version_info >= (3, 14):
        return None  # annotations move into scopes of their own
    try:
        tree = ast.parse(code)
        if _declined(tree):
            return None
        top = symtable.symtable(code, "<statement>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    binds: Set[str] = set()
    ordered: Set[str] = set()
    nested: Set[str] = set()
    for sym in top.get_symbols():
        name = sym.get_name()
        if sym.is_assigned() or sym.is_imported():
            binds.add(name)
        if sym.is_referenced():
            ordered.add(name)
    todo = list(top.get_children())
    while todo:
        t = todo.pop()
        if t.get_type() not in ("function", "class"):
            return None  # an annotation or type-parameter scope
        for sym in t.get_symbols():
            if sym.is_global() and sym.is_referenced():
                nested.add(sym.get_name())
        todo.extend(t.get_children())
    # ``own`` stays empty: ScopeProvider records a def / class name before its decorators, defaults
    # and bases are read, and does not resolve a read to an assignment of the same moment
    names = StatementNames(frozenset(binds), frozenset(nested), frozenset(ordered), frozenset())
    return names, frozenset(_read_outward(tree))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _read_outward(tree: ast.AST) -> Set[str]:
    """The names that ScopeProvider may also resolve outside the inner scope that binds them: a
    read in a function or class body of a name that the same scope binds in that statement or a
    later one (``if root is None: root = ...`` with a parameter ``root``; ``y = x; x = 2``;
    ``x = x + 1``; ``del x``), the statements taken in source order, a block's test before its
    body; and, in a comprehension with several ``for`` clauses, a target name used twice. Measured
    against libcst on small programs (``tests/test_main_guard_names.py``)."""
    out: Set[str] = set()
    scopes: List[ast.AST] = [n for n in ast.iter_child_nodes(tree) if isinstance(n, _SCOPES)]
    while scopes:
        sc = scopes.pop()
        reads: Dict[str, int] = {}  # name -> first statement reading it
        binds: Dict[str, int] = {}  # name -> last statement binding it
        order = 0
        if not isinstance(sc, ast.ClassDef):
            a = sc.args  # type: ignore[attr-defined]
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None:
                    binds[arg.arg] = 0
        body = sc.body if isinstance(sc.body, list) else [sc.body]  # type: ignore[attr-defined]
        todo: List[Tuple[ast.AST, int]] = []
        for st in reversed(body):
            todo.append((st, -1))
        while todo:
            n, at = todo.pop()
            if at < 0:  # a statement: the next number
                order += 1
                at = order
            if isinstance(n, _SCOPES) and n is not sc:
                scopes.append(n)
                if not isinstance(n, ast.Lambda):
                    binds[n.name] = max(binds.get(n.name, 0), at)
                heads: List[ast.AST] = list(getattr(n, "decorator_list", ()))
                if isinstance(n, ast.ClassDef):
                    heads += [*n.bases, *(k.value for k in n.keywords)]
                else:  # defaults and annotations are read where the def is
                    a = n.args
                    heads += [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
                    if not isinstance(n, ast.Lambda):
                        params = (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                        heads += [x.annotation for x in params if x is not None and x.annotation is not None]
                        heads += [n.returns] if n.returns is not None else []
                todo.extend((h, at) for h in heads)
                continue
            if isinstance(n, _COMPREHENSIONS):
                targets = [t.id for g in n.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)]
                if len(targets) != len(set(targets)):
                    out.update(targets)
                todo.append((n.generators[0].iter, at))  # evaluated in this scope
                continue
            if isinstance(n, ast.Name):
                if isinstance(n.ctx, ast.Load) or isinstance(n.ctx, ast.Del):
                    reads.setdefault(n.id, at)
                if isinstance(n.ctx, (ast.Store, ast.Del)):
                    binds[n.id] = max(binds.get(n.id, 0), at)
                continue
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    binds[(alias.asname or alias.name).split(".")[0]] = at
                continue
            if isinstance(n, ast.ExceptHandler) and n.name:
                binds[n.name] = max(binds.get(n.name, 0), at)
            children = list(ast.iter_child_nodes(n))
            for c in reversed(children):
                todo.append((c, -1 if isinstance(c, ast.stmt) else at))
        out.update(x for x, first in reads.items() if x in binds and binds[x] >= first)
    return out


def _dotted_imports(stmt: cst.CSTNode) -> Set[str]:
    """The dotted names (``a.b`` of ``import a.b.c``) a statement binds at module level: its
    ``import`` statements outside defs and classes (libcst binds every prefix of an import without
    ``as``). A guess, checked against the resolved bindings."""
    out: Set[str] = set()
    stack = [stmt]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(n, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in n.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.asname is None and isinstance(alias.name, cst.Attribute):
                            parts = (get_full_name_for_node(alias.name) or "").split(".")
                            out.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
            continue
        for name in ("body", "orelse", "handlers", "finalbody", "cases"):
            v = getattr(n, name, None)
            if isinstance(v, cst.CSTNode):
                stack.append(v)
            elif isinstance(v, (tuple, list)):
                stack.extend(c for c in v if isinstance(c, cst.CSTNode))
    return out


def statement_names(module: cst.Module, codes: Optional[Sequence[str]] = None) -> List[StatementNames]:
    """``StatementNames`` of each top-level statement, remembered by the statement's code
    (``codes``: each statement's ``module.code_for_node``, when the caller has them)."""
    body = list(module.body)
    if codes is None:
        codes = [module.code_for_node(s) for s in body]
    idents = [frozenset(n for n in _IDENTIFIER.findall(c) if n.isidentifier()) - _NOT_NAMES for c in codes]
    got: List[Optional[StatementNames]] = [None] * len(body)
    used: List[FrozenSet[str]] = [frozenset()] * len(body)  # the dotted names it was resolved with
    inner: Dict[int, FrozenSet[str]] = {}  # statement -> names read outward, for symbol-table readings
    for i, code in enumerate(codes):
        hit = _NAMES.get(code)
        if hit is not None:
            used[i], got[i], outward = hit
            if outward is not None:
                inner[i] = outward
            _NAMES.move_to_end(code)
    todo = [i for i, f in enumerate(got) if f is None]
    guess = {d for f in got if f is not None for d in f.binds if "." in d}
    for i in todo:
        guess |= _dotted_imports(body[i])
    fresh: Set[int] = set()
    for i in list(todo):  # definitions: the symbol table, checked against ScopeProvider's reading below
        if isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) and not _dotted_for(frozenset(guess), idents[i]):
            f = _definition_names(codes[i])
            if f is not None:
                got[i], used[i], inner[i] = f[0], frozenset(), f[1]
                fresh.add(i)
                todo.remove(i)
    for _ in range(4):  # resolved with other dotted names than the module binds: once more
        if todo:
            found = _resolve(module, [body[i] for i in todo], set().union(*(idents[i] for i in todo)), guess)
            for i, f in zip(todo, found):
                got[i], used[i] = f, _dotted_for(frozenset(guess), idents[i])
                inner.pop(i, None)
                fresh.add(i)
        bound = {x for f in got if f is not None for x in f.binds}
        # a symbol-table reading is ScopeProvider's while no top-level statement binds a name its
        # inner scopes may read outward (``_definition_names``)
        clash = [i for i, names in inner.items() if any(x in bound for x in names)]
        dotted = frozenset(d for f in got if f is not None for d in f.binds if "." in d)
        todo = sorted({i for i in range(len(body)) if used[i] != _dotted_for(dotted, idents[i])} | set(clash))
        guess = set(dotted)
        if not todo:
            break
    else:  # pragma: no cover - the dotted names and the symbol-table readings settle in three rounds
        raise RuntimeError("module-level dotted names did not settle")
    for i in fresh:
        _NAMES[codes[i]] = (used[i], got[i], inner.get(i))
    while len(_NAMES) > NAMES_KEPT:
        _NAMES.popitem(last=False)
    return got  # type: ignore[return-value]


def module_names(
    module: cst.Module, codes: Optional[Sequence[str]] = None
) -> Tuple[Dict[int, Set[int]], Dict[int, Set[str]], Dict[int, Set[str]]]:
    """(deps, binds, reads) by top-level statement index: the statements whose bindings a statement
    reads, the module-level names it binds, and the module-level names it reads that some
    statement binds (reads inside its defs included)."""
    try:
        names = statement_names(module, codes)
    except (cst.CSTValidationError, RecursionError):  # a stand-in libcst does not take: the whole module
        return whole_module_names(module)
    n = len(names)
    deps: Dict[int, Set[int]] = {i: set() for i in range(n)}
    binds: Dict[int, Set[str]] = {i: set(f.binds) for i, f in enumerate(names)}
    reads: Dict[int, Set[str]] = {i: set(f.own) for i, f in enumerate(names)}
    binders: Dict[str, List[int]] = {}
    for i, f in enumerate(names):
        for x in f.binds:
            binders.setdefault(x, []).append(i)
    for u, f in enumerate(names):
        for x in f.nested:
            bs = binders.get(x)
            if bs:
                reads[u].add(x)
                deps[u].update(b for b in bs if b != u)
        for x in f.ordered:
            bs = [b for b in binders.get(x, ()) if b < u]
            if bs:
                reads[u].add(x)
                deps[u].update(bs)
    return deps, binds, reads


def whole_module_names(module: cst.Module) -> Tuple[Dict[int, Set[int]], Dict[int, Set[str]], Dict[int, Set[str]]]:
    """``module_names`` from libcst's ScopeProvider on the whole module at once (nothing remembered)."""
    from libcst.metadata import MetadataWrapper, ScopeProvider

    body = list(module.body)
    owner = _owners(body, 0)
    g = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)[module]
    deps: Dict[int, Set[int]] = {i: set() for i in range(len(body))}
    binds: Dict[int, Set[str]] = {i: set() for i in range(len(body))}
    reads: Dict[int, Set[str]] = {i: set() for i in range(len(body))}
    for asg in g.assignments:
        b = owner.get(id(getattr(asg, "node", None)), -1)
        if b < 0:
            continue
        binds[b].add(asg.name)
        for ref in asg.references:
            u = owner.get(id(ref.node), -1)
            if u >= 0:
                reads[u].add(asg.name)
            if u >= 0 and u != b:
                deps[u].add(b)
    return deps, binds, reads


def plan_main_guard(a: Analysis, starting: Sequence[cst.CSTNode]) -> GuardPlan:
    """Which top-level statements move under the guard, or why the fix is refused."""
    body = list(a.module.body)
    index = {id(s): i for i, s in enumerate(body)}
    start_idx = {index[id(s)] for s in starting if id(s) in index}
    guards = [i for i, s in enumerate(body) if is_main_guard(s)]
    if any(body[g].orelse is not None for g in guards):
        return GuardPlan(False, reason="the __main__ guard has an else branch")
    kinds = [classify(s) if i not in guards else PURE for i, s in enumerate(body)]
    for i in start_idx:
        kinds[i] = EXEC if kinds[i] == PURE else kinds[i]

    # who binds and who reads each module-level name (reads inside functions included)
    try:
        deps, binds, reads = module_names(a.module, a.statement_codes)
    except Exception:  # pragma: no cover - libcst's scope analysis gave up on this module
        return GuardPlan(False, reason="the module's names could not be resolved")

    # kept: pure statements, what they need, and what runs before a kept executable statement
    kept = {i for i, k in enumerate(kinds) if k == PURE}
    guard_set = set(guards)
    changed = True
    while changed:
        changed = False
        for i in sorted(kept - guard_set):
            for b in deps[i]:
                if b not in kept and b not in guard_set:
                    kept.add(b)
                    changed = True
        needed = [i for i in kept if kinds[i] != PURE]
        last = max(needed, default=-1)
        for i in range(last):
            if i not in kept and i not in start_idx and i not in guard_set:
                kept.add(i)
                changed = True
        if any(i in start_idx for i in kept):
            return GuardPlan(False, reason="a statement that starts workers is needed at module level")
    moved = [i for i in range(len(body)) if i not in kept and i not in guard_set]
    if any(k > m and k not in guard_set and reads[m] & binds[k] for m in moved for k in kept):
        # moving a statement past a later rebinding of a name it reads would change what it reads
        # (``batch_size = 4; loader = DataLoader(..., batch_size=batch_size); ...; batch_size = 8``):
        # move everything from the first moved statement on instead, in order
        tail = [i for i in range(moved[0], len(body)) if i not in guard_set]
        needed = {b for k in kept if k < moved[0] or isinstance(body[k], (cst.FunctionDef, cst.ClassDef))
                  for b in deps[k]}
        for i in tail:
            if isinstance(body[i], (cst.FunctionDef, cst.ClassDef)) or i in needed:
                return GuardPlan(
                    False,
                    reason="a later module-level statement rebinds a name the moved code reads, and a "
                    "definition after it must stay at module level",
                )
        moved = tail
        kept = set(range(len(body))) - set(moved) - guard_set
    for m in moved:
        if kinds[m] == MIXED:
            return GuardPlan(False, reason="an import shares its line with code that must move")
        for k in kept:
            if k > m and k not in guard_set and binds[m] & binds[k]:
                return GuardPlan(False, reason="a moved statement rebinds a name a later kept statement binds")
            if k > m and kinds[k] != PURE:
                return GuardPlan(False, reason="a statement that starts workers runs before code that stays")
    if not moved:
        return GuardPlan(False, reason="nothing to move")
    return GuardPlan(True, moved)


# --------------------------------------------------------------------------------------------------
# the rewrite


def _blank(line: cst.EmptyLine) -> bool:
    return line.comment is None


def _guard_lines(lines: Sequence[cst.EmptyLine], first: bool) -> List[cst.EmptyLine]:
    """Leading lines of a statement moved into the guard's block: comments indented with the block,
    blank lines without trailing whitespace, at most one blank line in a row, none first."""
    out: List[cst.EmptyLine] = []
    for line in lines:
        if _blank(line):
            if first and not any(not _blank(x) for x in out):
                continue
            if out and _blank(out[-1]):
                continue
            out.append(line.with_changes(indent=False, whitespace=cst.SimpleWhitespace("")))
        else:
            out.append(line.with_changes(indent=True))
    if first:
        while out and _blank(out[0]):
            out.pop(0)
    return out


def _blank_count(lines: Sequence[cst.EmptyLine]) -> int:
    n = 0
    for line in lines:
        if not _blank(line):
            break
        n += 1
    return n


def _quote(module: cst.Module) -> str:
    counts = {'"': 0, "'": 0}

    class V(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            q = node.value.lstrip("rRbBuUfF")[:1]
            if q in counts:
                counts[q] += 1

    module.visit(V())
    return "'" if counts["'"] > counts['"'] else '"'


def _indented(block: cst.BaseSuite) -> cst.IndentedBlock:
    """``if __name__ == "__main__": main()`` on one line becomes an indented block."""
    if isinstance(block, cst.IndentedBlock):
        return block
    assert isinstance(block, cst.SimpleStatementSuite)
    smalls = list(block.body)
    smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    line = cst.SimpleStatementLine(body=smalls, trailing_whitespace=block.trailing_whitespace)
    return cst.IndentedBlock(body=[line])


def apply_main_guard(a: Analysis, plan: GuardPlan) -> cst.Module:
    module = a.module
    if not plan.fixable or not plan.moved:
        return module
    body = list(module.body)
    moved = set(plan.moved)
    guards = [i for i, s in enumerate(body) if is_main_guard(s)]

    # where each moved statement goes: the first guard after it, else the end of the last guard
    top_of: Dict[int, List[int]] = {g: [] for g in guards}
    end_of: List[int] = []
    for m in plan.moved:
        after = [g for g in guards if g > m]
        if after:
            top_of[after[0]].append(m)
        else:
            end_of.append(m)

    def moved_block(indices: List[int], first: bool) -> List[cst.BaseStatement]:
        out = []
        for n, i in enumerate(indices):
            s = body[i]
            out.append(s.with_changes(leading_lines=_guard_lines(s.leading_lines, first and n == 0)))
        return out

    new_body: List[cst.BaseStatement] = []
    pending_blanks = 0  # blank lines of removed statements, given to the next kept statement
    last_guard = guards[-1] if guards else None
    for i, s in enumerate(body):
        if i in moved:
            if pending_blanks == 0:
                pending_blanks = _blank_count(s.leading_lines)
            continue
        if pending_blanks and _blank_count(s.leading_lines) < pending_blanks and new_body:
            extra = pending_blanks - _blank_count(s.leading_lines)
            s = s.with_changes(leading_lines=[cst.EmptyLine()] * extra + list(s.leading_lines))
        pending_blanks = 0
        if i in top_of:
            block = _indented(s.body)
            stmts = moved_block(top_of[i], True) + list(block.body)
            if i == last_guard and end_of:
                stmts += moved_block(end_of, False)
            s = s.with_changes(body=block.with_changes(body=stmts))
        new_body.append(s)

    if last_guard is None:
        stmts = moved_block(end_of, True)
        prev = new_body[-1] if new_body else None
        if prev is None:
            blanks = 0
        elif isinstance(prev, (cst.FunctionDef, cst.ClassDef)):
            blanks = 2
        else:
            blanks = min(max(1, _blank_count(body[plan.moved[0]].leading_lines)), 2)
        q = _quote(module)
        guard = cst.If(
            test=cst.parse_expression(f"__name__ == {q}__main__{q}"),
            body=cst.IndentedBlock(body=stmts),
            leading_lines=[cst.EmptyLine()] * blanks,
        )
        new_body.append(guard)
    return module.with_changes(body=new_body)
