"""FRK401's plan reads who binds and who reads each module-level name
(``main_guard.module_names``), resolved one top-level statement at a time and remembered by the
statement's code. Here it is compared with libcst's ScopeProvider run on the whole module (the way
it was computed before) on every fixture and corpus file and on programs made to stress name
resolution, and after edits that reuse what was remembered."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, Set, Tuple

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ScopeProvider

from flake8_forksafe.families.processes import main_guard
from flake8_forksafe.source import decode

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in ROOT.glob("fixtures/FRK*/*.py") if not p.name.endswith(".fixed.py"))
FILES += sorted((ROOT / "tests" / "corpus").glob("*.py"))


class _Owner(cst.CSTVisitor):
    def __init__(self) -> None:
        self.index = -1
        self.owner: Dict[int, int] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.owner[id(node)] = self.index
        return True


def whole_module(module: cst.Module) -> Tuple[Dict[int, Set[int]], Dict[int, Set[str]], Dict[int, Set[str]]]:
    """The reference: ScopeProvider on the whole module (the plan's former code)."""
    body = list(module.body)
    owner = _Owner()
    for i, s in enumerate(body):
        owner.index = i
        s.visit(owner)
    g = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)[module]
    deps = {i: set() for i in range(len(body))}
    binds = {i: set() for i in range(len(body))}
    reads = {i: set() for i in range(len(body))}
    for asg in g.assignments:
        b = owner.owner.get(id(asg.node), -1)
        if b < 0:
            continue
        binds[b].add(asg.name)
        for ref in asg.references:
            u = owner.owner.get(id(ref.node), -1)
            if u >= 0:
                reads[u].add(asg.name)
            if u >= 0 and u != b:
                deps[u].add(b)
    return deps, binds, reads


STRESS = {
    "order": """
        x = 1
        print(x)
        def f():
            return y
        y = 2
        print(z)
        z = 3
        """,
    "dotted": """
        import os
        import os.path
        import a.b.c
        print(os.path.join("a"))
        def f():
            return a.b.c.d(), a.b.x, os.sep
        import a.b
        v = a.b.c
        """,
    "globals": """
        def setup():
            global STATE, other
            STATE = 1
            other = STATE + 1
        setup()
        print(STATE)
        def read():
            return other
        """,
    "class-scopes": """
        x = 0
        class C:
            x = 1
            y = x
            def m(self):
                print(x)
                x = 2
            def n(self):
                return [x for _ in range(3)], y
        y = 5
        """,
    "shadows": """
        def f(x):
            return x + len(x)
        len = 3
        def g():
            len = 1
            def h():
                return len
            return h
        lam = lambda q: q + len
        total = sum(i for i in range(len))
        """,
    "annotations": """
        from typing import List
        class Node:
            child: "Node"
            items: "List[Item]"
        def f(n: "Node") -> "Item":
            pass
        Item = int
        alias: "List[int]" = []
        """,
    "walrus-del-aug": """
        if (n := 10) > 5:
            pass
        data = [1]
        data += [n]
        del data
        data = [m := 2 for _ in range(3)]
        print(m, n)
        try:
            import json
        except ImportError:
            json = None
        with open("f") as fh, open("g") as gh:
            pass
        for k, v in {}.items():
            pass
        print(k, fh, gh)
        """,
    "builtins-and-keywords": """
        print = print
        def f():
            return print, True, None, __name__, __debug__
        match = 1
        type = match
        async def g():
            await f()
        """,
    "same-line": "import os; x = os.sep; y = x\nz = y; print(z)\n",
    # ScopeProvider orders a scope's bindings and reads: a read at or before the scope's last
    # binding of the name is also resolved outside it (to the module-level ``x`` / ``root``)
    "scope-order": """
        x = root = 0
        def param_then_rebound(root=None):
            if root is None:
                root = 1
            return root
        def read_then_bound(a):
            y = x
            x = 2
            return y
        def rebinding(a):
            x = 1
            x = x + 1
            return x
        def bound_then_read(a):
            x = 1
            return x
        def two_loops(a):
            for x in a:
                print(x)
            for x in a:
                print(x)
        def deleted(a):
            del x
        def augmented(a):
            x = 1
            x += 1
            return x
        def closure(a):
            def g():
                return x
            x = 1
            return g, [x for x in a], [y for x in a for y in x], lambda x: x
        class C:
            y = x
            x = 1
            z = [x for _ in range(3)]
            def m(self):
                return x
        class D:
            x = 1
            def m(self, root):
                return root, x
        """,
    "annotation-named-like-the-method": """
        import lexicon
        class Compiler:
            @property
            def lexicon(self) -> lexicon.Lexicon:
                return self._lexicon
            def size(self, n: lexicon.Size = lexicon.DEFAULT):
                return n
        """,
    "private-names": """
        __MSG = "x"
        class T5:
            def warn(self):
                return __MSG
        """,
    "string-hints": """
        from typing import List, cast
        Item = int
        def f(items: "List[Item]") -> "Item":
            return cast("Item", items[0])
        class Box:
            content: List["Item"] = []
        """,
}


def _compare(text: str) -> None:
    module = cst.parse_module(text)
    assert main_guard.module_names(module) == whole_module(module)


@pytest.mark.parametrize("name", sorted(STRESS))
def test_stress_programs(name):
    main_guard._NAMES.clear()
    _compare(textwrap.dedent(STRESS[name]))
    _compare(textwrap.dedent(STRESS[name]))  # remembered


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_fixtures_and_corpus(path):
    _compare(decode(path.read_bytes(), str(path)))


def test_no_libcst_parse_for_the_stand_ins(monkeypatch):
    # the stand-in imports are built, not parsed: a fix's parse count stays what it was
    calls = []
    real = cst.parse_module
    module = real(textwrap.dedent(STRESS["dotted"]))
    monkeypatch.setattr(cst, "parse_module", lambda *a, **k: calls.append(1) or real(*a, **k))
    main_guard._NAMES.clear()
    assert main_guard.module_names(module) == whole_module(module) and calls == []


def test_names_libcst_does_not_take_use_the_whole_module(monkeypatch):
    # a stand-in libcst refuses (here: an empty name): the whole module's ScopeProvider answers
    module = cst.parse_module("x = None\nprint(x)\n")
    monkeypatch.setattr(main_guard, "_import", lambda name: cst.Name(""))
    main_guard._NAMES.clear()
    with pytest.raises(cst.CSTValidationError):
        main_guard.statement_names(module)
    assert main_guard.module_names(module) == whole_module(module) == main_guard.whole_module_names(module)
    assert whole_module(module)[0] == {0: set(), 1: {0}}


def test_edits_reuse_what_was_remembered():
    main_guard._NAMES.clear()
    base = textwrap.dedent(STRESS["dotted"]) + textwrap.dedent(STRESS["order"])
    _compare(base)
    kept = len(main_guard._NAMES)
    # an edit inside one function: only that statement is resolved again
    edited = base.replace("return a.b.c.d(), a.b.x, os.sep", "return a.b.c.d(), a.b.x, os.sep, z")
    _compare(edited)
    assert len(main_guard._NAMES) == kept + 1
    # a statement that binds a new dotted name changes what the others read
    _compare(edited.replace("import a.b\n", "import a.b\nimport os.path.sep\n"))
    _compare(edited.replace("import a.b.c\n", ""))
    _compare(edited.replace("import os.path\n", ""))
    _compare(edited.replace("y = 2\n", ""))
    _compare(edited.replace("x = 1\n", "x = 1\ny = 0\n"))


def test_definitions_are_read_from_the_symbol_table(monkeypatch):
    """A def / class is read with CPython's symbol table, not ScopeProvider, unless a top-level
    statement binds a name that ScopeProvider would read outward from it (then both agree because
    ScopeProvider decides), and the answers equal ScopeProvider's on the whole module."""
    text = textwrap.dedent(
        """
        import os
        import numpy as np
        root = os.getcwd()

        class Files:
            def __init__(self, root=None):
                self.root = root or ROOT
                self.names = [n for n in os.listdir(self.root)]

            def __getitem__(self, i):
                return np.load(os.path.join(self.root, self.names[i]))

        def helper(a):
            b = a
            b = b + 1
            return b

        ROOT = root
        """
    )
    module = cst.parse_module(text)
    resolved = []
    real = main_guard._resolve
    monkeypatch.setattr(main_guard, "_resolve", lambda m, stmts, *a: resolved.extend(stmts) or real(m, stmts, *a))
    main_guard._NAMES.clear()
    assert main_guard.module_names(module) == whole_module(module)
    kinds = [type(s).__name__ for s in resolved]
    assert kinds.count("ClassDef") == 0 and kinds.count("FunctionDef") == 0, kinds
    # `def helper(root): root = root + 1`: ScopeProvider also reads `root` at module level, which
    # a statement binds: ScopeProvider decides for that def
    clash = text.replace("def helper(a):\n    b = a\n    b = b + 1\n    return b", "def helper(root):\n    root = root + 1\n    return root")
    assert clash != text
    module = cst.parse_module(clash)
    resolved.clear()
    main_guard._NAMES.clear()
    assert main_guard.module_names(module) == whole_module(module)
    assert [getattr(getattr(s, "name", None), "value", None) for s in resolved if isinstance(s, cst.FunctionDef)] == ["helper"]
