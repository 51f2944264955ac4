"""Keep libcst's cost off files that cannot have a finding.

Stage 1 (text): every rule needs a dataset or loader word, a ``worker_init_fn``, or a
multiprocessing word next to an import of a multiprocessing module. Substring tests, no regex.
Stage 2 (ast, only for files that pass stage 1): the CPython parser (~10x faster than libcst) and
one walk looking for a class whose base is dataset- or loader-like, a loader / worker-starting /
start-method call, a dataset-module constructor, or a ``worker_init_fn=`` / ``multiprocessing_context=``
keyword. Aliases from imports are followed. Both stages over-approximate the rules: a file they
reject has no finding (tests/test_prefilter.py compares with unfiltered runs over real code).
"""

from __future__ import annotations

import ast
from typing import Dict, Optional

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


def _last(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Subscript):  # Dataset[int]
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def ast_gate(tree: ast.AST, k: Knowledge) -> bool:
    aliases: Dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name.rsplit(".", 1)[-1]
    base_names = {b.rsplit(".", 1)[-1] for b in k.dataset_bases}
    loader_names = {b.rsplit(".", 1)[-1] for b in k.loaders}
    dataset_mods = tuple(m.rsplit(".", 1)[-1] for m in k.dataset_modules)

    def real(name: Optional[str]) -> str:
        return aliases.get(name, name) if name else ""

    def datasetish(name: str) -> bool:
        return name in base_names or any(name.endswith(s) for s in k.dataset_base_suffixes)

    def loaderish(name: str) -> bool:
        return name in loader_names or any(name.endswith(s) for s in k.loader_suffixes)

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                name = real(_last(b))
                if datasetish(name) or loaderish(name) or name in MP_CALLS:  # class W(mp.Process)
                    return True
        elif isinstance(node, ast.Call):
            name = real(_last(node.func))
            if loaderish(name) or name in MP_CALLS or (name == "type" and len(node.args) == 3):
                return True
            if isinstance(node.func, ast.Attribute) and _dotted(node.func.value).endswith(dataset_mods):
                return True
            for kw in node.keywords:
                if kw.arg in KEYWORDS:
                    return True
    return False


def could_have_findings(text: str, k: Knowledge, tree: Optional[ast.AST] = None) -> bool:
    if not text_gate(text, k):
        return False
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True  # let the real parser give the one-line error
    return ast_gate(tree, k)
