"""What the speed work of issue 10 relies on, checked as behaviour (no timings: those are in
benchmarks/dataset_bench.py):

- a checked file's libcst tree and analysis are freed by reference counting (no reference cycle
  left for the cyclic collector to traverse the whole tree);
- ``Analysis.mro`` is depth first in base order, each class once;
- the gate's statement walk enters the same child nodes as ``ast.iter_child_nodes`` (less the
  ``ctx`` leaves);
- the flake8 plugin summarises nothing for a file the gate rejects whose project bases cannot reach
  a dataset, and finds what ``forksafe check`` finds through the project index;
- ``check_source(plan_on_whole=True)`` (the language server, when the last lint had an FRK401
  finding) finds what a plain check finds, running FRK401 on the whole text only.
"""

from __future__ import annotations

import ast
import gc
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from flake8_forksafe import analysis, prefilter
from flake8_forksafe.analysis import Analysis
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from tests.helpers import fixture_files
from tests.test_prefilter import CORPUS

RECORDS = (analysis.Analysis, analysis.ClassInfo, analysis.FuncInfo, analysis.CallSite, analysis.SelfAssign)
FIXTURES = fixture_files()


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_check_leaves_no_cycle_holding_the_tree(path: Path) -> None:
    """The module is not left to the cyclic collector, nor an analysis holding anything; without a
    finding, no record of the analysis holding anything either (a fix plan may build a second
    analysis of an edited module whose records the collector frees: the finding path only)."""
    cfg = Config(select=("FRK",))
    check_source(path.read_bytes(), str(path), cfg)  # imports, knowledge, caches: outside the count
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found = check_source(path.read_bytes(), str(path), cfg)
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    # a rule's recursive local function may keep a record in a cycle: released, it holds nothing
    kinds = (analysis.Analysis,) if found else RECORDS
    held = sorted({type(o).__name__ for o in garbage if isinstance(o, kinds) and vars(o)})
    assert held == []
    assert not any(isinstance(o, cst.Module) for o in garbage)


def test_mro_is_depth_first_in_base_order_each_class_once() -> None:
    src = textwrap.dedent(
        """\
        class D: pass
        class B(D): pass
        class C(D): pass
        class A(B, C): pass
        class E(A, D, C): pass
        class F(E, Unknown, A): pass
        """
    )
    a = Analysis(cst.parse_module(src), Config().knowledge)
    names = {c.name: c for c in a.classes}
    assert [c.name for c in a.mro(names["E"])] == ["E", "A", "B", "D", "C"]
    assert [c.name for c in a.mro(names["F"])] == ["F", "E", "A", "B", "D", "C"]
    assert [c.name for c in a.mro(names["D"])] == ["D"]


def _children(node: ast.AST) -> list:
    fields = prefilter._CHILD_FIELDS.get(type(node)) or prefilter._child_fields(type(node))
    out = []
    for name in fields:
        v = getattr(node, name, None)
        if type(v) is list:
            out += [c for c in v if isinstance(c, ast.AST)]
        elif isinstance(v, ast.AST):
            out.append(v)
    return out


SOURCES = [p for p in fixture_files() + CORPUS]


@pytest.mark.parametrize("path", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_gate_walk_enters_the_children_iter_child_nodes_gives(path: Path) -> None:
    try:
        tree = ast.parse(path.read_bytes())
    except SyntaxError:
        pytest.skip("does not parse")
    # every child but the singletons the walk records nothing for (prefilter.LEAF_FIELDS): load /
    # store contexts and operators
    leaves = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
    for node in ast.walk(tree):
        want = [c for c in ast.iter_child_nodes(node) if not isinstance(c, leaves)]
        assert _children(node) == want, ast.dump(node)[:200]


def _project(tmp_path: Path) -> None:
    files = {
        "setup.cfg": "",
        "det/__init__.py": "",
        "det/helpers.py": "class Helper:\n    def __init__(self, n):\n        self.n = n\n",
        "det/other.py": "from det.helpers import Helper\n\n\nclass X(Helper):\n    pass\n",
        "det/base.py": "import h5py\n\n\nclass Base:\n    def __init__(self, p):\n        self.f = h5py.File(p)\n",
        "det/ds.py": "from torch.utils.data import Dataset\nfrom det.base import Base\n\n\nclass D(Base, Dataset):\n    pass\n",
    }
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _plugin(path: Path) -> list:
    from flake8_forksafe.frontends.flake8_plugin import ForkSafeChecker

    text = path.read_text()
    return list(ForkSafeChecker(ast.parse(text), text.splitlines(True), str(path)).run())


def test_flake8_plugin_summarises_nothing_for_a_rejected_file(tmp_path: Path) -> None:
    from flake8_forksafe.index import _INDEXES, index_for

    _project(tmp_path)
    other = tmp_path / "det" / "other.py"
    ix = index_for(str(other), Config().knowledge, use_cache=False)
    try:
        assert _plugin(other) == []
        # proved from the modules' text: neither the file nor its base's module was parsed
        assert ix.summarised == 0 and ix.summaries == {}
        found = _plugin(tmp_path / "det" / "ds.py")  # the same process and index: the project's answer
        assert [(line, col, msg.split(" ", 1)[0]) for line, col, msg, _ in found] == [(5, 0, "FRK101")]
        assert "opened in base class Base.__init__" in found[0][2]
    finally:
        for key in [k for k, v in _INDEXES.items() if v is ix]:
            del _INDEXES[key]


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.suffix == ".py"], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_plan_on_whole_finds_the_same(path: Path, monkeypatch) -> None:
    from flake8_forksafe import engine
    from flake8_forksafe.checks.frk401 import MissingMainGuard

    text = path.read_bytes()
    cfg = Config(select=("FRK",))
    plain = check_source(text, str(path), cfg, slice_above=0)
    analysed = []
    real = MissingMainGuard.check
    monkeypatch.setattr(MissingMainGuard, "check", lambda self, a: analysed.append(a.reduced) or real(self, a))
    assert check_source(text, str(path), cfg, slice_above=0, plan_on_whole=True) == plain
    assert True not in analysed  # never on a reduced analysis
    assert engine.whole_planning_codes() == {"FRK401"}
