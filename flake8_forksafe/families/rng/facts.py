"""RNG objects kept on a dataset (FRK601): the facts the check needs, and the per-worker lazy RNG fix.

What the fix produces for ``self.rng = np.random.default_rng(seed)`` in ``__init__`` is the
expected fix of ``RngCreatedInInit.INVALID`` in ``checks/frk601.py`` (tests/test_rule_examples.py
checks it to the letter; docs/rules/FRK601.md shows it): ``__init__`` keeps ``self._rng_seed = seed``
(the original seed expression, evaluated where it was); ``rng`` becomes a property that builds
``self._rng`` whenever ``os.getpid()`` differs from ``self._rng_pid`` (seeded with ``self._rng_seed``
in the main process, ``get_worker_info().seed`` in a worker), with a setter; ``__getstate__`` pops
``_rng`` and ``_rng_pid``.

- every ``self.rng.<method>(...)`` keeps working unchanged; an assignment ``ds.rng = ...`` goes through
  the setter;
- in the main process (``num_workers=0``, or ``ds[i]`` in a notebook) the RNG is the original one,
  built from the original seed expression: the same stream as before;
- in a worker it is re-created from ``get_worker_info().seed`` (``base_seed + worker_id``; the
  DataLoader draws a new ``base_seed`` from torch's RNG, or the loader's ``generator``, every epoch):
  a different stream per worker and per epoch, reproducible when torch is seeded;
  ``RandomState`` gets ``info.seed % 2**32`` (it accepts seeds below 2**32 only);
- the RNG is re-created whenever ``os.getpid()`` changes (fork inherits the parent's object), and
  ``__getstate__`` leaves it out (spawn pickles the dataset: the child builds its own); an existing
  ``__getstate__`` of the form ``state = self.__dict__.copy() ... return state`` is extended instead.

``torch.Generator()`` without a seed keeps its fixed default seed in the main process and gets
``.manual_seed(info.seed)`` in a worker; a constructor given no seed gets ``None`` (fresh entropy, as
before) in the main process; ``torch.Generator().manual_seed(s)`` and
``np.random.Generator(np.random.PCG64(s))`` get the seed in the same slot as ``s``. Without a seed,
``__init__`` keeps ``self._rng = self._rng_pid = None`` instead of the seed.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    ClassInfo,
    FuncInfo,
    SelfAssign,
    container_elements,
    dotted,
    keyword,
    positional,
    returned_values,
    self_attr,
    string_value,
)
from flake8_forksafe.edit import ensure_imports, local_import, module_level_names, small_statement
from flake8_forksafe.families.getstate import (
    ClassRewrite,
    Names,
    assignment_line,
    class_body_binds,
    getstate_plan,
    has_slots,
    related_classes,
)

# where each constructor takes its seed: this keyword, or the first positional argument
SEED_SLOTS = {
    "numpy.random.default_rng": "seed",
    "numpy.random.RandomState": "seed",
    "random.Random": "x",
    "numpy.random.Generator": "bit_generator",  # the seed is the bit generator's
    "torch.Generator": "",  # seeded by a chained .manual_seed(seed)
}
# RNGs that only accept seeds below 2**32
SEED_32 = {"numpy.random.RandomState"}


# --------------------------------------------------------------------------------------------------
# facts


@dataclass(eq=False)
class KeptRng:
    ctor: cst.Call  # the constructor call (where the finding points)
    qname: str  # numpy.random.default_rng, ...
    expr: cst.Call  # the whole RNG expression: the ctor, or `torch.Generator().manual_seed(s)`
    direct: bool  # the assigned value is ``expr`` itself
    container: bool
    # made by a function that returns it: "get_rng()" (this module: ``ctor`` is the constructor call
    # in it), "get_rng() (path:line)" (another module of the project: ``ctor`` is the call of it here)
    helper: str = ""


def ctor_of(a: Analysis, call: cst.Call) -> Optional[str]:
    q = a.qualify(call.func)
    if q and q in a.knowledge.rng_constructors:
        return q
    return None


def rng_source(a: Analysis, expr: Optional[cst.BaseExpression], fn: FuncInfo, depth: int = 0):
    """If ``expr`` evaluates to an RNG object built here: (ctor call, qname, whole expression, direct)."""
    if expr is None or depth > 4:
        return None
    if isinstance(expr, cst.Call):
        q = ctor_of(a, expr)
        if q is not None:
            return expr, q, expr, True
        f = expr.func
        # torch.Generator().manual_seed(s) returns the generator
        if isinstance(f, cst.Attribute) and f.attr.value == "manual_seed" and isinstance(f.value, cst.Call):
            q = ctor_of(a, f.value)
            if q == "torch.Generator":
                return f.value, q, expr, True
        return helper_rng(a, expr, fn, depth)
    if isinstance(expr, (cst.IfExp, cst.BooleanOperation)):
        # `rng if rng is not None else np.random.default_rng(seed)`, `rng or default_rng(seed)`:
        # either branch may be the one that runs, and the constructor one makes the RNG here
        for part in (expr.body, expr.orelse) if isinstance(expr, cst.IfExp) else (expr.left, expr.right):
            hit = rng_source(a, part, fn, depth + 1)
            if hit is not None:
                return (hit[0], hit[1], hit[2], False, *hit[4:])
        return None
    if isinstance(expr, cst.Name):
        for v in a.local_values(expr.value, fn):
            hit = rng_source(a, v, fn, depth + 1)
            if hit is not None:
                return (hit[0], hit[1], hit[2], False, *hit[4:])
    return None


def helper_rng(a: Analysis, call: cst.Call, fn: FuncInfo, depth: int):
    """A call of a function that returns an RNG it makes (``get_random_range(rng, seed)`` whose body
    is ``if rng is None: rng = random.Random() ... return rng``): a same-module function (the
    constructor call inside it, as ``rng_source`` gives it), or one of another module of the project
    (the project index: this call, and where that function is, as a fourth item)."""
    target = a.called_helper(call, fn)
    if target is not None:
        for value in returned_values(target):
            hit = rng_source(a, value, target, depth + 1)
            if hit is not None:
                return hit[0], hit[1], hit[2], False, hit[4] if len(hit) > 4 else f"{target.name}()"
        return None
    got = a.project_function_returns(call, "rng")
    if got is None:
        return None
    ctor, where = got
    return call, ctor, call, False, where


def kept_rngs(a: Analysis, sa: SelfAssign, fn: FuncInfo) -> List[KeptRng]:
    """RNG objects kept on the instance by one ``self.x = ...`` (or a container store)."""
    value = sa.value
    if value is None:
        return []
    hit = rng_source(a, value, fn)
    if hit is not None:
        helper = hit[4] if len(hit) > 4 else ""
        return [KeptRng(hit[0], hit[1], hit[2], hit[3] and sa.kind == "assign", sa.kind == "container", helper)]
    out = []
    for el in container_elements(value) or []:
        hit = rng_source(a, el, fn)
        if hit is not None:
            out.append(KeptRng(hit[0], hit[1], hit[2], False, True, hit[4] if len(hit) > 4 else ""))
    return out


def reseed_methods(a: Analysis) -> Set[str]:
    """Method names that re-seed an RNG object in place: the last parts of the configured seeders
    (``seed``, ``manual_seed``...)."""
    return {s.rsplit(".", 1)[-1] for s in a.knowledge.seeders}


def renewed_worker_side(a: Analysis, fns: Sequence[FuncInfo]) -> Set[str]:
    """Attributes that worker-side code re-creates (``self.rng = ...``) or re-seeds in place
    (``self.rng.seed(...)``): such code does not draw from the parent's stream."""
    out: Set[str] = set()
    again = reseed_methods(a)
    for fn in fns:
        cond = _conditional(a, fn)
        maybe = cond.inside
        for sa in fn.self_assigns:
            if sa.kind == "assign" and id(sa.stmt) not in maybe:
                out.add(sa.attr)
        if not fn.self_name:
            continue
        for site in fn.calls:
            f = site.node.func
            if not (isinstance(f, cst.Attribute) and f.attr.value in again):
                continue
            attr = self_attr(f.value, fn.self_name)
            if not attr:
                continue
            if id(site.node) not in maybe or _reseeded_where_drawn(fn, attr, f.value, cond):
                out.add(attr)
            elif _reseeded_on_every_branch(site.node, fn.self_name, attr, again, cond):
                out.add(attr)
    return out


def _reseeded_on_every_branch(node: cst.CSTNode, me: str, attr: str, again: Set[str], cond: "_Conditional") -> bool:
    """The reseed ``node`` is under an ``if`` whose every branch reseeds ``self.<attr>`` (``if
    self._seed is not None: self._rng.seed(self._seed + i)`` / ``else: self._rng.seed(<fresh>)``),
    and that ``if`` (or one around it that does the same) runs whatever the conditions: a renewal."""
    while True:
        block = cond.block.get(id(node))
        if block is None:
            return True  # reached a statement no condition holds
        owner = cond.owner.get(block)
        if owner is None or not _every_branch_reseeds(owner, me, attr, again):
            return False
        node = owner


def _every_branch_reseeds(node: cst.If, me: str, attr: str, again: Set[str]) -> bool:
    if node.orelse is None:
        return False
    other = node.orelse if isinstance(node.orelse, cst.If) else None
    return _block_reseeds(node.body, me, attr, again) and (
        _every_branch_reseeds(other, me, attr, again) if other is not None
        else _block_reseeds(node.orelse.body, me, attr, again)  # type: ignore[union-attr]
    )


def _block_reseeds(block: cst.BaseSuite, me: str, attr: str, again: Set[str]) -> bool:
    """A statement of ``block`` itself (not one under a loop or a ``try``) reseeds ``self.<attr>``
    in place or assigns it anew, or is an ``if`` whose every branch does."""
    # `if c: self.rng.seed(1)` on one line: the suite is the one statement line
    body = [block] if isinstance(block, cst.SimpleStatementSuite) else list(getattr(block, "body", ()))
    for st in body:
        if isinstance(st, cst.If):
            if _every_branch_reseeds(st, me, attr, again):
                return True
            continue
        for small in st.body if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ():
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                f = small.value.func
                if isinstance(f, cst.Attribute) and f.attr.value in again and self_attr(f.value, me) == attr:
                    return True
            if isinstance(small, cst.Assign) and any(self_attr(t.target, me) == attr for t in small.targets):
                return True
    return False


def _reseeded_where_drawn(fn: FuncInfo, attr: str, reseeded: cst.CSTNode, cond: "_Conditional") -> bool:
    """A reseed under a condition that the function's every use of ``self.<attr>`` shares (``if
    self.seed is not None: self.g.manual_seed(self.seed); perm = torch.randperm(n, generator=self.g)``):
    when the condition is false nothing is drawn either, so the reseed is a renewal."""
    block = cond.block.get(id(reseeded))
    if block is None:
        return False
    uses = _SelfUses(fn.self_name or "self", attr)
    fn.node.body.visit(uses)
    return all(cond.block.get(id(n)) == block for n in uses.nodes)


class _SelfUses(cst.CSTVisitor):
    def __init__(self, me: str, attr: str) -> None:
        self.me, self.attr = me, attr
        self.nodes: List[cst.Attribute] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == self.attr and isinstance(node.value, cst.Name) and node.value.value == self.me:
            self.nodes.append(node)


# names whose presence in a condition makes it a per-process test: it is false only in the main
# process (`if info is not None:`) or after the renewal already happened (`if self._pid != os.getpid():`)
PER_PROCESS_WORDS = ("getpid", "get_worker_info", "worker_info", "worker_id", "initial_seed")


def _once_guard(test: cst.BaseExpression) -> bool:
    """A test for something not done yet (``not self.seeded``, ``self._rng is None``,
    ``not hasattr(self, "_rng")``): true in each fresh process until the body has run once."""
    if isinstance(test, cst.BooleanOperation):
        return _once_guard(test.left) or _once_guard(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        c = test.comparisons[0]
        right = c.comparator
        if isinstance(c.operator, (cst.Is, cst.Equal)) and isinstance(right, cst.Name):
            return right.value in ("None", "False")
    return False


class _Conditional(cst.CSTVisitor):
    """The nodes of a function body that run only when an ``if``/``elif``/``else`` test other than a
    per-process one (``if self.deterministic:``) takes one side: such a renewal can be skipped."""

    def __init__(self, per_process: Set[str]) -> None:
        self.per_process = per_process
        self.inside: Set[int] = set()
        self.blocks: List[int] = []  # the conditional bodies being visited, innermost last
        self.block: Dict[int, int] = {}  # node id -> the innermost conditional body holding it
        self.owner: Dict[int, cst.If] = {}  # a conditional body's id -> the ``if`` it belongs to

    def _per_process(self, test: cst.BaseExpression) -> bool:
        class Words(cst.CSTVisitor):
            found = False

            def visit_Name(inner, node: cst.Name) -> None:  # noqa: N805
                if any(w in node.value for w in PER_PROCESS_WORDS) or node.value in self.per_process:
                    inner.found = True

        w = Words()
        test.visit(w)
        return w.found or _once_guard(test)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if self.blocks:
            self.inside.add(id(node))
            self.block[id(node)] = self.blocks[-1]
        if isinstance(node, cst.If):
            node.test.visit(self)
            cond = not self._per_process(node.test)
            for part in (node.body, node.orelse):
                if part is None:
                    continue
                if cond:
                    self.blocks.append(id(part))
                    self.owner[id(part)] = node
                part.visit(self)
                if cond:
                    self.blocks.pop()
            return False
        return True


def conditional_nodes(a: Analysis, fn: FuncInfo) -> Set[int]:
    """ids of the nodes of ``fn``'s body under a condition that can be false in a worker."""
    return _conditional(a, fn).inside


def _conditional(a: Analysis, fn: FuncInfo) -> "_Conditional":
    per_process = {
        name
        for name, values in fn.local_assigns.items()
        if any(any(w in (dotted(getattr(v, "func", v)) or "") for w in PER_PROCESS_WORDS) for v in values)
    }
    v = _Conditional(per_process)
    body = fn.node.body
    for st in getattr(body, "body", ()):
        st.visit(v)
    return v


class _DatasetRefs:
    """``<x>.dataset.ATTR = ...``, ``setattr(<x>.dataset, "ATTR", ...)``, ``<x>.dataset.ATTR.seed(...)``
    and ``<x>.dataset.METHOD(...)`` anywhere (a worker_init_fn renewing the dataset's RNG per
    worker); ``dataset = get_worker_info().dataset`` aliases count as ``<x>.dataset``. Read from the
    analysis's assignment targets and call sites (no walk of its own)."""

    def __init__(self, aliases: Set[str], again: Set[str]) -> None:
        self.aliases = aliases
        self.again = again
        self.attrs: Set[str] = set()
        self.methods: Set[str] = set()

    def _is_dataset(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Attribute):
            return node.attr.value == "dataset"
        return isinstance(node, cst.Name) and node.value in self.aliases

    def collect(self, a: Analysis) -> None:
        for t in a.attr_targets:
            if self._is_dataset(t.value):
                self.attrs.add(t.attr.value)
        for site in a.calls:
            self._call(site.node)

    def _call(self, node: cst.Call) -> None:
        f = node.func
        if isinstance(f, cst.Name) and f.value == "setattr" and len(node.args) >= 2:
            name = string_value(node.args[1].value)
            if name and self._is_dataset(node.args[0].value):
                self.attrs.add(name)
        elif isinstance(f, cst.Attribute):
            recv = f.value
            if self._is_dataset(recv):
                self.methods.add(f.attr.value)
            elif f.attr.value in self.again and isinstance(recv, cst.Attribute) and self._is_dataset(recv.value):
                self.attrs.add(recv.attr.value)


@dataclass
class WorkerInitRenewal:
    attrs: Set[str]  # attributes a worker_init_fn sets on the worker's dataset
    methods: Set[str]  # dataset methods a worker_init_fn calls (or that are the worker_init_fn)


def worker_init_renewal(a: Analysis) -> WorkerInitRenewal:
    aliases = set()
    for fn in a.functions:
        for name, values in fn.local_assigns.items():
            if any(isinstance(v, cst.Attribute) and v.attr.value == "dataset" for v in values):
                aliases.add(name)
    v = _DatasetRefs(aliases, reseed_methods(a))
    v.collect(a)
    methods = set(v.methods)
    for lc in a.loader_calls:
        arg = lc.arg("worker_init_fn", 10)
        if isinstance(arg, cst.Attribute):  # worker_init_fn=ds.init_worker: a method of the dataset
            methods.add(arg.attr.value)
    return WorkerInitRenewal(v.attrs, methods)


# --------------------------------------------------------------------------------------------------
# the fix: planning


@dataclass(eq=False)
class RngPlan:
    owner: ClassInfo
    fn: FuncInfo
    attr: str
    small: Union[cst.Assign, cst.AnnAssign]
    kept: KeptRng
    seed: Optional[cst.BaseExpression]  # the original seed expression (None: no seed given)
    slot: Optional[Tuple[cst.Call, Optional[cst.Arg]]]  # (call taking the seed, its seed arg or None)
    import_stmt: Optional[cst.BaseSmallStatement] = None
    extend: List[Tuple[FuncInfo, cst.SimpleStatementLine, str]] = field(default_factory=list)
    add_getstate: bool = False

    @property
    def names(self) -> Names:
        return Names(self.attr)

    @property
    def seed_attr(self) -> str:
        return f"_{self.names.core}_seed"


def _seed_slot(a: Analysis, kept: KeptRng):
    """(call taking the seed, its seed argument or None) — or None when the seed cannot be placed."""
    q = kept.qname
    if q == "torch.Generator":
        if kept.expr is kept.ctor:
            return kept.ctor, None  # no seed: the generator's fixed default seed
        chain = kept.expr
        return chain, keyword(chain, "seed") or (positional(chain)[0] if positional(chain) else None)
    if q == "numpy.random.Generator":
        bit = keyword(kept.ctor, "bit_generator") or (positional(kept.ctor)[0] if positional(kept.ctor) else None)
        if bit is None or not isinstance(bit.value, cst.Call):
            return None
        inner = bit.value
        if not (a.qualify(inner.func) or "").startswith("numpy.random."):
            return None
        return inner, keyword(inner, "seed") or (positional(inner)[0] if positional(inner) else None)
    name = SEED_SLOTS.get(q)
    if name is None:
        return None
    return kept.ctor, keyword(kept.ctor, name) or (positional(kept.ctor)[0] if positional(kept.ctor) else None)


class _FreeNames(cst.CSTVisitor):
    def __init__(self, skip: Optional[cst.CSTNode]) -> None:
        self.skip = skip
        self.names: Set[str] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.skip:
            return False
        return super().on_visit(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node is self.skip:
            return False
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def plan_rng(a: Analysis, fn: FuncInfo, sa: SelfAssign, kept: KeptRng) -> Union[RngPlan, str]:
    """How to turn ``self.attr = <RNG>`` into a per-worker lazy RNG, or why it is not done (a phrase)."""
    owner = fn.cls
    attr = sa.attr
    if owner is None or not fn.is_method or not fn.self_name:
        return "it is not assigned in a method"
    if owner.in_function is not None:
        return "the class is defined inside a function"
    line = assignment_line(fn, sa, kept.expr, "RNG")
    if isinstance(line, str):
        return line
    small = sa.stmt  # an Assign or AnnAssign: assignment_line checked it
    slot = _seed_slot(a, kept)
    if slot is None:
        return "the seed cannot be located"
    call, seed_arg = slot
    if seed_arg is not None and seed_arg.star:
        return "the seed is passed with *"
    if any(arg.star for arg in call.args if arg is not seed_arg) or any(arg.star for arg in kept.ctor.args):
        return "the constructor is given *args or **kwargs"
    # the constructor is rebuilt in another method: its other arguments may use only module names
    free = _FreeNames(seed_arg)
    kept.expr.visit(free)
    known = module_level_names(a.module)
    import_stmt = None
    head = (dotted(kept.ctor.func) or "").split(".")[0]
    if not head:
        return "the constructor is not a plain name"
    for name in sorted(free.names):
        if name in known or hasattr(builtins, name) or name == fn.self_name == "self":
            continue
        if name == head:
            import_stmt = local_import(fn, head)
            if import_stmt is not None:
                continue
        return f"the RNG's arguments use the local name {name}"
    names = Names(attr)
    private = names.private() | {f"_{names.core}_seed"}
    for c in related_classes(a, owner):
        if has_slots(c):
            return f"{c.name} defines __slots__"
        if attr in c.methods or class_body_binds(c, attr):
            return f"{c.name} already defines {attr} in the class body"
        for g in c.methods.values():
            for s in g.self_assigns:
                if s.attr == attr and s.kind == "del":
                    return f"self.{attr} is deleted in {c.name}.{g.name}"
                if s.attr in private:
                    return f"self.{s.attr} is already used"
            if g.self_reads & private:
                return "the names the fix needs are already used"
    gs = getstate_plan(a, owner, [attr])
    if isinstance(gs, str):
        return gs
    extend, add = gs
    seed = seed_arg.value if seed_arg is not None else None
    return RngPlan(owner, fn, attr, small, kept, seed, slot, import_stmt, extend, add)


def group_fixable(plans: Sequence[RngPlan]) -> bool:
    """Several plans for one attribute of one class (``if seed is None: ... else: ...``) become one
    property: only when they rebuild the same RNG and all (or none) of them take a seed."""
    if len(plans) < 2:
        return True
    templates = {_template(p) for p in plans}
    seeded = {p.seed is not None for p in plans}
    return len(templates) == 1 and len(seeded) == 1


def _template(plan: RngPlan) -> str:
    return cst.Module(body=[]).code_for_node(_make(plan, cst.Name("SEED")))


# --------------------------------------------------------------------------------------------------
# the fix: rewriting


class _ReplaceSeed(cst.CSTTransformer):
    """Put ``seed`` in the seed slot of the call that takes it (adding the argument when absent)."""

    def __init__(self, plan: RngPlan, seed: cst.BaseExpression) -> None:
        self.call, self.arg = plan.slot  # type: ignore[misc]
        self.seed = seed

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if self.arg is not None and original_node is self.arg:
            return updated_node.with_changes(value=self.seed)
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if original_node is self.call and self.arg is None:
            args = list(updated_node.args)
            new = cst.Arg(value=self.seed)
            if args:
                new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated_node.with_changes(args=[new, *args])
        return updated_node


def _make(plan: RngPlan, seed: cst.BaseExpression) -> cst.BaseExpression:
    """The RNG expression with ``seed`` in its seed slot."""
    return plan.kept.expr.visit(_ReplaceSeed(plan, seed))  # type: ignore[return-value]


def _worker_seed(plan: RngPlan) -> str:
    return "info.seed % 2**32" if plan.kept.qname in SEED_32 else "info.seed"


def _create_lines(module: cst.Module, plan: RngPlan) -> List[str]:
    """The statements that build this process's RNG into ``self.<state>`` (``info`` is bound)."""
    code = module.code_for_node
    worker = _worker_seed(plan)
    state = f"self.{plan.names.state}"
    if plan.kept.qname == "torch.Generator" and plan.slot is not None and plan.slot[1] is None:
        ind = module.default_indent
        return [f"{state} = {code(plan.kept.ctor)}", "if info is not None:", f"{ind}{state}.manual_seed({worker})"]
    original = "None" if plan.seed is None else f"self.{plan.seed_attr}"
    return [f"seed = {original} if info is None else {worker}", f"{state} = {code(_make(plan, cst.Name('seed')))}"]


def _worker_info_expr(a: Analysis) -> Tuple[str, bool]:
    """How module-level code spells ``torch.utils.data.get_worker_info``, and whether
    ``import torch`` must be added."""
    known = module_level_names(a.module)
    target = "torch.utils.data.get_worker_info"
    best = None
    for local, full in a.aliases.items():
        if local not in known:
            continue
        if target == full or target.startswith(full + "."):
            spelled = local + target[len(full):]
            if best is None or len(spelled) < len(best):
                best = spelled
    if best is not None:
        return best + "()", False
    return target + "()", True


def _members(module: cst.Module, plan: RngPlan, worker_info: str) -> List[str]:
    n = plan.names
    ind = module.default_indent
    what = f"{module.code_for_node(plan.kept.ctor.func)}()"
    body = [
        f'"""{what} of this process, seeded per DataLoader worker."""',
        f'if getattr(self, "{n.pid}", None) != os.getpid():',
    ]
    if plan.import_stmt is not None:
        body.append(f"{ind}{module.code_for_node(plan.import_stmt)}")
    body += [f"{ind}info = {worker_info}"]
    body += [f"{ind}{line}" for line in _create_lines(module, plan)]
    body += [f"{ind}self.{n.pid} = os.getpid()", f"return self.{n.state}"]
    prop = f"@property\ndef {plan.attr}(self):\n" + "".join(f"{ind}{x}\n" for x in body)
    setter_body = [f"self.{n.state} = value", f"self.{n.pid} = os.getpid()"]
    setter = f"@{plan.attr}.setter\ndef {plan.attr}(self, value):\n" + "".join(f"{ind}{x}\n" for x in setter_body)
    return [prop, setter]


def _init_line(module: cst.Module, plan: RngPlan) -> cst.BaseSmallStatement:
    me = plan.fn.self_name
    n = plan.names
    if plan.seed is not None:
        code = f"{me}.{plan.seed_attr} = {module.code_for_node(plan.seed)}"
    else:
        code = f"{me}.{n.state} = {me}.{n.pid} = None"
    return small_statement(code, module)


class _RngTransformer(ClassRewrite):
    getstate_doc = "Pickle without the per-process RNGs: each worker process builds its own."

    def __init__(self, a: Analysis, plans: Sequence[RngPlan]) -> None:
        module = a.module
        super().__init__(module)
        self.smalls: Dict[int, cst.BaseSmallStatement] = {}
        self.need_torch = False
        worker_info, self.need_torch = _worker_info_expr(a)
        # a class and its base both needing a new __getstate__: one, in the base, pops every key
        # (popping a key that is absent is harmless; a subclass's own would hide the base's)
        adders = {id(p.owner.node) for p in plans if p.add_getstate}

        def getstate_home(owner: ClassInfo) -> ClassInfo:
            home = owner
            for c in a.mro(owner)[1:]:
                if id(c.node) in adders:
                    home = c
            return home

        done: Set[Tuple[int, str]] = set()
        for p in plans:
            self.smalls[id(p.small)] = _init_line(module, p)
            key = (id(p.owner.node), p.attr)
            if key in done:
                continue
            done.add(key)
            n = p.names
            self.members.setdefault(id(p.owner.node), []).extend(_members(module, p, worker_info))
            home = getstate_home(p.owner) if p.add_getstate else None
            self.add_resets(p.extend, [("pop", n.state), ("pop", n.pid)], home)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        return self.smalls.get(id(original_node), updated_node).with_changes(semicolon=updated_node.semicolon)

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
        return self.smalls.get(id(original_node), updated_node).with_changes(semicolon=updated_node.semicolon)


def apply_rng(a: Analysis, plans: Sequence[RngPlan]) -> cst.Module:
    """Rewrite every planned attribute into a per-worker lazy RNG."""
    if not plans:
        return a.module
    t = _RngTransformer(a, plans)
    module = a.module.visit(t)
    return ensure_imports(module, ["os", "torch"] if t.need_torch else ["os"])


# the datasets' own word (``transform=``, ``torchvision.transforms``); "augment" is not one: augmentation
# packages hold batch-level augmenters that the training loop runs in the main process as often
# (kornia.augmentation, braindecode.augmentation, GPU mixers)
TRANSFORM_WORDS = ("transform",)


def transform_classes(a: Analysis) -> List[ClassInfo]:
    """Module-level classes written as data transforms, which datasets run in their DataLoader workers:
    not datasets, with a ``__call__``, and named as transforms (the class, ``RandomFlipTransform``,
    or its module or package, ``cut_transforms/clipping.py``, ``espnet/transform/perturb.py``). Which dataset
    runs one is decided where it is built (often by the user), so it is not looked for."""
    path = (a.path or "").replace("\\", "/").lower()
    in_transforms = any(w in part for part in path.split("/") for w in TRANSFORM_WORDS)
    datasets = {id(c) for c in a.dataset_classes}
    out: List[ClassInfo] = []
    for cls in a.classes:
        if cls.in_function is not None or id(cls) in datasets or a.module_classes.get(cls.name) is not cls:
            continue
        if not (in_transforms or any(w in cls.name.lower() for w in TRANSFORM_WORDS)):
            continue
        if a.resolve_method(cls, "__call__") is not None:
            out.append(cls)
    return out
