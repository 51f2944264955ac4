"""What the project index costs on files that cannot have findings (issues 10/11): the proof from
the modules' text that a gate-rejected file's bases reach no dataset (nothing summarised), the
gate's ast reused for the checked file, one text stage per file, and the faster readers giving
exactly what the slower ones gave."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe import engine, index, prefilter
from flake8_forksafe.config import Config
from flake8_forksafe.index import ProjectIndex, TextModule, has_project_dataset, reach_words, summarise

K = Config().knowledge
ROOT = Path(__file__).resolve().parent.parent


def write(root: Path, files: dict) -> Path:
    for rel, src in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    return root


def anchored(root: Path, rel: str) -> tuple:
    """(has_project_dataset, the proof's verdict, modules summarised) on a fresh index."""
    path = str(root / rel)
    text = (root / rel).read_text()
    ix = ProjectIndex(root, K)
    proof = ix.cannot_reach_dataset(ix.project_bases(path, text))
    ix2 = ProjectIndex(root, K)
    got = has_project_dataset(ix2, path, K, text)
    return got, proof, ix2.summarised


PLAIN = {
    "pyproject.toml": "",
    "pkg/__init__.py": "from .core import Module as Mod\n",
    "pkg/core.py": """\
        import abc

        class Module(abc.ABC):
            def __init__(self):
                self.x = 1
        """,
    "pkg/layers.py": """\
        from pkg import Mod
        from . import core

        Alias = core.Module


        class Linear(Mod):
            pass


        class Conv(Alias):
            pass
        """,
}


def test_a_chain_without_dataset_words_is_proved_without_summarising(tmp_path: Path) -> None:
    root = write(tmp_path, PLAIN)
    got, proof, summarised = anchored(root, "pkg/layers.py")
    assert (got, proof, summarised) == (False, True, 0)


def test_a_base_module_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    root = write(tmp_path, PLAIN)
    path = str(root / "pkg/layers.py")
    text = (root / "pkg/layers.py").read_text()
    ix = ProjectIndex(root, K)
    assert not has_project_dataset(ix, path, K, text) and ix.summarised == 0
    (root / "pkg/core.py").write_text("from torch.utils.data import Dataset\n\nclass Module(Dataset):\n    pass\n")
    assert has_project_dataset(ix, path, K, text)  # a language server lives while files change


@pytest.mark.parametrize(
    "core",
    [
        # the base module itself derives from a dataset
        "from torch.utils.data import Dataset\n\nclass Module(Dataset):\n    pass\n",
        # through an alias two steps away
        "import torch.utils.data as tud\nBase = tud.Dataset\n\nclass Module(Base):\n    pass\n",
        # a base in a third module that names a dataset
        "from .deep import Deep\n\nclass Module(Deep):\n    pass\n",
    ],
)
def test_a_chain_that_reaches_a_dataset_is_never_proved(tmp_path: Path, core: str) -> None:
    files = dict(PLAIN, **{"pkg/core.py": core, "pkg/deep.py": "from torch.utils.data import IterableDataset as Deep\n"})
    root = write(tmp_path, files)
    got, proof, _ = anchored(root, "pkg/layers.py")
    assert (got, proof) == (True, False)


def test_a_base_passing_self_attr_to_a_loader_is_never_proved(tmp_path: Path) -> None:
    files = dict(
        PLAIN,
        **{
            "pkg/core.py": """\
                from torch.utils.data import DataLoader

                class Module:
                    def loader(self):
                        return DataLoader(self.data, collate_fn=self.collate, num_workers=2)
                """
        },
    )
    files["pkg/layers.py"] += "\n\ndef make():\n    return Linear()\n"  # FRK201/202 need a def or lambda here
    root = write(tmp_path, files)
    got, proof, _ = anchored(root, "pkg/layers.py")
    assert (got, proof) == (True, False)


@pytest.mark.parametrize(
    "core",
    [
        "import abc\n\nclass \\\n        Module(abc.ABC):\n    pass\n",  # a keyword continued by a backslash
        "import abc\nBase = (\n    abc.ABC\n)\n\nclass Module(Base):\n    pass\n",  # an alias's value on the next line
        "import abc\n\nclass Module(make_base('x')):\n    pass\n",  # a string in the bases
    ],
)
def test_forms_the_text_reading_does_not_follow_end_the_proof(tmp_path: Path, core: str) -> None:
    root = write(tmp_path, dict(PLAIN, **{"pkg/core.py": core}))
    got, proof, _ = anchored(root, "pkg/layers.py")
    assert (got, proof) == (False, False)


def test_the_proof_reads_every_binding_form_the_summariser_reads(tmp_path: Path) -> None:
    tm = TextModule(
        "pkg.m",
        False,
        textwrap.dedent(
            """\
            import os; from .a import (X,  # a comment (with parentheses)
                Y as Z)
            if True: import b.c as D
            try: from ..up import E
            except ImportError: pass
            import f.g
            from abc \\
                import ABC
            F: type = os.path
            (G) = os.sep
            class C(Z, f.g.H, Generic[T], metaclass=M): pass
            class K: pass
            """
        ),
        reach_words(K),
    )
    assert tm.imports == {
        "os": {"os"}, "X": {"pkg.a.X"}, "Z": {"pkg.a.Y"}, "D": {"b.c"}, "E": {"up.E"}, "f": {"f"}, "ABC": {"abc.ABC"}
    }
    assert tm.classes == {"C": ["Z", "f.g.H", "Generic"], "K": []}
    assert tm.aliases("F") == {"os.path"} and tm.aliases("G") == {"os.sep"} and tm.aliases("C") == set()
    assert not tm.interesting and not tm.unclear


def test_the_proof_agrees_with_resolution_on_this_repository_and_fixtures() -> None:
    """On every file of the package and the fixtures that the gate rejects: where the proof holds,
    resolution (without the proof) finds no dataset either."""
    cfg = Config()
    proved = 0
    files = sorted((ROOT / "flake8_forksafe").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py"))
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        if "class " not in text or engine.gate(text, cfg).passes:
            continue
        ix = index.index_for(str(p), K, use_cache=False)
        bases = ix.project_bases(str(p), text)
        if not bases or not ProjectIndex(ix.root, K).cannot_reach_dataset(bases):
            continue
        proved += 1
        is_base = lambda q: index.is_dataset_base_name(q, K)  # noqa: E731
        for q in bases:
            ref = ix.resolve_class(q)
            if ref is not None:
                assert not is_base(ref.qname) and not ix.derives_from(ref.qname, is_base), (p, q)
                assert not ix.passes_self_to_loader(ref.qname), (p, q)
    assert proved > 0


def test_the_checked_files_tree_is_summarised_without_a_second_parse(tmp_path: Path, monkeypatch) -> None:
    root = write(
        tmp_path,
        {
            "pyproject.toml": "",
            "m/__init__.py": "",
            "m/base.py": """\
                import lmdb


                class Base:
                    def __init__(self, p):
                        self._open(p)

                    def _open(self, p):
                        self.env = lmdb.open(p)
                """,
            "m/ds.py": """\
                from torch.utils.data import Dataset

                from .base import Base


                class D(Base, Dataset):
                    def __getitem__(self, i):
                        return i
                """,
        },
    )
    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(index.ast, "parse", lambda src, *a, **kw: parsed.append(src) or real_parse(src, *a, **kw))
    from flake8_forksafe.frontends.cli import check_file

    ix = ProjectIndex(root, K)
    found, err, skipped = check_file(str(root / "m/ds.py"), Config(), index=ix)
    assert err is None and skipped is None
    assert [f.code for f in found] == ["FRK101"]
    assert "m.ds" in ix.summaries and "m.base" in ix.summaries
    disk = (root / "m/ds.py").read_bytes()
    assert disk not in parsed  # the checked file: the gate's tree
    assert (root / "m/base.py").read_bytes() in parsed  # the base: parsed by the index
    fresh = summarise(real_parse(disk), "m.ds", K, path=ix.summaries["m.ds"].path)
    assert ix.summaries["m.ds"].to_json() == fresh.to_json()
    assert ix._offered is None  # withdrawn after the analysis


def test_check_runs_the_text_stage_once_per_file(tmp_path: Path, monkeypatch) -> None:
    root = write(
        tmp_path,
        {
            "a.py": "import os\n",
            "b.py": """\
                from torch.utils.data import Dataset

                class D(Dataset):
                    def __init__(self):
                        self.f = open('x')
                """,
            "c.py": "x = 1\n",
        },
    )
    calls = []
    real = prefilter.text_gate
    monkeypatch.setattr(prefilter, "text_gate", lambda *a, **kw: calls.append(a[0]) or real(*a, **kw))
    from flake8_forksafe.frontends.isolation import check_serially

    out = check_serially([str(root / n) for n in ("a.py", "b.py", "c.py")], Config(), False)
    assert [[f.code for f in o[0]] for o in out] == [[], ["FRK101"], []]
    assert len(calls) == 3


def _slow_body_nodes(body):
    out, todo = [], list(body)
    while todo:
        n = todo.pop()
        out.append(n)
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(c)
    out.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    return [n for n in out if isinstance(n, index._WANTED)]


def _sources():
    for p in sorted((ROOT / "flake8_forksafe").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py")):
        yield p, p.read_text(encoding="utf-8", errors="replace")


def test_the_fast_readers_equal_the_slow_ones_on_real_sources() -> None:
    line_start = {
        index._CLASS_BASES: re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)", re.M),
        index._FROM_IMPORT: re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M),
        index._IMPORT: re.compile(r"^[ \t]*import[ \t]+([^\n]*)", re.M),
    }
    words = {index._CLASS_DEF: r"\bclass\s+(\w+)", index._FUNC_DEF: r"\bdef\s+(\w+)", index._IMPORT_WORD: r"\bimport\b"}
    tricky = "x = 'class A(B)'; from a import b\n  import c\nundef f(): class_ = 1\nximport y\n\tfrom .m import (n,\n o)\n"
    n = 0
    for p, text in [*_sources(), (Path("tricky"), tricky)]:
        for fast, slow in line_start.items():
            assert index._at_line_starts(fast, text) == slow.findall(text), (p, slow.pattern)
        for fast, slow in words.items():
            assert [(m.start(), m.group(0)) for m in index._words(fast, text)] == [
                (m.start(), m.group(0)) for m in re.finditer(slow, text)
            ], (p, slow)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert index._body_nodes(node.body) == _slow_body_nodes(node.body), (p, node.name)
                n += 1
    assert n > 1000


PKG_TEXT = {
    "pyproject.toml": "",
    "pk/__init__.py": "",
    "pk/io.py": """\
        class Reader:
            def __init__(self, p):
                self.f = open(p)


        class FastReader(Reader):
            pass


        class Unused:
            def __init__(self, p):
                self.f = open(p)


        def make_reader(p):
            r = FastReader(p)
            return r


        class Picked:
            def __init__(self, p):
                self.f = open(p)


        def pick(kind):
            if kind:
                cls_ = Picked
            return cls_


        def plain(x):
            return x + 1


        def calls_plain(x):
            return plain(x)
        """,
    "pk/gpu.py": """\
        import torch


        def to_gpu(x):
            return x.to("cuda")
        """,
    "pk/mixed.py": """\
        from pk.gpu import to_gpu


        def helper(x):
            return to_gpu(x)
        """,
    "pk/data.py": """\
        from torch.utils.data import Dataset

        from pk.io import make_reader


        class DS(Dataset):
            def __init__(self, p):
                self.reader = make_reader(p)
                self.picked: object = pick(p)(p)  # annotated, as pytorchvideo's self._videos: Dict[...] = ...

            def __getitem__(self, i):
                return self.reader.f.read(i)
        """,
}


def test_the_package_text_says_which_classes_may_be_kept(tmp_path: Path) -> None:
    """A class whose objects no text of its package keeps (``Unused``) is no handle holder any
    dataset keeps: not summarised to find out. Kept through a function that returns it by name
    (``r = FastReader(p); return r``), through a subclass (``Reader``, whose subclass is kept), or
    as the class a kept call's callee returns (``cls_ = Picked; return cls_``, then ``pick(p)(p)``:
    pytorchvideo's ``select_video_class``): may be."""
    write(tmp_path, PKG_TEXT)
    ix = ProjectIndex(tmp_path, K)
    ix.module_for(str(tmp_path / "pk/io.py"))
    names = ("Reader", "FastReader", "Unused", "make_reader", "Picked")
    assert [n for n in names if ix.may_be_kept(f"pk.io.{n}")] == ["Reader", "FastReader", "make_reader", "Picked"]
    # a function whose text names no dataset class makes no dataset: not resolved either
    assert ix.dataset_factory("pk.io.make_reader", lambda q: q.endswith("Dataset")) is None
    assert ix.summarised == 0  # text only


def test_the_package_text_says_which_functions_may_use_cuda(tmp_path: Path) -> None:
    """A module-level function of a module whose text never says "cuda", calling no function that
    may, is not summarised when FRK301 asks whether it uses CUDA; one that does, or calls one that
    does (by name, across modules), is resolved as before."""
    write(tmp_path, PKG_TEXT)
    ix = ProjectIndex(tmp_path, K)
    ix.module_for(str(tmp_path / "pk/io.py"))
    assert ix.function_cuda("pk.io.calls_plain") is None and ix.summarised == 0
    assert ix.function_cuda("pk.gpu.to_gpu")[0] == ".to(cuda)"
    assert ix.function_cuda("pk.mixed.helper")[1] == "pk.gpu.to_gpu"
    table = ix._dataset_text_table("pk.io")
    assert sorted(table.cuda_defs("pk", {"pk"})) == ["helper", "to_gpu"]


def test_a_package_too_big_to_search_is_not_read_for_its_text_proofs(tmp_path: Path, monkeypatch) -> None:
    """torch's own package (46 MB) is never searched for datasets keeping a holder's objects: the
    holder question ends at once, without the package's text read (which costs more than the few
    summaries the CUDA question makes there: ``function_cuda`` summarises instead)."""
    write(tmp_path, PKG_TEXT)
    monkeypatch.setattr(index, "MAX_HOLDER_PACKAGE_BYTES", 10)
    ix = ProjectIndex(tmp_path, K)
    ix.module_for(str(tmp_path / "pk/io.py"))
    assert ix.holder_search_too_big("pk.io.Reader")
    assert ix.function_cuda("pk.mixed.helper")[1] == "pk.gpu.to_gpu"
    assert ix.function_cuda("pk.io.calls_plain") is None
    assert ix._text_tables == {}  # no reading of the package's text
