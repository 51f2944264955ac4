"""The project index (flake8_forksafe/index.py): summaries, resolution across modules, the cache,
and end-to-end ``forksafe check`` runs where a dataset's base class lives in another module."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.index import ModuleSummary, ProjectIndex, project_root, summarise

K = Config().knowledge


def write(root: Path, files: dict) -> Path:
    for rel, src in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    return root


def is_torch_dataset(q: str) -> bool:
    return q in K.dataset_bases


BASE = """\
    import lmdb
    from torch.utils.data import Dataset


    class DetectionBase(Dataset):
        def __init__(self, root, cache=None, **kwargs):
            self.root = root
            self.cache = None
            self.mode = kwargs.get("mode")
            self._load()

        def _load(self):
            self.env = self._open()

        def _open(self):
            return lmdb.open(self.root)
    """


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        {
            "pyproject.toml": "",
            "pkg/__init__.py": "",
            "pkg/data/__init__.py": "from .base import DetectionBase as Base\n",
            "pkg/data/base.py": BASE,
            "pkg/data/coco.py": """\
                from . import base as b
                from .base import DetectionBase


                class Coco(DetectionBase):
                    def __init__(self, root):
                        super().__init__(root)
                        self.ann = root


                class Alias(b.DetectionBase):
                    pass
                """,
            "pkg/models/voc.py": """\
                from ..data import Base

                Parent = Base


                class Voc(Parent):
                    pass
                """,
        },
    )


def test_project_root_and_module_names(project: Path) -> None:
    ix = ProjectIndex(project, K)
    assert project_root(str(project / "pkg/data/coco.py")) == project.resolve()
    assert ix.module_for(str(project / "pkg/data/coco.py")) == ("pkg.data.coco", False)
    assert ix.module_for(str(project / "pkg/data/__init__.py")) == ("pkg.data", True)
    assert ix.path_for("pkg.data.base") == (project / "pkg/data/base.py").resolve() or ix.path_for(
        "pkg.data.base"
    ) == project / "pkg/data/base.py"
    assert ix.path_for("pkg.data").name == "__init__.py"
    assert ix.path_for("torch.utils.data") is None  # not followed outside the project


def test_top_package_is_the_root_without_project_files(tmp_path: Path) -> None:
    write(tmp_path, {"a/pkg/__init__.py": "", "a/pkg/sub/__init__.py": "", "a/pkg/sub/m.py": ""})
    assert project_root(str(tmp_path / "a/pkg/sub/m.py")) == (tmp_path / "a").resolve()


def test_relative_imports_reexports_and_aliases_resolve(project: Path) -> None:
    ix = ProjectIndex(project, K)
    for q in ("pkg.data.coco.Coco", "pkg.data.coco.Alias", "pkg.models.voc.Voc"):
        chain, outside = ix.base_chain(q)
        assert [c.qname for c in chain][1] == "pkg.data.base.DetectionBase", q
        assert outside == ["torch.utils.data.Dataset"]
        assert ix.derives_from(q, is_torch_dataset)
    assert ix.canonical("pkg.data.Base") == "pkg.data.base.DetectionBase"
    assert ix.canonical("pkg.models.voc.Parent") == "pkg.data.base.DetectionBase"
    assert ix.resolve_class("pkg.data.Base").line == 5
    assert ix.resolve_class("pkg.data.base.Missing") is None


def test_lazy_summaries_only_what_is_asked(project: Path) -> None:
    ix = ProjectIndex(project, K)
    ix.resolve_class("pkg.data.base.DetectionBase")
    assert sorted(ix.summaries) == ["pkg.data.base"]
    assert ix.summarised == 1
    ix.resolve_class("pkg.data.Base")  # the re-export: pkg/data/__init__.py, once
    assert sorted(ix.summaries) == ["pkg.data", "pkg.data.base"]
    assert ix.summarised == 2


def test_init_reach_and_assigns_across_modules(project: Path) -> None:
    ix = ProjectIndex(project, K)
    reach = ix.init_reach("pkg.data.coco.Coco")
    assert [(r.label, r.path, r.line) for r in reach] == [
        ("Coco.__init__", str(Path("pkg/data/coco.py")), 6),
        ("DetectionBase.__init__", str(Path("pkg/data/base.py")), 6),
        ("DetectionBase._load", str(Path("pkg/data/base.py")), 12),
        ("DetectionBase._open", str(Path("pkg/data/base.py")), 15),
    ]
    facts = {(f.attr, f.kind, f.detail, f.line) for f in ix.init_assigns("pkg.data.coco.Coco")}
    assert facts == {
        ("ann", "param", "root", 8),
        ("root", "param", "root", 7),
        ("cache", "none", "", 8),
        ("mode", "param", "kwargs[mode]", 9),
        ("env", "factory", "lmdb.open", 13),
    }


def test_summary_facts_and_json_round_trip() -> None:
    src = textwrap.dedent(
        """\
        import numpy as np
        import h5py

        DB = h5py.File("x.h5")

        def rows(p):
            yield from open(p)

        def names(d):
            return (x for x in d)

        def rng(seed):
            return np.random.default_rng(seed)

        def model():
            return Net().cuda()

        class C:
            def __init__(self, path):
                f = h5py.File(path)
                self.f = f
                with open(path) as fh:
                    self.g = fh
        """
    )
    s = summarise(ast.parse(src), "m", K, path="m.py")
    assert [(h.attr, h.line, h.detail) for h in s.handles] == [("DB", 4, "h5py.File")]
    assert {n: f.returns for n, f in s.functions.items()} == {
        "rows": "generator",
        "names": "generator",
        "rng": "rng:numpy.random.default_rng",
        "model": "cuda",
    }
    assigns = [(a.attr, a.kind, a.detail) for a in s.classes["C"].methods["__init__"].assigns]
    assert assigns == [("f", "factory", "h5py.File"), ("g", "other", "")]
    back = ModuleSummary.from_json(json.loads(json.dumps(s.to_json())))
    assert back == s


def test_cycles_between_modules_end(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "",
            "p/__init__.py": "",
            "p/a.py": "from .b import B\nclass A(B):\n    pass\n",
            "p/b.py": "from .a import A\nclass B(A):\n    pass\n",
            "p/c.py": "from .c import X as Y\nfrom .c import Y as X\n",
        },
    )
    ix = ProjectIndex(tmp_path, K)
    chain, outside = ix.base_chain("p.a.A")
    assert [c.qname for c in chain] == ["p.a.A", "p.b.B"] and outside == []
    assert not ix.derives_from("p.a.A", is_torch_dataset)
    assert ix.resolve_class("p.c.X") is None  # a re-export loop resolves to nothing


def test_src_layout(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "src/lib/__init__.py": "from lib.core import Base\n",
            "src/lib/core.py": "import torch.utils.data as tud\nclass Base(tud.IterableDataset):\n    pass\n",
            "scripts/run.py": "from lib import Base\nclass R(Base):\n    pass\n",
        },
    )
    ix = ProjectIndex(tmp_path, K)
    assert ix.module_for(str(tmp_path / "src/lib/core.py")) == ("lib.core", False)
    assert ix.module_for(str(tmp_path / "scripts/run.py")) == ("scripts.run", False)
    assert ix.derives_from("scripts.run.R", is_torch_dataset)


def test_syntax_error_in_one_module_others_still_summarised(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "q/__init__.py": "",
            "q/bad.py": "def broken(:\n",
            "q/good.py": "class G:\n    pass\n",
        },
    )
    ix = ProjectIndex(tmp_path, K)
    ix.summarise_all(str(p) for p in sorted(tmp_path.rglob("*.py")))
    assert ix.summaries["q.bad"].error == "syntax error at line 1"
    assert ix.errors == [f"{Path('q/bad.py')}: index: skipped: syntax error at line 1"]
    assert "G" in ix.summaries["q.good"].classes


def test_cache_hits_and_one_changed_file(project: Path) -> None:
    files = [str(p) for p in sorted(project.rglob("*.py"))]
    cold = ProjectIndex(project, K, project / ".forksafe_cache")
    cold.summarise_all(files)
    assert (cold.summarised, cold.cache_hits) == (len(files), 0)
    warm = ProjectIndex(project, K, project / ".forksafe_cache")
    warm.summarise_all(files)
    assert (warm.summarised, warm.cache_hits) == (0, len(files))
    assert warm.summaries["pkg.data.base"] == cold.summaries["pkg.data.base"]
    (project / "pkg/data/coco.py").write_text("class Coco:\n    pass\n")
    again = ProjectIndex(project, K, project / ".forksafe_cache")
    again.summarise_all(files)
    assert (again.summarised, again.cache_hits) == (1, len(files) - 1)


def test_analysis_uses_the_index_for_bases_in_other_modules(project: Path) -> None:
    from flake8_forksafe.analysis import Analysis
    from flake8_forksafe.engine import parse

    path = project / "pkg/models/voc.py"
    text = path.read_text()
    alone = Analysis(parse(text), K, str(path))
    assert alone.dataset_classes == []
    ix = ProjectIndex(project, K)
    a = Analysis(parse(text), K, str(path), ix)
    assert [c.name for c in a.dataset_classes] == ["Voc"]
    ref = a.base_method(a.module_classes["Voc"], "_load")
    assert (ref.cls, ref.path, ref.line) == ("pkg.data.base.DetectionBase", str(Path("pkg/data/base.py")), 12)


def forksafe(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "check", *args], cwd=cwd, capture_output=True, text=True
    )


def positions(r: subprocess.CompletedProcess) -> list:
    """``[["path:line:col:", "FRKnnn"], ...]`` of a ``forksafe check`` run's text output (exit 0 or 1)."""
    assert r.returncode in (0, 1), r.stderr
    return [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]


def test_check_reports_a_handle_opened_by_a_base_in_another_module(tmp_path: Path, tmp_path_factory) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "det/__init__.py": "",
            "det/data/__init__.py": "from .base import DetectionBase\n",
            "det/data/base.py": """\
                import lmdb


                class DetectionBase:
                    def __init__(self, root):
                        self.root = root
                        self._load()

                    def _load(self):
                        self.env = lmdb.open(self.root, readonly=True)
                """,
            "det/coco.py": """\
                from torch.utils.data import Dataset

                from det.data import DetectionBase


                class Coco(DetectionBase, Dataset):
                    def __getitem__(self, i):
                        return self.env.begin().get(b"%d" % i)
                """,
        },
    )
    r = forksafe(tmp_path, ".", "--no-cache")
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == [
        f"{Path('det/coco.py')}:6:1: FRK101 lmdb.open() kept in self.env is opened on the parent side "
        f"(opened in base class DetectionBase._load, {Path('det/data/base.py')}:10)",
        "Found 1 finding.",
    ]
    # the same file alone, outside its project: the base is unknown, nothing to report
    alone = write(tmp_path_factory.mktemp("alone"), {"coco.py": (tmp_path / "det/coco.py").read_text()})
    alone = forksafe(alone, "coco.py", "--no-cache")
    assert alone.returncode == 0 and alone.stdout == ""


def test_check_finds_a_dataset_whose_base_is_in_another_module(tmp_path: Path) -> None:
    # FRK301 on a class whose only dataset evidence is a base in another module (the pre-filter
    # alone would skip the file: no dataset word in it)
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "m/__init__.py": "",
            "m/base.py": "from torch.utils.data import Dataset as D\n\n\nclass Base(D):\n    pass\n",
            "m/gpu.py": """\
                import torch

                from .base import Base


                class OnGpu(Base):
                    def __init__(self):
                        self.x = torch.zeros(3).cuda()

                    def __getitem__(self, i):
                        return self.x[i]
                """,
        },
    )
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK301")
    assert r.returncode == 1, r.stderr
    assert [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line] == [[f"{Path('m/gpu.py')}:8:18:", "FRK301"]]


def test_base_reporting_itself_is_not_repeated_in_subclasses(project: Path) -> None:
    # DetectionBase is a dataset and its own __init__ opens the env: base.py reports it, coco.py does not
    r = forksafe(project, ".", "--no-cache", "--select", "FRK101")
    paths = [line.split(":", 1)[0] for line in r.stdout.splitlines() if " FRK" in line]
    assert paths == [str(Path("pkg/data/base.py"))], r.stdout


def test_warm_check_uses_the_index_cache(project: Path) -> None:
    def entries() -> set:
        return {p.name for p in (project / ".forksafe_cache").glob("index-v*/*/*.json")}

    first = forksafe(project, ".")
    cold = entries()
    assert len(cold) >= 3  # base.py, coco.py, the re-exporting __init__.py at least
    second = forksafe(project, ".")
    assert first.stdout == second.stdout and first.stdout
    assert entries() == cold  # nothing summarised again
    coco = project / "pkg/data/coco.py"
    coco.write_text(coco.read_text() + "\n# edited\n")
    forksafe(project, ".")
    assert len(entries() - cold) == 1  # the changed file, and only it


def test_flake8_plugin_uses_the_project(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.cfg": "",
            "det/__init__.py": "",
            "det/base.py": "import h5py\n\n\nclass Base:\n    def __init__(self, p):\n        self.f = h5py.File(p)\n",
            "det/ds.py": "from torch.utils.data import Dataset\nfrom det.base import Base\n\n\nclass D(Base, Dataset):\n    pass\n",
        },
    )
    r = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "FRK", "det/ds.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.stdout.startswith(
        "det/ds.py:5:1: FRK101 h5py.File() kept in self.f is opened on the parent side "
        f"(opened in base class Base.__init__, {Path('det/base.py')}:6)"
    ), r.stdout + r.stderr
    assert len(r.stdout.splitlines()) == 1


def test_warm_cache_sees_an_edit_two_modules_away(tmp_path: Path) -> None:
    """Cached findings are keyed by every project module a file depends on, transitively: an edit to
    a base class reached through a re-export and another base, or to a helper reached through
    another helper, makes the finding appear on a warm run (the file itself is unchanged)."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "det/__init__.py": "",
            "det/data/__init__.py": "from .mid import Mid\n",
            "det/data/mid.py": "from det.root import Root\n\n\nclass Mid(Root):\n    pass\n",
            "det/root.py": """\
                class Root:
                    def __init__(self, root):
                        self.root = root
                        self._load()

                    def _load(self):
                        self.env = None
                """,
            "det/utils.py": "from det.ops import move\n\n\ndef prepare(x):\n    return move(x)\n",
            "det/ops.py": "def move(x):\n    return x\n",
            "det/coco.py": """\
                from torch.utils.data import Dataset

                from det.data import Mid
                from det.utils import prepare


                class Coco(Mid, Dataset):
                    def __len__(self):
                        return 10

                    def __getitem__(self, i):
                        return prepare(i)
                """,
        },
    )
    first = forksafe(tmp_path, ".", "--select", "FRK101,FRK302")
    assert first.returncode == 0 and first.stdout == "", first.stdout + first.stderr
    assert list((tmp_path / ".forksafe_cache").rglob("*.json"))  # the cache is in use
    ops = tmp_path / "det/ops.py"
    ops.write_text("def move(x):\n    return x.cuda()\n")
    second = forksafe(tmp_path, ".", "--select", "FRK101,FRK302")
    assert [line.split(" ", 2)[:2] for line in second.stdout.splitlines() if " FRK" in line] == [
        [f"{Path('det/coco.py')}:12:16:", "FRK302"]
    ], second.stdout + second.stderr
    root = tmp_path / "det/root.py"
    root.write_text(root.read_text().replace("self.env = None", "import lmdb\n        self.env = lmdb.open(self.root)"))
    third = forksafe(tmp_path, ".", "--select", "FRK101,FRK302")
    assert [line.split(" ", 2)[:2] for line in third.stdout.splitlines() if " FRK" in line] == [
        [f"{Path('det/coco.py')}:7:1:", "FRK101"],
        [f"{Path('det/coco.py')}:12:16:", "FRK302"],
    ], third.stdout + third.stderr
    assert f"CUDA: .cuda() in det.ops.move, {Path('det/ops.py')}:2" in third.stdout


def test_dependency_digest_follows_imports_transitively(tmp_path: Path) -> None:
    """The digest changes with a re-exporting ``__init__``, a base two imports away and a helper's
    helper; it does not change with a module the file does not reach, nor with an outside package."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "p/__init__.py": "",
            "p/data/__init__.py": "from .mid import Mid\n",
            "p/data/mid.py": "from ..root import Root\n\n\nclass Mid(Root):\n    pass\n",
            "p/root.py": "import numpy\n\n\nclass Root:\n    pass\n",
            "p/unrelated.py": "X = 1\n",
            "p/ds.py": "import torch\nfrom p.data import Mid\n\n\nclass DS(Mid):\n    pass\n",
        },
    )

    def digest() -> str:
        return ProjectIndex(tmp_path, K, None).dependency_digest(str(tmp_path / "p/ds.py"))

    before = digest()
    (tmp_path / "p/unrelated.py").write_text("X = 2\n")
    assert digest() == before
    for rel in ("p/root.py", "p/data/__init__.py", "p/data/mid.py", "p/__init__.py"):
        f = tmp_path / rel
        f.write_text(f.read_text() + "\n# edited\n")
        after = digest()
        assert after != before, rel
        before = after


def test_keyword_continued_equals_its_regex() -> None:
    """TextModule's "unclear" test (a keyword continued by a backslash) is found from the backslashes,
    and answers as the regex it replaces does, on tricky cases and every fixture and module here."""
    from flake8_forksafe.index import _KEYWORD_CONTINUED, _keyword_continued

    cases = ["from x \\\n import y", "import \\\n a", "xclass \\\n", "class\t\\", "a = 'from' \\\n",
             "classy \\\n", "  def \\\n f(): pass", "\\ class \\", "from" + " " * 60 + "\\\n", "x = 1 \\\n + 2",
             "import\\", "\\", "", "def\\\r\n f(): pass"]
    here = Path(__file__).resolve().parent.parent
    texts = cases + [p.read_text(encoding="utf-8", errors="replace")
                     for d in ("fixtures", "flake8_forksafe", "tests") for p in sorted((here / d).rglob("*.py"))]
    got = [(_keyword_continued(t), bool(_KEYWORD_CONTINUED.search(t))) for t in texts]
    assert all(a == b for a, b in got), [t for t, (a, b) in zip(texts, got) if a != b][:3]
    assert sum(b for _, b in got) >= 5  # the cases above hold positives


def test_unsaved_text_keeps_the_summaries_of_unchanged_definitions(tmp_path: Path) -> None:
    """``update_text`` (the language server) re-summarises only the definitions whose code or
    context changed, moves the others to their new lines, and gives what a fresh summary gives."""
    from flake8_forksafe.knowledge import default_knowledge

    base = textwrap.dedent(
        '''
        import lmdb
        import torch
        from torch.utils.data import DataLoader, Dataset

        Base = Dataset


        def open_env(path):
            return lmdb.open(path)


        class Images(Base):
            def __init__(self, path, device="cuda"):
                self.env = open_env(path)
                self.table = torch.zeros(3).to(device)

            def __getitem__(self, i):
                with self.env.begin() as txn:
                    return txn.get(str(i).encode())


        @torch.no_grad()
        def loader(ds):
            return DataLoader(ds, num_workers=2, collate_fn=ds.collate)


        ENV = lmdb.open("/tmp/x")
        '''
    )
    path = tmp_path / "data.py"
    path.write_text(base)
    k = default_knowledge()
    index = ProjectIndex(tmp_path, k)
    module = index.module_for(str(path))[0]
    edits = [  # each on the text before it
        lambda t: t,
        lambda t: t.replace("import torch\n", "import torch\n\n\n"),  # every definition below moves
        lambda t: t.replace("            return txn.get", "            txn.stat()\n            return txn.get"),
        lambda t: t.replace("def open_env(path):\n    return lmdb.open(path)", "def open_env(path):\n    env = lmdb.open(path)\n    return env"),
        lambda t: t.replace("Base = Dataset", "Base = object"),  # the context of every later definition
        lambda t: t.replace("\n\n\n", "\n", 1),
    ]
    text = base
    for edit in edits:
        before, text = text, edit(text)
        assert text != before or edit is edits[0]
        index.update_text(str(path), text)
        fresh = summarise(ast.parse(text), module, k, False, index.summaries[module].path)
        assert index.summaries[module] == fresh, text
    memo = index._statements[str(path.resolve())]
    # the definitions an edit did not touch; the edits inside one definition (the third and the
    # fourth) summarise that definition alone, without the memo
    assert memo.reused == 3 + 0 + 3
    assert index.one_definition_updates == 2


def test_an_edit_inside_one_definition_summarises_that_definition_alone(tmp_path: Path) -> None:
    """The language server's edits inside a method of a 2,000-line document (lines added, changed,
    removed; the last top-level function): the summary equals a fresh summary of the whole
    text each time, and the edits that stay inside one definition take the quick path; an edit that
    touches a definition's first line, adds an indented line after it or breaks it does not."""
    from benchmarks.lsp_doc import build
    from flake8_forksafe.knowledge import default_knowledge

    text = build(2000)
    path = tmp_path / "doc.py"
    path.write_text(text)
    k = default_knowledge()
    index = ProjectIndex(tmp_path, k)
    module = index.module_for(str(path))[0]
    index.update_text(str(path), text)
    lines = text.splitlines(keepends=True)

    def at(prefix: str, nth: int = 0) -> int:
        return [i for i, ln in enumerate(lines) if ln.startswith(prefix)][nth]

    quick = [
        lambda ls: ls[: at("    def __getitem__") + 1] + ["        unused = 1\n"] + ls[at("    def __getitem__") + 1 :],
        lambda ls: ls[: at("    def __init__", 2) + 1] + ["        self.extra = open('x')\n", "        self.more = 2\n"] + ls[at("    def __init__", 2) + 1 :],
        lambda ls: ls[: at("    def __init__", 3) + 1] + ls[at("    def __init__", 3) + 2 :],  # a line removed
        lambda ls: ls[: at("def ", -1) + 1] + ["    'docstring'\n"] + ls[at("def ", -1) + 1 :],  # the last def
    ]
    slow = [
        lambda ls: ls[: at("class ")] + ["class Renamed(nn.Module):\n"] + ls[at("class ") + 1 :],  # its first line
        lambda ls: ls[: at("    def __getitem__") + 1] + ["        x = (\n"] + ls[at("    def __getitem__") + 1 :],  # broken
        lambda ls: ls + ["x = 1\n"],  # a new module-level statement
    ]
    done = 0
    for edit in quick + slow:
        before = index.one_definition_updates
        lines = edit(lines)
        new = "".join(lines)
        index.update_text(str(path), new)
        try:
            fresh = summarise(ast.parse(new), module, k, False, index.summaries[module].path)
        except SyntaxError:
            continue  # the last good summary is kept
        assert index.summaries[module] == fresh
        done += index.one_definition_updates - before
    assert done == len(quick)


def test_packages_side_by_side_in_site_packages_are_not_one_project(tmp_path: Path) -> None:
    """A file checked inside ``site-packages`` (a package's own code, as the speed benchmark checks
    torch's) makes its package part of the project, not every distribution installed beside it:
    names imported from a sibling are not the project's (no text of it is read, nothing summarised)."""
    site = tmp_path / "lib" / "site-packages"
    write(site, {"pkg/__init__.py": "", "pkg/mod.py": "from other.data import Frames\n", "other/__init__.py": "",
                 "other/data.py": "class Frames:\n    pass\n"})
    from flake8_forksafe.index import index_for

    path = str(site / "pkg" / "mod.py")
    index = index_for(path, K, use_cache=False, roots={})
    assert index.module_for(path) == ("pkg.mod", False)
    assert index.top_packages() == {"pkg"}
    assert index.project_constructed(path, "from other.data import Frames\nFrames(lambda v: v)\n") == []
    plain = tmp_path / "proj"
    write(plain, {"pkg/__init__.py": "", "pkg/mod.py": "", "other/__init__.py": ""})
    index = index_for(str(plain / "pkg" / "mod.py"), K, use_cache=False, roots={})
    index.module_for(str(plain / "pkg" / "mod.py"))
    assert {"pkg", "other"} <= index.top_packages()


def test_package_text_reading_survives_an_unsaved_edit_and_follows_the_disk(tmp_path: Path) -> None:
    """The language server replaces the edited document's summary on every edit, which forgets the
    index's answers; the reading of a package's text (``may_make_dataset``) is kept while no file of
    the package changed on disk, and read again when one did."""
    write(tmp_path, {"pyproject.toml": "", "pkg/__init__.py": "", "pkg/a.py": "class Plain:\n    pass\n",
                     "pkg/b.py": "x = 1\n"})
    from flake8_forksafe.index import index_for

    path = str(tmp_path / "pkg" / "b.py")
    index = index_for(path, K, use_cache=False, roots={})
    index.module_for(path)
    first = index._dataset_text_table("pkg.a")
    assert index.may_make_dataset("pkg.a.Plain") is False
    index.update_text(path, "x = 2\n")  # an unsaved edit: the answers are forgotten
    assert index._dataset_text_table("pkg.a") is first
    (tmp_path / "pkg" / "a.py").write_text("from torch.utils.data import Dataset\n\n\nclass Plain(Dataset):\n    pass\n")
    index.update_text(path, "x = 3\n")
    assert index._dataset_text_table("pkg.a") is not first
    assert index.may_make_dataset("pkg.a.Plain") is True
