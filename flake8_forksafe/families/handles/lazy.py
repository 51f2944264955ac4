"""The per-process lazy handle: the fix shared by FRK101 and FRK203 (the facts it needs are in
``facts.py``, FRK103's PID fix in ``pid.py``, the ``__getstate__`` planning in ``families/getstate.py``).

What the fix produces (measured with real DataLoader workers under fork, spawn and forkserver for
LMDB, HDF5 and plain files; nothing less works under all three):

1. the constructor's arguments are kept on the instance (picklable: ``self._env_args = (path,)``);
2. the attribute becomes a property that opens the handle on first use in the current process and
   reopens it when ``os.getpid()`` differs from the pid that opened it; a handle inherited through
   fork is closed in the child first (LMDB refuses a second environment on the same path in one
   process);
3. a handle that ``__init__`` used to read metadata is closed before ``__init__`` returns;
4. ``__getstate__`` returns a copy of the state without the handle (an existing ``__getstate__`` of
   the form ``state = self.__dict__.copy() ... return state`` is extended instead).

Every existing use of the attribute (``self.env.begin()``, ``self.f["x"]``) keeps working unchanged.
FRK103's lazy handles keep their attribute: the lazy test gains the PID check (closing the inherited
handle first) and ``__getstate__`` resets the attribute.

A generator kept on the instance (FRK203) uses the same property with a *recipe* instead of a call: the
generator expression moves into the property unchanged, the ``__init__`` locals it reads are kept in
``self._<attr>_args`` and unpacked there (``LazyPlan.recipe``); a generator function's call is an
ordinary call (its arguments are kept, as for a handle). ``families/handles/materialise.py`` decides
when that is right.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import Analysis, ClassInfo, FuncInfo, SelfAssign, dotted, self_attr
from flake8_forksafe.edit import (
    comments_in,
    ensure_imports,
    is_constant,
    line_comments,
    local_import,
    module_level_names,
    small_statement,
    statement,
    visit_statements,
)
from flake8_forksafe.families.getstate import (
    ClassRewrite,
    Names,
    append_before_return,
    assignment_line,
    class_body_binds,
    getstate_home,
    getstate_plan,
    has_slots,
    related_classes,
)
from flake8_forksafe.families.handles.facts import SelfAttrNodes, loads, mentions, reads_attr
from flake8_forksafe.families.style import line_length
from flake8_forksafe.knowledge import Factory

@dataclass(eq=False)
class LazyPlan:
    owner: ClassInfo  # gets the property (the class whose method kept the value)
    fn: FuncInfo
    attr: str
    line: cst.SimpleStatementLine
    small: cst.BaseSmallStatement
    call: cst.BaseExpression  # the factory call; a generator expression when ``recipe`` is set
    what: str  # "lmdb.open()" for docstrings
    close: Optional[str]  # the handle's close method; None for locks and queues
    import_stmt: Optional[cst.BaseSmallStatement]
    close_in: List[FuncInfo] = field(default_factory=list)  # __init__s that read the handle
    extend: List[Tuple[FuncInfo, cst.SimpleStatementLine, str]] = field(default_factory=list)
    add_getstate: bool = False
    derived: List["DerivedProp"] = field(default_factory=list)  # become read-only properties
    setter: bool = False  # something else assigns the attribute (or may: a public class in a package)
    recipe: Optional[List[str]] = None  # an expression rebuilt per process; the __init__ locals it reads
    generator: bool = False  # a generator (FRK203): the comment names it, nothing is closed
    unsafe: bool = False  # the rewrite moves work out of __init__ that the program can observe
    why_unsafe: str = ""  # what the program can observe (FRK101's message)

    @property
    def names(self) -> Names:
        return Names(self.attr)


@dataclass(eq=False)
class DerivedProp:
    """``self.images = self.file["images"]`` in ``__init__``: the line goes, and ``images`` becomes a
    property returning the same expression (derived from this process's handle on each use)."""

    sa: SelfAssign
    line: cst.SimpleStatementLine
    key: Optional[cst.BaseExpression] = None  # a computed key, kept as self._<attr>_key

    @property
    def key_name(self) -> str:
        return f"_{Names(self.sa.attr).core}_key"

    @property
    def cached(self) -> bool:
        """Made by a method call (``self.conn.cursor()``, ``self.env.begin()``): made once per handle
        and kept (a new cursor on each use would lose its results), not on each use."""
        v = self.sa.value
        while isinstance(v, (cst.Subscript, cst.Call)):
            if isinstance(v, cst.Call):
                return True
            v = v.value
        return False

    @property
    def cache_names(self) -> Tuple[str, str]:
        n = Names(self.sa.attr)
        return n.state, f"_{n.core}_of"


def _literal_chain(value: cst.BaseExpression, me: str, attr: str) -> Union[bool, cst.BaseExpression]:
    """``value`` is ``self.attr`` followed by string subscripts and method calls whose arguments
    are literals only (``self.file["images"]``, ``self.env.begin(write=False)``): True; or, when
    the subscript right on ``self.attr`` has a key computed in ``__init__`` without ``self``
    (``self.f[f"{split}/images"]``), that key (the fix keeps its value); else False."""
    depth = 0
    key_node: Optional[cst.BaseExpression] = None
    while depth < 8:
        depth += 1
        if isinstance(value, cst.Subscript):
            if len(value.slice) != 1 or not isinstance(value.slice[0].slice, cst.Index):
                return False
            key = value.slice[0].slice.value
            if not isinstance(key, (cst.SimpleString, cst.ConcatenatedString)) or not is_constant(key):
                if self_attr(value.value, me) != attr or not _plain_key(key, me):
                    return False
                key_node = key
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if any(x.star or not is_constant(x.value) for x in value.args):
                return False
            value = value.func.value
        else:
            if self_attr(value, me) == attr and isinstance(value, cst.Attribute):
                return key_node if key_node is not None else True
            return False
    return False


def _plain_key(key: cst.BaseExpression, me: str) -> bool:
    """A key the fix can compute once in ``__init__``: names, strings, f-strings, attributes and
    operators; no ``self``, calls, walrus, lambdas or comprehensions."""
    ok = True

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal ok
            if isinstance(node, (cst.Call, cst.NamedExpr, cst.Lambda, cst.Yield, cst.Await, cst.Slice)) or (
                isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
            ):
                ok = False
            if isinstance(node, cst.Name) and node.value == me:
                ok = False
            return ok

    key.visit(V())
    return ok


def plan_derived(
    a: Analysis, fn: FuncInfo, sa: SelfAssign, derived: Sequence[Tuple[FuncInfo, SelfAssign]]
) -> Optional[List[DerivedProp]]:
    """The ``derived`` attributes (kept objects derived from ``self.<sa.attr>``) as read-only
    properties, or None when one of them cannot be: each must be assigned once, with a plain ``=``
    on a line of its own at the top of ``fn`` (an ``__init__``, the handle's own method), from an
    expression of nothing but ``self.<sa.attr>`` and literals, in a class that does not define it."""
    owner = fn.cls
    if owner is None or fn.name != "__init__" or fn.self_name != "self":
        return None
    if not isinstance(fn.node.body, cst.IndentedBlock):
        return None
    related = related_classes(a, owner)
    out: List[DerivedProp] = []
    seen: Set[str] = set()
    for dfn, d in derived:
        if dfn is not fn or d.kind != "assign" or d.value is None or d.attr in seen:
            return None
        seen.add(d.attr)
        if d.attr.startswith("__") or d.attr in Names(sa.attr).private() | {sa.attr}:
            return None
        probe = DerivedProp(d, cst.SimpleStatementLine(body=[]))
        taken = {*probe.cache_names, probe.key_name} | Names(sa.attr).private()
        if any(taken & (g.self_reads | {s.attr for s in g.self_assigns}) for c in related for g in c.methods.values()):
            return None
        chain = _literal_chain(d.value, "self", sa.attr)
        if chain is False:
            return None
        line = assignment_line(fn, d, d.value, "value")
        if isinstance(line, str) or len(line.body) != 1 or not any(s is line for s in fn.node.body.body):
            return None
        for c in related:
            if d.attr in c.methods or d.attr in c.properties or class_body_binds(c, d.attr):
                return None
            for g in c.methods.values():
                if any(s.attr == d.attr and s is not d for s in g.self_assigns):
                    return None
                pickling = g.name in ("__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")
                if pickling and d.attr in mentions(g)[0]:
                    return None
        out.append(DerivedProp(d, line, None if chain is True else chain))
    return out


def plan_lazy(
    a: Analysis,
    fn: FuncInfo,
    sa: SelfAssign,
    call: cst.BaseExpression,
    what: str,
    close: Optional[str],
    derived: Sequence[DerivedProp] = (),
    recipe: Optional[Sequence[str]] = None,
    factory: Optional[Factory] = None,
) -> Union[LazyPlan, str]:
    """How to turn ``self.attr = call`` into a per-process lazy attribute, or why it cannot be done
    automatically (a short phrase). ``derived`` (see ``plan_derived``) become properties too.
    ``recipe``: ``call`` is an expression (a generator expression) rebuilt as it is, and these are the
    ``__init__`` locals it reads, kept on the instance (the caller has checked they can be).
    ``factory``: what the handle's methods and subscripts return (``factory.derived``), so that a value
    computed in ``__init__`` from the handle is known to be data or another handle (``outliving_use``)."""
    owner = fn.cls
    attr = sa.attr
    if owner is not None and owner.in_function is not None:
        return "the class is defined inside a function"
    if owner is None or not fn.is_method or not fn.self_name:
        return "it is not assigned in a method"
    line = assignment_line(fn, sa, call, "call")
    if isinstance(line, str):
        return line
    small = sa.stmt
    names = Names(attr)
    related = related_classes(a, owner)
    setter = _public_in_package(a, owner)  # a subclass elsewhere may assign it
    for c in related:
        if has_slots(c):
            return f"{c.name} defines __slots__"
        if attr in c.methods or names.close in c.methods:
            return f"{c.name} already defines {attr if attr in c.methods else names.close}"
        for g in c.methods.values():
            for s in g.self_assigns:
                if s is sa:
                    continue
                if s.attr == attr and s.kind == "assign" and _is_none(s.value):
                    setter = True  # self.fh = None: kept working through a setter
                elif s.attr == attr and s.kind in ("assign", "del"):
                    return f"self.{attr} is also assigned in {c.name}.{g.name}"
                if s.attr in names.private():
                    return f"self.{s.attr} is already used"
            if g.self_reads & (names.private() - {names.close}):
                return "the names the fix needs are already used"
    # derived handles kept from the attribute (self.txn = self.env.begin()) would outlive the fix
    import_stmt = None
    if recipe is None:
        if not isinstance(call, cst.Call):
            return "the value is not a call"
        head = dotted(call.func)
        if head is None:
            return "the callee is not a plain name"
        head_name = head.split(".")[0]
        if head_name == fn.self_name:  # self._open_env(...): a helper method returning the handle
            if head_name != "self":
                return "the helper is called on a receiver not named self"
        elif head_name not in module_level_names(a.module) and not hasattr(builtins, head_name):
            import_stmt = local_import(fn, head_name)
            if import_stmt is None:
                return f"{head_name} is not a module-level name"
    elif fn.self_name != "self":
        return "the method's receiver is not named self"
    writes = ""
    if recipe is None and factory is not None and factory.mode is not None and isinstance(call, cst.Call):
        how, text = open_mode(call, factory.mode)
        if how == "unknown":
            return "its open mode is not a literal"
        if how == "truncate":
            return f"it is opened with {text}, which each process's reopening would truncate or refuse"
        if how == "write":
            writes = f"it is opened for writing ({text}): each process opens it on first use, not in __init__"
    setter = setter or _assigned_in_other_modules(a, owner, attr)
    gs = getstate_plan(a, owner, [attr])
    if isinstance(gs, str):
        return gs
    extend, add = gs
    plan = LazyPlan(
        setter=setter,
        owner=owner,
        fn=fn,
        attr=attr,
        line=line,
        small=small,
        call=call,
        what=what,
        close=close,
        import_stmt=import_stmt,
        extend=extend,
        add_getstate=add,
        derived=list(derived),
        recipe=list(recipe) if recipe is not None else None,
    )
    if close:
        plan.close_in = _inits_reading(a, owner, attr, [(fn, d.sa) for d in derived])
        kept = outliving_use(a, plan.close_in, [attr, *(d.sa.attr for d in derived)], factory)
        if kept is not None:
            return f"{kept} made from self.{attr} in __init__ would outlive the close at its end"
        if plan.close_in and factory is not None and factory.stream and _reads_before_seek(a, related, plan):
            plan.unsafe = True  # reopened at its start: __init__'s reads had moved the position
            plan.why_unsafe = (
                "each process reopens it at its start, and __init__ has read from it, so a method that "
                "reads it without seeking first would see other data"
            )
    if writes:
        plan.unsafe, plan.why_unsafe = True, writes
    return plan


_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT")


def open_mode(call: cst.Call, spec: Tuple[int, str, str]) -> Tuple[str, str]:
    """How ``call`` opens its handle: ``("read" | "write" | "truncate" | "unknown", how it reads)``.
    ``spec`` is the factory's ``mode`` entry (position, keyword, default) in ``rules/handles.toml``."""
    from flake8_forksafe.analysis import positional

    pos, kw, default = spec
    if any(arg.star for arg in call.args):
        return "unknown", "*args"
    value: Optional[cst.BaseExpression] = None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == kw:
            value = arg.value
    args = positional(call)
    if value is None and len(args) > pos:
        value = args[pos].value
    if value is None:
        text = default
    elif kw == "flags":  # os.open: an expression of os.O_* names
        names = {n.value for n in _names_in(value) if n.value.startswith("O_")}
        if not names:
            return "unknown", ""
        text = "flags " + " | ".join(sorted(names))
        if names & {"O_TRUNC", "O_EXCL"}:
            return "truncate", text
        return ("write" if names & set(_WRITE_FLAGS) else "read"), text
    elif isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        text = value.evaluated_value
    else:
        return "unknown", ""
    if text.startswith("O_"):
        return "read", text
    shown = f"mode {text!r}"
    if "w" in text or "x" in text:
        return "truncate", shown
    if "a" in text or "+" in text:
        return "write", shown
    return "read", shown


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    out: List[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n)

    node.visit(_V())
    return out


def _reads_before_seek(a: Analysis, related: Sequence[ClassInfo], plan: LazyPlan) -> bool:
    """``__init__`` moves the position of the stream ``self.<attr>`` (reads, seeks) and some other
    method uses the position without first seeking (the first statement that uses the handle is not
    ``self.<attr>.seek(...)``): it would continue where ``__init__`` left the handle, while the
    reopened handle starts at 0. Position-free uses (``os.pread(fd, n, off)``, ``os.fstat``,
    ``fileno()``, ``name``) count on neither side."""
    init_code = [f for init in plan.close_in for f in a.closure(init.cls, [init])]
    if not any(_moving_reads(f, plan.attr) for f in init_code):
        return False
    seen = {id(f) for f in init_code}
    for c in related:
        for g in c.methods.values():
            if id(g) in seen or not g.self_name or not isinstance(g.node.body, cst.IndentedBlock):
                continue
            if not _moving_reads(g, plan.attr):
                continue
            for stmt in g.node.body.body:
                v = SelfAttrNodes(g.self_name, plan.attr)
                stmt.visit(v)
                if not v.nodes:
                    continue
                call = stmt.body[0].value if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) else None
                if not (
                    isinstance(call, cst.Call)
                    and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "seek"
                    and self_attr(call.func.value, g.self_name) == plan.attr
                ):
                    return True
                break
    return False


# Uses of a positioned handle that neither read nor move its position.
_POSITION_FREE_ATTRS = frozenset({"tell", "fileno", "isatty", "seekable", "readable", "writable", "flush", "name", "mode", "closed"})
_POSITION_FREE_CALLS = frozenset({"os.fstat", "os.pread", "os.pwrite", "os.fsync", "isinstance", "hasattr", "id", "type", "repr"})


def _moving_reads(f: FuncInfo, attr: str) -> bool:
    """``f`` uses ``self.<attr>`` in a way that may read from or move its position."""
    if not f.self_name:
        return False
    tree = _Tree()
    f.node.visit(tree)
    for n in tree.nodes:
        if not (isinstance(n, cst.Attribute) and self_attr(n, f.self_name) == attr):
            continue
        p = tree.parent.get(id(n))
        if isinstance(p, cst.AssignTarget) or (isinstance(p, (cst.AnnAssign, cst.AugAssign)) and p.target is n):
            continue  # the assignment that keeps it
        if isinstance(p, cst.Attribute) and p.value is n and p.attr.value in _POSITION_FREE_ATTRS:
            continue
        if isinstance(p, cst.Arg):
            call = tree.parent.get(id(p))
            if isinstance(call, cst.Call) and dotted(call.func) in _POSITION_FREE_CALLS:
                continue
        return True
    return False


# Builtins that read an object (or an iterable, completely or one item) and keep no reference to it.
_CONSUMERS = frozenset(
    {
        "all", "any", "bool", "bytearray", "bytes", "dict", "float", "format", "frozenset", "hash",
        "id", "int", "isinstance", "hasattr", "len", "list", "max", "min", "next", "print", "repr",
        "set", "sorted", "str", "sum", "tuple", "type",
    }
)  # fmt: skip


# Calls that read a file object completely and return data, as written in the source.
_READERS = frozenset(
    {
        "json.load", "pickle.load", "yaml.load", "yaml.safe_load", "yaml.full_load", "tomllib.load",
        "np.loadtxt", "numpy.loadtxt", "np.genfromtxt", "numpy.genfromtxt", "np.fromfile", "numpy.fromfile",
        "os.fstat", "os.read", "os.pread", "os.lseek",
    }
)  # fmt: skip


class _Tree(cst.CSTVisitor):
    """One function's nodes with their parents; nested functions, lambdas and classes are left out
    (their reads of ``self.<attr>`` run later, through the property, in whatever process)."""

    def __init__(self) -> None:
        self.parent: Dict[int, cst.CSTNode] = {}
        self.stack: List[cst.CSTNode] = []
        self.nodes: List[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parent[id(node)] = self.stack[-1]
        self.stack.append(node)
        self.nodes.append(node)
        return len(self.stack) == 1 or not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def outliving_use(
    a: Analysis, inits: Sequence[FuncInfo], attrs: Sequence[str], factory: Optional[Factory]
) -> Optional[str]:
    """What, made in the code these ``__init__`` methods run from ``self.<attr>`` (the handle or an
    attribute derived from it), may keep a reference to the handle after ``__init__`` returns: the
    fix closes the handle there, so such a value would read a closed handle (``iter(self.fh)``,
    ``csv.reader(self.fh)``, ``(l for l in self.fh)``, a list holding ``self.env.begin()``).

    Reads whose value is data (``self.fh.readline()``, ``len(self.f["x"])``, ``self.env.stat()``),
    consumed at once (``list(...)``, a ``for`` loop, a list comprehension), kept as an attribute the fix
    turns into a property, or only tested (``if self.fh is None``) are fine.  Anything else that keeps
    the value (an argument of a call other than an eager builtin, a generator expression not consumed
    at once, a container, a ``return``) answers a short description of it."""
    fns: List[FuncInfo] = []
    for init in inits:
        for f in a.closure(init.cls, [init]):
            if f.self_name and all(f is not g for g in fns):
                fns.append(f)
    kept_attrs = set(attrs[1:])
    for f in fns:
        tree = _Tree()
        f.node.visit(tree)
        reads = [n for n in tree.nodes if isinstance(n, cst.Attribute) and self_attr(n, f.self_name) in attrs]
        aliases: Set[str] = set()
        while reads:
            node = reads.pop()
            what = _outlives(tree.parent, node, factory, kept_attrs, f.self_name, aliases)
            if isinstance(what, str):
                return what
            if what is not None:  # a local name now holds the handle: follow its uses too
                if what.value not in aliases and len(aliases) < 16:
                    aliases.add(what.value)
                    reads += [
                        n
                        for n in tree.nodes
                        if isinstance(n, cst.Name) and n.value == what.value and n is not what
                        and not _is_target(tree.parent, n)
                    ]
    return None


def _is_target(parent: Dict[int, cst.CSTNode], n: cst.Name) -> bool:
    p = parent.get(id(n))
    if isinstance(p, cst.AssignTarget) or (isinstance(p, (cst.AnnAssign, cst.AugAssign)) and p.target is n):
        return True
    return isinstance(p, cst.AsName) or (isinstance(p, (cst.For, cst.CompFor)) and p.target is n)


def _outlives(
    parent: Dict[int, cst.CSTNode],
    node: cst.CSTNode,
    factory: Optional[Factory],
    kept_attrs: Set[str],
    me: Optional[str],
    aliases: Set[str],
) -> Union[None, str, cst.Name]:
    """None: this use keeps nothing; a description: it may keep the handle; a ``Name``: the handle is
    bound to that local, whose uses decide."""
    from flake8_forksafe.analysis import _is_data_slice

    cur = node
    what = ""  # set once the value is the result of a call that may hold the handle
    for _ in range(64):
        p = parent.get(id(cur))
        if p is None:
            return None
        if isinstance(p, cst.Attribute) and p.value is cur:
            call = parent.get(id(p))
            if isinstance(call, cst.Call) and call.func is p and factory is not None and p.attr.value in factory.derived:
                cur = call  # self.env.begin(): another handle
                continue
            return None  # self.fh.readline(), self.f.filename: data
        if isinstance(p, cst.Subscript) and p.value is cur:
            if factory is not None and factory.subscript and not _is_data_slice(p):
                cur = p  # self.f["images"]: a dataset of the file
                continue
            return None
        if isinstance(p, cst.Call) and p.func is cur:
            return None
        if isinstance(p, cst.Arg):
            call = parent.get(id(p))
            func = call.func if isinstance(call, cst.Call) else None
            name = dotted(func) if func is not None else None
            if name in _CONSUMERS or name in _READERS:
                return None
            if isinstance(func, cst.Attribute) and func.attr.value == "join" and isinstance(func.value, cst.SimpleString):
                return None  # ", ".join(self.fh)
            if not isinstance(call, cst.Call):
                return "a value"
            cur = call  # csv.reader(self.fh), iter(self.fh): the result may hold the handle
            what = f"the result of {name or 'a call'}(...)"
            continue
        if isinstance(p, cst.CompFor) and p.iter is cur:
            comp = p
            while isinstance(comp, cst.CompFor):
                comp = parent.get(id(comp))
            if isinstance(comp, cst.GeneratorExp):
                cur = comp  # lazy: iterates the handle when consumed
                continue
            return None  # a list/set/dict comprehension runs now
        if isinstance(cur, cst.GeneratorExp) and not isinstance(p, cst.Arg):
            return what or "a generator expression"
        if isinstance(p, cst.For) and p.iter is cur:
            return None
        if isinstance(p, cst.WithItem) and p.item is cur:
            asname = p.asname.name if p.asname is not None else None
            return asname if isinstance(asname, cst.Name) else None
        if isinstance(p, (cst.Assign, cst.AnnAssign)) and p.value is cur:
            targets = [t.target for t in p.targets] if isinstance(p, cst.Assign) else [p.target]
            for t in targets:
                if isinstance(t, cst.Name):
                    continue
                if me is not None and self_attr(t, me) in kept_attrs and not what:
                    continue  # becomes a property of the handle
                return what or (f"self.{self_attr(t, me)}" if me is not None and self_attr(t, me) else "a stored value")
            names = [t for t in targets if isinstance(t, cst.Name)]
            return names[0] if names else None
        if isinstance(p, (cst.Element, cst.DictElement, cst.StarredElement, cst.StarredDictElement)):
            return what or "a container"
        if isinstance(p, (cst.Return, cst.Yield)):
            return what or "a returned value"
        if isinstance(p, (cst.IfExp, cst.BooleanOperation)) and (
            (isinstance(p, cst.IfExp) and p.test is not cur) or isinstance(p, cst.BooleanOperation)
        ):
            cur = p  # `self.fh or x`, `self.fh if c else x`: the value may be the handle
            continue
        return None
    return None


def _is_none(value: Optional[cst.BaseExpression]) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _public_in_package(a: Analysis, cls: ClassInfo) -> bool:
    """A public class (no leading underscore, at module level) in a file inside a package: users
    may subclass it and assign the attribute."""
    if cls.name.startswith("_") or cls.in_function is not None or a.module_classes.get(cls.name) is not cls:
        return False
    if not a.path or a.path.startswith("<"):
        return False
    try:
        return (Path(a.path).resolve().parent / "__init__.py").is_file()
    except (OSError, RuntimeError, ValueError):
        return False


def _assigned_in_other_modules(a: Analysis, cls: ClassInfo, attr: str) -> bool:
    """A method of a base class in another module of the project assigns ``self.attr`` (the
    project index; ``fix`` runs without one, so it is made here for a file on disk)."""
    if cls.in_function is not None or a.module_classes.get(cls.name) is not cls:
        return False
    try:
        ix = a.index
        if ix is None:
            if not a.path or a.path.startswith("<") or not Path(a.path).is_file():
                return False
            from flake8_forksafe.index import index_for

            ix = index_for(a.path, a.knowledge, use_cache=False)
        mod = ix.module_for(a.path)[0]
        chain, _ = ix.base_chain(f"{mod}.{cls.name}" if mod else cls.name)
    except (OSError, ValueError, RecursionError):
        return False
    for ref in chain[1:]:
        if ref.qname.rpartition(".")[0] == mod:
            continue  # same file: seen in the syntax tree
        for m in ref.summary.methods.values():
            if any(x.attr == attr for x in m.assigns):
                return True
    return False


def _reads_attr_besides(
    fns: Sequence[FuncInfo], attr: str, derived: Sequence[Tuple[FuncInfo, SelfAssign]]
) -> bool:
    """Some function reads ``self.attr`` other than in the ``derived`` assignments that the fix
    removes, or reads one of the derived attributes (now properties reading ``self.attr``)."""
    if not derived:
        return reads_attr(fns, attr)
    n = sum(loads(f).reads.get(attr, 0) for f in fns if f.self_name)
    for dfn, d in derived:
        if any(f is dfn for f in fns) and d.value is not None and dfn.self_name:
            v = SelfAttrNodes(dfn.self_name, attr)
            d.value.visit(v)
            n -= len(v.nodes)
    return n > 0 or any(reads_attr(fns, d.attr) for _, d in derived)


def _inits_reading(
    a: Analysis, owner: ClassInfo, attr: str, derived: Sequence[Tuple[FuncInfo, SelfAssign]] = ()
) -> List[FuncInfo]:
    """The ``__init__`` methods (of ``owner`` and its same-file subclasses) whose own code reads
    ``self.attr``: code an ``__init__`` reaches through another listed ``__init__`` (``super()``)
    is that one's, which closes the handle at its own end."""
    cands: List[Tuple[FuncInfo, List[FuncInfo]]] = []
    for c in a.classes:
        init = c.methods.get("__init__")
        if init is None or owner not in a.mro(c) or not isinstance(init.node.body, cst.IndentedBlock):
            continue
        cands.append((init, a.closure(c, [init])))
    out = []
    for init, reach in cands:
        inner = set()
        for other, other_reach in cands:
            if other is not init and other in reach:
                inner |= {id(f) for f in other_reach}
        if _reads_attr_besides([f for f in reach if id(f) not in inner], attr, derived):
            out.append(init)
    return out


def _recipe_lines(module: cst.Module, plan: LazyPlan, width: int = 88) -> List[str]:
    """The property's lines that rebuild a recipe: the kept locals unpacked, then the expression as it
    was written, comments included. libcst prints its continuation lines relative to the statement's
    block: they get the block's indentation in the property (two levels, as the first line); each entry
    is one statement, printed after the property's own indentation. A one-line generator expression
    that no longer fits (the property is one level deeper) is split as ruff's formatter splits it."""
    n = plan.names
    ind = module.default_indent
    out = []
    names = plan.recipe or []
    if names:
        target = ", ".join(names) if len(names) > 1 else f"({names[0]},)"
        out.append(f"{target} = self.{n.args}")
    code = module.code_for_node(plan.call)
    head = f"self.{n.state} = "
    if "\n" not in code and len(ind * 3 + head + code) > width and isinstance(plan.call, cst.GeneratorExp):
        out.append("\n".join(_split_genexp(module, plan.call, head, ind, width)))
        return out
    first, *rest = code.split("\n")
    out.append("\n".join([head + first] + [ind * 2 + x if x.strip() else x for x in rest]))
    return out


def _split_genexp(module: cst.Module, g: cst.GeneratorExp, head: str, ind: str, width: int) -> List[str]:
    """``head(<g>)`` over lines: the generator inside the parentheses on a line of its own, or, when that
    does not fit either, one line per part (the element, each ``for ... in ...``, each ``if``)."""
    code = module.code_for_node
    bare = g.with_changes(lpar=[], rpar=[])
    one = code(bare)
    if len(ind * 4 + one) <= width:
        return [f"{head}(", ind * 3 + one, ind * 2 + ")"]
    parts = [code(g.elt)]
    comp: Optional[cst.CompFor] = g.for_in
    while comp is not None:
        prefix = "async " if comp.asynchronous is not None else ""
        parts.append(f"{prefix}for {code(comp.target)} in {code(comp.iter)}")
        parts += [f"if {code(c.test)}" for c in comp.ifs]
        comp = comp.inner_for_in
    return [f"{head}("] + [ind * 3 + x for x in parts] + [ind * 2 + ")"]


def _split_args(module: cst.Module, plan: LazyPlan) -> Tuple[List[str], List[str], List[str]]:
    """(stored positional sources, stored keyword sources, the call's new argument sources)."""
    if plan.recipe is not None:  # the locals the expression reads, unpacked again in the property
        return list(plan.recipe), [], []
    assert isinstance(plan.call, cst.Call)
    code = module.code_for_node
    args = list(plan.call.args)
    names = plan.names
    pos = [x for x in args if x.keyword is None and x.star != "**"]
    kws = [x for x in args if x.keyword is not None or x.star == "**"]
    var_pos = [i for i, x in enumerate(pos) if x.star == "*" or not is_constant(x.value)]
    if var_pos and var_pos != list(range(var_pos[0], var_pos[-1] + 1)):
        var_pos = list(range(var_pos[0], var_pos[-1] + 1))
    stored_pos = [("*" if pos[i].star == "*" else "") + code(pos[i].value) for i in var_pos]
    stored_kw = []
    new_args: List[str] = []
    for i, x in enumerate(pos):
        if var_pos and i == var_pos[0]:
            new_args.append(f"*self.{names.args}")
        elif i not in var_pos:
            new_args.append(code(x.value))
    kept_kw = []
    for x in kws:
        if x.star == "**":
            stored_kw.append("**" + code(x.value))
        elif is_constant(x.value):
            kept_kw.append(f"{x.keyword.value}={code(x.value)}")  # type: ignore[union-attr]
        else:
            stored_kw.append(f"{x.keyword.value}={code(x.value)}")  # type: ignore[union-attr]
    new_args += kept_kw
    if stored_kw:
        new_args.append(f"**self.{names.kwargs}")
    return stored_pos, stored_kw, new_args


def _init_lines(
    module: cst.Module, plan: LazyPlan, stored_pos: List[str], stored_kw: List[str], width: int = 88
) -> List[str]:
    n = plan.names
    me = plan.fn.self_name
    ind = module.default_indent
    room = width - 2 * len(ind)  # an __init__'s body
    out = []
    if stored_pos:
        one = f"{me}.{n.args} = ({', '.join(stored_pos)}{',' if len(stored_pos) == 1 else ''})"
        if len(one) > room:
            one = f"{me}.{n.args} = (\n" + "".join(f"{ind}{x},\n" for x in stored_pos) + ")"
        out.append(one)
    if stored_kw:
        out.append("\n".join(_call_lines(f"{me}.{n.kwargs} = dict", stored_kw, ind, room)))
    if not out:
        out.append(f"{me}.{n.state} = {me}.{n.pid} = None")
    elif plan.setter:  # an earlier assignment through the setter must not hide this handle
        out.append(f"{me}.{n.pid} = None")
    return out


def _call_lines(head: str, args: List[str], ind: str, room: int) -> List[str]:
    """``head(args)`` on one line when it fits in ``room`` columns, else the arguments on one
    indented line, else one argument a line with a trailing comma (black's and ruff's layout)."""
    one = f"{head}({', '.join(args)})"
    if len(one) <= room or not args:
        return [one]
    if len(ind) + len(", ".join(args)) <= room:  # the arguments on a line of their own, as black does
        return [f"{head}(", f"{ind}{', '.join(args)}", ")"]
    return [f"{head}("] + [f"{ind}{x}," for x in args] + [")"]


def _close(plan: LazyPlan, state: str) -> str:
    """The statement that releases ``self.<state>``: a method (``close``, ``release``) or, for a
    dotted name, a function given the handle (``os.close`` for an ``os.open`` descriptor)."""
    assert plan.close
    if "." in plan.close:
        return f"{plan.close}(self.{state})"
    return f"self.{state}.{plan.close}()"


def _members(module: cst.Module, plan: LazyPlan, new_args: List[str], width: int) -> List[str]:
    n = plan.names
    ind = module.default_indent
    nl = "\n"
    if plan.recipe is not None:
        call = _recipe_lines(module, plan, width)
    else:
        assert isinstance(plan.call, cst.Call)
        func = module.code_for_node(plan.call.func)
        call = _call_lines(f"self.{n.state} = {func}", new_args, ind, width - 3 * len(ind))
    imp = module.code_for_node(plan.import_stmt) if plan.import_stmt is not None else None
    body = [f'if getattr(self, "{n.pid}", None) != os.getpid():']
    if plan.close and plan.close_in:
        body.append(f"{ind}self.{n.close}()")
    elif plan.close:  # a handle inherited through fork is closed before reopening
        body += [f'{ind}if getattr(self, "{n.state}", None) is not None:', f"{ind * 2}{_close(plan, n.state)}"]
    if imp:
        body.append(f"{ind}{imp}")
    body += [f"{ind}{x}" for x in call] + [f"{ind}self.{n.pid} = os.getpid()", f"return self.{n.state}"]
    kind = "handle" if plan.close else "object"
    head = f"# forksafe: one {plan.what} {kind} per process (PID-checked), not pickled{nl}"
    if plan.generator:
        head = f"# forksafe: one {plan.what} per process (PID-checked), not pickled{nl}"
    if len(head) + len(ind) > width + 1:
        head = f"# forksafe: one {'generator' if plan.generator else kind} per process, not pickled{nl}"
    prop = f"{head}@property{nl}def {plan.attr}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in body)
    out = [prop]
    if plan.setter:
        out.append(
            f"@{plan.attr}.setter{nl}def {plan.attr}(self, value):{nl}"
            f"{ind}self.{n.state}, self.{n.pid} = value, os.getpid(){nl}"
        )
    if plan.close and plan.close_in:
        close_body = [
            f'if getattr(self, "{n.state}", None) is not None:',
            f"{ind}{_close(plan, n.state)}",
            f"self.{n.state} = self.{n.pid} = None",
        ]
        out.append(f"def {n.close}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in close_body))
    for d in plan.derived:
        assert d.sa.value is not None
        body = [f"# {c.value.lstrip('#').strip()}" for c in line_comments(d.line)]
        expr = d.sa.value
        if d.key is not None:
            expr = expr.deep_replace(d.key, cst.parse_expression(f"self.{d.key_name}"))
        value = module.code_for_node(expr)
        if d.cached:  # once per handle: the handle of another process, or a reopened one, makes a new one
            state, of = d.cache_names
            body += [
                f'if getattr(self, "{of}", None) is not self.{plan.attr}:',
                f"{ind}self.{of}, self.{state} = self.{plan.attr}, {value}",
                f"return self.{state}",
            ]
        else:
            body.append(f"return {value}")
        out.append(f"@property{nl}def {d.sa.attr}(self):{nl}" + "".join(f"{ind}{x}{nl}" for x in body))
    return out


class _LazyTransformer(ClassRewrite):
    getstate_doc = ""  # the property's comment names the pattern

    def __init__(self, a: Analysis, plans: Sequence[LazyPlan]) -> None:
        module = a.module
        super().__init__(module)
        self.a = a
        self.width = line_length(a.path)
        self.plans = list(plans)
        self.by_line: Dict[int, List[LazyPlan]] = {}
        self.removed: Set[int] = set()  # derived lines that became properties
        self.keys: Dict[int, DerivedProp] = {}  # derived lines that keep only their computed key
        for p in self.plans:
            self.by_line.setdefault(id(p.line), []).append(p)
            self.removed |= {id(d.line) for d in p.derived if d.key is None}
            self.keys.update({id(d.line): d for d in p.derived if d.key is not None})
        self.closes: Dict[int, List[str]] = {}  # __init__ node -> close calls to append
        self.self_name: Dict[int, str] = {}
        self.new_args: Dict[int, Tuple[List[str], List[str], List[str]]] = {}
        adders = [p.owner for p in self.plans if p.add_getstate]
        for p in self.plans:
            split = _split_args(module, p)
            self.new_args[id(p)] = split
            n = p.names
            self.members.setdefault(id(p.owner.node), []).extend(_members(module, p, split[2], self.width))
            for init in p.close_in:
                calls = self.closes.setdefault(id(init.node), [])
                if n.close not in calls:
                    calls.append(n.close)
                self.self_name[id(init.node)] = init.self_name or "self"
            home = getstate_home(self.a, p.owner, adders) if p.add_getstate else None
            ops = [("pop", n.state), ("pop", n.pid)]
            ops += [("pop", x) for d in p.derived if d.cached for x in reversed(d.cache_names)]
            self.add_resets(p.extend, ops, home)

    def touched(self) -> Set[int]:
        return super().touched() | set(self.by_line) | self.removed | set(self.keys) | set(self.closes)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement], cst.RemovalSentinel]:
        if id(original_node) in self.removed:
            return cst.RemovalSentinel.REMOVE
        d = self.keys.get(id(original_node))
        if d is not None:
            assert d.key is not None
            keep = small_statement(f"self.{d.key_name} = {self.module.code_for_node(d.key)}", self.module)
            return updated_node.with_changes(body=[keep])
        plans = self.by_line.get(id(original_node))
        if not plans:
            return updated_node
        smalls: List[cst.BaseSmallStatement] = []
        comments: List[cst.EmptyLine] = []  # comments inside the rewritten call move above it
        for orig, upd in zip(original_node.body, updated_node.body):
            plan = next((p for p in plans if p.small is orig), None)
            if plan is None:
                smalls.append(upd)
                continue
            stored_pos, stored_kw, _ = self.new_args[id(plan)]
            srcs = _init_lines(self.module, plan, stored_pos, stored_kw, self.width)
            smalls += [small_statement(c, self.module) for c in srcs]
            if plan.recipe is None:  # a recipe keeps its comments: the expression moves as it is
                comments += comments_in(plan.call)
        if len(original_node.body) == 1:
            lines = [cst.SimpleStatementLine(body=[s]) for s in smalls]
            lines[0] = lines[0].with_changes(leading_lines=[*updated_node.leading_lines, *comments])
            lines[-1] = lines[-1].with_changes(trailing_whitespace=updated_node.trailing_whitespace)
            return cst.FlattenSentinel(lines)
        smalls = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in smalls]
        return updated_node.with_changes(body=smalls, leading_lines=[*updated_node.leading_lines, *comments])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        key = id(original_node)
        updated_node = super().leave_FunctionDef(original_node, updated_node)
        if key in self.closes:
            me = self.self_name[key]
            new = [
                statement(f"{me}.{c}()  # each process reopens it on first use", self.module) for c in self.closes[key]
            ]
            updated_node = updated_node.with_changes(body=append_before_return(updated_node.body, new))
        return updated_node


def apply_lazy(a: Analysis, plans: Sequence[LazyPlan]) -> cst.Module:
    """Rewrite every planned attribute into a per-process lazy one."""
    if not plans:
        return a.module
    rewrite = _LazyTransformer(a, plans)
    module = visit_statements(a.module, rewrite, rewrite.touched())
    return ensure_imports(module, ["os"])
