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

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider

from flake8_forksafe.analysis import Analysis, is_main_guard

PURE, EXEC, MIXED = "pure", "exec", "mixed"


@dataclass
class GuardPlan:
    fixable: bool
    moved: List[int] = field(default_factory=list)  # indices in module.body, in order
    reason: str = ""


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


class _Owner(cst.CSTVisitor):
    """id(node) -> index of the top-level statement holding it."""

    def __init__(self) -> None:
        self.index = -1
        self.owner: Dict[int, int] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.owner[id(node)] = self.index
        return True


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
    owner = _Owner()
    for i, s in enumerate(body):
        owner.index = i
        s.visit(owner)
    try:
        scopes = MetadataWrapper(a.module, unsafe_skip_copy=True).resolve(ScopeProvider)
    except Exception:  # pragma: no cover - libcst's scope analysis gave up on this module
        return GuardPlan(False, reason="the module's names could not be resolved")
    global_scope = scopes.get(a.module)
    if global_scope is None:
        for s in body:
            sc = scopes.get(s)
            if sc is not None:
                global_scope = sc.globals
                break
    deps: Dict[int, Set[int]] = {i: set() for i in range(len(body))}
    binds: Dict[int, Set[str]] = {i: set() for i in range(len(body))}
    reads: Dict[int, Set[str]] = {i: set() for i in range(len(body))}
    if global_scope is not None:
        for asg in global_scope.assignments:
            node = getattr(asg, "node", None)
            b = owner.owner.get(id(node), -1) if node is not None else -1
            if b < 0:
                continue
            binds[b].add(asg.name)
            for ref in asg.references:
                u = owner.owner.get(id(ref.node), -1)
                if u >= 0:
                    reads[u].add(asg.name)
                if u >= 0 and u != b:
                    deps[u].add(b)

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
