"""The handles family's PID fix (FRK103): a handle that is already opened lazily gains the PID
check (closing a handle inherited through fork first), and ``__getstate__`` resets it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, SelfAssign, attrs_tested, string_value
from flake8_forksafe.edit import ensure_imports, line_of, statement
from flake8_forksafe.families.getstate import (
    ClassRewrite,
    Names,
    getstate_home,
    getstate_plan,
    related_classes,
)
from flake8_forksafe.families.handles.facts import contains


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
        if if_node is None or not contains(if_node.body, d.stmt):
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
        gs = getstate_plan(a, owner, [])
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
    getstate_doc = ""  # short generated code: the PID check's comment names the pattern

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
                home = getstate_home(a, p.owner, adders) if p.add_getstate else None
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

        close = f"{p.close}({me}.{p.attr})" if "." in p.close else f"{me}.{p.attr}.{p.close}()"  # os.close(fd)
        before = statement(
            f"if {exists}:\n"
            f"{ind}{close}  # inherited through fork: close it before reopening\n",
            self.module,
        )
        before = before.with_changes(leading_lines=updated_node.leading_lines)
        after = statement(f"{me}.{n.pid} = os.getpid()", self.module)
        return cst.FlattenSentinel([before, updated_node.with_changes(leading_lines=[]), after])


def _reset_ops(p: PidPlan) -> List[Tuple[str, str]]:
    ops = list(p.resets)
    if p.add_pid:
        ops.append(("pop", p.names.pid))
    return ops


def apply_pid(a: Analysis, plans: Sequence[PidPlan]) -> cst.Module:
    if not plans:
        return a.module
    module = a.module.visit(_PidTransformer(a, plans))
    if any(p.add_pid for p in plans):
        module = ensure_imports(module, ["os"])
    return module
