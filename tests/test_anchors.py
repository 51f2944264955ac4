"""Each rule declares the anchors the pre-filter must find for it (``ANCHORS`` on its check class); the
gate tests the union of the enabled rules' anchors, and the slicer keeps what they need.

- the gate reads the declarations from the check sources without importing them: the reading equals
  the imported classes;
- a differential test: the findings of ``--select X`` equal those of the full run filtered to X, for
  every rule X, on the fixtures, the held-out corpus and the rules' examples (the gate and slicer of
  X alone lose nothing);
- a file holding only FRK401's anchor is rejected under ``--select FRK6``: libcst is never reached;
- project-anchored classes (a dataset base in another module of the project): the reduced file gives
  the same findings as the whole one.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator, List

import libcst
import pytest

from flake8_forksafe import prefilter, slicing
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source, gate, gate_anchors
from flake8_forksafe.model import SourceError
from flake8_forksafe.source import decode
from tests.helpers import fixture_files
from tests.test_index import write
from tests.test_prefilter import CORPUS

ALL = Config(select=("FRK", "FRK501"))


def _codes():
    from flake8_forksafe.checks import ALL_CODES

    return ALL_CODES


def test_declarations_read_from_the_sources_equal_the_classes():
    from flake8_forksafe.checks import ALL_RULES

    declared = prefilter.declared_anchors()
    assert sorted(declared) == sorted(r.code for r in ALL_RULES)
    for rule in ALL_RULES:
        anchors, default_on = declared[rule.code]
        assert isinstance(rule.ANCHORS, tuple) and rule.ANCHORS, rule.code
        assert set(rule.ANCHORS) <= set(prefilter.ANCHORS), (rule.code, rule.ANCHORS)
        assert anchors == frozenset(rule.ANCHORS), rule.code
        assert default_on == rule.default_enabled, rule.code


def test_every_anchor_is_declared_by_some_rule():
    used = set().union(*(a for a, _ in prefilter.declared_anchors().values()))
    assert used == set(prefilter.ANCHORS)


def test_the_union_follows_the_selection():
    assert gate_anchors(Config(select=("FRK6",))) == {prefilter.DATASET_CLASS, prefilter.LOADER_CALL}
    assert gate_anchors(Config(select=("FRK402",))) == {prefilter.START_METHOD}
    assert gate_anchors(Config(select=("FRK401",))) == {
        prefilter.WORKER_START, prefilter.LOADER_CALL, prefilter.DATASET_CLASS}
    assert gate_anchors(ALL) == set(prefilter.ANCHORS)
    assert gate_anchors(Config(select=("FRK5",))) == frozenset()  # FRK501 is off unless named
    assert gate_anchors(Config(select=("FRK501",))) == {prefilter.LOADER_CALL, prefilter.DATASET_CLASS}


@contextlib.contextmanager
def counted_parses() -> Iterator[List[int]]:
    calls = [0]
    real = libcst.parse_module

    def wrapped(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    libcst.parse_module = wrapped
    try:
        yield calls
    finally:
        libcst.parse_module = real


POOL_ONLY = """\
import multiprocessing as mp


def square(x):
    return x * x


pool = mp.Pool(2)
print(pool.map(square, range(4)))
"""


def test_a_file_with_only_frk401s_anchor_is_rejected_under_select_frk6():
    six = Config(select=("FRK6",))
    assert not gate(POOL_ONLY, six).passes
    assert gate(POOL_ONLY, Config(select=("FRK401",))).passes
    with counted_parses() as calls:
        assert check_source(POOL_ONLY, "script.py", six) == []
    assert calls[0] == 0  # libcst never reached
    with counted_parses() as calls:
        found = check_source(POOL_ONLY, "script.py", Config(select=("FRK401",)))
    assert [(f.code, f.line) for f in found] == [("FRK401", 8)]
    assert calls[0] >= 1


def test_a_start_method_only_file_is_rejected_by_the_text_gate_for_dataset_rules():
    src = "import multiprocessing as mp\nmp.set_start_method('spawn')\n"
    assert not prefilter.text_gate(src, ALL.knowledge, gate_anchors(Config(select=("FRK1", "FRK6"))))
    assert prefilter.text_gate(src, ALL.knowledge, gate_anchors(Config(select=("FRK403",))))
    assert [f.code for f in check_source(src, "s.py", Config(select=("FRK403",)))] == ["FRK403"]


def test_the_cli_under_select_frk6_reports_nothing_for_a_pool_script(tmp_path: Path):
    (tmp_path / "script.py").write_text(POOL_ONLY)
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "flake8_forksafe", "check", "--no-cache", *a, "script.py"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    six, four = run("--select", "FRK6"), run("--select", "FRK401")
    assert six.returncode == 0 and six.stdout == "", six.stderr
    assert four.returncode == 1 and four.stdout.startswith("script.py:8:1: FRK401 "), four.stderr


# -- the differential test: --select X == the full run filtered to X


def _sources():
    out = [(f"{p.parent.name}/{p.name}", decode(p.read_bytes())) for p in fixture_files() + CORPUS]
    from flake8_forksafe.checks import ALL_RULES

    for rule in ALL_RULES:
        for i, ex in enumerate((*rule.VALID, *rule.INVALID)):
            out.append((f"{rule.code}-example-{i}", textwrap.dedent(ex if isinstance(ex, str) else ex.code)))
    return out


def _findings(text: str, config: Config, path: str = "x.py"):
    try:
        return [(f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.fix) for f in check_source(text, path, config)]
    except SourceError as exc:
        return ["error", exc.message]


SOURCES = _sources()


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_select_one_rule_equals_the_full_run_filtered(name, text):
    full = _findings(text, ALL)
    for code in _codes():
        alone = _findings(text, Config(select=(code,)))
        if full and full[0] == "error":
            assert alone in (full, []), code  # a rule whose anchors the file lacks never parses it
            continue
        assert alone == [f for f in full if f[0] == code], code


def test_the_differential_test_sees_every_rule_find_something():
    found = set()
    for _, text in SOURCES:
        f = _findings(text, ALL)
        if f and f[0] != "error":
            found |= {x[0] for x in f}
    assert found == set(_codes())


# -- project-anchored classes: reduced == whole


PROJECT = {
    "pyproject.toml": "",
    "speech/__init__.py": "",
    "speech/base.py": """\
        import lmdb
        import numpy as np
        import torch
        from torch.utils.data import Dataset


        class SpeechBase(Dataset):
            def __init__(self, root, seed=0):
                self.root = root
                self.rng = np.random.default_rng(seed)
                self.env = lmdb.open(root)
                self.mean = torch.zeros(80, device="cuda")
        """,
    # no dataset word: only the project index tells that Clips and Noisy are datasets
    "speech/clips.py": """\
        import threading

        import torch

        from speech.base import SpeechBase


        def unrelated(x):
            return x + 1


        class Clips(SpeechBase):
            def __init__(self, root):
                super().__init__(root)
                self.lock = threading.Lock()
                self.gpu = torch.ones(2).cuda()

            def __len__(self):
                return 10

            def __getitem__(self, i):
                return self.rng.normal() + scale(i)


        class Helper:
            def run(self):
                return 1


        def scale(i):
            return i * 2


        class Noisy(Clips):
            def __init__(self, root):
                super().__init__(root)
                self.extra = make_lock()


        def make_lock():
            return threading.RLock()
        """,
}


def test_project_anchored_classes_reduced_equal_whole(tmp_path: Path):
    from flake8_forksafe.index import ProjectIndex

    root = write(tmp_path, PROJECT)
    path = root / "speech" / "clips.py"
    text = path.read_text()
    cfg = Config(select=("FRK", "FRK501"))
    assert not gate(text, cfg).passes  # the file alone: nothing to see
    facts = prefilter.facts_of_text(text, cfg.knowledge)
    reduced = slicing.dropped_spans(facts, gate_anchors(cfg), project=True)
    assert reduced  # something is dropped (unrelated, Helper) ...
    lines = text.splitlines()
    dropped = {lines[i - 1] for s, e in reduced for i in range(s, min(e, len(lines)) + 1)}
    assert {"def unrelated(x):", "class Helper:"} <= dropped
    plain = slicing.dropped_spans(facts, gate_anchors(cfg), project=False)
    assert "class Clips(SpeechBase):" in {lines[i - 1] for s, e in plain for i in range(s, min(e, len(lines)) + 1)}
    assert not dropped & {"class Clips(SpeechBase):", "class Noisy(Clips):", "def scale(i):",
                           "def make_lock():"}  # ... but not the project-anchored classes

    def run(above):
        ix = ProjectIndex(root, cfg.knowledge)
        return [(f.code, f.line, f.col, f.message, f.fix) for f in check_source(text, str(path), cfg, index=ix,
                                                                                  slice_above=above)]

    whole, sliced = run(10**9), run(None)
    assert sliced == whole
    # Clips's lock and CUDA tensor (the base reports its own handle and RNG in its own file)
    assert [(c, line) for c, line, *_ in whole] == [("FRK203", 15), ("FRK301", 16)]
    for code in ("FRK203", "FRK301"):
        ix = ProjectIndex(root, cfg.knowledge)
        one = Config(select=(code,))
        assert [(f.code, f.line, f.col, f.message, f.fix) for f in check_source(text, str(path), one, index=ix)] == [
            f for f in whole if f[0] == code]
