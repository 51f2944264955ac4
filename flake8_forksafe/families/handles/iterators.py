"""Facts of the handles family about generators and one-shot iterators kept on a dataset (FRK203):
which calls return one, and which uses consume it at once."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from flake8_forksafe.analysis import Analysis, FuncInfo

# --------------------------------------------------------------------------------------------------
# generators and one-shot iterators (FRK203)

# Which calls return one is library model data, read only from rules/libraries.toml (extensible from
# configuration: `libraries.generator_functions`, `libraries.generator_methods`,
# `libraries.path_generator_methods`), by the one routine below.
# a container method that consumes its argument at once: `self.files.extend(p.glob("*.wav"))`
CONSUMING_METHODS = {"extend", "update", "extendleft"}


def _is_path(a: Analysis, e: cst.BaseExpression, scope: Optional[FuncInfo], depth: int = 0) -> bool:
    """``e`` is evidently a ``pathlib`` path: ``Path(...)``, ``root / "x"``, ``p.parent``, or a local
    name or ``self.attr`` bound to one."""
    if depth > 3:
        return False
    if isinstance(e, cst.Call):
        q = a.qualify(e.func) or ""
        return q.startswith("pathlib.") or q.endswith("Path")  # Path(...), PurePath(...), UPath(...)
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Divide):
        return _is_path(a, e.left, scope, depth + 1)
    if isinstance(e, cst.Attribute) and e.attr.value == "parent":
        return _is_path(a, e.value, scope, depth + 1)
    if isinstance(e, cst.Name) and scope is not None:
        return any(_is_path(a, v, scope, depth + 1) for v in a.local_values(e.value, scope))
    if isinstance(e, cst.Attribute) and scope is not None and scope.self_name and isinstance(e.value, cst.Name):
        if e.value.value == scope.self_name:
            cls = a.owner_class(scope)
            fns = a.class_functions(cls) if cls is not None else [scope]
            return any(
                sa.attr == e.attr.value and sa.kind == "assign" and sa.value is not None and _is_path(a, sa.value, f, depth + 1)
                for f in fns
                for sa in f.self_assigns
            )
    return False


def generator_call(a: Analysis, call: cst.Call, scope: Optional[FuncInfo] = None) -> Optional[str]:
    """A label for ``call`` when it returns a generator or a one-shot iterator, from the library model
    (``rules/libraries.toml``); None otherwise:

    - ``generator_functions``, by qualified name: ``os.scandir()``, ``os.walk()``, ``glob.iglob()``;
    - ``generator_methods``, on any receiver that is not a module: ``<x>.iterdir()``, ``<x>.rglob()``;
    - ``path_generator_methods``, only on a receiver that is evidently a ``pathlib`` path
      (``Path(...)``, ``root / "x"``, ``p.parent``, a local or ``self.attr`` bound to one):
      ``glob()``, ``walk()`` (``fs.glob`` of fsspec and ``glob.glob`` return lists)."""
    k = a.knowledge
    q = a.qualify(call.func)
    if q is not None and q in k.generator_functions:
        return f"the iterator {q}()"
    f = call.func
    if not isinstance(f, cst.Attribute):
        return None
    name = f.attr.value
    recv = f.value
    if isinstance(recv, cst.Name) and a.is_module_alias(recv.value):
        return None  # glob.glob(...), somelib.walk(...)
    if name in k.generator_methods:
        return f"the generator .{name}()"
    if name in k.path_generator_methods:
        while isinstance(recv, cst.BinaryOperation) and isinstance(recv.operator, cst.Divide):
            recv = recv.left  # Path(root) / "images"
        if _is_path(a, recv, scope):
            return f"the generator .{name}()"
    return None


def consumed_at_once(stmt: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """``value`` is the argument of ``<x>.extend(...)``/``update(...)`` in ``stmt``: the container
    keeps the items, not the generator."""

    class Find(cst.CSTVisitor):
        found = False

        def visit_Call(self, node: cst.Call) -> None:
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value in CONSUMING_METHODS:
                if any(arg.value is value for arg in node.args):
                    self.found = True

    v = Find()
    stmt.visit(v)
    return v.found
