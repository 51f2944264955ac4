"""The per-process class rewrite shared by the handles and rng fixes: the private names a rewritten
attribute uses, which ``__getstate__`` functions to extend or add, and the transformer that adds
reset lines and members."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, SelfAssign, dotted, string_value
from flake8_forksafe.edit import line_of, statement, with_blank_line


def related_classes(a: Analysis, cls: ClassInfo) -> List[ClassInfo]:
    """``cls``, its same-file bases and the same-file classes derived from it."""
    out = list(a.mro(cls))
    for c in a.classes:
        if c not in out and cls in a.mro(c):
            out.append(c)
    return out


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


def has_slots(cls: ClassInfo) -> bool:
    """``__slots__`` in the class body (a one-line body counts: the fix cannot add members to it)."""
    return not isinstance(cls.node.body, cst.IndentedBlock) or class_body_binds(cls, "__slots__")


def getstate_plan(
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


def getstate_home(a: Analysis, owner: ClassInfo, adders: Sequence[ClassInfo]) -> ClassInfo:
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

    def touched(self) -> Set[int]:
        """The ids of the (statement) nodes this rewrite changes: nothing outside the top-level
        statements that hold one changes (``edit.visit_statements``). A subclass that rewrites
        other nodes adds theirs."""
        return set(self.extends) | set(self.members) | set(self.new_getstate)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        key = id(original_node)
        if key not in self.extends:
            return updated_node
        copy_line, srcs = self.extends[key]
        body = list(updated_node.body.body)
        # the copy line itself is unchanged by the rewrites: find it by position
        idx = next(i for i, s in enumerate(original_node.body.body) if s is copy_line)
        body[idx + 1 : idx + 1] = [statement(src, self.module) for src in srcs]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        key = id(original_node)
        members = list(self.members.get(key, []))
        ops = self.new_getstate.get(key)
        if ops:
            ind = self.module.default_indent
            body = [f'"""{self.getstate_doc}"""'] if self.getstate_doc else []
            body.append("state = self.__dict__.copy()")
            body += [_reset_src("state", op) for op in ops] + ["return state"]
            members.append("def __getstate__(self):\n" + "".join(f"{ind}{x}\n" for x in body))
        if not members:
            return updated_node
        new = []
        for m in members:  # a blank line, then the member's own leading comment
            st = statement(m, self.module)
            new.append(st.with_changes(leading_lines=[*with_blank_line(st).leading_lines, *st.leading_lines]))
        block = updated_node.body
        assert isinstance(block, cst.IndentedBlock)
        return updated_node.with_changes(body=block.with_changes(body=[*block.body, *new]))


def append_before_return(block: cst.IndentedBlock, new: Sequence[cst.BaseStatement]) -> cst.IndentedBlock:
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


def _reset_src(var: str, op: Tuple[str, str]) -> str:
    kind, key = op
    if kind == "none":
        return f'{var}["{key}"] = None'
    return f'{var}.pop("{key}", None)'
