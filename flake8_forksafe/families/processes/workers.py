"""Facts of the processes family (FRK401): which module-level statements start worker processes
(a DataLoader with workers iterated, a Pool, a Process started), followed through calls, variables
and instances (``WorkerStarts``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    ClassInfo,
    FuncInfo,
    LoaderCall,
    OwnScope,
    int_value,
    is_main_guard,
    keyword,
    positional,
    returned_values,
    self_attr,
    string_value,
)

MAX_DEPTH = 8  # expression / call-chain depth followed when resolving a value
MAX_FUNCTION_WALKS = 400  # function bodies walked per module (call chains are followed per call site)
MAX_VALUE_STEPS = 20000  # value questions answered per module


class Ctx:
    """Where an expression is evaluated: a function (None: module level), the arguments bound to
    its parameters by the call being followed, and the instance ``self`` stands for."""

    __slots__ = ("scope", "env", "inst", "for_loaders", "for_procs", "for_pools")

    def __init__(
        self,
        scope: Optional[FuncInfo],
        env: Optional[Dict[str, Tuple[cst.BaseExpression, "Ctx"]]] = None,
        inst: Optional[Tuple[ClassInfo, Dict[str, Tuple[cst.BaseExpression, "Ctx"]]]] = None,
    ) -> None:
        self.scope = scope
        self.env = env or {}
        self.inst = inst
        self.for_loaders: Set[str] = set()  # names bound by `for x in [loader_a, loader_b]`
        self.for_pools: Set[str] = set()  # names bound by `with ProcessPoolExecutor() as ex`
        self.for_procs: Set[str] = set()  # names bound by `for p in processes`


@dataclass
class Hit:
    """Why a statement starts workers; ``start_call`` when it is a direct ``Process.start()``."""

    why: str
    start_call: Optional[cst.Call] = None


class WorkerStarts:
    """Which statements start worker processes, following same-module calls with their arguments."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.k = a.knowledge
        self.consumers, self.wrappers, self.context_keywords = (
            self.k.iteration_consumers,
            self.k.iteration_wrappers,
            self.k.context_keywords,
        )
        self.loaders: Dict[int, LoaderCall] = {id(lc.node): lc for lc in a.loader_calls}
        self._memo: Dict[Tuple[int, int, int], Optional[str]] = {}
        self._budget = MAX_FUNCTION_WALKS
        self._values: Dict[Tuple[str, int, int], bool] = {}  # (kind, id(expr), id(ctx)) -> answer
        self._steps = MAX_VALUE_STEPS
        self._plain: Dict[int, Ctx] = {}
        self._ctxs: List[Ctx] = []  # keeps every context alive: memo keys use id()
        self._stack: List[int] = []  # functions being followed (recursion guard)
        self._tuples: Dict[int, Dict[str, List[Tuple[cst.BaseExpression, int]]]] = {}

    def ctx(self, scope: Optional[FuncInfo], env=None, inst=None) -> Ctx:
        """The context for ``scope``; one shared object when nothing is bound."""
        if not env and inst is None:
            key = id(scope)
            c = self._plain.get(key)
            if c is None:
                c = self._plain[key] = Ctx(scope)
            return c
        c = Ctx(scope, env, inst)
        self._ctxs.append(c)
        return c

    def _memo_call(self, kind: str, compute, expr, ctx: Ctx, depth: int) -> bool:
        """Each (question, expression, context) is answered once; a question met again while it is
        being answered (a cycle: ``x = x or y``) answers False; a step budget bounds the work."""
        if expr is None or depth > MAX_DEPTH or self._steps <= 0:
            return False
        key = (kind, id(expr), id(ctx))
        got = self._values.get(key)
        if got is not None:
            return got
        self._steps -= 1
        self._values[key] = False
        result = bool(compute(expr, ctx, depth))
        self._values[key] = result
        return result

    # -- cheap pre-check ----------------------------------------------------------------------
    def may_start(self) -> bool:
        if any(lc.workers != "zero" for lc in self.a.loader_calls):
            return True
        if any(self.loader_factory(site.node, self.ctx(site.func)) for site in self.a.calls):
            return True
        if self.a.index is not None and any(  # a loader a function of another module returns
            site.func is None and self.project_loader(site.node, self.ctx(None)) for site in self.a.calls
        ):
            return True
        k = self.k
        names = k.pools | k.lazy_pools | k.process_classes | k.spawners | k.get_context
        if any(site.qname in names for site in self.a.calls):
            return True
        return any(self.process_class(c) for c in self.a.module_classes.values())

    # -- the module's top level ---------------------------------------------------------------
    def top_level(self) -> List[Tuple[cst.CSTNode, Hit]]:
        """Unguarded top-level statements that start workers, with the first reason found."""
        out: List[Tuple[cst.CSTNode, Hit]] = []
        if not self.may_start():
            return out
        ctx = self.ctx(None)
        for stmt in self.a.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or is_main_guard(stmt):
                continue
            hits = self.walk(stmt, ctx)
            if not hits:
                continue
            other = [h for h in hits if h.start_call is None]
            out.append((stmt, other[0] if other else hits[0]))
        return out

    def walk(self, node: cst.CSTNode, ctx: Ctx) -> List[Hit]:
        w = _Walker(self, ctx)
        node.visit(w)
        return w.hits

    # -- functions ----------------------------------------------------------------------------
    def function_starts(self, fn: FuncInfo, call: cst.Call, ctx: Ctx, inst=None, skip_self=False) -> Optional[str]:
        key = (id(fn), id(call), id(ctx) if ctx.scope is not None else 0)
        if key in self._memo:
            return self._memo[key]
        if id(fn) in self._stack or len(self._stack) >= MAX_DEPTH or self._budget <= 0:
            return None
        self._budget -= 1
        self._stack.append(id(fn))
        try:
            env = self.bind(fn, call, ctx, skip_self)
            inner = self.ctx(fn, env, inst)
            hits: List[Hit] = []
            for stmt in fn.node.body.body if isinstance(fn.node.body, cst.IndentedBlock) else [fn.node.body]:
                hits = self.walk(stmt, inner)
                if hits:
                    break
            why = hits[0].why if hits else None
        finally:
            self._stack.pop()
        self._memo[key] = why
        return why

    def bind(self, fn: FuncInfo, call: Optional[cst.Call], ctx: Ctx, skip_self: bool) -> Dict:
        """Parameter name -> (argument expression, context it is evaluated in); defaults included."""
        p = fn.node.params
        pos_params = [*p.posonly_params, *p.params]
        if skip_self and pos_params:
            pos_params = pos_params[1:]
        env: Dict[str, Tuple[cst.BaseExpression, Ctx]] = {}
        module_ctx = self.ctx(fn.parent)
        for param in (*pos_params, *p.kwonly_params):
            if param.default is not None:
                env[param.name.value] = (param.default, module_ctx)
        if call is None:
            return env
        bound = set()
        for param, arg in zip(pos_params, positional(call)):
            env[param.name.value] = (arg.value, ctx)
            bound.add(param.name.value)
        for arg in call.args:
            if arg.keyword is not None:
                env[arg.keyword.value] = (arg.value, ctx)
                bound.add(arg.keyword.value)
        if any(arg.star for arg in call.args):
            # *args / **kwargs may fill any parameter not named explicitly: unknown
            env = {k: v for k, v in env.items() if k in bound}
        return env

    def callee(self, call: cst.Call, ctx: Ctx):
        """(function, instance, skip_self, label) for a same-module function, method or class call."""
        f = call.func
        if isinstance(f, cst.Name):
            fn = self.a.function_named(f.value, ctx.scope)
            if fn is not None and f.value not in self.a.aliases:
                return fn, None, False, f.value
            cls = self.a.module_classes.get(f.value)
            if cls is not None and f.value not in self.a.aliases:
                init = self.a.resolve_method(cls, "__init__")
                if init is not None:
                    return init, (cls, self.bind(init, call, ctx, True)), True, f.value
            return None
        if isinstance(f, cst.Attribute):
            inst = self.instance_of(f.value, ctx)
            if inst is not None:
                cls, env = inst
                meth = self.a.resolve_method(cls, f.attr.value)
                if meth is not None and meth.self_name is not None:
                    return meth, (cls, env), True, f"{cls.name}.{f.attr.value}"
        return None

    def instance_of(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0):
        """(class, bound __init__ arguments) when ``expr`` is an instance of a same-module class."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            scope = ctx.scope
            if scope is not None and scope.self_name == expr.value and ctx.inst is not None:
                return ctx.inst
            if scope is not None and scope.self_name == expr.value:
                cls = self.a.owner_class(scope)
                return (cls, {}) if cls is not None else None
            for value, vctx in self.values(expr.value, ctx):
                got = self.instance_of(value, vctx, depth + 1)
                if got is not None:
                    return got
            return None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value not in self.a.aliases:
            cls = self.a.module_classes.get(expr.func.value)
            if cls is not None:
                init = self.a.resolve_method(cls, "__init__")
                return cls, (self.bind(init, expr, ctx, True) if init is not None else {})
        return None

    # -- values ------------------------------------------------------------------------------
    def values(self, name: str, ctx: Ctx) -> List[Tuple[cst.BaseExpression, Ctx]]:
        """The expressions a name may hold in ``ctx``, each with the context to evaluate it in."""
        scope = ctx.scope
        if scope is not None:
            if name in ctx.env:
                return [ctx.env[name]]
            if name in scope.params:
                return []
            if name in scope.local_assigns:
                return [(v, ctx) for v in scope.local_assigns[name]]
            f = scope.parent
            while f is not None:
                if name in f.params:
                    return []
                if name in f.local_assigns:
                    return [(v, self.ctx(f)) for v in f.local_assigns[name]]
                f = f.parent
            module = self.ctx(None)
            return [(v, module) for v in self.a.module_assigns.get(name, [])]
        return [(v, ctx) for v in self.a.module_assigns.get(name, [])]

    def unpacked(self, name: str, ctx: Ctx) -> List[Tuple[cst.BaseExpression, int, Ctx]]:
        """``a, b = value`` in the scope of ``ctx`` (or the module): (value, position of name, context)."""
        scope = ctx.scope
        if scope is not None and name not in ctx.env and name not in scope.params:
            got = self._tuple_binds(scope).get(name)
            if got:
                return [(v, i, ctx) for v, i in got]
            if name in scope.local_assigns:
                return []
            ctx = self.ctx(None)
        elif scope is not None:
            return []
        return [(v, i, ctx) for v, i in self._tuple_binds(None).get(name, [])]

    def _tuple_binds(self, scope: Optional[FuncInfo]) -> Dict[str, List[Tuple[cst.BaseExpression, int]]]:
        key = id(scope)
        got = self._tuples.get(key)
        if got is None:
            got = self._tuples[key] = {}
            nodes = (
                [s for s in self.a.module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
                if scope is None
                else [scope.node.body]
            )
            collector = _TupleAssigns(got, None if scope is None else scope.node)
            for node in nodes:
                node.visit(collector)
        return got

    def element_is_loader(self, value: cst.BaseExpression, index: int, ctx: Ctx, depth: int) -> bool:
        """Element ``index`` of what ``value`` evaluates to is a DataLoader with workers."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(value, (cst.Tuple, cst.List)):
            els = value.elements
            if index < len(els) and not any(isinstance(e, cst.StarredElement) for e in els):
                return self.is_loader(els[index].value, ctx, depth + 1)
            return False
        if isinstance(value, cst.Name):
            return any(self.element_is_loader(v, index, c, depth + 1) for v, c in self.values(value.value, ctx))
        if isinstance(value, cst.Call):
            target = self.callee(value, ctx)
            if target is None:  # a loader factory from outside the module: each element it gives
                return self.loader_factory(value, ctx)
            if target[1] is not None or id(target[0]) in self._stack:
                return False
            fn = target[0]
            inner = self.ctx(fn, self.bind(fn, value, ctx, False))
            self._stack.append(id(fn))
            try:
                return any(self.element_is_loader(r, index, inner, depth + 1) for r in returned_values(fn))
            finally:
                self._stack.pop()
        return False

    def attr_values(self, expr: cst.Attribute, ctx: Ctx) -> List[Tuple[cst.BaseExpression, Ctx]]:
        """Values stored in ``self.x`` by the methods of the class ``self`` stands for."""
        scope = ctx.scope
        if scope is None or not scope.self_name:
            return []
        attr = self_attr(expr, scope.self_name)
        if attr is None:
            return []
        cls, init_env = ctx.inst if ctx.inst is not None else (self.a.owner_class(scope), {})
        if cls is None:
            return []
        out = []
        for fn in self.a.class_functions(cls):
            for sa in fn.self_assigns:
                if sa.attr == attr and sa.kind == "assign" and sa.value is not None:
                    env = init_env if fn.name == "__init__" else {}
                    out.append((sa.value, self.ctx(fn, env, ctx.inst)))
        return out

    def int_of(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0) -> Optional[int]:
        v = int_value(expr)
        if v is not None or depth > MAX_DEPTH:
            return v
        if isinstance(expr, cst.Name):
            vals = self.values(expr.value, ctx)
            if len(vals) == 1:
                return self.int_of(vals[0][0], vals[0][1], depth + 1)
        return None

    def context_method(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> Optional[str]:
        """The start method a context expression names: "spawn", "fork"..., "" when unknown."""
        if expr is None or depth > MAX_DEPTH:
            return None
        s = string_value(expr)
        if s is not None:
            return s
        if isinstance(expr, cst.Call) and self.a.qualify(expr.func) in self.k.get_context:
            arg = keyword(expr, "method")
            arg_value = arg.value if arg is not None else (expr.args[0].value if expr.args else None)
            return string_value(arg_value) or ""
        if isinstance(expr, cst.Name):
            for value, vctx in self.values(expr.value, ctx):
                m = self.context_method(value, vctx, depth + 1)
                if m is not None:
                    return m
        return None

    def forked(self, call: cst.Call, ctx: Ctx) -> bool:
        """The call is given an explicit "fork" context: its children re-import nothing."""
        for kw in self.context_keywords:
            arg = keyword(call, kw)
            if arg is not None and self.context_method(arg.value, ctx) == "fork":
                return True
        f = call.func
        return isinstance(f, cst.Attribute) and self.context_method(f.value, ctx) == "fork"

    # -- loaders -----------------------------------------------------------------------------
    def loader_starts(self, lc: LoaderCall, ctx: Ctx) -> bool:
        node = lc.arg("num_workers", 5)
        if isinstance(node, cst.Name) and ctx.scope is not None and node.value in ctx.env:
            value, vctx = ctx.env[node.value]
            if self.int_of(value, vctx) == 0:
                return False
        elif lc.workers == "zero":
            return False
        return not self.forked(lc.node, ctx)

    def is_loader(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> bool:
        """``expr`` evaluates to a DataLoader that has worker processes."""
        return self._memo_call("L", self._is_loader, expr, ctx, depth)

    def _is_loader(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> bool:
        if expr is None or depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            lc = self.loaders.get(id(expr))
            if lc is not None:
                return self.loader_starts(lc, ctx)
            target = self.callee(expr, ctx)
            if target is not None and target[1] is None:
                return self.returns_loader(target[0], expr, ctx, depth)
            return target is None and (self.loader_factory(expr, ctx) or self.project_loader(expr, ctx))
        if isinstance(expr, cst.Name):
            if expr.value in ctx.for_loaders:
                return True
            if any(self.is_loader(v, c, depth + 1) for v, c in self.values(expr.value, ctx)):
                return True
            return any(self.element_is_loader(v, i, c, depth + 1) for v, i, c in self.unpacked(expr.value, ctx))
        if isinstance(expr, cst.Attribute):
            return any(self.is_loader(v, c, depth + 1) for v, c in self.attr_values(expr, ctx))
        if isinstance(expr, cst.Subscript):
            return self.holds_loader(expr.value, ctx, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self.is_loader(expr.body, ctx, depth + 1) or self.is_loader(expr.orelse, ctx, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self.is_loader(expr.left, ctx, depth + 1) or self.is_loader(expr.right, ctx, depth + 1)
        return False

    def loader_factory(self, call: cst.Call, ctx: Ctx) -> bool:
        """A call from outside the module that builds a DataLoader with workers: its name contains a
        ``loader_factory_words`` word and it is given one of ``loader_factory_keywords`` (``num_workers=``,
        ``workers=``) that is not 0 (``training.to_dataloader(batch_size=128, num_workers=2)``)."""
        f = call.func
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
        if not any(w in name.lower() for w in self.k.loader_factory_words):
            return False
        arg = next((a for a in (keyword(call, kw) for kw in self.k.loader_factory_keywords) if a is not None), None)
        if arg is None or self.int_of(arg.value, ctx) == 0:
            return False
        return not self.forked(call, ctx)

    def project_loader(self, call: cst.Call, ctx: Ctx) -> bool:
        """A call of a function of another module of the project (the index) that returns a
        DataLoader with workers: ``dataloaders.cifar10_train()`` whose chain ends in
        ``DataLoader(dataset, **params)`` (any ``num_workers``: workers, as in this module), or
        ``get_loader(ds, workers=2)`` returning ``DataLoader(ds, num_workers=workers)``: the
        argument given, else the parameter's default, decides (a parameter of a function further
        down the chain is not followed: no finding)."""
        got = self.a.project_function_returns(call, "loader")
        if got is None or self.forked(call, ctx):
            return False
        spec = got[0]
        if spec == "some":
            return True
        if not spec.startswith("param:") or self.a.index is None:
            return False
        _, name, default = spec.split(":", 2)
        q = self.a.absolute(self.a.qualify(call.func) or "")
        fn = self.a.index.callable_at(q)
        if fn is None or not fn[0].returns.startswith("loader:"):
            return False  # the parameter is a deeper function's
        arg = keyword(call, name)
        value = arg.value if arg is not None else None
        params = fn[0].params
        if value is None and name in params:
            i = params.index(name)
            positional = [a for a in call.args if a.keyword is None]
            if not any(a.star for a in positional[: i + 1]) and i < len(positional):
                value = positional[i].value
        if value is None:
            return default != "0"
        return self.int_of(value, ctx) != 0

    def holds_loader(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0) -> bool:
        """A dict / list / tuple of DataLoaders (``loaders["train"]``, ``for dl in [a, b]``)."""
        return self._memo_call("H", self._holds_loader, expr, ctx, depth)

    def _holds_loader(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return any(self.is_loader(e.value, ctx, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self.is_loader(e.value, ctx, depth + 1) for e in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.is_loader(expr.elt, ctx, depth + 1)
        if isinstance(expr, cst.DictComp):
            return self.is_loader(expr.value, ctx, depth + 1)
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Name) and expr.func.value == "dict":
                return any(self.is_loader(arg.value, ctx, depth + 1) for arg in expr.args)
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "values" and not expr.args:
                return self.holds_loader(expr.func.value, ctx, depth + 1)
            return False
        if isinstance(expr, cst.Name):
            return any(self.holds_loader(v, c, depth + 1) for v, c in self.values(expr.value, ctx))
        if isinstance(expr, cst.Attribute):
            return any(self.holds_loader(v, c, depth + 1) for v, c in self.attr_values(expr, ctx))
        return False

    def returns_loader(self, fn: FuncInfo, call: cst.Call, ctx: Ctx, depth: int) -> bool:
        if id(fn) in self._stack or depth > MAX_DEPTH:
            return False
        inner = self.ctx(fn, self.bind(fn, call, ctx, False))
        self._stack.append(id(fn))
        try:
            return any(self.is_loader(r, inner, depth + 1) for r in returned_values(fn))
        finally:
            self._stack.pop()

    def iterates_loader(
        self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0
    ) -> Optional[cst.BaseExpression]:
        """The DataLoader (with workers) that iterating ``expr`` iterates (``enumerate(loader)``,
        ``tqdm(dl)``, a name bound to either), or None."""
        if expr is None or depth > MAX_DEPTH:
            return None
        if self.is_loader(expr, ctx, depth):
            return expr
        if isinstance(expr, cst.Call) and self.a.qualify(expr.func) in self.wrappers:
            for arg in expr.args:
                if arg.keyword is None:
                    got = self.iterates_loader(arg.value, ctx, depth + 1)
                    if got is not None:
                        return got
            return None
        if isinstance(expr, cst.Name) and expr.value not in ctx.for_loaders:
            for v, c in self.values(expr.value, ctx):
                if isinstance(v, cst.Call) and self.iterates_loader(v, c, depth + 1) is not None:
                    return expr
        return None

    # -- processes ---------------------------------------------------------------------------
    def process_class(self, cls: Optional[ClassInfo]) -> bool:
        if cls is None:
            return False
        for c in self.a.mro(cls):
            if any(q in self.k.process_classes for q in c.base_qnames if q):
                return True
        return False

    def is_process(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> bool:
        return self._memo_call("P", self._is_process, expr, ctx, depth)

    def _is_process(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> bool:
        if expr is None or depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            f = expr.func
            if self.forked(expr, ctx):
                return False
            if self.a.qualify(f) in self.k.process_classes:
                return True
            if isinstance(f, cst.Attribute) and f.attr.value == "Process" and self.context_method(f.value, ctx) is not None:
                return True
            if isinstance(f, cst.Name) and f.value not in self.a.aliases:
                return self.process_class(self.a.module_classes.get(f.value))
            return False
        if isinstance(expr, cst.Name):
            if expr.value in ctx.for_procs:
                return True
            return any(self.is_process(v, c, depth + 1) for v, c in self.values(expr.value, ctx))
        if isinstance(expr, cst.Attribute):
            return any(self.is_process(v, c, depth + 1) for v, c in self.attr_values(expr, ctx))
        if isinstance(expr, cst.Subscript):
            return self.holds_process(expr.value, ctx, depth + 1)
        return False

    def holds_process(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0) -> bool:
        return self._memo_call("Q", self._holds_process, expr, ctx, depth)

    def _holds_process(self, expr: cst.BaseExpression, ctx: Ctx, depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return any(self.is_process(e.value, ctx, depth + 1) for e in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.is_process(expr.elt, ctx, depth + 1)
        if isinstance(expr, cst.Name):
            return any(self.holds_process(v, c, depth + 1) for v, c in self.values(expr.value, ctx))
        return False

    def is_lazy_pool(self, expr: Optional[cst.BaseExpression], ctx: Ctx, depth: int = 0) -> Optional[str]:
        """The executor (``lazy_pools``) that ``expr`` is, which starts its workers on first use."""
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            q = self.a.qualify(expr.func)
            return q if q in self.k.lazy_pools and not self.forked(expr, ctx) else None
        if isinstance(expr, cst.Name):
            if expr.value in ctx.for_pools:
                return "ProcessPoolExecutor"
            for v, c in self.values(expr.value, ctx):
                got = self.is_lazy_pool(v, c, depth + 1)
                if got is not None:
                    return got
        return None

    def pool_call(self, call: cst.Call, ctx: Ctx) -> Optional[str]:
        """The name of a pool / executor / spawner that this call starts, if any."""
        q = self.a.qualify(call.func)
        if q in self.k.spawners:
            return q
        f = call.func
        if q in self.k.pools or (
            isinstance(f, cst.Attribute) and f.attr.value == "Pool" and self.context_method(f.value, ctx) is not None
        ):
            if self.forked(call, ctx):
                return None
            return q or "Pool"
        return None


class _Walker(cst.CSTVisitor):
    """Visits one statement (not the bodies of functions, classes and lambdas it defines)."""

    def __init__(self, ws: WorkerStarts, ctx: Ctx) -> None:
        self.ws = ws
        self.ctx = ctx
        self.hits: List[Hit] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_If(self, node: cst.If) -> bool:
        return not is_main_guard(node)

    def _code(self, node: cst.CSTNode) -> str:
        text = " ".join(self.ws.a.module.code_for_node(node).split())
        return text if len(text) <= 40 else text[:37] + "..."

    def _iter(self, expr: cst.BaseExpression) -> bool:
        loader = self.ws.iterates_loader(expr, self.ctx)
        if loader is not None:
            self.hits.append(Hit(f"iterates `{self._code(loader)}`, a DataLoader with worker processes,"))
        return loader is not None

    def visit_For(self, node: cst.For) -> None:
        self._iter(node.iter)
        if isinstance(node.target, cst.Name):
            if self.ws.holds_loader(node.iter, self.ctx):
                self.ctx.for_loaders.add(node.target.value)
            if self.ws.holds_process(node.iter, self.ctx):
                self.ctx.for_procs.add(node.target.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._iter(node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            if self.ws.is_lazy_pool(node.item, self.ctx) is not None:
                self.ctx.for_pools.add(node.asname.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        ws, ctx = self.ws, self.ctx
        q = ws.a.qualify(node.func)
        if q in ws.consumers:
            for arg in node.args:
                if arg.keyword is None and not arg.star and self._iter(arg.value):
                    return
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value in ws.k.loader_consumer_methods and ws.callee(node, ctx) is None:
            for arg in node.args:  # trainer.fit(model, train_dataloaders=dl): the trainer iterates dl
                if not arg.star and ws.is_loader(arg.value, ctx):
                    self.hits.append(
                        Hit(f"passes `{self._code(arg.value)}`, a DataLoader with worker processes, to .{f.attr.value}(),")
                    )
                    return
        pool = ws.pool_call(node, ctx)
        if pool is not None:
            self.hits.append(Hit(f"calls {pool.rsplit('.', 1)[-1]}(), which starts worker processes,"))
            return
        if isinstance(f, cst.Attribute) and f.attr.value in ws.k.lazy_pool_starts:
            lazy = ws.is_lazy_pool(f.value, ctx)
            if lazy is not None:  # an executor starts its processes on the first submit / map
                self.hits.append(Hit(f"calls .{f.attr.value}() on a {lazy.rsplit('.', 1)[-1]}, which starts worker processes,"))
                return
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value == "start" and ws.is_process(f.value, ctx):
            self.hits.append(Hit("starts a Process", start_call=node))
            return
        target = ws.callee(node, ctx)
        if target is not None:
            fn, inst, skip_self, label = target
            why = ws.function_starts(fn, node, ctx, inst, skip_self)
            if why is not None:
                self.hits.append(Hit(f"calls {label}(), which {why.rstrip(',')},"))


class _TupleAssigns(OwnScope):
    """``a, b = value`` statements of one scope: name -> [(value, position)]."""

    def __init__(self, out: Dict[str, List[Tuple[cst.BaseExpression, int]]], own: Optional[cst.FunctionDef]) -> None:
        super().__init__(own)
        self.out = out

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in target.elements
            ):
                for i, el in enumerate(target.elements):
                    if isinstance(el.value, cst.Name):
                        self.out.setdefault(el.value.value, []).append((node.value, i))
