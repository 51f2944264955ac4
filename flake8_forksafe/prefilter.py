"""Keep libcst's cost off files that cannot have a finding.

Stage 1 (text): every rule needs a dataset or loader word, a ``worker_init_fn`` (or ``worker_init``),
``__call__`` next to an RNG constructor's name (a transform), a loader factory's word next to its
workers keyword (``get_loaders(..., workers=4)``), or a multiprocessing word next to an import of a
multiprocessing module. Substring tests (one case-insensitive search for the factory word, only in a
text holding ``workers=``).

Stage 2 (ast, only for files that pass stage 1): the CPython parser (~10x faster than libcst) and
one walk. A file goes on to libcst when it has one of the anchors the rules start from:

- a class whose base is dataset-, loader- or process-like, or a three-argument ``type()``
  (FRK1xx, FRK2xx, FRK3xx, FRK6xx: every dataset rule starts from a dataset class or a call below);
  a module-level class with ``__call__`` that calls an RNG constructor (a transform: FRK601);
- a call of a loader, of a dataset class by name (``MyDataset(...)``, ``torchvision.datasets.X(...)``),
  or a call with ``worker_init_fn=`` / ``multiprocessing_context=`` (FRK201-203, FRK302, FRK501, FRK602),
  or an assignment to ``x.collate_fn`` / ``x.worker_init_fn`` (FRK201/202: a given loader's attribute),
  or a module-level ``def *worker_init*(worker_id, ...)`` (FRK602: a library's own worker_init_fn);
- a start-method setter call (FRK402, FRK403), or a ``get_context`` call next to the string
  ``"fork"`` (FRK404);
- a worker-starting call (pool, process, ``spawn``) that module-level code outside the main guard can
  reach through the file's own functions and classes (FRK401): a starter used only inside functions
  that nothing at the top level refers to cannot start workers on import.

Each rule declares which of these anchors it starts from (``ANCHORS`` on its class in
``checks/frkNNN.py``, read by ``declared_anchors`` without importing the check); the gate tests the
union of the enabled rules' anchors only (``engine.gate_anchors``), and the slicer keeps what the same
anchors need (``slicing._anchored``).

Names are resolved through the file's imports (aliases, ``from`` imports, local imports). Both
stages over-approximate the rules: a file they reject has no finding (tests/test_prefilter.py compares
filtered and unfiltered runs over fixtures, rule examples, generated programs and real code).
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from flake8_forksafe.knowledge import Knowledge, worker_init_like

MP_MODULE_WORDS = ("multiprocess", "concurrent.futures", "ProcessPoolExecutor")
MP_CALLS = frozenset(
    {
        "set_start_method",
        "set_forkserver_preload",
        "get_context",
        "Process",
        "Pool",
        "ProcessPoolExecutor",
        "spawn",
        "start_processes",
    }
)
KEYWORDS = frozenset({"worker_init_fn", "multiprocessing_context"})
# ``x.collate_fn = f`` / ``x.worker_init_fn = f``: attributes only a DataLoader reads (LOADER_CALL;
# FRK201/202 flag local callables stored there on a loader a function was given: pickling/facts.py)
LOADER_ATTRS = frozenset({"collate_fn", "worker_init_fn"})

# The anchors a rule can declare (``ANCHORS = (...)`` on its class): what the gate tests for it.
DATASET_CLASS = "dataset class"  # a class with a dataset-, loader-like base; a three-argument type()
LOADER_CALL = "loader call"  # a loader call; a worker_init_fn= / multiprocessing_context= keyword; x.collate_fn = f
LOCAL_CALLABLE = "lambda or local def near a dataset constructor"  # MyDataset(...) + a lambda / local def
START_METHOD = "module-level start-method setter"  # set_start_method / set_forkserver_preload at module level
FORK = "fork start method"  # a start-method setter or get_context call, and the string "fork"
WORKER_START = "module-level worker start"  # unguarded top-level code reaching a pool / process / spawn
ANCHORS: Tuple[str, ...] = (DATASET_CLASS, LOADER_CALL, LOCAL_CALLABLE, START_METHOD, FORK, WORKER_START)
ALL_ANCHORS: FrozenSet[str] = frozenset(ANCHORS)
MP_ANCHORS: FrozenSet[str] = frozenset({START_METHOD, FORK, WORKER_START})
_DECLARED = re.compile(r"^    ANCHORS = (\([^)]*\))", re.M)
_OFF = re.compile(r"^    default_enabled = False\b", re.M)
_DECLARATIONS: Dict[str, Tuple[FrozenSet[str], bool]] = {}


def declared_anchors() -> Dict[str, Tuple[FrozenSet[str], bool]]:
    """code -> (the anchors its check class declares, whether it is on by default), read from the
    source of ``checks/frkNNN.py`` (``ANCHORS = ("dataset class", ...)``, a tuple of this module's
    anchor strings) so that the gate does not import the checks, and libcst with them; computed once
    per process. tests/test_anchors.py checks that this reading equals the imported classes'
    ``ANCHORS`` and ``default_enabled``."""
    if not _DECLARATIONS:
        from pathlib import Path

        from flake8_forksafe.checks import REGISTRY

        here = Path(__file__).resolve().parent / "checks"
        out = {}
        for code in REGISTRY:
            src = (here / f"{code.lower()}.py").read_text(encoding="utf-8")
            m = _DECLARED.search(src)
            anchors = frozenset(ast.literal_eval(m.group(1))) if m else frozenset()
            if m is None or not anchors or anchors - ALL_ANCHORS:  # pragma: no cover - tests/test_anchors.py
                raise RuntimeError(f"checks/{code.lower()}.py: ANCHORS must name some of {ANCHORS}")
            out[code] = (anchors, _OFF.search(src) is None)
        _DECLARATIONS.update(out)
    return _DECLARATIONS


def _scanned_words(k: Knowledge) -> Tuple[str, ...]:
    """The knowledge's words less those holding another of them (``IterableDataset`` holds
    ``Dataset``): a text has one of these exactly when it has one of the words, in fewer scans."""
    words = k.words
    return tuple(w for w in words if not any(o != w and o in w for o in words))


def _rng_words(k: Knowledge) -> Tuple[str, ...]:
    return tuple(sorted({q.rsplit(".", 1)[-1] for q in k.rng_constructors}))


def _loader_factory_text(k: Knowledge) -> Tuple[Tuple[str, ...], "re.Pattern[str]"]:
    """(``workers=``-like keywords as written, the factory words' case-insensitive pattern)."""
    keys = tuple(kw + "=" for kw in k.loader_factory_keywords)
    return keys, re.compile("|".join(map(re.escape, k.loader_factory_words)) or "(?!)", re.I)


def text_gate(text: str, k: Knowledge, anchors: FrozenSet[str] = ALL_ANCHORS) -> bool:
    if anchors - MP_ANCHORS:
        for w in k.derived("prefilter.scanned_words", _scanned_words):
            if w in text:
                return True
        if LOADER_CALL in anchors and "worker_init" in text:
            return True  # ``def seed_worker_init(worker_id)``: a library's worker_init_fn (worker_init_def)
        if LOADER_CALL in anchors:
            # a loader factory given workers (``get_train_val_loaders(..., workers=4)``: call_anchor)
            keys, words = k.derived("prefilter.loader_factory_text", _loader_factory_text)
            if any(kw in text for kw in keys) and words.search(text):
                return True
        # a transform keeping an RNG object (FRK601: ``Facts.makes_rng``)
        if DATASET_CLASS in anchors and "__call__" in text:
            if any(w in text for w in k.derived("prefilter.rng_words", _rng_words)):
                return True
    elif not anchors:
        return False
    if anchors & MP_ANCHORS and any(w in text for w in MP_MODULE_WORDS):
        return any(w in text for w in MP_CALLS) or "multiprocessing_context" in text
    return False


class _Names:
    """Name sets derived from the knowledge, computed once per Knowledge object."""

    def __init__(self, k: Knowledge) -> None:
        self.dataset_bases = frozenset(n.rsplit(".", 1)[-1] for n in k.dataset_bases)
        self.dataset_suffixes = tuple(k.dataset_base_suffixes)
        self.loaders = frozenset(n.rsplit(".", 1)[-1] for n in k.loaders)
        self.loader_suffixes = tuple(k.loader_suffixes)
        self.dataset_modules = tuple(m + "." for m in k.dataset_modules)
        # qualified names, matched exactly as the analysis matches them
        self.setters = k.start_method_setters | k.forkserver_preload
        self.get_context = k.get_context
        self.starters = k.pools | k.lazy_pools | k.process_classes | k.spawners | k.get_context
        self.process_classes = k.process_classes
        self.loader_factory_words = k.loader_factory_words
        self.loader_factory_keywords = frozenset(k.loader_factory_keywords)
        self.rng_constructors = k.rng_constructors

    def datasetish(self, name: str) -> bool:
        return name in self.dataset_bases or name.endswith(self.dataset_suffixes)

    def loaderish(self, name: str) -> bool:
        return name in self.loaders or name.endswith(self.loader_suffixes)


def _names(k: Knowledge) -> _Names:
    return k.derived("prefilter", _Names)


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_main_guard(node: ast.AST) -> bool:
    """The same test as analysis.is_main_guard: ``if __name__ == "__main__":`` either way round."""
    if not isinstance(node, ast.If):
        return False
    t = node.test
    if not isinstance(t, ast.Compare) or len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False

    def side(n: ast.AST) -> Optional[str]:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return n.value
        return _dotted(n)

    return {side(t.left), side(t.comparators[0])} == {"__name__", "__main__"}


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LITERALS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)


class CallFact:
    __slots__ = ("func", "attr", "keywords", "type_bases", "in_function")

    def __init__(self, func, attr, keywords, type_bases, in_function) -> None:
        self.func: Optional[str] = func  # dotted callee as written (``mp.get_context``), else None
        self.attr: Optional[str] = attr  # the attribute name when the callee is an attribute
        self.keywords: FrozenSet[Optional[str]] = keywords
        # dotted elements of a 3-argument call's tuple / list (``type(name, bases, ns)``)
        self.type_bases: Optional[Tuple[Optional[str], ...]] = type_bases
        self.in_function: bool = in_function  # inside a function body (not a decorator or default)


_EMPTY: FrozenSet[str] = frozenset()


class StmtFact:
    """What the gate and the slicer need from one top-level statement, without its tree (slots:
    a big file holds one per statement)."""

    __slots__ = ("start", "end", "name", "guard", "calls", "bases", "names", "attrs", "imports", "lambdas",
                 "local_defs", "globals", "fork", "literal", "loader_stores", "annotations", "callable_class")

    def __init__(self, start: int, end: int, name: str, guard: bool) -> None:
        self.start = start  # 1-based first line (decorators included)
        self.end = end
        self.name = name  # def / class name; "" for other statements
        self.guard = guard  # ``if __name__ == "__main__":``
        self.calls: List[CallFact] = []
        self.bases: List[Tuple[Optional[str], ...]] = []  # per class statement
        self.names: Set[str] = set()  # Name ids
        self.attrs: Set[str] = set()  # attribute names
        self.imports: Tuple[str, ...] = ()  # the names its imports bind ("*": a star import)
        self.lambdas = False
        self.local_defs = False  # a def / class inside a function
        self.globals = False  # a ``global`` statement (a function rebinding a module-level name)
        self.fork = False  # the string "fork"
        self.literal = False  # a literal-only container (``X = [...]``)
        # ``x.collate_fn = ...`` / ``x.worker_init_fn = ...`` (LOADER_ATTRS), or a module-level
        # ``def worker_init_fn(worker_id, ...)`` (worker_init_def)
        self.loader_stores = False
        self.annotations: Tuple[Optional[str], ...] = ()  # dotted parameter annotations (``dp: IterDataPipe``)
        self.callable_class = False  # a module-level class defining ``__call__`` (a transform: FRK601)


def worker_init_def(node: ast.AST) -> bool:
    """A def written as a DataLoader ``worker_init_fn`` (``knowledge.worker_init_like``): checks/frk602.py
    reads these when no loader of the module uses them (the project's other modules or its users pass them)."""
    a = node.args  # type: ignore[attr-defined]
    first = (*a.posonlyargs, *a.args)[:1]
    return worker_init_like(node.name, first[0].arg if first else None)  # type: ignore[attr-defined]


def _base_expr(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Subscript):  # Dataset[int]
        node = node.value
    return _dotted(node)


_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
# fields of ast nodes that hold no node a walk records anything for, whatever the node type: names
# and flags (strings, numbers), operators and contexts (singletons); ``value`` is a node but in
# ``Constant`` (the walks read a constant themselves)
LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "kind", "type_comment", "level",
                         "module", "is_async", "conversion", "simple"})


def _child_fields(t: type) -> Tuple[str, ...]:
    """The fields of an ast node type that may hold nodes, in order (``LEAF_FIELDS`` left out)."""
    got = _CHILD_FIELDS[t] = tuple(f for f in getattr(t, "_fields", ()) if f not in LEAF_FIELDS)
    return got


def stmt_fact(stmt: ast.stmt, offset: int, imports: Dict[str, Set[str]]) -> StmtFact:
    """One walk over a top-level statement; its imports are added to ``imports``."""
    start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
    f = StmtFact(
        start + offset,
        (stmt.end_lineno or stmt.lineno) + offset,
        stmt.name if isinstance(stmt, _DEFS) else "",
        _is_main_guard(stmt),
    )
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) and isinstance(stmt.value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        f.literal = all(isinstance(n, _LITERALS) for n in ast.walk(stmt.value))
    todo: List[Tuple[ast.AST, bool]] = [(stmt, False)]
    while todo:
        node, in_func = todo.pop()
        t = type(node)
        if t is ast.Name:
            f.names.add(node.id)  # type: ignore[attr-defined]
            continue
        if t is ast.Attribute:
            f.attrs.add(node.attr)  # type: ignore[attr-defined]
        elif t is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            type_bases = None
            args = node.args  # type: ignore[attr-defined]
            if len(args) == 3 and isinstance(args[1], (ast.Tuple, ast.List)):
                type_bases = tuple(_base_expr(e) for e in args[1].elts)
            f.calls.append(
                CallFact(
                    _base_expr(func),
                    func.attr if isinstance(func, ast.Attribute) else None,
                    frozenset(kw.arg for kw in node.keywords),  # type: ignore[attr-defined]
                    type_bases,
                    in_func,
                )
            )
        elif t is ast.Constant:
            if node.value == "fork":  # type: ignore[attr-defined]
                f.fork = True
            continue
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            if in_func:
                f.local_defs = True
            fa = node.args  # type: ignore[attr-defined]
            if node is stmt and worker_init_def(node):
                f.loader_stores = True  # a library's worker_init_fn that other modules pass (FRK602)
            for arg in (*fa.posonlyargs, *fa.args, *fa.kwonlyargs):
                if arg.annotation is not None and type(arg.annotation) in (ast.Name, ast.Attribute, ast.Subscript):
                    f.annotations += (_base_expr(arg.annotation),)
            # decorators, defaults and annotations run where the def is; the body when called
            todo.extend((d, in_func) for d in node.decorator_list)  # type: ignore[attr-defined]
            todo.append((node.args, in_func))  # type: ignore[attr-defined]
            if node.returns is not None:  # type: ignore[attr-defined]
                todo.append((node.returns, in_func))  # type: ignore[attr-defined]
            todo.extend((b, True) for b in node.body)  # type: ignore[attr-defined]
            continue
        elif t is ast.ClassDef:
            if in_func:
                f.local_defs = True
            elif node is stmt and any(
                type(b) in _FUNCS and b.name == "__call__" for b in node.body  # type: ignore[attr-defined]
            ):
                f.callable_class = True
            f.bases.append(tuple(_base_expr(b) for b in node.bases))  # type: ignore[attr-defined]
        elif t is ast.Lambda:
            f.lambdas = True
        elif t is ast.Assign:
            for tg in node.targets:  # type: ignore[attr-defined]
                if type(tg) is ast.Attribute and tg.attr in LOADER_ATTRS and type(tg.value) is ast.Name:
                    f.loader_stores = True
        elif t is ast.Global:
            f.globals = True
            continue
        elif t is ast.Import:
            for a in node.names:  # type: ignore[attr-defined]
                if a.asname:
                    imports.setdefault(a.asname, set()).add(a.name)
                    f.imports += (a.asname,)
                else:
                    root = a.name.split(".", 1)[0]
                    imports.setdefault(root, set()).add(root)
                    f.imports += (root,)
            continue
        elif t is ast.ImportFrom:
            mod = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
            for a in node.names:  # type: ignore[attr-defined]
                if a.name != "*":
                    imports.setdefault(a.asname or a.name, set()).add(f"{mod}.{a.name}" if mod else a.name)
                f.imports += (a.asname or a.name,)
            continue
        fields = _CHILD_FIELDS.get(t)
        if fields is None:
            fields = _child_fields(t)
        for name in fields:  # ast.iter_child_nodes, without its generator and the ``ctx`` leaves
            v = getattr(node, name, None)
            if type(v) is list:
                for c in v:
                    if isinstance(c, ast.AST):
                        todo.append((c, in_func))
            elif isinstance(v, ast.AST):
                todo.append((v, in_func))
    if not f.attrs:
        f.attrs = _EMPTY  # type: ignore[assignment]
    if not f.calls:
        f.calls = ()  # type: ignore[assignment]
    if not f.bases:
        f.bases = ()  # type: ignore[assignment]
    return f


class Facts:
    """The facts of a whole file (every top-level statement) and the decisions made from them.
    Imports may bind a name more than once (the analysis keeps the last binding in source order):
    every binding is kept, and a name matches if any binding matches."""

    def __init__(self, stmts: List[StmtFact], imports: Dict[str, Set[str]], n: _Names) -> None:
        self.stmts = stmts
        self.imports = imports
        self.n = n
        self.fork = any(s.fork for s in stmts)

    def qualified(self, d: Optional[str]) -> Set[str]:
        """What the analysis's ``qualify`` may return for this dotted name."""
        if d is None:
            return set()
        root, _, rest = d.partition(".")
        targets = self.imports.get(root)
        if not targets:
            return {d}
        return {f"{t}.{rest}" if rest else t for t in targets}

    def lasts(self, d: Optional[str]) -> Set[str]:
        return {q.rsplit(".", 1)[-1] for q in self.qualified(d)}

    # -- what one call or class is
    def base_anchor(self, d: Optional[str]) -> bool:
        return any(self.n.datasetish(x) or self.n.loaderish(x) for x in self.lasts(d))

    def process_base(self, d: Optional[str]) -> bool:
        return bool(self.qualified(d) & self.n.process_classes)

    def makes_rng(self, s: StmtFact) -> bool:
        """A call in ``s`` of an RNG constructor (``rules/rng.toml``: ``random.Random``, ``default_rng``)."""
        ctors = self.n.rng_constructors
        return any(self.qualified(c.func) & ctors for c in s.calls)

    def starts(self, c: CallFact) -> bool:
        return c.attr in ("Pool", "Process") or bool(self.qualified(c.func) & self.n.starters)

    def call_anchor(self, c: CallFact) -> str:
        """"anchor" (a loader call or keyword: LOADER_CALL), "type" (a three-argument ``type()``:
        DATASET_CLASS), "constructor" (a dataset constructor: LOCAL_CALLABLE with a local callable
        around), or ""."""
        n = self.n
        if c.keywords & KEYWORDS:
            return "anchor"
        kind = ""
        for q in self.qualified(c.func):
            last = q.rsplit(".", 1)[-1]
            if n.loaderish(last):
                return "anchor"
            if c.keywords & n.loader_factory_keywords and any(w in last.lower() for w in n.loader_factory_words):
                return "anchor"  # FRK401: `ds.to_dataloader(num_workers=2)`, `get_loaders(workers=4)` build loaders
            if last == "type" and c.type_bases is not None:  # a base may come through a name (FRK202)
                return "type"
            if n.datasetish(last) or (last[:1].isupper() and q.startswith(n.dataset_modules)):
                kind = "constructor"
        return kind

    # -- the gate
    def could_have_findings(self, anchors: FrozenSet[str] = ALL_ANCHORS) -> bool:
        """Whether the file holds one of ``anchors`` (the enabled rules' declarations)."""
        n = self.n
        dataset = DATASET_CLASS in anchors
        loader = LOADER_CALL in anchors
        local = LOCAL_CALLABLE in anchors
        mp = bool(anchors & MP_ANCHORS)
        constructors = setters = module_setter = contexts = starters = processes = False
        for s in self.stmts:
            if loader and s.loader_stores:
                return True
            if dataset and s.callable_class and self.makes_rng(s):
                return True  # a transform keeping an RNG object (FRK601)
            if local and not constructors and s.annotations:
                # a stage given to a parameter typed as a dataset (``def join(dp: IterDataPipe)``)
                constructors = any(self.base_anchor(x) for x in s.annotations)
            for bases in s.bases:
                for b in bases:
                    if dataset and self.base_anchor(b):
                        return True
                    processes = processes or (mp and self.process_base(b))
            for c in s.calls:
                kind = self.call_anchor(c)
                if kind == "anchor" or kind == "type":
                    if dataset and kind == "type":
                        return True
                    if loader and kind == "anchor":
                        return True
                constructors = constructors or kind == "constructor"
                if mp:
                    qs = self.qualified(c.func)
                    if qs & n.setters:
                        setters = True
                        module_setter = module_setter or not c.in_function
                    contexts = contexts or bool(qs & n.get_context)
                    starters = starters or bool(qs & n.starters)
        if local and constructors and any(s.lambdas or s.local_defs for s in self.stmts):  # FRK201/202
            return True
        if START_METHOD in anchors and setters and module_setter:  # FRK402/403
            return True
        if FORK in anchors and (setters or contexts) and self.fork:  # FRK404
            return True
        if WORKER_START in anchors and (starters or processes):  # FRK401
            return self.top_level_can_start()
        return False

    def starts_directly(self, s: StmtFact) -> bool:
        return any(self.starts(c) for c in s.calls) or any(self.process_base(b) for bases in s.bases for b in bases)

    def top_level_can_start(self) -> bool:
        """FRK401's necessary condition: an unguarded module-level statement that starts workers
        itself or names one of the file's functions / classes that (transitively) does. Only the
        top-level name of a def / class counts: a method is reached through its class (an instance
        is built by naming it), a nested function through the function that returns it."""
        units = [s for s in self.stmts if s.name]
        live = [self.starts_directly(u) for u in units]
        starting = {u.name for u, on in zip(units, live) if on}
        changed = True
        while changed:
            changed = False
            for i, u in enumerate(units):
                if not live[i] and u.names & starting:
                    live[i] = True
                    starting.add(u.name)
                    changed = True
        return any(
            self.starts_directly(s) or s.names & starting for s in self.stmts if not s.name and not s.guard
        )


def facts_of_tree(tree: ast.Module, k: Knowledge) -> Facts:
    imports: Dict[str, Set[str]] = {}
    return Facts([stmt_fact(st, 0, imports) for st in tree.body], imports, _names(k))


# CPython 3.9 and 3.10 crash (a native stack overflow, no exception) parsing a very deep expression
# (``x.a.a...`` 200,000 long); 3.11 and later raise RecursionError / MemoryError / SyntaxError,
# which the gate turns into "let the real parser report" (source.parse's guard then skips the file
# with one line). So the guard's scan runs before ``ast.parse`` only where the parser can crash;
# libcst always gets it (source.parse).
_AST_NEEDS_GUARD = sys.version_info < (3, 11)
CHUNK_ABOVE = 500_000  # bytes: a bigger file is parsed one top-level statement group at a time
_SPLIT = re.compile(r"(?:def |class |async def |@)")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> List[str]:
    """The lines Python counts (not ``str.splitlines``, which also breaks at \\f, \\u2028...)."""
    return _LINE.findall(text)


def common_ends(old: Sequence[str], new: Sequence[str]) -> Tuple[int, int]:
    """How many lines the two texts share at their start, and then at their end."""
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    q = 0
    while q < n - p and old[-1 - q] == new[-1 - q]:
        q += 1
    return p, q


def facts_of_text(text: str, k: Knowledge) -> Optional[Facts]:
    """The file's facts, or None when it does not parse. A file over ``CHUNK_ABOVE`` bytes is parsed
    in groups of top-level statements (cut before lines starting with ``def``/``class``/``@``, a
    group growing until it parses), so memory stays bounded by the largest statement: the ast
    of a 5.6 MB file takes about 1 GB at once."""
    return _facts_of_text(text, k)


KEEP_TREE_BELOW = 100_000  # characters: the gate hands its tree on (``Gate.tree``) only for a file this small


def _facts_of_text(text: str, k: Knowledge, kept: Optional[List[ast.Module]] = None) -> Optional[Facts]:
    """``kept``: the whole file's tree is appended to it (a file under ``KEEP_TREE_BELOW``)."""
    if _AST_NEEDS_GUARD:
        from flake8_forksafe.guard import too_deep

        if too_deep(text):
            return None  # the parse that follows skips the file with one line
    if len(text) <= CHUNK_ABOVE:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if kept is not None and len(text) < KEEP_TREE_BELOW:
            kept.append(tree)
        return facts_of_tree(tree, k)
    lines = split_lines(text)
    cuts = [i for i, line in enumerate(lines) if i and _SPLIT.match(line)] + [len(lines)]
    imports: Dict[str, Set[str]] = {}
    stmts: List[StmtFact] = []
    first, ci, step = 0, 0, 1
    while first < len(lines):
        while ci < len(cuts) - 1 and cuts[ci] <= first:
            ci += 1
        j = min(ci + step - 1, len(cuts) - 1)
        last = cuts[j]
        try:
            tree = ast.parse("".join(lines[first:last]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            if last >= len(lines):
                return None  # a real syntax error
            step *= 2  # the cut fell inside a string or brackets: take more
            continue
        stmts += [stmt_fact(st, first, imports) for st in tree.body]
        del tree
        first, step = last, 1
    return Facts(stmts, imports, _names(k))


def ast_gate(tree: ast.AST, k: Knowledge, anchors: FrozenSet[str] = ALL_ANCHORS) -> bool:
    if not isinstance(tree, ast.Module):
        return True
    return facts_of_tree(tree, k).could_have_findings(anchors)


class Gate:
    """The gate's verdict on one file and the facts it computed (None when the text gate alone
    decided, or the file does not parse): the slicer takes them (``slicing.reduce``)."""

    __slots__ = ("passes", "facts", "parsed", "anchors", "tree")

    def __init__(
        self, passes: bool, facts: Optional[Facts] = None, parsed: bool = False, anchors: FrozenSet[str] = ALL_ANCHORS
    ) -> None:
        self.passes = passes
        self.facts = facts
        self.parsed = parsed  # facts_of_text ran: ``facts`` is its answer (None: a syntax error)
        self.anchors = anchors  # the anchors tested (the enabled rules'): the slicer keeps what they need
        self.tree: Optional[ast.Module] = None  # the whole file's ast, when asked to keep it (``gate(keep_tree=True)``)


def gate(text: str, k: Knowledge, anchors: FrozenSet[str] = ALL_ANCHORS, keep_tree: bool = False) -> Gate:
    """``keep_tree``: the verdict keeps the ast the gate parsed (``Gate.tree``, a file under
    ``KEEP_TREE_BELOW``), for the project index to summarise the file without parsing it again."""
    if not text_gate(text, k, anchors):
        return Gate(False, anchors=anchors)
    kept: List[ast.Module] = []
    facts = _facts_of_text(text, k, kept) if keep_tree else facts_of_text(text, k)
    if facts is None:
        return Gate(True, None, parsed=True, anchors=anchors)  # let the real parser report
    verdict = Gate(facts.could_have_findings(anchors), facts, parsed=True, anchors=anchors)
    if kept:
        verdict.tree = kept[0]
    return verdict


def gate_tree(text: str, tree: ast.AST, k: Knowledge, anchors: FrozenSet[str] = ALL_ANCHORS) -> Gate:
    """The gate from a tree someone else parsed (flake8's): nothing is parsed again."""
    if not text_gate(text, k, anchors):
        return Gate(False, anchors=anchors)
    if not isinstance(tree, ast.Module):
        return Gate(True, None, parsed=False, anchors=anchors)
    facts = facts_of_tree(tree, k)
    return Gate(facts.could_have_findings(anchors), facts, parsed=True, anchors=anchors)


def could_have_findings(
    text: str, k: Knowledge, tree: Optional[ast.AST] = None, anchors: FrozenSet[str] = ALL_ANCHORS
) -> bool:
    if tree is not None:
        return text_gate(text, k, anchors) and ast_gate(tree, k, anchors)
    return gate(text, k, anchors).passes
