"""FRK101: a handle's derived object kept without the handle itself (issue 12), the step before the
per-process lazy handle of ``lazy.py``.

Two shapes: the factory call chained into the kept value (``self.x = h5py.File(p, "r")["data"]``,
``self.txn = lmdb.open(p, readonly=True).begin()``), and the handle opened into a local of
``__init__`` whose derived objects are kept (``hf = h5py.File(p, "r"); self.data = hf.get("data")``).

The fix first names the handle on ``self``::

    self._x_file = h5py.File(p, "r")          # chained: a new attribute for the handle
    self.x = self._x_file["data"]

    self._hf = h5py.File(p, "r")              # a local: every use of it in __init__ reads self._hf
    self.data = self._hf.get("data")

which is the shape ``lazy.py`` turns, in the next fix round, into a PID-checked handle property with the
derived objects as properties of it (and the handle closed at the end of ``__init__`` when ``__init__``
reads it: the parent reads what it needs, e.g. a length, and holds nothing open). The check offers the fix
only when that next round is planned on the split module too (``SplitPlan`` is never applied alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo, SelfAssign
from flake8_forksafe.edit import statement
from flake8_forksafe.families.getstate import Names, assignment_line, has_slots, related_classes

# the new attribute's suffix by factory (chained shape): self._x_file, self._txn_env, self._cur_conn
_SUFFIX = {"h5py.File": "file", "lmdb.open": "env", "lmdb.Environment": "env", "sqlite3.connect": "conn"}


@dataclass(eq=False)
class SplitPlan:
    fn: FuncInfo
    line: cst.SimpleStatementLine  # self.x = <chain> (chained) / hf = <call> (local)
    call: cst.Call
    handle_attr: str  # the new attribute that keeps the handle
    local: Optional[str] = None  # hf
    names: List[cst.Name] = field(default_factory=list)  # every hf of __init__, the target included


def _top_line(fn: FuncInfo, small: cst.BaseSmallStatement) -> Optional[cst.SimpleStatementLine]:
    body = fn.node.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    for st in body.body:
        if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and st.body[0] is small:
            return st
    return None


def _root(value: cst.BaseExpression, call: cst.Call) -> cst.BaseExpression:
    """The receiver a chain of subscripts, attributes and method calls starts from (``call`` itself
    when the chain is on it): ``h5py.File(p)["x"].attrs`` -> the call, ``hf.get("x")`` -> ``hf``."""
    node = value
    for _ in range(16):
        if node is call:
            return node
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        elif isinstance(node, cst.Attribute):
            node = node.value
        else:
            return node
    return node


def _attr_used(a: Analysis, fn: FuncInfo, names: Set[str]) -> bool:
    assert fn.cls is not None
    for c in related_classes(a, fn.cls):
        if names & (set(c.methods) | set(c.properties)):
            return True
        for g in c.methods.values():
            if names & (g.self_reads | {s.attr for s in g.self_assigns}):
                return True
    return False


class _LocalUses(cst.CSTVisitor):
    """Every ``Name`` node spelling ``name`` in a function, and whether any binds it other than the one
    plain assignment (a parameter, a loop or ``with`` target, a nested scope's own binding, ``del``,
    ``global``/``nonlocal``, a walrus): then the rewrite is not attempted."""

    def __init__(self, name: str, target: cst.Name) -> None:
        self.name = name
        self.target = target
        self.loads: List[cst.Name] = []
        self.bound_elsewhere = False
        self.skip: Set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value == self.name:
            self.bound_elsewhere = True
        self.skip.add(id(node.name))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == self.name and node.target is not self.target:
            self.bound_elsewhere = True
        elif not isinstance(node.target, (cst.Name, cst.Attribute, cst.Subscript)):
            self._bound_in(node.target)

    def _bound_in(self, target: cst.CSTNode) -> None:
        class Find(cst.CSTVisitor):
            hit = False

            def visit_Name(self_, node: cst.Name) -> None:  # noqa: N805
                if node.value == self.name:
                    self_.hit = True

        f = Find()
        target.visit(f)
        if f.hit:
            self.bound_elsewhere = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bound_in(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bound_in(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bound_in(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bound_in(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bound_in(node.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bound_in(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bound_in(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        if any(n.name.value == self.name for n in node.names):
            self.bound_elsewhere = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        if any(n.name.value == self.name for n in node.names):
            self.bound_elsewhere = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.skip.add(id(node.name))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip.add(id(node.name))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self.skip:
            self.loads.append(node)


def plan_split(a: Analysis, fn: FuncInfo, sa: SelfAssign, call: cst.Call, factory_name: str) -> Union[SplitPlan, str]:
    """How to name the handle of ``self.<sa.attr> = <derived from call>`` on ``self``; or why not."""
    cls = fn.cls
    if cls is None or fn.name != "__init__" or fn.self_name != "self":
        return "it is not kept in an __init__ whose first parameter is self"
    if cls.in_function is not None:
        return "the class is defined inside a function"
    if any(has_slots(c) for c in related_classes(a, cls)):
        return f"{cls.name} or a related class defines __slots__"
    if sa.value is None or sa.kind != "assign":
        return "it is not assigned with ="
    line = assignment_line(fn, sa, sa.value, "value")
    if isinstance(line, str):
        return line
    if _top_line(fn, sa.stmt) is not line:
        return "the assignment is not a statement of its own at the top of __init__"
    root = _root(sa.value, call)
    if root is call:  # self.x = h5py.File(p, "r")["data"]
        handle = f"_{Names(sa.attr).core}_{_SUFFIX.get(factory_name, 'handle')}"
        if _attr_used(a, fn, {handle, *Names(handle).private()}):
            return f"self.{handle} is already used"
        return SplitPlan(fn, line, call, handle)
    if not isinstance(root, cst.Name):
        return "the handle is not opened in the kept expression or in a local of __init__"
    local = root.value
    values = fn.local_assigns.get(local, [])
    if local in fn.params or len(values) != 1 or values[0] is not call:
        return f"{local} is not assigned the handle once"
    local_line = None
    assert isinstance(fn.node.body, cst.IndentedBlock)
    target: Optional[cst.Name] = None
    for st in fn.node.body.body:
        if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign):
            asg = st.body[0]
            if asg.value is call and len(asg.targets) == 1 and isinstance(asg.targets[0].target, cst.Name):
                local_line, target = st, asg.targets[0].target
                break
        if st is line:
            break
    if local_line is None or target is None:
        return f"{local} = ... is not a statement of its own before the kept object"
    uses = _LocalUses(local, target)
    fn.node.body.visit(uses)
    if uses.bound_elsewhere:
        return f"{local} is bound more than once in __init__"
    handle = f"_{local.lstrip('_')}"
    if _attr_used(a, fn, {handle, *Names(handle).private()}):
        return f"self.{handle} is already used"
    return SplitPlan(fn, local_line, call, handle, local, [target, *uses.loads])


class _Split(cst.CSTTransformer):
    def __init__(self, module: cst.Module, plans: Sequence[SplitPlan]) -> None:
        self.module = module
        self.chained: Dict[int, SplitPlan] = {id(p.line): p for p in plans if p.local is None}
        self.calls: Dict[int, SplitPlan] = {id(p.call): p for p in plans if p.local is None}
        self.names: Dict[int, SplitPlan] = {id(n): p for p in plans if p.local is not None for n in p.names}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        p = self.calls.get(id(original_node))
        if p is None:
            return updated_node
        return cst.Attribute(cst.Name("self"), cst.Name(p.handle_attr))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        p = self.names.get(id(original_node))
        if p is None:
            return updated_node
        return cst.Attribute(cst.Name("self"), cst.Name(p.handle_attr))

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement]]:
        p = self.chained.get(id(original_node))
        if p is None:
            return updated_node
        first = statement(f"self.{p.handle_attr} = {self.module.code_for_node(p.call)}", self.module)
        assert isinstance(first, cst.SimpleStatementLine)
        # the line's comments stay with the handle's line (the one the next round rewrites in place)
        first = first.with_changes(
            leading_lines=updated_node.leading_lines, trailing_whitespace=updated_node.trailing_whitespace
        )
        return cst.FlattenSentinel(
            [first, updated_node.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())]
        )


def apply_split(module: cst.Module, plans: Sequence[SplitPlan]) -> cst.Module:
    """The module with each planned handle named on ``self`` (see the module docstring)."""
    if not plans:
        return module
    split = _Split(module, plans)
    tops = [_top_of(module, p.fn) for p in plans]
    if any(i is None for i in tops):
        return module.visit(split)
    # every node the split rewrites is in a plan's function: only the top-level statements that
    # hold those are rewritten (the others stay the same objects, and the module the same code)
    body = list(module.body)
    for i in sorted(set(tops)):  # type: ignore[type-var]
        new = body[i].visit(split)
        if not isinstance(new, cst.BaseStatement):
            return module.visit(split)
        body[i] = new
    return module.with_changes(body=body)


def _top_of(module: cst.Module, fn: FuncInfo) -> Optional[int]:
    """The index of the top-level statement that holds function ``fn`` (None: not found)."""
    from flake8_forksafe.analysis import push_children

    owners = set()
    f: Optional[FuncInfo] = fn
    while f is not None:
        owners.add(id(f.node))
        if f.cls is not None:
            owners.add(id(f.cls.node))
            if f.cls.in_function is not None:
                owners.add(id(f.cls.in_function.node))
        f = f.parent
    for i, st in enumerate(module.body):
        if id(st) in owners:
            return i
    for i, st in enumerate(module.body):  # a def or class inside a top-level if / try / with
        stack: List[cst.CSTNode] = [st]
        while stack:
            n = stack.pop()
            if n is fn.node:
                return i
            if not isinstance(n, cst.BaseExpression):
                push_children(n, stack)
    return None
