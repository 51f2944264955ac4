"""Keep libcst's cost off files that cannot have a finding.

Stage 1 (text): every rule needs a dataset or loader word, a ``worker_init_fn``, or a
multiprocessing word next to an import of a multiprocessing module. Substring tests, no regex.

Stage 2 (ast, only for files that pass stage 1): the CPython parser (~10x faster than libcst) and
one walk. A file goes on to libcst when it has one of the anchors the rules start from:

- a class whose base is dataset-, loader- or process-like, or a three-argument ``type()``
  (FRK1xx, FRK2xx, FRK3xx, FRK6xx: every dataset rule starts from a dataset class or a call below);
- a call of a loader, of a dataset class by name (``MyDataset(...)``, ``torchvision.datasets.X(...)``),
  or a call with ``worker_init_fn=`` / ``multiprocessing_context=`` (FRK201-203, FRK302, FRK501, FRK602);
- a start-method setter call (FRK402, FRK403), or a ``get_context`` call next to the string
  ``"fork"`` (FRK404);
- a worker-starting call (pool, process, ``spawn``) that module-level code outside the main guard can
  reach through the file's own functions and classes (FRK401): a starter used only inside functions
  that nothing at the top level refers to cannot start workers on import.

Names are resolved through the file's imports (aliases, ``from`` imports, local imports). Both
stages over-approximate the rules: a file they reject has no finding (tests/test_prefilter.py compares
filtered and unfiltered runs over fixtures, rule examples, generated programs and real code).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from flake8_forksafe.knowledge import Knowledge

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


def text_gate(text: str, k: Knowledge) -> bool:
    for w in k.words:
        if w in text:
            return True
    if any(w in text for w in MP_MODULE_WORDS):
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
        self.starters = k.pools | k.process_classes | k.spawners | k.get_context
        self.process_classes = k.process_classes

    def datasetish(self, name: str) -> bool:
        return name in self.dataset_bases or name.endswith(self.dataset_suffixes)

    def loaderish(self, name: str) -> bool:
        return name in self.loaders or name.endswith(self.loader_suffixes)


_NAMES: Dict[int, Tuple[Knowledge, _Names]] = {}


def _names(k: Knowledge) -> _Names:
    got = _NAMES.get(id(k))
    if got is None or got[0] is not k:
        got = _NAMES[id(k)] = (k, _Names(k))
    return got[1]


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


class _Gate:
    """One ``ast.walk`` collecting calls, classes, imports and the string ``"fork"``; then cheap
    tests over those lists. Imports may bind a name more than once (the analysis keeps the last
    binding in source order): every binding is kept, and a name matches if any binding matches."""

    def __init__(self, tree: ast.Module, n: _Names) -> None:
        self.tree = tree
        self.n = n
        self.imports: Dict[str, Set[str]] = {}  # local name -> qualified names it may stand for
        self.classes: List[ast.ClassDef] = []
        self.calls: List[ast.Call] = []
        self.funcs: List[ast.AST] = []
        self.lambdas = False
        self.fork = False
        for node in ast.walk(tree):
            t = type(node)
            if t is ast.Call:
                self.calls.append(node)  # type: ignore[arg-type]
            elif t is ast.Constant:
                if node.value == "fork":  # type: ignore[attr-defined]
                    self.fork = True
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                self.funcs.append(node)
            elif t is ast.ClassDef:
                self.classes.append(node)  # type: ignore[arg-type]
            elif t is ast.Lambda:
                self.lambdas = True
            elif t is ast.Import:
                for a in node.names:  # type: ignore[attr-defined]
                    if a.asname:
                        self._bind(a.asname, a.name)
                    else:
                        root = a.name.split(".", 1)[0]
                        self._bind(root, root)
            elif t is ast.ImportFrom:
                mod = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
                for a in node.names:  # type: ignore[attr-defined]
                    if a.name != "*":
                        self._bind(a.asname or a.name, f"{mod}.{a.name}" if mod else a.name)

    def _bind(self, name: str, target: str) -> None:
        self.imports.setdefault(name, set()).add(target)

    def qualified(self, node: ast.AST) -> Set[str]:
        """What the analysis's ``qualify`` may return for this expression."""
        if isinstance(node, ast.Subscript):  # Dataset[int]
            node = node.value
        d = _dotted(node)
        if d is None:
            return set()
        root, _, rest = d.partition(".")
        targets = self.imports.get(root)
        if not targets:
            return {d}
        return {f"{t}.{rest}" if rest else t for t in targets}

    def lasts(self, node: ast.AST) -> Set[str]:
        return {q.rsplit(".", 1)[-1] for q in self.qualified(node)}

    def anchored(self) -> bool:
        n = self.n
        for c in self.classes:
            for b in c.bases:
                if any(n.datasetish(x) or n.loaderish(x) for x in self.lasts(b)):
                    return True
        constructors = setters = contexts = starters = False
        for call in self.calls:
            for kw in call.keywords:
                if kw.arg in KEYWORDS:
                    return True
            qs = self.qualified(call.func)
            if not qs:
                continue
            for q in qs:
                last = q.rsplit(".", 1)[-1]
                if n.loaderish(last):
                    return True
                if n.datasetish(last) or (last[:1].isupper() and q.startswith(n.dataset_modules)):
                    constructors = True
                elif last == "type" and len(call.args) == 3 and self.dataset_type_call(call):
                    return True
            if qs & n.setters:
                setters = True
            if qs & n.get_context:
                contexts = True
            if qs & n.starters:
                starters = True
        if constructors and self.has_local_callables():  # FRK201/202: dataset constructor arguments
            return True
        if setters and (self.fork or self.module_level_setter()):  # FRK404; FRK402/403
            return True
        if contexts and self.fork:  # FRK404
            return True
        if starters or any(self.process_class(c) for c in self.classes):  # FRK401
            return self.top_level_can_start()
        return False

    def dataset_type_call(self, call: ast.Call) -> bool:
        """``type("Name", (Base, ...), ns)`` with a dataset-like base (FRK202)."""
        bases = call.args[1]
        if not isinstance(bases, (ast.Tuple, ast.List)):
            return False
        return any(self.n.datasetish(x) for el in bases.elts for x in self.lasts(el))

    def has_local_callables(self) -> bool:
        """A lambda, or a function / class defined inside a function: what FRK201/202 report."""
        if self.lambdas:
            return True
        return any(isinstance(s, _DEFS) and s is not f for f in self.funcs for s in ast.walk(f))

    def module_level_setter(self) -> bool:
        """A start-method setter that runs on import: not inside a function body."""
        todo: List[ast.AST] = list(self.tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, _FUNCS):
                todo.extend(node.decorator_list)
                todo.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)
                continue
            if isinstance(node, ast.Call) and self.qualified(node.func) & self.n.setters:
                return True
            todo.extend(ast.iter_child_nodes(node))
        return False

    def process_class(self, c: ast.ClassDef) -> bool:
        return any(self.qualified(b) & self.n.process_classes for b in c.bases)

    def starts_directly(self, node: ast.AST) -> bool:
        n = self.n
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                f = sub.func
                if self.qualified(f) & n.starters:
                    return True
                if isinstance(f, ast.Attribute) and f.attr in ("Pool", "Process"):  # ctx.Pool(...)
                    return True
            elif isinstance(sub, ast.ClassDef) and self.process_class(sub):
                return True
        return False

    def top_level_can_start(self) -> bool:
        """FRK401's necessary condition: an unguarded module-level statement that starts workers
        itself or refers to one of the file's functions/classes that (transitively) does."""
        units: List[Tuple[Set[str], Set[str]]] = []  # (names a def/class defines, names it refers to)
        live: List[bool] = []
        code: List[ast.AST] = []
        for stmt in self.tree.body:
            if isinstance(stmt, _DEFS):
                # only the top-level name: a method or a nested function is reached through it
                # (an instance is built by naming the class; a closure is returned by its function)
                units.append(({stmt.name}, _references(stmt)))
                live.append(self.starts_directly(stmt))
            elif not _is_main_guard(stmt):
                code.append(stmt)
        starting: Set[str] = set()
        for (defined, _), on in zip(units, live):
            if on:
                starting |= defined
        changed = True
        while changed:
            changed = False
            for i, (defined, refs) in enumerate(units):
                if not live[i] and refs & starting:
                    live[i] = True
                    starting |= defined
                    changed = True
        return any(self.starts_directly(stmt) or _references(stmt) & starting for stmt in code)


def _references(node: ast.AST) -> Set[str]:
    out: Set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
    return out


def ast_gate(tree: ast.AST, k: Knowledge) -> bool:
    if not isinstance(tree, ast.Module):
        return True
    return _Gate(tree, _names(k)).anchored()


def could_have_findings(text: str, k: Knowledge, tree: Optional[ast.AST] = None) -> bool:
    if not text_gate(text, k):
        return False
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True  # let the real parser give the one-line error
    return ast_gate(tree, k)
