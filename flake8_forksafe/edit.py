"""Generic libcst editing shared by the fixes: module-level names and imports, statements built
from text, comments and blank lines around moved lines."""

from __future__ import annotations

import re
import sys
from typing import Dict, List, Optional, Sequence, Set, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from flake8_forksafe.analysis import FuncInfo, dotted, is_docstring, push_children


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


def local_import(fn: Optional[FuncInfo], head: str) -> Optional[cst.BaseSmallStatement]:
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


# modules of the standard library, for placing an added import in its isort group (Python 3.10+
# knows them; 3.9 falls back to the ones this project's fixes add or files commonly import)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) or frozenset(
    "__future__ abc argparse array ast asyncio base64 bisect builtins collections concurrent contextlib copy csv "
    "ctypes dataclasses datetime decimal enum functools gc glob gzip hashlib heapq io itertools json logging "
    "math mmap multiprocessing operator os pathlib pickle platform queue random re shutil signal socket "
    "sqlite3 string struct subprocess sys tempfile threading time traceback types typing unittest urllib "
    "uuid warnings weakref zipfile zlib".split()
)
FUTURE, STDLIB, THIRD, FIRST = 0, 1, 2, 3


def _import_module(small: Union[cst.Import, cst.ImportFrom]) -> str:
    if isinstance(small, cst.Import):
        return dotted(small.names[0].name) or ""
    return ("." * len(small.relative)) + (dotted(small.module) or "") if small.module is not None else "." * len(
        small.relative
    )


def _section(small: Union[cst.Import, cst.ImportFrom]) -> int:
    mod = _import_module(small)
    if mod.startswith("."):
        return FIRST
    top = mod.split(".")[0]
    if top == "__future__":
        return FUTURE
    return STDLIB if top in _STDLIB else THIRD


def _import_line(s: cst.CSTNode) -> Optional[Union[cst.Import, cst.ImportFrom]]:
    """The import of a top-level line that holds imports only (its first one), else None."""
    if isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
        return s.body[0]  # type: ignore[return-value]
    return None


def _all_bindings(module: cst.Module) -> Dict[str, List[cst.CSTNode]]:
    """Every binding of every name, in every scope: name -> the nodes that bind it (an import's
    bindings: the Import/ImportFrom node). The names libcst's ScopeProvider records as assignments
    (imports, defs, classes, parameters, type parameters, and the names its ExpressionContextProvider
    says are stored: targets of assignments, ``for``, comprehensions, ``:=``, ``as``), found by one
    direct walk of the tree instead of the scope analysis (which costs about 20x more);
    ``tests/test_edit_imports.py`` compares the two on every fixture and corpus file. Cached for
    the last module asked (``ensure_imports`` asks twice per name)."""
    last = _BINDINGS[0]
    if last is not None and last[0] is module:
        return last[1]
    out: Dict[str, List[cst.CSTNode]] = {}
    memo = _STMT_BINDINGS[0]
    kept: Dict[int, tuple] = {}
    for st in module.body:  # each statement's own, remembered by the statement object
        got = memo.get(id(st))
        if got is None or got[0] is not st:
            got = (st, _bindings_of(st))
        kept[id(st)] = got
        for name, nodes in got[1].items():
            out.setdefault(name, []).extend(nodes)
    _STMT_BINDINGS[0] = kept  # the statements of the last module asked only
    _BINDINGS[0] = (module, out)
    return out


def _bindings_of(top: cst.CSTNode) -> Dict[str, List[cst.CSTNode]]:
    """``_all_bindings`` of one top-level statement."""
    out: Dict[str, List[cst.CSTNode]] = {}

    def add(name: str, node: cst.CSTNode) -> None:
        out.setdefault(name, []).append(node)

    kinds = _BIND_KINDS

    def store(target: cst.CSTNode) -> None:  # the names a target expression stores
        todo = [target]
        while todo:
            t = todo.pop()
            k = kinds.get(type(t))
            if k is None:
                k = _bind_kind(type(t))
            if k == _NAME:
                add(t.value, t)  # type: ignore[attr-defined]
            elif k != _READ_VALUE:  # an attribute's or subscript's value and slice are read
                push_children(t, todo)

    stack: List[cst.CSTNode] = [top]
    while stack:
        n = stack.pop()
        k = kinds.get(type(n))
        if k is None:
            k = _bind_kind(type(n))
        if k == _OTHER or k == _NAME:
            push_children(n, stack)
        elif k == _IMPORT:
            if not isinstance(n.names, cst.ImportStar):  # type: ignore[attr-defined]
                for alias in n.names:  # type: ignore[attr-defined]
                    named = alias.asname.name if alias.asname is not None else alias.name
                    for dotted_name in _dotted_prefixes(named):
                        add(dotted_name, n)
            # nothing under an import is visited
        elif k == _NAMED:
            add(n.name.value, n)  # type: ignore[attr-defined]
            push_children(n, stack)
        elif k == _ASSIGN:
            for t in n.targets:  # type: ignore[attr-defined]
                store(t.target)
            push_children(n, stack)
        elif k == _TARGET:
            store(n.target)  # type: ignore[attr-defined]
            push_children(n, stack)
        elif k == _AS:
            store(n.name)  # type: ignore[attr-defined]
            push_children(n, stack)
        elif k == _READ_VALUE and isinstance(n, cst.Subscript):
            push_children(n, stack)
        else:  # an attribute's name, a keyword argument's name: neither bound nor read
            stack.append(n.value)  # type: ignore[attr-defined]
    return out


_BINDINGS: List[Optional[tuple]] = [None]  # (module, its bindings): the last module asked
# id(statement) -> (the statement, its bindings), for the statements of the last module asked: the
# statements a fix round or an edit did not replace are the same objects in the next module (the
# language server's parses re-use them too)
_STMT_BINDINGS: List[Dict[int, tuple]] = [{}]

# what _all_bindings does with a node, by its type (isinstance on libcst's classes is slow)
_OTHER, _NAME, _IMPORT, _NAMED, _ASSIGN, _TARGET, _AS, _READ_VALUE = range(8)
_BIND_KINDS: Dict[type, int] = {}


def _bind_kind(t: type) -> int:
    if issubclass(t, cst.Name):
        k = _NAME
    elif issubclass(t, (cst.Import, cst.ImportFrom)):
        k = _IMPORT
    elif issubclass(t, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.TypeAlias, cst.TypeVar, cst.TypeVarTuple, cst.ParamSpec)):
        k = _NAMED
    elif issubclass(t, cst.Assign):
        k = _ASSIGN
    elif issubclass(t, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.CompFor, cst.For)):
        k = _TARGET
    elif issubclass(t, cst.AsName):
        k = _AS
    elif issubclass(t, (cst.Attribute, cst.Subscript, cst.Arg)):
        k = _READ_VALUE
    else:
        k = _OTHER
    _BIND_KINDS[t] = k
    return k


def _dotted_prefixes(node: cst.CSTNode) -> List[str]:
    """``a.b.c`` -> ["a.b.c", "a.b", "a"] (libcst's names for what ``import a.b.c`` binds)."""
    full = dotted(node) or ""
    if not full:
        return []
    parts = full.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _all_names(module: cst.Module) -> Set[str]:
    names: Set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    module.visit(V())
    return names


def import_binding(module: cst.Module, name: str) -> Optional[str]:
    """The name under which a top-level, unconditional import of module ``name`` can be used by
    added code: ``name`` itself when ``import name`` (or ``import name.sub``) binds it and nothing
    else binds or shadows it anywhere in the file; an alias ``import name as X`` that nothing else
    binds; None when added code needs a new import."""
    bindings = _all_bindings(module)
    if "*" in bindings:
        return None
    for s in module.body:
        small = _import_line(s)
        if small is None or not isinstance(small, cst.Import):
            continue
        for stmt_small in s.body:  # type: ignore[attr-defined]
            for alias in stmt_small.names:
                mod = dotted(alias.name) or ""
                if alias.asname is None and (mod == name or mod.startswith(name + ".")):
                    bound = name
                elif alias.asname is not None and mod == name and isinstance(alias.asname.name, cst.Name):
                    bound = alias.asname.name.value
                else:
                    continue
                others = [n for n in bindings.get(bound, []) if not _is_import_of(n, name)]
                if not others:
                    return bound
    return None


def _is_import_of(node: Optional[cst.CSTNode], name: str) -> bool:
    if isinstance(node, cst.Import):
        return any((dotted(a.name) or "").split(".")[0] == name for a in node.names)
    return False


def free_name(module: cst.Module, name: str) -> str:
    """``name`` when nothing in the file binds it, else ``_name`` (``_name_``, ... until free)."""
    bindings = _all_bindings(module)
    if name not in bindings and "*" not in bindings:
        return name
    used = _all_names(module)
    alias = "_" + name
    while alias in used:
        alias += "_"
    return alias


def ensure_imports(module: cst.Module, names: Sequence[str]) -> cst.Module:
    """Make each module in ``names`` importable by added code: reuse a top-level import that binds
    it (``import os``, ``import os.path``, ``import os, lmdb``, ``import os as X``); else add
    ``import NAME`` -- or ``import NAME as _NAME`` when the file binds or shadows NAME anywhere --
    where isort would put it: in its section (future / stdlib / third party / first party), in the
    file's order within it, a new section separated by one blank line. Added code that says
    ``NAME.`` is pointed at the alias by ``retarget_imports``."""
    for name in names:
        if import_binding(module, name) is not None:
            continue
        asname = free_name(module, name)
        alias = cst.ImportAlias(
            name=_name_expr(name), asname=None if asname == name else cst.AsName(name=cst.Name(asname))
        )
        module = _insert_import(module, cst.SimpleStatementLine(body=[cst.Import(names=[alias])]))
    return module


def _sort_key(small: Union[cst.Import, cst.ImportFrom]) -> str:
    return _import_module(small).lower()


def _insert_import(module: cst.Module, line: cst.SimpleStatementLine) -> cst.Module:
    body = list(module.body)
    new = line.body[0]
    assert isinstance(new, cst.Import)
    section = _section(new)
    # the leading block of imports: (index, import) pairs, and the sections of the blank-line groups
    start = 1 if body and is_docstring(body[0]) else 0
    block: List[int] = []
    for i in range(start, len(body)):
        if _import_line(body[i]) is None:
            break
        block.append(i)
    if not block:
        at = start
        lead: List[cst.EmptyLine] = [cst.EmptyLine()] if start and at < len(body) + 1 else []
        if at < len(body):
            nxt = body[at]
            want = 2 if isinstance(nxt, (cst.FunctionDef, cst.ClassDef)) else 1
            lead_next = list(nxt.leading_lines)
            if start == 0:  # the new import takes the file's header comments
                lead, lead_next = lead_next, []
            blanks = _leading_blanks(lead_next)
            if blanks < want:
                lead_next = [cst.EmptyLine()] * (want - blanks) + lead_next
            body[at] = nxt.with_changes(leading_lines=lead_next)
        body.insert(at, line.with_changes(leading_lines=lead))
        return module.with_changes(body=body)
    groups: List[List[int]] = []
    for i in block:
        if not groups or _leading_blanks(body[i].leading_lines) > 0:
            groups.append([i])
        else:
            groups[-1].append(i)

    def group_section(g: List[int]) -> int:
        secs = [_section(_import_line(body[i])) for i in g]  # type: ignore[arg-type]
        return max(set(secs), key=secs.count)

    same = [g for g in groups if group_section(g) == section]
    if same:
        g = same[0]
        imports = [(i, _import_line(body[i])) for i in g]
        mixed = any(
            isinstance(a, cst.ImportFrom) and any(isinstance(b, cst.Import) for _, b in imports[n + 1:])
            for n, (_, a) in enumerate(imports)
        )  # the file sorts `from` and plain imports together (force_sort_within_sections)
        key = _sort_key(new)
        at = g[-1] + 1
        for i, small in imports:
            if not mixed and isinstance(small, cst.ImportFrom):
                at = i
                break
            if (mixed or isinstance(small, cst.Import)) and _sort_key(small) > key:  # type: ignore[arg-type]
                at = i
                break
        if at == g[0]:  # first of its group: it takes the group's leading lines
            body[at] = body[at].with_changes(leading_lines=[])
            body.insert(at, line.with_changes(leading_lines=list(module.body[at].leading_lines)))
        else:
            body.insert(at, line.with_changes(leading_lines=[]))
        return module.with_changes(body=body)
    # a new section: after the last group of a lower section, before the first of a higher one
    after = [g for g in groups if group_section(g) < section]
    if after:
        at = after[-1][-1] + 1
        body.insert(at, line.with_changes(leading_lines=[cst.EmptyLine()]))
        if at + 1 < len(body) and _leading_blanks(body[at + 1].leading_lines) == 0:
            body[at + 1] = body[at + 1].with_changes(leading_lines=[cst.EmptyLine(), *body[at + 1].leading_lines])
        return module.with_changes(body=body)
    at = groups[0][0]
    body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()])  # its comments stay above the block
    body.insert(at, line.with_changes(leading_lines=list(module.body[at].leading_lines)))
    return module.with_changes(body=body)


def _leading_blanks(lines: Sequence[cst.EmptyLine]) -> int:
    return sum(1 for x in lines if x.comment is None)


ADDED_IMPORTS = ("os", "torch", "functools")  # the modules fixes add imports of


def retarget_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """Point the code a fix added at the names its imports really have: in a file that binds or
    shadows ``os``, ``ensure_imports`` adds ``import os as _os``, and every ``os.`` on a line the
    fix added (or the added part of a line it changed) becomes ``_os.``. The file's own ``os.``
    is left alone."""
    import difflib

    aliased = set()  # cheap test first: only a top-level `import os as X` can call for a rename
    for s in after.body:
        if _import_line(s) is not None:
            for small in s.body:  # type: ignore[attr-defined]
                if isinstance(small, cst.Import):
                    aliased.update(dotted(a.name) for a in small.names if a.asname is not None)
    targets = {}
    for name in ADDED_IMPORTS:
        if name not in aliased:
            continue
        bound = import_binding(after, name)
        if bound is not None and bound != name:
            targets[name] = bound
    if not targets:
        return after
    old_lines = before.code.splitlines()
    new_lines = after.code.splitlines()
    wrapper = MetadataWrapper(after, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    uses: Dict[str, List[cst.Name]] = {n: [] for n in targets}
    line_of_use: Dict[int, int] = {}

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in targets:
                uses[node.value.value].append(node.value)
                line_of_use[id(node.value)] = positions[node.value].start.line

    after.visit(V())
    rename: Set[int] = set()
    sm = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag not in ("insert", "replace"):
            continue
        for name in targets:
            old_count = sum(len(re.findall(rf"\b{name}\.", line)) for line in old_lines[i1:i2])
            new_uses = [u for u in uses[name] if j1 < line_of_use[id(u)] <= j2]
            rename.update(id(u) for u in new_uses[old_count:] if len(new_uses) > old_count)

    if not rename:
        return after

    class T(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
            if id(original_node) in rename:
                return updated_node.with_changes(value=targets[original_node.value])
            return updated_node

    return after.visit(T())


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


def is_constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return is_constant(node.left) and is_constant(node.right)  # type: ignore[arg-type]
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return is_constant(node.expression)
    return False


def statement(code: str, module: cst.Module) -> cst.BaseStatement:
    return cst.parse_statement(code, config=module.config_for_parsing)


def small_statement(code: str, module: cst.Module) -> cst.BaseSmallStatement:
    line = statement(code, module)
    assert isinstance(line, cst.SimpleStatementLine)
    return line.body[0]


def comments_in(node: cst.CSTNode) -> List[cst.EmptyLine]:
    found: List[cst.EmptyLine] = []

    class V(cst.CSTVisitor):
        def visit_Comment(self, c: cst.Comment) -> None:
            found.append(cst.EmptyLine(comment=c))

    node.visit(V())
    return found


def line_comments(line: cst.SimpleStatementLine) -> List[cst.Comment]:
    """The comments above and at the end of a line (they move with the line into its property)."""
    out = [e.comment for e in line.leading_lines if e.comment is not None]
    if line.trailing_whitespace.comment is not None:
        out.append(line.trailing_whitespace.comment)
    return out


def with_blank_line(stmt: cst.BaseStatement) -> cst.BaseStatement:
    return stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])  # type: ignore[call-arg]


# --------------------------------------------------------------------------------------------------
# local imports a fix left unused


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip().rstrip(";").strip()


def _local_imports(module: cst.Module) -> Dict[tuple, bool]:
    """(function path, import code, bound name) -> whether the function (nested code included)
    reads the name, for every import inside a function body. One direct walk of the tree (defs in
    source order, as a visitor meets them) instead of libcst's visitor dispatch."""
    out: Dict[tuple, bool] = {}
    stack: List[tuple] = [(module, ())]
    while stack:
        n, path = stack.pop()
        k = _walk_kind(type(n))
        if k == _W_DEF or k == _W_CLASS:
            path = path + (n.name.value,)  # type: ignore[attr-defined]
        if k == _W_DEF:
            imports = _own_imports(n.body)  # type: ignore[attr-defined]
            if imports:
                names = _read_names(n.body)  # type: ignore[attr-defined]
                for imp in imports:
                    for name in _bound_by_import(imp):
                        head = name.split(".")[0]
                        out[(path, _code(imp), head)] = head in names
        if k == _W_EXPR or k == _W_ATTRIBUTE or k == _W_IMPORT:
            continue  # no def below (a lambda is not one)
        children: List[cst.CSTNode] = []
        push_children(n, children)
        stack.extend((c, path) for c in reversed(children))
    return out


# what the walks of _local_imports do with a node, by its type (isinstance on libcst's abstract
# classes is slow)
_W_OTHER, _W_DEF, _W_CLASS, _W_EXPR, _W_IMPORT, _W_NAME, _W_ARG, _W_ATTRIBUTE = range(8)
_WALK_KINDS: Dict[type, int] = {}


def _walk_kind(t: type) -> int:
    k = _WALK_KINDS.get(t)
    if k is None:
        if issubclass(t, cst.FunctionDef):
            k = _W_DEF
        elif issubclass(t, cst.ClassDef):
            k = _W_CLASS
        elif issubclass(t, cst.Name):
            k = _W_NAME
        elif issubclass(t, cst.Arg):
            k = _W_ARG
        elif issubclass(t, cst.Attribute):
            k = _W_ATTRIBUTE
        elif issubclass(t, cst.BaseExpression):
            k = _W_EXPR
        elif issubclass(t, (cst.Import, cst.ImportFrom)):
            k = _W_IMPORT
        else:
            k = _W_OTHER
        _WALK_KINDS[t] = k
    return k


def _own_imports(body: cst.CSTNode) -> List[Union[cst.Import, cst.ImportFrom]]:
    """The imports of a function's body, not those of the defs and classes nested in it, in order."""
    out: List[Union[cst.Import, cst.ImportFrom]] = []
    stack: List[cst.CSTNode] = [body]
    while stack:
        n = stack.pop()
        k = _walk_kind(type(n))
        if k == _W_IMPORT:
            if isinstance(n, cst.Import) or not isinstance(n.names, cst.ImportStar):  # type: ignore[attr-defined]
                out.append(n)  # type: ignore[arg-type]
            continue
        if k != _W_OTHER:  # a nested def or class, an expression (no import in it), an argument
            continue
        children: List[cst.CSTNode] = []
        push_children(n, children)
        stack.extend(reversed(children))
    return out


def _read_names(node: cst.CSTNode) -> Set[str]:
    """``_ReadNames``'s names, by a direct walk: every Name, except under imports, an attribute's
    name and a keyword argument's name."""
    names: Set[str] = set()
    stack: List[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        k = _walk_kind(type(n))
        if k == _W_NAME:
            names.add(n.value)  # type: ignore[attr-defined]
        elif k == _W_IMPORT:
            continue
        elif k == _W_ARG or k == _W_ATTRIBUTE:
            stack.append(n.value)  # type: ignore[attr-defined]
        else:
            push_children(n, stack)
    return names


def _changed_parts(before: cst.Module, after: cst.Module) -> "tuple[cst.Module, cst.Module]":
    """The top-level statements a fix replaced, on each side (the others are the same objects and
    read the same names): the modules ``_local_imports`` needs to compare. Both whole when a
    replaced def or class shares its name with a kept one (their keys would meet)."""
    kept = {id(s) for s in before.body} & {id(s) for s in after.body}
    old = [s for s in before.body if id(s) not in kept]
    new = [s for s in after.body if id(s) not in kept]
    kept_names = {getattr(getattr(s, "name", None), "value", None) for s in before.body if id(s) in kept}
    if any(getattr(getattr(s, "name", None), "value", None) in kept_names for s in old + new if isinstance(s, (cst.FunctionDef, cst.ClassDef))):
        return before, after
    return before.with_changes(body=old), after.with_changes(body=new)


def drop_orphaned_local_imports(before: cst.Module, after: cst.Module) -> cst.Module:
    """``after`` without the names of function-level imports that its function read in ``before``
    and no longer reads (a fix moved the code that used them, with its own copy of the import):
    the import is dropped, or just that name of it. An import line with a comment of its own stays."""
    if not isinstance(after, cst.Module):
        return after  # not a tree (the caller reports what it is)
    before_part, after_part = _changed_parts(before, after)
    old = _local_imports(before_part)
    if not any(old.values()):
        return after
    orphans = {k for k, used in _local_imports(after_part).items() if not used and old.get(k)}
    if not orphans:
        return after
    path: List[str] = []
    gone: Set[int] = set()

    def keep(small: cst.BaseSmallStatement) -> Optional[cst.BaseSmallStatement]:
        if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
            return small
        key = (tuple(path), _code(small))
        names = [a for a in small.names if key + (_bound_by_import(_one(small, a))[0].split(".")[0],) not in orphans]
        if len(names) == len(small.names):
            return small
        if not names:
            return None
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return small.with_changes(names=names)

    class T(cst.CSTTransformer):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            path.append(node.name.value)

        def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
            path.pop()
            return updated_node

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            path.append(node.name.value)

        def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
            path.pop()
            return updated_node

        def leave_SimpleStatementLine(
            self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
        ) -> cst.SimpleStatementLine:
            if not path or updated_node.trailing_whitespace.comment is not None:
                return updated_node
            body = [k for k in (keep(s) for s in updated_node.body) if k is not None]
            if len(body) == len(updated_node.body) and all(a is b for a, b in zip(body, updated_node.body)):
                return updated_node
            if not body:
                gone.add(id(original_node))
                return updated_node
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(body=body)

        def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
            if not any(id(s) in gone for s in original_node.body):
                return updated_node
            body: List[cst.BaseStatement] = []
            carry: List[cst.EmptyLine] = []
            dropped_first = False
            for i, (o, u) in enumerate(zip(original_node.body, updated_node.body)):
                if id(o) in gone:
                    carry += [e for e in u.leading_lines if e.comment is not None]
                    dropped_first = dropped_first or not body
                    continue
                lines = list(u.leading_lines)
                if dropped_first and not body:  # the block now starts here: no blank line after its header
                    lines = [e for e in lines if e.comment is not None]
                if carry or lines != list(u.leading_lines):
                    u = u.with_changes(leading_lines=carry + lines)
                    carry = []
                body.append(u)
            if not body:
                body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=carry)]
            return updated_node.with_changes(body=body)

    return after.visit(T())


def _one(small: Union[cst.Import, cst.ImportFrom], alias: cst.ImportAlias) -> Union[cst.Import, cst.ImportFrom]:
    one = alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if isinstance(small, cst.ImportFrom):
        return small.with_changes(names=[one], lpar=None, rpar=None)
    return small.with_changes(names=[one])


# --------------------------------------------------------------------------------------------------
# lines a fix made too long


def wrap_long_lines(module: cst.Module, lines: Set[int], width: int) -> str:
    """The code of ``module`` with each of ``lines`` (1-based) that is longer than ``width`` split as ruff's
    formatter splits it: the outermost call that starts and ends on the line gets its arguments on
    the next line, indented one level (one argument per line, with a trailing comma, when they do not
    fit on one), the closing parenthesis on a line of its own with what followed it (``,``, the
    comment); a line of a call that already spans lines breaks before the first argument that does
    not fit. Lines without such a call, or still too long, are left as they are."""
    src = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", module.code)  # libcst's lines, not str.splitlines
    long = {n for n in lines if 0 < n <= len(src) and len(src[n - 1].rstrip("\r\n")) > width}
    if not long:
        return module.code
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    best: Dict[int, cst.Call] = {}
    for node, pos in positions.items():
        if not isinstance(node, cst.Call) or not node.args or pos.start.line != pos.end.line:
            continue
        n = pos.start.line
        if n in long and (n not in best or pos.start.column < positions[best[n]].start.column):
            best[n] = node
    # a line inside a call that spans lines (aligned or hanging arguments): a break before the
    # first argument that does not fit, the rest aligned with the line's first argument
    split_at: Dict[int, List[int]] = {}
    for node, pos in positions.items():
        if not isinstance(node, cst.Call) or pos.start.line == pos.end.line:
            continue
        for n in long - set(best):
            on_line = [positions[a] for a in node.args if positions[a].start.line == n]
            if len(on_line) >= 2 and all(p.end.line == n for p in on_line):
                split_at[n] = [p.start.column for p in on_line]
    newline = module.default_newline
    for n, cols in split_at.items():
        raw = src[n - 1]
        line = raw.rstrip("\r\n")
        fits = [c for c in cols[1:] if len(line[:c].rstrip()) <= width]
        if not fits:
            continue
        cut = fits[-1]
        rest = " " * cols[0] + line[cut:]
        if len(rest) > width:
            continue
        src[n - 1] = line[:cut].rstrip() + newline + rest + raw[len(line):]
    if not best:
        return "".join(src)
    indent_unit = module.default_indent
    for n, call in sorted(best.items(), reverse=True):
        pos = positions[call]
        raw = src[n - 1]
        line = raw.rstrip("\r\n")
        ending = raw[len(line):]
        indent = line[: len(line) - len(line.lstrip())]
        inner = indent + indent_unit
        head = line[: pos.end.column]
        open_at = pos.start.column + len(module.code_for_node(call.func)) + len(
            module.code_for_node(call.whitespace_after_func)
        )
        if line[open_at: open_at + 1] != "(":
            continue
        args = [module.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip() for a in call.args]
        one = inner + ", ".join(args)
        if len(one) <= width:
            middle = [one]
        else:
            middle = [inner + a + "," for a in args]
            if any(len(m) > width for m in middle):
                continue
        new = [head[: open_at + 1]] + middle + [indent + ")" + line[pos.end.column:]]
        src[n - 1] = newline.join(new) + (ending or "")
    return "".join(src)


def visit_statements(module: cst.Module, transformer: cst.CSTTransformer, touched: Set[int]) -> cst.Module:
    """``module.visit(transformer)`` for a transformer that changes only the statement-level nodes
    whose ids are in ``touched`` (statements, defs, classes: never a node inside an expression),
    keeps no state from one top-level statement to the next and has no module-level hook: only
    the top-level statements that hold one of them are visited; the others stay the same objects
    (the same code as a visit of the whole module, for a fraction of the cost)."""
    body = list(module.body)
    left = set(touched)
    for i, st in enumerate(body):
        if not left:
            break  # every touched node is placed: the statements below hold none
        found = _held(st, left)
        if found:
            left -= found
            new = st.visit(transformer)
            if not isinstance(new, cst.BaseStatement):  # removed or split at the top level
                return module.visit(transformer)
            body[i] = new
    return module.with_changes(body=tuple(body))


def _held(stmt: cst.CSTNode, ids: Set[int]) -> Set[int]:
    """The ids in ``ids`` of ``stmt`` and the statement-level nodes under it (not inside an expression)."""
    found: Set[int] = set()
    stack = [stmt]
    while stack:
        n = stack.pop()
        if id(n) in ids:
            found.add(id(n))
            if len(found) == len(ids):
                return found
        k = _walk_kind(type(n))
        if k == _W_EXPR or k == _W_ATTRIBUTE or k == _W_NAME or k == _W_ARG or k == _W_IMPORT:
            continue
        push_children(n, stack)
    return found
