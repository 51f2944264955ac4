"""Fixes of the start-method rules (FRK402, FRK403) and the keyword-argument edit FRK501 shares.

``set_keyword`` adds or replaces one keyword argument of a call in the call's own style: one
argument per line or inline, with or without a trailing comma, comments kept where they were.
``move_above_torch`` moves whole ``set_start_method(...)`` statements above the first ``import torch``
as stdlib ``multiprocessing`` calls with ``force=True``.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from flake8_forksafe.analysis import Analysis, dotted, keyword, positional
from flake8_forksafe.noqa import with_noqa

# --------------------------------------------------------------------------------------------------
# keyword arguments


def _is_multiline(ws: object) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def _plain(ws: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indentation, without the comment and extra empty lines."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return ws


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``name=value``: replaced where present, else appended in the call's style."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    equal = next(
        (a.equal for a in reversed(args) if a.keyword is not None and isinstance(a.equal, cst.AssignEqual)),
        cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    new = cst.Arg(value=value, keyword=cst.Name(name), equal=equal)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    trailing = isinstance(last.comma, cst.Comma)
    # whitespace before the closing parenthesis, and the separator between two arguments
    closing = last.comma.whitespace_after if trailing else last.whitespace_after_arg
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        sep_ws = _plain(args[-2].comma.whitespace_after)
    elif _is_multiline(call.whitespace_before_args):
        sep_ws = _plain(call.whitespace_before_args)
    else:
        sep_ws = cst.SimpleWhitespace(" ")
    if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(sep_ws, cst.ParenthesizedWhitespace):
        # one argument per line, the parenthesis on its own line: the new argument gets its own line
        # the comment after the old last argument stays on its line
        last_comma = cst.Comma(
            whitespace_before=last.comma.whitespace_before if trailing else cst.SimpleWhitespace(""),
            whitespace_after=sep_ws.with_changes(first_line=closing.first_line, empty_lines=closing.empty_lines),
        )
        end = cst.ParenthesizedWhitespace(indent=closing.indent, last_line=closing.last_line)
        args[-1] = last.with_changes(
            comma=last_comma,
            whitespace_after_arg=last.whitespace_after_arg if trailing else cst.SimpleWhitespace(""),
        )
        if trailing:
            new = new.with_changes(comma=cst.Comma(whitespace_after=end))
        else:
            new = new.with_changes(whitespace_after_arg=end)
    else:
        # inline arguments (the closing line break, if any, stays after the new argument)
        if trailing:
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=sep_ws))
            new = new.with_changes(comma=cst.Comma(whitespace_after=closing))
        else:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=sep_ws), whitespace_after_arg=cst.SimpleWhitespace("")
            )
            new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    args.append(new)
    return call.with_changes(args=args)


def with_force(call: cst.Call) -> cst.Call:
    """``call`` (a ``set_start_method``) with force=True; a positional ``force`` is replaced in place."""
    pos = positional(call)
    if len(pos) >= 2 and keyword(call, "force") is None:
        args = list(call.args)
        args[1] = args[1].with_changes(value=cst.Name("True"))
        return call.with_changes(args=args)
    return set_keyword(call, "force", cst.Name("True"))


class _SetKeyword(cst.CSTTransformer):
    def __init__(self, targets: Sequence[cst.Call], name: str, value: cst.BaseExpression) -> None:
        self.ids = {id(t) for t in targets}
        self.name = name
        self.value = value

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) in self.ids:
            return set_keyword(updated_node, self.name, self.value)
        return updated_node


def set_keyword_in(module: cst.Module, calls: Sequence[cst.Call], name: str, value: str) -> cst.Module:
    """The module with ``name=value`` set on each of ``calls`` (nodes of ``module``)."""
    return module.visit(_SetKeyword(calls, name, cst.parse_expression(value)))


# --------------------------------------------------------------------------------------------------
# statements


def blank_count(lines: Sequence[cst.EmptyLine]) -> int:
    n = 0
    for line in lines:
        if line.comment is not None:
            break
        n += 1
    return n


def comment_lines(lines: Sequence[cst.EmptyLine]) -> List[cst.EmptyLine]:
    """The comment lines of a statement's leading lines, from the first comment on."""
    out = list(lines)
    while out and out[0].comment is None:
        out.pop(0)
    return out


def ancestors(root: cst.CSTNode, target: cst.CSTNode) -> Optional[List[cst.CSTNode]]:
    """The nodes from ``root`` down to ``target`` (both included), or None."""
    found: List[List[cst.CSTNode]] = []
    stack: List[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if found:
                return False
            stack.append(node)
            if node is target:
                found.append(list(stack))
                return False
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if stack and stack[-1] is original_node:
                stack.pop()

    root.visit(V())
    return found[0] if found else None


BROAD = {"RuntimeError", "Exception", "BaseException", "builtins.RuntimeError", "builtins.Exception"}


def _catches_runtime_error(handler: cst.ExceptHandler) -> bool:
    t = handler.type
    if t is None:
        return True
    names = [e.value for e in t.elements] if isinstance(t, cst.Tuple) else [t]
    return any(dotted(n) in BROAD for n in names)


def protected(a: Analysis, path: Sequence[cst.CSTNode]) -> bool:
    """The last node of ``path`` runs inside a ``try`` body whose handlers catch RuntimeError (or
    broader), or inside ``with contextlib.suppress(RuntimeError)``."""
    for i, node in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(node, cst.Try) and nxt is node.body:
            if any(_catches_runtime_error(h) for h in node.handlers):
                return True
        if isinstance(node, cst.With) and nxt is node.body:
            for item in node.items:
                c = item.item
                if isinstance(c, cst.Call) and a.qualify(c.func) == "contextlib.suppress":
                    if any(dotted(arg.value) in BROAD for arg in c.args):
                        return True
    return False


# --------------------------------------------------------------------------------------------------
# FRK402: above the first torch import


def _bare_import(stmt: cst.CSTNode, module_name: str) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                if alias.asname is None and dotted(alias.name) == module_name:
                    return True
    return False


def _names_used(module: cst.Module) -> Dict[str, int]:
    """How often each name is read outside import statements."""
    counts: Dict[str, int] = {}

    class V(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # `x.name`: only `x` is read
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)  # `f(name=...)`: a keyword, not a read
            return False

        def visit_Name(self, node: cst.Name) -> None:
            counts[node.value] = counts.get(node.value, 0) + 1

    module.visit(V())
    return counts


MP_MODULES = ("multiprocessing", "torch.multiprocessing")


def _drop_aliases(stmt: cst.SimpleStatementLine, drop: Set[str]) -> Optional[cst.SimpleStatementLine]:
    """The import line without the aliases binding names in ``drop`` (None: nothing left)."""
    smalls = []
    for small in stmt.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            keep = [al for al in small.names if _bound_name(al) not in drop]
            if len(keep) != len(small.names):
                if not keep:
                    continue
                last_old = small.names[-1]
                keep[-1] = keep[-1].with_changes(comma=last_old.comma)
                small = small.with_changes(names=keep)
                if isinstance(small, cst.ImportFrom) and len(keep) == 1 and small.lpar is not None:
                    small = small.with_changes(names=[keep[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        smalls.append(small)
    if not smalls:
        return None
    smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return stmt.with_changes(body=smalls)


def _bound_name(alias: cst.ImportAlias) -> Optional[str]:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    d = dotted(alias.name)
    return d.split(".")[0] if d else None


def _mp_import_names(stmt: cst.CSTNode) -> Set[str]:
    """Names a top-level import line binds to multiprocessing modules or their members (not ``torch``)."""
    out: Set[str] = set()
    if not isinstance(stmt, cst.SimpleStatementLine):
        return out
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for al in small.names:
                if dotted(al.name) in MP_MODULES and (al.asname is not None or "." not in (dotted(al.name) or "")):
                    name = _bound_name(al)
                    if name:
                        out.add(name)
        elif isinstance(small, cst.ImportFrom) and not small.relative and not isinstance(small.names, cst.ImportStar):
            mod = dotted(small.module) if small.module is not None else None
            if mod in MP_MODULES or mod == "torch" :
                for al in small.names:
                    if mod == "torch" and dotted(al.name) != "multiprocessing":
                        continue
                    name = _bound_name(al)
                    if name:
                        out.add(name)
    return out


def _e402_boundary(stmt: cst.CSTNode) -> bool:
    """A top-level statement after which pycodestyle/ruff report later imports as E402 (neither an
    import, nor a compound ``if``/``try``/``with`` block, nor a ``__dunder__`` assignment)."""
    if isinstance(stmt, (cst.If, cst.Try, cst.With)) or type(stmt).__name__ in ("TryStar", "Match"):
        return False
    if not isinstance(stmt, cst.SimpleStatementLine):
        return True
    for small in stmt.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(small, cst.Assign) and all(
            isinstance(t.target, cst.Name) and t.target.value.startswith("__") and t.target.value.endswith("__")
            for t in small.targets
        ):
            continue
        return True
    return False


def _with_e402_noqa(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """The import line with ``E402`` in its ``# noqa`` (on the first line of a parenthesized import)."""
    first = stmt.body[0]
    if (
        len(stmt.body) == 1
        and isinstance(first, cst.ImportFrom)
        and first.lpar is not None
        and isinstance(first.lpar.whitespace_after, cst.ParenthesizedWhitespace)
    ):
        ws = first.lpar.whitespace_after
        old = ws.first_line.comment.value if ws.first_line.comment is not None else ""
        line = ws.first_line.with_changes(
            whitespace=ws.first_line.whitespace if old else cst.SimpleWhitespace("  "),
            comment=cst.Comment(with_noqa(old, ["E402"])),
        )
        lpar = first.lpar.with_changes(whitespace_after=ws.with_changes(first_line=line))
        return stmt.with_changes(body=[first.with_changes(lpar=lpar)])
    tw = stmt.trailing_whitespace
    old = tw.comment.value if tw.comment is not None else ""
    return stmt.with_changes(
        trailing_whitespace=tw.with_changes(
            whitespace=tw.whitespace if old else cst.SimpleWhitespace("  "),
            comment=cst.Comment(with_noqa(old, ["E402"])),
        )
    )


def move_above_torch(a: Analysis, stmts: Sequence[cst.SimpleStatementLine], calls: Sequence[cst.Call]) -> cst.Module:
    """Move each whole statement ``stmts[i]`` (whose call is ``calls[i]``) above the first torch
    import as ``multiprocessing.<name>(..., force=True)`` (no ``force`` for the preload call).

    The layout passes the project's other linters: ``import multiprocessing`` joins the imports above
    the torch import where isort would put it (an existing one is reused), the calls follow them after
    one blank line, and the imports that now come after code (the torch import and those below it, up
    to the first other statement) say ``# noqa: E402``: they must run after the call, which is what
    the fix is for."""
    from flake8_forksafe.edit import ensure_imports, import_binding

    module = a.module
    ti = a.torch_import_index
    if ti is None or not stmts:
        return module
    body = list(module.body)
    ids = {id(s) for s in stmts}

    # the statements above the torch import, with `import multiprocessing` among their imports
    head = module.with_changes(body=body[:ti], footer=[])
    mp_name = import_binding(head, "multiprocessing")
    added_mp = mp_name is None
    if added_mp:
        head = ensure_imports(head, ["multiprocessing"])
        mp_name = import_binding(head, "multiprocessing") or "multiprocessing"
    prefix = list(head.body)

    new_stmts: List[cst.BaseStatement] = []
    receivers: Set[str] = set()
    for stmt, call in zip(stmts, calls):
        f = call.func
        attr = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else "set_start_method"
        root = f
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name):
            receivers.add(root.value)
        new_call = call.with_changes(func=cst.Attribute(value=cst.Name(mp_name), attr=cst.Name(attr)))
        if attr == "set_start_method":
            new_call = with_force(new_call)
        expr = stmt.body[0]
        assert isinstance(expr, cst.Expr)
        new_stmts.append(
            stmt.with_changes(body=[expr.with_changes(value=new_call)], leading_lines=comment_lines(stmt.leading_lines))
        )
    torch_stmt = body[ti]
    lead = list(torch_stmt.leading_lines)
    nb = blank_count(lead)
    blanks = max(nb, 1) if prefix else nb
    new_stmts[0] = new_stmts[0].with_changes(
        leading_lines=[cst.EmptyLine()] * blanks + list(new_stmts[0].leading_lines)
    )

    # the torch import and what follows it, the moved statements taken out; the imports that now
    # follow code get `# noqa: E402` (those after other code were reported before the fix already)
    rest: List[cst.BaseStatement] = []
    pending = 0
    boundary = False
    for i, s in enumerate(body[ti:]):
        if id(s) in ids:
            boundary = True  # the calls' old place: what follows came after code before the fix
            pending = pending or blank_count(s.leading_lines)
            continue
        if i == 0:
            s = s.with_changes(leading_lines=[cst.EmptyLine()] + comment_lines(lead))
        elif pending and blank_count(s.leading_lines) < pending:
            s = s.with_changes(leading_lines=[cst.EmptyLine()] * (pending - blank_count(s.leading_lines)) + list(s.leading_lines))
        pending = 0
        if not boundary:
            if _import_only(s):
                s = _with_e402_noqa(s)  # type: ignore[arg-type]
            elif _e402_boundary(s):
                boundary = True
        rest.append(s)
    out: List[cst.BaseStatement] = prefix + new_stmts + rest
    module = module.with_changes(body=out)

    # imports left unused (``import torch.multiprocessing as mp`` used only for this call), and a
    # later duplicate of the ``import multiprocessing`` just added
    used = _names_used(module)
    drop = {r for r in receivers if used.get(r, 0) == 0 and r != mp_name}
    first_rest = len(prefix) + len(new_stmts)
    result: List[cst.BaseStatement] = []
    pending = 0
    carry: List[cst.EmptyLine] = []  # comments of a dropped import go to the next statement
    for i, s in enumerate(out):
        if i >= first_rest and isinstance(s, cst.SimpleStatementLine):
            names = _mp_import_names(s)
            mine = names & drop
            if added_mp and mp_name == "multiprocessing" and _bare_import(s, "multiprocessing"):
                mine = mine | {"multiprocessing"}
            if mine:
                kept = _drop_aliases(s, mine)
                if kept is None:
                    pending = pending or blank_count(s.leading_lines)
                    carry += comment_lines(s.leading_lines)
                    continue
                s = kept
        if carry:
            lines = list(s.leading_lines)
            nb = blank_count(lines)
            s = s.with_changes(leading_lines=lines[:nb] + carry + lines[nb:])
            carry = []
        if pending and blank_count(s.leading_lines) < pending and result:
            s = s.with_changes(leading_lines=[cst.EmptyLine()] * (pending - blank_count(s.leading_lines)) + list(s.leading_lines))
        pending = 0
        result.append(s)
    return module.with_changes(body=result)


def _import_only(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(x, (cst.Import, cst.ImportFrom)) for x in stmt.body
    )
