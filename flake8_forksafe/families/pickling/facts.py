"""Facts of the pickling family (FRK201, FRK202): where a callable ends up pickled for spawn/forkserver
workers ("sinks": stored on a dataset instance, passed into a dataset constructor, given to a DataLoader
as ``collate_fn``/``worker_init_fn``/...), and which lambdas, local functions and local classes an
expression keeps (``Keeper``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import (
    CONTAINER_METHODS,
    Analysis,
    CallSite,
    ClassInfo,
    FuncInfo,
    LoaderCall,
    dotted,
    no_worker_processes,
    param_default,
    parsed_annotation,
    push_children,
    returned_values,
    string_value,
)
from flake8_forksafe.families.constructors import (
    _project_dataset_factory,
    factory_qname,
    constructed_class,
    constructor_stores,
    dataset_constructor,
    local_definition,
    local_definitions,
)
from flake8_forksafe.prefilter import LOADER_ATTRS  # the gate's anchor is the rule's vocabulary


# DataLoader parameters that take a callable or an object, with their positional index.
# the callables a DataLoader hands to its workers (its sampler and batch_sampler run in the parent:
# ``_MultiProcessingDataLoaderIter`` gives each worker the dataset, collate_fn and worker_init_fn only)
LOADER_CALLABLES = (("collate_fn", 6), ("worker_init_fn", 10))


SPAWN_HINT = "spawn/forkserver workers cannot pickle it (it only works under fork)"


@dataclass
class Leaf:
    kind: str  # "lambda", "def" (a local function), "class" (a local class, or an instance of one)
    node: cst.CSTNode  # the Lambda, FunctionDef or ClassDef
    hint: str  # a name describing where it is used (attribute, keyword, variable)
    in_lambda_call: bool  # wrapped in transforms.Lambda(...)
    factory: str = ""  # made and returned by this closure factory (``Cls._make_transform``), called elsewhere


class Keeper:
    """Finds the lambdas, local functions and local classes whose objects an expression keeps:
    through containers, calls that wrap their arguments (``transforms.Lambda``, ``Compose``,
    ``functools.partial``, ``defaultdict``...), conditional expressions and local variables or
    parameter defaults. Lambdas given to transient calls (``sorted(key=...)``, ``map``, ``filter``...)
    and immediately called lambdas are not kept."""

    MAX_DEPTH = 8

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.functions, self.methods = a.knowledge.transient_functions, a.knowledge.transient_methods

    def leaves(self, expr: cst.BaseExpression, scope: Optional[FuncInfo], hint: str) -> List[Leaf]:
        out: List[Leaf] = []
        self._walk(expr, scope, hint, False, 0, set(), out)
        return out

    def is_transient(self, call: cst.Call) -> bool:
        q = self.a.qualify(call.func)
        if q is not None and q in self.functions:
            return True
        f = call.func
        if not isinstance(f, cst.Attribute):
            return False
        # A module's function is judged by its qualified name above (`wds.map(lambda ...)` is a
        # pipeline stage that keeps its function, not the builtin `map`).
        recv = f.value
        on_module = isinstance(recv, cst.Name) and self.a.is_module_alias(recv.value)
        if on_module:
            return False
        if f.attr.value in self.methods:
            return True
        # A lower-case method of an object (not a module: `functools.partial`, `np.vectorize` and
        # classes such as `T.Lambda` keep their argument) returns a value computed with the lambda:
        # `self.first = self.transform.get_index_of_first(lambda t: ...)`.
        return f.attr.value[:1].islower()

    def _walk(self, e, scope, hint, lam, depth, seen: Set[int], out: List[Leaf]) -> None:
        if e is None or depth > self.MAX_DEPTH or id(e) in seen:
            return
        seen.add(id(e))
        go = functools.partial(self._walk, depth=depth + 1, seen=seen, out=out)
        if isinstance(e, cst.Lambda):
            out.append(Leaf("lambda", e, hint, lam))
        elif isinstance(e, cst.Name):
            self._name(e.value, scope, lam, depth, seen, out)
        elif isinstance(e, cst.Call):
            if isinstance(e.func, cst.Lambda):
                return
            # what a same-file factory returns (``self.default_transforms()``, a lower-case method
            # whose arguments the transient test below would judge used, not kept)
            factory = closure_factory(self.a, e, scope)
            if factory is not None and id(factory.node) not in seen:
                seen.add(id(factory.node))
                made: List[Leaf] = []
                for value in returned_values(factory):
                    self._walk(value, factory, hint, lam, depth + 1, seen, made)
                label = qualname(factory).replace(".<locals>.", ".")
                for leaf in made:
                    if leaf.kind in ("def", "lambda"):
                        out.append(Leaf(leaf.kind, leaf.node, leaf.hint, leaf.in_lambda_call, leaf.factory or label))
            if self.is_transient(e):
                return
            if isinstance(e.func, cst.Name):
                d = local_definition(self.a, e.func.value, scope)
                if isinstance(d, ClassInfo):  # an instance of a local class
                    out.append(Leaf("class", d.node, d.name, False))
            wrap = (dotted(e.func) or "").rsplit(".", 1)[-1] == "Lambda"
            # a function of another module of the project that makes datasets of its arguments: only
            # the arguments one of those datasets keeps (lightly's ``_load_dataset_from_folder``
            # gives ``is_valid_file`` to ``ImageFolder``, which only scans with it)
            made = self._factory_keeps(e)
            pos = -1
            for arg in e.args:
                if made is not None and not arg.star:
                    if arg.keyword is None:
                        pos += 1
                    param = arg.keyword.value if arg.keyword is not None else (made[0][pos] if pos < len(made[0]) else None)
                    if param is not None and param in made[1]:
                        continue
                go(arg.value, scope, arg.keyword.value if arg.keyword is not None else hint, lam or wrap)
        elif isinstance(e, (cst.List, cst.Tuple, cst.Set)):
            for el in e.elements:
                go(el.value, scope, hint, lam)
        elif isinstance(e, cst.Dict):
            for el in e.elements:
                key = string_value(el.key) if isinstance(el, cst.DictElement) else None
                go(el.value, scope, key if key and key.isidentifier() else hint, lam)
        elif isinstance(e, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            go(e.elt, scope, hint, lam)
        elif isinstance(e, cst.DictComp):
            go(e.value, scope, hint, lam)
        elif isinstance(e, cst.IfExp):
            go(e.body, scope, hint, lam)
            go(e.orelse, scope, hint, lam)
        elif isinstance(e, cst.BooleanOperation):
            go(e.left, scope, hint, lam)
            go(e.right, scope, hint, lam)
        elif isinstance(e, cst.Subscript):
            go(e.value, scope, hint, lam)
        elif isinstance(e, cst.NamedExpr):
            go(e.value, scope, hint, lam)
        elif isinstance(e, cst.Attribute) and scope is not None:
            for fn, value in self._stored(e, scope):
                go(value, fn, e.attr.value, lam)

    def _factory_keeps(self, call: cst.Call) -> Optional[Tuple[List[str], FrozenSet[str]]]:
        """When the callee is a function of another module of the project that makes datasets of its
        arguments: (its parameters, those none of its datasets keeps: ``ProjectIndex.factory_drops``),
        else None."""
        a = self.a
        if a.index is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        q = a.qualify(call.func)
        if not q or q.split(".", 1)[0] in _NOT_PROJECT_TOPS:
            return None
        made = _project_dataset_factory(a, q)
        if made is None:
            return None
        try:
            return made[0], a.index.factory_drops(factory_qname(a, q), a._is_dataset_base_name)
        except Exception:  # noqa: BLE001 - the index cannot say: every argument may be kept
            return None

    def _stored(self, e: cst.Attribute, scope: FuncInfo) -> List[Tuple[FuncInfo, cst.BaseExpression]]:
        """What ``self.<attr>`` (read in ``scope``) was set to in any method of its class, its
        same-file bases or the same-file classes derived from it: ``self.collate_fn = lambda b: ...``
        in ``__init__``, passed as ``collate_fn=self.collate_fn`` from another method; a container
        filled in one method (``self.fns[k] = fn``) and read in another."""
        f = scope
        while f is not None and f.cls is None:
            f = f.parent  # a nested function reading the method's self
        if f is None or not f.self_name or not (isinstance(e.value, cst.Name) and e.value.value == f.self_name):
            return []
        cls = f.cls
        classes = list(self.a.mro(cls)) + [c for c in self.a.classes if c is not cls and cls in self.a.mro(c)]
        out = []
        for c in classes:
            for m in c.methods.values():
                for fn in [m] + list(m.nested):
                    for sa in fn.self_assigns:
                        if sa.attr == e.attr.value and sa.kind != "del" and sa.value is not None and sa.value is not e:
                            out.append((fn, sa.value))
        return out

    def _name(self, name, scope, lam, depth, seen, out) -> None:
        d = local_definition(self.a, name, scope)
        if isinstance(d, FuncInfo):
            for each in local_definitions(self.a, name, scope):  # a def per branch: any may be kept
                out.append(Leaf("def", each.node, name, lam))  # type: ignore[attr-defined]
            return
        if isinstance(d, ClassInfo):
            out.append(Leaf("class", d.node, name, lam))
            return
        go = functools.partial(self._walk, depth=depth + 1, seen=seen, out=out)
        f = scope
        while f is not None:
            if name in f.local_assigns:
                for v in f.local_assigns[name]:
                    go(v, f, name, lam)
                # a local container filled before it is stored: `ops.append(lambda ...)`
                for site in f.calls:
                    fn = site.node.func
                    if (
                        isinstance(fn, cst.Attribute)
                        and fn.attr.value in CONTAINER_METHODS
                        and isinstance(fn.value, cst.Name)
                        and fn.value.value == name
                    ):
                        for arg in site.node.args:
                            go(arg.value, f, name, lam)
                return
            if name in f.params:
                default = param_default(f, name)
                if default is not None:
                    go(default, f.parent, name, lam)  # defaults are evaluated outside the function
                return
            f = f.parent
        for v in self.a.module_assigns.get(name, ()):
            go(v, None, name, lam)


def closure_factory(a: Analysis, call: cst.Call, scope: Optional[FuncInfo]) -> Optional[FuncInfo]:
    """The same-file function ``call`` runs when it may return a closure: a module-level function
    (``make_transform(size)``), or a method, staticmethod or classmethod of a class of the file
    (``Cls._transform_generator(t)``, ``self._make(t)``, ``cls._make(t)``)."""
    f = call.func
    fn: Optional[FuncInfo] = None
    if isinstance(f, cst.Name):
        if local_definition(a, f.value, scope) is None:
            fn = a.module_functions.get(f.value)
    elif isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name):
        recv = f.value.value
        cls = a.module_classes.get(recv)
        if cls is None and scope is not None:
            m = scope
            while m.parent is not None:
                m = m.parent
            if m.cls is not None and (recv == m.self_name or recv == "cls"):
                cls = m.cls
        if cls is not None:
            fn = a.resolve_method(cls, f.attr.value)
    if fn is None or not fn.nested and not fn.lambdas:
        return None  # nothing local to return
    return fn


@dataclass
class Sink:
    what: str  # "stored on dataset DS (self.transform)", for messages
    exempt: bool  # every loader it reaches has num_workers=0
    leaves: List[Leaf]


def qualname(fn: Optional[FuncInfo]) -> str:
    """``build.<locals>.DS.__init__``, as pickle names local objects."""
    parts: List[str] = []
    f = fn
    while f is not None:
        parts.append(f"{f.cls.name}.{f.name}" if f.cls is not None else f.name)
        f = f.parent
    return ".<locals>.".join(reversed(parts))


def top_of(a: Analysis, fn: Optional[FuncInfo], stmt: Optional[cst.CSTNode] = None) -> Optional[cst.CSTNode]:
    """The module-level statement that probably holds code of ``fn`` (or, at module level, ``stmt``):
    a hint that spares walking the whole module."""
    if fn is not None:
        while fn.parent is not None:
            fn = fn.parent
        return fn.node if fn.cls is None else fn.cls.node
    for top in a.module.body:
        if top is stmt or (isinstance(top, cst.SimpleStatementLine) and any(x is stmt for x in top.body)):
            return top
    return None


def lambda_tops(a: Analysis) -> Dict[int, cst.CSTNode]:
    out = {}
    for lam, fn, stmt in a.lambdas:
        top = top_of(a, fn, stmt) if fn is not None else None
        if top is not None:
            out[id(lam)] = top
    return out


def loader_sites(a: Analysis) -> List[LoaderCall]:
    """Every DataLoader call, and the ``super().__init__(...)`` of DataLoader subclasses."""
    out = list(a.loader_calls)
    classes = a.loader_classes
    for site in a.calls:
        fn = site.func
        if fn is not None and fn.cls is not None and fn.cls in classes and is_super_init(site.node):
            out.append(LoaderCall(a, site))
    return out


def is_super_init(call: cst.Call) -> bool:
    f = call.func
    return (
        isinstance(f, cst.Attribute)
        and f.attr.value == "__init__"
        and isinstance(f.value, cst.Call)
        and dotted(f.value.func) == "super"
    )


def _base_init_class(a: Analysis, site: CallSite) -> Optional[ClassInfo]:
    """The dataset class whose base constructor ``super().__init__(...)`` / ``Base.__init__(self, ...)``
    calls, when ``site`` is one inside a dataset class."""
    fn = site.func
    cls = a.owner_class(fn)
    if cls is None or cls not in a.dataset_classes:
        return None
    f = site.node.func
    if is_super_init(site.node):
        return cls
    if isinstance(f, cst.Attribute) and f.attr.value == "__init__" and isinstance(f.value, cst.Name):
        base = a.class_named(f.value.value)
        if base is not None and base in a.dataset_classes:
            return cls
    return None


def _used_only_args(a: Analysis, site: CallSite, base: Optional[ClassInfo]) -> FrozenSet[str]:
    """Constructor arguments that the class receiving them only uses: a library model's
    ``transient`` (``ImageFolder(is_valid_file=...)``, also through a same-file subclass with no
    ``__init__`` of its own below the library base), or the parameters that the ``__init__``
    receiving them only calls or never reads (``transient_params``): a same-file one, or one of
    another module of the project (the index: ``PathsDataset(label_fn=...)``, which builds its
    targets with ``label_fn`` at once and keeps nothing)."""
    if base is None:
        cls = a.module_classes.get(site.qname or "")
        if cls is None:
            made = _project_dataset_factory(a, site.qname, site) if site.qname else None
            if made is not None:  # a dataset factory of the project: what none of its datasets keeps
                return frozenset(set(made[0]) - made[1])
            return a.transient_args(site.qname) | _project_transient(a, a.absolute(site.qname or ""), None)
        init = a.resolve_method(cls, "__init__")
        if init is not None:
            return transient_params(init)
        return a.transient_args(None, cls) | _project_transient(a, a.class_qname(cls), "")
    init = a.resolve_method(base, "__init__", after=base)
    if init is not None:
        return transient_params(init)  # a same-file base's __init__ receives them
    return a.transient_args(None, base) | _project_transient(a, a.class_qname(base), "")


# the libraries whose names the project index is never asked about (they are no project's code)
_NOT_PROJECT_TOPS = frozenset({"torch", "torchvision", "numpy", "builtins"})


def _project_transient(a: Analysis, qname: Optional[str], after: Optional[str]) -> FrozenSet[str]:
    """``Method.transient`` of the ``__init__`` the project index finds for the class ``qname``
    (``after`` is not None: the first one after the class itself, in its bases)."""
    if a.index is None or not qname or qname.split(".", 1)[0] in _NOT_PROJECT_TOPS:
        return frozenset()
    try:
        ref = a.index.resolve_method(qname, "__init__", after=qname if after is not None else None)
        m = a.index.method(ref) if ref is not None else None
    except Exception:  # noqa: BLE001 - the index cannot say: nothing is transient
        return frozenset()
    return frozenset(m.transient) if m is not None else frozenset()


_CAPTURING = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.GeneratorExp)


def transient_params(init: FuncInfo) -> FrozenSet[str]:
    """The parameters of ``init`` (after ``self``) that its body only calls (``label_fn(path)``,
    also in a list, set or dict comprehension) or never reads: none is stored, passed on, read
    otherwise, or read in a nested def, class, lambda or generator expression (which may outlive
    the call), and the body calls no ``locals()`` / ``vars()``. The project index computes the
    same from the CPython tree (``index.transient_params_of_ast``)."""
    left = {p for p in init.params if p != init.self_name}
    todo: List[Tuple[cst.CSTNode, bool, bool]] = [(init.node.body, False, False)]  # (node, captured, callee)
    kids: List[cst.CSTNode] = []
    while todo and left:
        n, captured, callee = todo.pop()
        t = type(n)
        if t is cst.Name:
            if n.value in left and (captured or not callee):
                left.discard(n.value)
            continue
        if t is cst.Attribute:
            todo.append((n.value, captured, False))  # ``x.attr``: the attribute's name is no read
            continue
        if t is cst.Arg:
            todo.append((n.value, captured, False))  # ``f(kw=x)``: the keyword is no read
            continue
        if t is cst.Call:
            if type(n.func) is cst.Name and n.func.value in ("locals", "vars"):
                return frozenset()
            todo.append((n.func, captured, True))
            todo.extend((arg, captured, False) for arg in n.args)
            continue
        inner = captured or isinstance(n, _CAPTURING)
        push_children(n, kids)
        todo.extend((c, inner, False) for c in kids)
        kids.clear()
    return frozenset(left)


# calls that use an object in the calling process, without keeping it or handing it on
IN_PROCESS_CALLS = frozenset({
    "next", "iter", "len", "list", "tuple", "sorted", "enumerate", "zip", "isinstance", "hasattr", "getattr",
    "setattr", "delattr", "print", "repr", "str", "type", "id", "vars", "dir", "sum", "any", "all", "min", "max",
})
# pytest's ``monkeypatch`` fixture: patching an object's attribute keeps nothing of it
_FIXTURE_CALLS = {"monkeypatch": frozenset({"setattr", "delattr", "setitem", "delitem"})}
_STAYS_DEPTH = 3


def stays_in_process(a: Analysis, site: CallSite, depth: int = 0) -> bool:
    """The object ``site`` builds inside a function is used in this process only: iterated by a
    ``for`` or a comprehension, given to ``IN_PROCESS_CALLS`` (``next``, ``list``...) or to pytest's
    ``monkeypatch``, wrapped by another dataset constructor or a lazy iteration wrapper (``tqdm``)
    whose result does the same, or bound to
    a local name (not a parameter) whose every use does, whichever assignment it reads: indexed,
    iterated, measured, advanced, attributes read or set, methods called on it (but one whose name
    says it builds a loader or an
    iterator over workers: ``to_dataloader``, ``iterator``), compared or asserted on. Anything else
    (returned, yielded, stored, passed to another call, captured by a nested scope) may take it to
    a DataLoader's workers. Module-level objects are importable: never."""
    fn = site.func
    if fn is None or depth > _STAYS_DEPTH or fn.has_global:
        return False
    return _stays(a, fn, site.node, _body_map(fn)[0], depth)


def chain_stays_in_process(a: Analysis, site: CallSite) -> bool:
    """``stays_in_process`` for a stage of a method chain (``Dataset(...).map(f).filter(g)``): the
    value of the whole chain the stage ``site`` is part of is used in this process only."""
    fn = site.func
    if fn is None or fn.has_global:
        return False
    parents = _body_map(fn)[0]
    node: cst.CSTNode = site.node
    while True:  # up the chain: `<node>.method(...)`
        up = parents.get(id(node))
        if not (isinstance(up, cst.Attribute) and up.value is node):
            break
        call = parents.get(id(up))
        if not (isinstance(call, cst.Call) and call.func is up):
            break
        node = call
    return _stays(a, fn, node, parents, 0, follow=True)


def _body_map(fn: FuncInfo) -> Tuple[Dict[int, cst.CSTNode], List[cst.Name]]:
    """(id(node) -> its parent, the ``Name`` nodes) of ``fn``'s body: one walk, memoised on ``fn``."""
    got = fn.__dict__.get("_body_map")
    if got is None:
        parents: Dict[int, cst.CSTNode] = {}
        names: List[cst.Name] = []
        stack: List[cst.CSTNode] = [fn.node.body]
        kids: List[cst.CSTNode] = []
        while stack:
            n = stack.pop()
            if type(n) is cst.Name:
                names.append(n)
                continue
            push_children(n, kids)
            for c in kids:
                parents[id(c)] = n
            stack += kids
            kids.clear()
        got = fn.__dict__["_body_map"] = (parents, names)
    return got


def _stays(
    a: Analysis, fn: FuncInfo, node: cst.CSTNode, parents: Dict[int, cst.CSTNode], depth: int, follow: bool = False
) -> bool:
    """The value of ``node`` (a call building the object, or a use of the name it is bound to),
    where it stands in ``fn``, keeps the object in this process. ``follow``: the object is a
    pipeline stage, which a method called on it (``dp.shuffle()``) may wrap in the pipeline it
    returns: that result must stay too (a name bound to it: one more level of ``depth``)."""
    if depth > _STAYS_DEPTH:
        return False
    parent = parents.get(id(node))
    up = parent
    while up is not None and up is not fn.node.body:  # a nested scope keeps it alive: captured
        if isinstance(up, _CAPTURING):
            return False
        up = parents.get(id(up))
    if isinstance(node, cst.Call):
        if isinstance(parent, cst.Assign) and parent.value is node:
            if len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
                return False
            name = parent.targets[0].target.value
            if name in fn.params:
                return False
            # every use of the name, whichever assignment it reads (a test building one dataset
            # after another under one name): the object is reached only through them
            return _uses_stay(a, fn, name, parents, depth + 1 if follow else depth, follow)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return True
    else:
        if isinstance(parent, cst.AssignTarget):
            return True  # the one assignment of the name
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return True
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = parents.get(id(parent))
            if isinstance(grand, cst.Call) and grand.func is parent:
                method = parent.attr.value.lower()
                if "loader" in method or "iterator" in method:
                    return False
                if follow and not isinstance(parents.get(id(grand)), cst.Expr):
                    return _stays(a, fn, grand, parents, depth, follow)  # its result may hold it
                return True
            return True  # ``ds.attr``, ``ds.attr = v``
        if isinstance(parent, (cst.Subscript, cst.Comparison, cst.ComparisonTarget, cst.Assert, cst.If,
                               cst.UnaryOperation, cst.BooleanOperation, cst.Del, cst.Expr)):
            return True
    if isinstance(parent, cst.Element) and parent.value is node:  # `for ds in (a, b):`, `concat([a, b])`
        container = parents.get(id(parent))
        return isinstance(container, (cst.List, cst.Tuple, cst.Set)) and _stays(a, fn, container, parents, depth, follow)
    if isinstance(parent, cst.Arg) and parent.value is node:
        call = parents.get(id(parent))
        if not isinstance(call, cst.Call):
            return False
        f = call.func
        if isinstance(f, cst.Name) and f.value in IN_PROCESS_CALLS:
            return True
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in _FIXTURE_CALLS.get(f.value.value, ()):
            return f.value.value in fn.params
        wrap = next((c for c in fn.calls if c.node is call), None)  # not in a nested scope: fn's own
        # wrapped by another dataset constructor, or by a lazy iteration wrapper (``tqdm(ds)``,
        # ``enumerate(ds)``: rules/multiprocessing.toml), whose result stays too
        return wrap is not None and (
            dataset_constructor(a, wrap) is not None
            or class_factory(a, wrap) is not None
            or (wrap.qname or "") in a.knowledge.iteration_wrappers
        ) and depth < _STAYS_DEPTH and _stays(a, fn, call, parents, depth + 1, follow)
    return False


def _uses_stay(
    a: Analysis, fn: FuncInfo, name: str, parents: Dict[int, cst.CSTNode], depth: int, follow: bool = False
) -> bool:
    for use in _body_map(fn)[1]:
        if use.value != name:
            continue
        parent = parents.get(id(use))
        if (isinstance(parent, cst.Attribute) and parent.attr is use) or (isinstance(parent, cst.Arg) and parent.keyword is use):
            continue  # ``x.name``, ``f(name=x)``: not the variable
        if not _stays(a, fn, use, parents, depth, follow):
            return False
    return True


def _library_dataset(a: Analysis, site: CallSite) -> bool:
    """``site`` builds a dataset of a modelled library (a public class of a dataset module,
    ``torchvision.datasets.Cityscapes``, or a dataset class of ``rules/libraries.toml``): it keeps
    its keyword arguments but those the model lists as transient (filtered out before), as a
    lambda given there directly is judged."""
    q = site.qname or ""
    k = a.knowledge
    lib = k.library_classes.get(q)
    if lib is not None:
        return lib.dataset
    return k.in_dataset_module(q)


class Sinks:
    """Where objects get pickled for worker processes, with what each keeps."""

    def __init__(self, a: Analysis, loader_args: Sequence[str]) -> None:
        self.a = a
        self.keeper = Keeper(a)
        self.loader_args = loader_args

    def __iter__(self) -> Iterator[Sink]:
        yield from self.dataset_attributes()
        yield from self.loader_arguments()
        yield from self.loader_attributes()
        yield from self.constructor_arguments()
        yield from self.pipeline_stages()
        yield from self.base_loader_attributes()
        yield from self.returned_callables()

    def returned_callables(self) -> Iterator[Sink]:
        """Lambdas and local functions that a function (or a method) of this file returns, when a
        dataset of another module of the project keeps what it returns on the parent side (the index,
        ``ProjectIndex.callable_keepers``): clean-fid's ``ResizeDataset.__init__`` keeps
        ``build_resizer(mode)``, which returns ``lambda x: x`` or ``make_resizer(...)``'s local
        function. A dataset of this file keeping it is found through its attributes already."""
        a = self.a
        if a.index is None:
            return
        module = a.module_name[0]
        if not module:
            return
        owners: List[Tuple[FuncInfo, str]] = [(fn, f"{module}.{name}") for name, fn in a.module_functions.items()]
        for cname, cls in a.module_classes.items():
            owners += [(fn, f"{module}.{cname}.{name}") for name, fn in cls.methods.items() if name != "__init__"]
        named = a.index.offered_returned_callables(a.path)  # the gate's reading of this file's ast
        if named is not None:
            wanted = {f"{module}.{n}" for n in named}
            owners = [(fn, q) for fn, q in owners if q in wanted]
        # a function can return a lambda or a def only when it has one, or calls a function that does
        # (``return make_resizer(...)``): the others' return values are not read
        makers = {fn.name for fn, _ in owners if fn.nested or fn.lambdas}
        calling: Set[int] = set()
        for _ in range(3):
            for site in a.calls:
                f, fn = site.node.func, site.func
                name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else None
                if fn is not None and name in makers and id(fn) not in calling:
                    calling.add(id(fn))
                    makers.add(fn.name)
        for fn, q in owners:
            if not fn.nested and not fn.lambdas and id(fn) not in calling:
                continue
            # rarely kept or given to a loader: asked before the return values are read
            got = a.index.callable_keepers(q)
            prop = fn.cls is not None and fn.name in fn.cls.properties  # @property / cached_property
            user = a.index.loader_callable_user(q, "attr" if prop else "call") if got is None else None
            if got is None and user is None:
                continue
            leaves = [
                leaf for v in returned_values(fn) for leaf in self.keeper.leaves(v, fn, fn.name) if leaf.kind in ("lambda", "def")
            ]
            if not leaves:
                continue
            if user is not None:
                kw, path, line = user
                by = f"property {fn.cls.name}.{fn.name}" if prop and fn.cls is not None else f"{fn.name}()"
                yield Sink(f"returned by {by}, passed as {kw} to a DataLoader whose num_workers is not 0 ({path}:{line})", False, leaves)
                continue
            ds, attr, path, line, via = got  # type: ignore[misc]
            if via:
                what = f"returned by {fn.name}() and kept by {via} objects, which dataset {ds} keeps in self.{attr}"
            else:
                what = f"returned by {fn.name}(), which dataset {ds} keeps in self.{attr}"
            yield Sink(f"{what} ({path}:{line})", False, leaves)

    def base_loader_attributes(self) -> Iterator[Sink]:
        """``self.collate_fn = lambda b: ...`` in a class whose base class in another module of the
        project passes ``collate_fn=self.collate_fn`` to a DataLoader with workers (the index)."""
        a = self.a
        if a.index is None:
            return
        for cls in a.classes:
            if cls.in_function is not None or not cls.base_qnames:
                continue
            attrs = a.project_loader_attrs(cls)
            if not attrs:
                continue
            for fn in a.class_functions(cls):
                for sa in fn.self_assigns:
                    if sa.kind != "assign" or sa.value is None or sa.attr not in attrs:
                        continue
                    leaves = self.keeper.leaves(sa.value, fn, sa.attr)
                    if not leaves:
                        continue
                    where, path, line = attrs[sa.attr]
                    yield Sink(
                        f"stored in self.{sa.attr}, which base class {where} passes to a DataLoader with workers "
                        f"({path}:{line})",
                        False,
                        leaves,
                    )

    def pipeline_stages(self) -> Iterator[Sink]:
        """Functions given to a method called on a dataset object, fluent-pipeline style:
        ``wds.WebDataset(urls).decode("pil").map_dict(txt=lambda t: ...).map(lambda s: ...)``. The
        chain's root is a dataset constructor call; each stage keeps its function in the iterable
        dataset the chain returns, which is pickled for spawn workers."""
        a = self.a
        loaders = [lc for lc in loader_sites(a)]
        reaching: Dict[int, bool] = {}  # id(call in a chain given to a loader) -> that loader starts workers
        for lc in loaders:
            ds = lc.arg("dataset", 0)
            values = [ds] if ds is not None else []
            if isinstance(ds, cst.Name):
                values = list(a.local_values(ds.value, lc.site.func))
            for v in values:
                while isinstance(v, cst.Call):
                    reaching[id(v)] = reaching.get(id(v), False) or lc.workers != "zero"
                    v = v.func.value if isinstance(v.func, cst.Attribute) else None
        by_node = {id(site.node): site for site in a.calls}
        for site in a.calls:
            f = site.node.func
            if not isinstance(f, cst.Attribute) or not site.node.args:
                continue
            rs = self._pipeline_root(f.value, site.func, by_node)
            if rs is None or (isinstance(rs, CallSite) and not self._stage_keeps(rs, f.attr.value)):
                continue
            leaves: List[Leaf] = []
            for i, arg in enumerate(site.node.args):
                hint = arg.keyword.value if arg.keyword is not None else f.attr.value
                got = self.keeper.leaves(arg.value, site.func, hint)
                if got and isinstance(rs, CallSite) and self._project_stage_applies(rs, f.attr.value, arg, i):
                    continue
                leaves += got
            if not leaves:
                continue
            if id(site.node) in reaching:
                exempt = a.all_loaders_zero or not reaching[id(site.node)]
            else:  # a pipeline iterated, measured or asserted on in this process only (a test)
                exempt = a.all_loaders_zero or chain_stays_in_process(a, site)
            what = rs
            if isinstance(rs, CallSite):
                name = dataset_constructor(a, rs)
                if name is None:  # a method of the class that makes one: ``Dataset.from_dataframe(...)``
                    name = f"{rs.node.func.value.value}.{rs.node.func.attr.value}"  # type: ignore[attr-defined]
                what = f"{name}(...)"
            yield Sink(f"given to a stage (.{f.attr.value}()) of the dataset pipeline {what}", exempt, leaves)

    def _pipeline_root(self, expr: cst.BaseExpression, scope: Optional[FuncInfo], by_node: Dict[int, CallSite]) -> Union[CallSite, str, None]:
        """The dataset constructor call a method chain starts from (``WebDataset(urls).decode()``),
        also through the local names the chain's receiver is bound to, a pipeline built one stage per
        statement (``dp = IterableWrapper(urls)``, ``dp = dp.on_disk_cache(...)``,
        ``dp = dp.filter(keep)``): every value of the name is followed (a bounded search). A
        parameter annotated with a dataset class (``def join(datapipe: IterDataPipe)``) is a
        pipeline too: "the IterDataPipe parameter datapipe"."""
        a = self.a
        todo: List[cst.BaseExpression] = [expr]
        seen: Set[int] = set()
        while todo and len(seen) < 64:
            root = todo.pop()
            while isinstance(root, cst.Call):
                cand = by_node.get(id(root))
                if cand is not None and (dataset_constructor(a, cand) is not None or class_factory(self.a, cand) is not None):
                    return cand
                if not isinstance(root.func, cst.Attribute):
                    break
                root = root.func.value
            if isinstance(root, cst.Name):
                values = list(a.local_values(root.value, scope))
                for v in values:
                    if id(v) not in seen:
                        seen.add(id(v))
                        todo.append(v)
                if not values:
                    cls = self._annotated_dataset(root.value, scope)
                    if cls is not None:
                        return f"(the {cls} parameter {root.value})"
        return None

    def _annotated_dataset(self, name: str, scope: Optional[FuncInfo]) -> Optional[str]:
        """The dataset class ``name``'s annotation names, when ``name`` is a parameter of ``scope``
        (or of a function around it) that no statement there rebinds."""
        got = self.a.param_annotation(scope, name)
        if got is None or got[1] is None or name in got[0].local_assigns:
            return None
        q = self.a.qualify(got[1])
        return q.rsplit(".", 1)[-1] if q and self.a._is_dataset_base_name(q) else None

    def _project_stage_applies(self, root: CallSite, method: str, arg: cst.Arg, i: int) -> bool:
        """The stage is a method of a dataset class of another module of the project (the index)
        whose parameter receiving ``arg`` (the ``i``-th argument) it only calls, never keeps
        (``Method.transient``: ``def filter(self, filter_fn): ... if filter_fn(g): ...``)."""
        a = self.a
        if a.index is None or not root.qname or arg.star:
            return False
        try:
            ref = a.index.resolve_method(a.absolute(root.qname), method)
            m = a.index.method(ref) if ref is not None else None
        except Exception:  # noqa: BLE001 - the index cannot say
            return False
        if m is None or not m.params:
            return False
        params = m.params[1:]  # after self
        if arg.keyword is not None:
            param = arg.keyword.value
        elif i < len(params):
            param = params[i]
        else:
            return False
        return param in m.transient

    def _stage_keeps(self, root: CallSite, method: str) -> bool:
        """A stage method of a same-file dataset class keeps its function only when its body stores
        one of its parameters on ``self`` or returns something built from one, other than by calling
        it (``return Items(x for x in self.items if keep(x))`` applies ``keep`` at once); a library's
        stage, ``WebDataset.map``, is taken to keep it."""
        a = self.a
        f = root.node.func
        cls = a.module_classes.get(f.value) if isinstance(f, cst.Name) else None
        if cls is None and isinstance(f, cst.Attribute):
            made = class_factory(self.a, root)  # ``Dataset.from_dataframe(df).map(fn)``
            cls = made[0] if made is not None else None
        if cls is None:
            return True
        fn = a.resolve_method(cls, method)
        if fn is None:
            return True  # inherited from a base outside the file
        params = set(fn.params) - {fn.self_name}
        kept: Set[str] = set()

        class V(cst.CSTVisitor):
            def visit_Return(self, node: cst.Return) -> None:
                if node.value is not None:
                    node.value.visit(N())

        class All(cst.CSTVisitor):  # every name: a lambda's body runs later, so what it calls is kept
            def visit_Name(self, node: cst.Name) -> None:
                kept.add(node.value)

        class N(All):  # names passed on or stored; a name that is only called is applied
            def visit_Call(self, node: cst.Call) -> bool:
                if not isinstance(node.func, cst.Name):
                    node.func.visit(self)
                for arg in node.args:
                    arg.visit(self)
                return False

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                node.body.visit(All())
                return False

        fn.node.body.visit(V())
        for sa in fn.self_assigns:
            if sa.value is not None:
                sa.value.visit(N())
        for inner in fn.nested:  # a local function returned or stored keeps what it closes over
            if inner.name in kept:
                inner.node.body.visit(All())
        return bool(kept & params)

    def loader_attributes(self) -> Iterator[Sink]:
        """``loader.collate_fn = f`` / ``dl.worker_init_fn = f`` after construction, on a name bound
        to a DataLoader call whose num_workers is not 0 (the loader reads the attribute when it starts
        its workers, and spawn pickles it), or, for ``collate_fn`` / ``worker_init_fn`` (which only a
        loader reads), on a name the function does not bind (a parameter, a loop over given loaders)."""
        a = self.a
        loaders = {id(lc.node): lc for lc in loader_sites(a)}
        loader_classes = {id(c) for c in a.loader_classes}
        for st in a.attr_stores:
            if st.attr not in self.loader_args:
                continue
            if st.func is not None and st.name == st.func.self_name:
                # ``self.worker_init_fn = f`` in a method of a DataLoader subclass: the loader itself
                # (its num_workers is its caller's); on any other class, not a loader's attribute
                if st.attr in LOADER_ATTRS and st.func.cls is not None and id(st.func.cls) in loader_classes:
                    leaves = self.keeper.leaves(st.value, st.func, st.attr)
                    if leaves:
                        where = f"self.{st.attr} of {st.func.cls.name}, a DataLoader subclass (its num_workers is its caller's)"
                        yield Sink(f"assigned to {where}", False, leaves)
                continue
            values = a.local_values(st.name, st.func) if st.func is not None else a.module_assigns.get(st.name, [])
            lcs = [loaders[id(v)] for v in values if id(v) in loaders]
            if lcs:
                if all(lc.workers == "zero" for lc in lcs):
                    continue
                where = f"{st.name}.{st.attr} of a DataLoader whose num_workers is not 0"
            elif not values and st.func is not None and st.attr in LOADER_ATTRS:  # only a loader reads them
                # a loader the function was given (a parameter, a loop over them): its num_workers is
                # the caller's, not literally 0 here
                where = f"{st.name}.{st.attr}, a DataLoader {st.func.node.name.value}() was given (its num_workers is the caller's)"
            else:
                continue
            leaves = self.keeper.leaves(st.value, st.func, st.attr)
            if leaves:
                yield Sink(f"assigned to {where}", False, leaves)

    def dataset_attributes(self) -> Iterator[Sink]:
        """``self.x = ...`` (or a container on self) in a dataset's methods, except methods that only
        run inside workers and ``__setstate__`` (a lambda created there is never pickled)."""
        a = self.a
        found: Dict[int, Tuple[FuncInfo, str, List[ClassInfo], List[Leaf]]] = {}
        for cls in a.dataset_classes:
            worker = {id(f) for f in a.worker_side(cls)}
            parent_fns = a.parent_side(cls)
            parent = {id(f) for f in parent_fns}
            own = a.class_functions(cls)
            mine = {id(f) for f in own}
            # and an overridden base method the parent side still runs (``super().__init__(cfg)``
            # into a same-file mixin's ``__init__``)
            for fn in own + [f for f in parent_fns if id(f) not in mine and f.cls is not None]:
                if (id(fn) in worker and id(fn) not in parent) or fn.name == "__setstate__":
                    continue  # runs in the worker (after unpickling): never pickled again
                for sa in fn.self_assigns:
                    if sa.kind == "del" or sa.value is None:
                        continue
                    key = id(sa)
                    if key not in found:
                        found[key] = (fn, sa.attr, [], self.keeper.leaves(sa.value, fn, sa.attr))
                    found[key][2].append(cls)
        for fn, attr, classes, leaves in found.values():
            if not leaves:
                continue
            owner = fn.cls.name if fn.cls is not None else classes[0].name
            yield Sink(
                f"stored on dataset {owner} (self.{attr})",
                all(no_worker_processes(a, c) for c in classes),
                leaves,
            )

    def loader_arguments(self) -> Iterator[Sink]:
        for lc in loader_sites(self.a):
            if lc.workers == "zero":
                continue
            for kw, index in LOADER_CALLABLES:
                if kw not in self.loader_args:
                    continue
                value = lc.given(kw, index)
                if value is None:
                    continue
                leaves = self.keeper.leaves(value, lc.site.func, kw)
                if leaves:
                    yield Sink(f"passed as {kw} to a DataLoader whose num_workers is not 0", False, leaves)

    def constructor_arguments(self) -> Iterator[Sink]:
        a = self.a
        for site in a.calls:
            base = _base_init_class(a, site)
            name = dataset_constructor(a, site) if base is None else None
            if base is None and name is None:
                continue
            leaves: List[Leaf] = []
            default_hint = (name or base.name).lower()
            # arguments a library model says the class only uses while constructing (is_valid_file)
            used_only = _used_only_args(a, site, base)
            stored: Optional[Tuple[List[str], Set[str], str]] = None
            pos_index = -1
            for arg in site.node.args:
                if arg.keyword is not None and arg.keyword.value in used_only:
                    continue
                if arg.keyword is None and not arg.star:
                    pos_index += 1
                    if used_only:
                        if stored is None:
                            stored = constructor_stores(a, site, base)
                        if 0 <= pos_index < len(stored[0]) and stored[0][pos_index] in used_only:
                            continue
                hint = arg.keyword.value if arg.keyword is not None else default_hint
                found = self.keeper.leaves(arg.value, site.func, hint)
                if any(leaf.factory for leaf in found):
                    # a closure factory's result is a hazard only where the constructor keeps it
                    if stored is None:
                        stored = constructor_stores(a, site, base)
                    params, kept, _ = stored
                    param = arg.keyword.value if arg.keyword is not None else (
                        params[pos_index] if not arg.star and 0 <= pos_index < len(params) else None
                    )
                    if (param is None or param not in kept) and not (
                        arg.keyword is not None and base is None and _library_dataset(a, site)
                    ):
                        found = [leaf for leaf in found if not leaf.factory]
                leaves += found
            if not leaves:
                continue
            if base is not None:
                where = stored[2] if stored is not None and stored[2] else ""
                yield Sink(f"passed to the base constructor of dataset {base.name}{where}", no_worker_processes(a, base), leaves)
            else:
                fed = a.fed_by.get(id(constructed_class(a, site)), "")  # a duck dataset of another module's loader
                yield Sink(f"passed to the dataset constructor {name}(){fed}", self.call_exempt(site), leaves)

    def call_exempt(self, site: CallSite) -> bool:
        """The dataset built by ``site`` reaches only loaders with num_workers=0, or none at all: it
        is used in the process that builds it only (``stays_in_process``)."""
        a = self.a
        if a.all_loaders_zero:
            return True
        mine = [lc for lc in a.loader_calls if self._flows_into(site, lc)]
        if mine:
            return all(lc.workers == "zero" for lc in mine)
        return stays_in_process(a, site)

    def _flows_into(self, site: CallSite, lc: LoaderCall) -> bool:
        ds = lc.arg("dataset", 0)
        if ds is site.node:
            return True
        if isinstance(ds, cst.Name):
            return any(v is site.node for v in self.a.local_values(ds.value, lc.site.func))
        return False

    def attribute_stores(self) -> Iterator[Sink]:
        """``ds.transform = lambda ...`` on a local dataset object (lambdas only: the analysis records
        the statement around each lambda)."""
        a = self.a
        done: Set[int] = set()
        for lam, fn, stmt in a.lambdas:
            if not isinstance(stmt, cst.Assign) or id(stmt) in done:
                continue
            done.add(id(stmt))
            for t in stmt.targets:
                tgt = t.target
                if not (isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name)):
                    continue
                var = tgt.value.value
                if fn is not None and var == fn.self_name:
                    continue  # self.x = ...: dataset_attributes
                calls = [v for v in a.local_values(var, fn) if isinstance(v, cst.Call)]
                sites = [s for s in a.calls if any(s.node is c for c in calls)]
                ctor = [s for s in sites if dataset_constructor(a, s)]
                if not ctor:
                    continue
                leaves = self.keeper.leaves(stmt.value, fn, tgt.attr.value)
                if leaves:
                    yield Sink(
                        f"stored on dataset object {var}.{tgt.attr.value}",
                        all(self.call_exempt(s) for s in ctor),
                        leaves,
                    )


def class_factory(a: Analysis, site: CallSite) -> Optional[Tuple[ClassInfo, FuncInfo]]:
    """``Dataset.from_dataframe(df)``: a method of a same-file dataset class, called on the class,
    that gives an object of the class (its return annotation names the class, or a ``return``
    builds one: ``return Dataset(...)``, ``return cls(...)``): (the class, the method)."""
    f = site.node.func
    if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)):
        return None
    cls = a.module_classes.get(f.value.value)
    if cls is None or cls not in a.dataset_classes:
        return None
    fn = cls.methods.get(f.attr.value)
    if fn is None:
        return None
    ann = fn.node.returns.annotation if fn.node.returns is not None else None
    if isinstance(ann, cst.SimpleString):
        ann = parsed_annotation(ann)
    if isinstance(ann, cst.Subscript):
        ann = ann.value
    if isinstance(ann, cst.Name) and ann.value == cls.name:
        return cls, fn
    makers = {cls.name} | ({fn.params[0]} if fn.params and _decorated(fn, "classmethod") else set())
    for v in returned_values(fn):
        if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in makers:
            return cls, fn
    return None


def _decorated(fn: FuncInfo, name: str) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == name for d in fn.node.decorators)


def collect(a: Analysis, kinds: Sequence[str], loader_args: Sequence[str], extra=()) -> List[Tuple[Leaf, str]]:
    """(leaf, where) for every kept leaf of the given kinds that reaches a non-exempt sink; one per
    node, the first sink in source-independent but stable order giving the message."""
    sinks = Sinks(a, loader_args)
    out: Dict[int, Tuple[Leaf, str]] = {}
    streams = [iter(sinks)] + [getattr(sinks, e)() for e in extra]
    for stream in streams:
        for sink in stream:
            if sink.exempt:
                continue
            for leaf in sink.leaves:
                if leaf.kind in kinds and id(leaf.node) not in out:
                    out[id(leaf.node)] = (leaf, sink.what)
    return list(out.values())


def is_dataset_base_expr(a: Analysis, expr: cst.BaseExpression, scope: Optional[FuncInfo], depth: int = 0) -> bool:
    if isinstance(expr, cst.Name):
        d = local_definition(a, expr.value, scope) or a.module_classes.get(expr.value)
        if isinstance(d, ClassInfo):
            return d in a.dataset_classes
        if depth < 4 and expr.value not in a.aliases:
            # a parameter's default (`def make(name, base=Dataset)`) or a variable bound to a base
            default = param_default(scope, expr.value)
            values = [default] if default is not None else a.local_values(expr.value, scope)
            if any(is_dataset_base_expr(a, v, scope, depth + 1) for v in values):
                return True
    return a._is_dataset_base_name(a.qualify(expr))


def local_duck_dataset(a: Analysis, cls: ClassInfo) -> bool:
    """A class defined inside a function, with no base, whose name ends in ``Dataset`` and that has
    ``__getitem__`` or ``__iter__``: a DataLoader takes any such object as its dataset (s3prl's
    ``build_dataset`` methods return them), and spawn cannot pickle a local class's instances."""
    if cls.in_function is None or cls.bases or not cls.name.endswith("Dataset"):
        return False
    return a.itemish(cls)


def in_test(fn: Optional[FuncInfo]) -> bool:
    """``fn`` is, or is nested in, a test function or a test fixture (pytest collects ``test*``
    functions and methods; ``@pytest.fixture`` / ``@fixture`` builds what they use): the test
    decides which loaders its objects reach."""
    while fn is not None:
        name = fn.node.name.value
        if name.startswith("test"):
            return True
        for d in fn.node.decorators:
            e = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            last = e.attr.value if isinstance(e, cst.Attribute) else e.value if isinstance(e, cst.Name) else ""
            if last == "fixture":
                return True
        fn = fn.parent
    return False

