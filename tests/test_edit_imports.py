"""Imports added by fixes: reused when the file has one, else placed where isort puts them, under a
free name when the file binds or shadows the module's name (the code the fix adds then uses it)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.edit import ensure_imports
from flake8_forksafe.fix import fix_source


def added(src: str, *names: str) -> str:
    return ensure_imports(cst.parse_module(textwrap.dedent(src)), names).code


@pytest.mark.parametrize(
    "src,want",
    [
        # stdlib group, alphabetical among the plain imports
        ("import json\nimport sys\n\nimport torch\n", "import json\nimport os\nimport sys\n\nimport torch\n"),
        # before the group's `from` imports
        ("import json\nfrom pathlib import Path\n\nx = 1\n", "import json\nimport os\nfrom pathlib import Path\n\nx = 1\n"),
        # a file that sorts `from` and plain imports together keeps doing so
        ("from abc import ABC\nimport sys\n", "from abc import ABC\nimport os\nimport sys\n"),
        # no stdlib group: a new one before the third-party group, one blank line between
        ('"""Doc."""\n\nimport numpy as np\nimport torch\n', '"""Doc."""\n\nimport os\n\nimport numpy as np\nimport torch\n'),
        # after `from __future__`, in its own group
        ("from __future__ import annotations\n\nimport numpy\n",
         "from __future__ import annotations\n\nimport os\n\nimport numpy\n"),
        # no imports at all: after the docstring
        ('"""Doc."""\nx = 1\n', '"""Doc."""\n\nimport os\n\nx = 1\n'),
        # reused: `import os`, `import os.path`, `import os, lmdb`
        ("import os\nx = 1\n", "import os\nx = 1\n"),
        ("import os.path\nx = 1\n", "import os.path\nx = 1\n"),
        ("import os, lmdb\nx = 1\n", "import os, lmdb\nx = 1\n"),
        # rebound at module level, or shadowed in a function: a free alias
        ("import sys\n\nos = 'posix'\n", "import os as _os\nimport sys\n\nos = 'posix'\n"),
        ("import os\n\nos = 'posix'\n", "import os\nimport os as _os\n\nos = 'posix'\n"),
        ("import sys\n\n_os = 1\n\ndef f(os):\n    return os\n",
         "import os as _os_\nimport sys\n\n_os = 1\n\ndef f(os):\n    return os\n"),
    ],
)
def test_os_placement(src, want):
    assert added(src, "os") == want


def test_third_party_group():
    src = "import os\n\nimport numpy as np\nfrom torch.utils.data import DataLoader\n"
    assert added(src, "torch") == "import os\n\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n"
    assert added("import os\nimport sys\n\nx = 1\n", "torch") == "import os\nimport sys\n\nimport torch\n\nx = 1\n"


REBINDS_OS = '''\
import json

import lmdb
from torch.utils.data import Dataset


class DS(Dataset):
    def __init__(self, path):
        self.env = lmdb.open(path, readonly=True, lock=False)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return json.loads(txn.get(str(i).encode()) or b"null"), os


os = "posix"  # the file's own `os`, read by __getitem__
'''


def test_fix_in_a_module_that_rebinds_os_uses_the_alias():
    out = fix_source(REBINDS_OS, "ds.py", Config(select=("FRK101",)), unsafe=True).source
    assert out.startswith("import json\nimport os as _os\n\nimport lmdb\n")
    assert out.count("_os.getpid()") == 2 and " os.getpid()" not in out
    assert 'return json.loads(txn.get(str(i).encode()) or b"null"), os\n' in out
    assert out.endswith('os = "posix"  # the file\'s own `os`, read by __getitem__\n')


# --- the bindings and local imports the fixes read, by direct walks: the same as libcst's own analyses


def _scope_bindings(module: cst.Module) -> dict:
    """The reference: every assignment of every scope, by libcst's ScopeProvider (name -> ids of
    the Import/ImportFrom nodes among its binders, and whether it has any other)."""
    from libcst.metadata import MetadataWrapper, ScopeProvider

    scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    out: dict = {}
    for scope in {s for s in scopes.values() if s is not None}:
        for asg in scope.assignments:
            out.setdefault(asg.name, set())
            if isinstance(asg.node, (cst.Import, cst.ImportFrom)):
                out[asg.name].add(id(asg.node))
    return out


def _walked_bindings(module: cst.Module) -> dict:
    from flake8_forksafe import edit

    edit._BINDINGS[0] = None
    return {
        name: {id(n) for n in nodes if isinstance(n, (cst.Import, cst.ImportFrom))}
        for name, nodes in edit._all_bindings(module).items()
    }


def _visited_local_imports(module: cst.Module) -> dict:
    """The reference for ``_local_imports``: libcst visitors (the implementation it replaced)."""
    from flake8_forksafe.edit import _bound_by_import, _code

    out: dict = {}
    path: list = []

    class Reads(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: set = set()

        def visit_Import(self, node):
            return False

        def visit_ImportFrom(self, node):
            return False

        def visit_Attribute(self, node):
            node.value.visit(self)
            return False

        def visit_Arg(self, node):
            node.value.visit(self)
            return False

        def visit_Name(self, node):
            self.names.add(node.value)

    class V(cst.CSTVisitor):
        def visit_ClassDef(self, node):
            path.append(node.name.value)

        def leave_ClassDef(self, original_node):
            path.pop()

        def visit_FunctionDef(self, node):
            path.append(node.name.value)
            imports: list = []

            class Own(cst.CSTVisitor):
                def visit_FunctionDef(self, inner):
                    return False

                def visit_ClassDef(self, inner):
                    return False

                def visit_Import(self, imp):
                    imports.append(imp)

                def visit_ImportFrom(self, imp):
                    if not isinstance(imp.names, cst.ImportStar):
                        imports.append(imp)

            node.body.visit(Own())
            if imports:
                reads = Reads()
                node.body.visit(reads)
                for imp in imports:
                    for name in _bound_by_import(imp):
                        head = name.split(".")[0]
                        out[(tuple(path), _code(imp), head)] = head in reads.names

        def leave_FunctionDef(self, original_node):
            path.pop()

    module.visit(V())
    return out


BINDING_CASES = [
    "import os.path as p, json\nfrom a.b import c as d, e\nfrom x import *\n",
    "import a.b.c\nx = y = 1\n(a1, [b1, *c1]) = z\nq.attr = 1\nq[i] = 2\nn: int\nm: int = 3\nk += 1\n",
    "for i, (j, k) in pairs:\n    pass\nwith open(f) as fh, g() as (u, v):\n    pass\n",
    "try:\n    pass\nexcept E as err:\n    pass\nif (w := f()):\n    pass\n",
    "def f(a, /, b=1, *args, c, **kw):\n    global G\n    G = 1\n"
    "    return lambda p, *q: [r for r in p for s in r if (t := s)]\n",
    "class C(B, metaclass=M):\n    attr = 1\n    def m(self):\n        del self.x\n        f(key=1)\n"
    "        return {k: v for k, v in d}\n",
    "match x:\n    case [a, *rest]:\n        pass\n    case {'k': v, **others}:\n        pass\n"
    "    case P(q=z) as whole:\n        pass\n",
]


def _corpus_modules():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = sorted(root.glob("fixtures/**/*.py")) + sorted(root.glob("tests/corpus/**/*.py"))
    files += sorted((root / "flake8_forksafe").glob("**/*.py"))
    for f in files:
        try:
            yield f.name, cst.parse_module(f.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue


def test_bindings_are_those_of_libcst_scope_analysis():
    modules = [(f"case {i}", cst.parse_module(src)) for i, src in enumerate(BINDING_CASES)]
    modules += list(_corpus_modules())
    assert len(modules) > 300
    for name, module in modules:
        assert _walked_bindings(module) == _scope_bindings(module), name


def test_binding_cases_spelled_out():
    from flake8_forksafe import edit

    edit._BINDINGS[0] = None
    got = edit._all_bindings(cst.parse_module(BINDING_CASES[1]))
    assert set(got) == {"a.b.c", "a.b", "a", "x", "y", "a1", "b1", "c1", "n", "m", "k"}  # not q, i, z
    edit._BINDINGS[0] = None
    got = edit._all_bindings(cst.parse_module(BINDING_CASES[5]))
    assert set(got) == {"C", "attr", "m", "self", "k", "v"}  # not key, x, f, d, B, M


def test_local_imports_walk_is_the_visitors():
    from flake8_forksafe.edit import _local_imports

    src = textwrap.dedent(
        """
        def f():
            import os, json as j
            from pathlib import Path
            def g():
                import sys
                return sys.argv, Path
            return os.sep, f(j=1)

        class C:
            def m(self):
                import torch.utils.data
                return self.torch
        """
    )
    module = cst.parse_module(src)
    assert _local_imports(module) == _visited_local_imports(module)
    assert {k[2]: v for k, v in _local_imports(module).items()} == {
        "os": True, "j": False, "Path": True, "sys": True, "torch": False,
    }
    for name, module in _corpus_modules():
        got, want = _local_imports(module), _visited_local_imports(module)
        assert got == want and list(got) == list(want), name
