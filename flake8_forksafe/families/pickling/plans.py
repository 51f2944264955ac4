"""Fix plans of the pickling family: whether a lambda (FRK201) or a local def/class (FRK202) can move
to module level as it is; ``hoist.py`` moves it."""

from __future__ import annotations

from typing import Dict, List

import libcst as cst

from flake8_forksafe.analysis import Analysis, is_docstring
from flake8_forksafe.families.pickling.facts import top_of


def lambda_plan(a: Analysis, lam: cst.Lambda, loc):
    """How the lambda can be hoisted: captured locals to bind, local imports to repeat, or the problem."""
    from flake8_forksafe.families.pickling import hoist

    if loc is None:
        return hoist.Captures(problem="not found")
    if _contains_yield(lam.body):
        return hoist.Captures(problem="it yields")
    params = hoist.param_names(lam.params)
    body = [n for n in hoist.reads(lam.body) if n not in params]
    defaults: Dict[str, None] = {}
    for p in lam.params.params + lam.params.posonly_params + lam.params.kwonly_params:
        if p.default is not None:
            defaults.update(hoist.reads(p.default))
    caps = hoist.captures(loc, lam, body, allow_partial=True, outer=defaults)
    if caps.problem is None:
        late = hoist.defined_after(a.module, loc.index, defaults)
        if late:
            caps.problem = f"its default uses {late!r}, defined later in the module"
    return caps


def _contains_yield(node: cst.CSTNode) -> bool:
    from flake8_forksafe.families.pickling.hoist import iter_children

    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Yield:
            return True
        stack.extend(iter_children(n))
    return False


def definition_tops(a: Analysis) -> Dict[int, cst.CSTNode]:
    """Probable top-level statement of every local def and class (a hint for ``locate``)."""
    out: Dict[int, cst.CSTNode] = {}
    for f in a.nested_functions:
        top = top_of(a, f.parent)
        if top is not None:
            out[id(f.node)] = top
    for c in a.classes:
        if c.in_function is not None:
            top = top_of(a, c.in_function)
            if top is not None:
                out[id(c.node)] = top
    return out


def definition_plan(a: Analysis, node: cst.CSTNode, loc):
    """Whether a local def/class can move to module level as it is: a direct statement of its
    function, bound once there, closing over no local names (local imports are repeated inside a
    moved function), with decorators, defaults and bases that exist before the statement it is moved
    in front of."""
    from flake8_forksafe.families.pickling import hoist

    if loc is None or not loc.scopes:
        return hoist.Captures(problem="not found")
    func = loc.scopes[-1]
    if not isinstance(func, cst.FunctionDef) or loc.parent_block is not func.body:
        return hoist.Captures(problem="it is defined inside a block of its function")
    name = node.name.value
    if len(hoist.bindings(func).names.get(name, ())) != 1:
        return hoist.Captures(problem=f"{name!r} is bound more than once in its function")
    for outer_scope in loc.scopes[:-1]:
        if isinstance(outer_scope, (cst.FunctionDef, cst.Lambda)) and name in hoist.bindings(outer_scope).names:
            return hoist.Captures(problem=f"an enclosing function also binds {name!r}")
    outer: Dict[str, None] = {}
    if isinstance(node, cst.FunctionDef):
        free = hoist.function_free(node)
        hoist.def_outer_reads(node, outer)
    else:
        free = hoist.class_free(node)
        hoist.class_outer_reads(node, outer)
    caps = hoist.captures(
        loc,
        node,
        free,
        allow_partial=False,
        own_name=name,
        outer=outer,
        allow_imports=isinstance(node, cst.FunctionDef),
    )
    if caps.problem is None:
        late = hoist.defined_after(a.module, loc.index, [n for n in outer if n != name])
        if late:
            caps.problem = f"it needs {late!r}, defined later in the module"
    return caps


class Renamer(cst.CSTTransformer):
    def __init__(self, renames: Dict[int, str]) -> None:
        super().__init__()
        self.renames = renames

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node


def prepend_statements(fn: cst.FunctionDef, lines: List[cst.SimpleStatementLine]) -> cst.FunctionDef:
    """Put statements at the start of a function body, after its docstring."""
    body = list(fn.body.body)
    at = 1 if body and is_docstring(body[0]) else 0
    return fn.with_changes(body=fn.body.with_changes(body=body[:at] + list(lines) + body[at:]))
