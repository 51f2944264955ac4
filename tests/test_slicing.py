"""Every file is reduced before libcst parses it (flake8_forksafe/slicing.py), and big files are
parsed by the pre-filter in statement groups (prefilter.facts_of_text). Neither may change a finding
(position, message or fixability): here every fixture, held-out corpus file, rule example and
generated program is checked reduced and whole, and its facts are computed chunked (forced) and
whole. Project-anchored classes: tests/test_anchors.py."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings

from flake8_forksafe import prefilter, slicing
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.model import SourceError
from flake8_forksafe.source import decode
from tests.helpers import fixture_files
from tests.test_prefilter import CORPUS, programs

ALL = Config(select=("FRK", "FRK501"))
K = ALL.knowledge


def _findings(text: str, above):
    try:
        return [(f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.fix)
                for f in check_source(text, "x.py", ALL, slice_above=above)]
    except SourceError as exc:
        return ["error", exc.message]


def _sources():
    out = [(f"{p.parent.name}/{p.name}", decode(p.read_bytes())) for p in fixture_files() + CORPUS]
    from flake8_forksafe.checks import ALL_RULES

    for rule in ALL_RULES:
        for i, ex in enumerate((*rule.VALID, *rule.INVALID)):
            out.append((f"{rule.code}-example-{i}", textwrap.dedent(ex if isinstance(ex, str) else ex.code)))
    return out


SOURCES = _sources()


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_reduced_equals_whole(name, text):
    assert _findings(text, None) == _findings(text, 10**9)  # the default reduces every file


def _facts_summary(facts):
    if facts is None:
        return None
    return (
        facts.could_have_findings(),
        slicing.dropped_spans(facts),
        [(s.start, s.end, s.name, s.guard) for s in facts.stmts],
        {k: sorted(v) for k, v in facts.imports.items()},
    )


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_chunked_facts_equal_whole_facts(name, text, monkeypatch):
    whole = _facts_summary(prefilter.facts_of_text(text, K))
    monkeypatch.setattr(prefilter, "CHUNK_ABOVE", 0)
    assert _facts_summary(prefilter.facts_of_text(text, K)) == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=programs())
def test_generated_programs_reduced_equals_whole(src):
    assert _findings(src, None) == _findings(src, 10**9)


FRK401_NOT_FIXABLE = (
    # a function that nothing at module level names reads a name the worker-starting loop binds:
    # the slicer drops the function, but FRK401's fix plan needs it (the file is analysed whole again)
    "from torch.utils.data import DataLoader\nfor batch in DataLoader(range(4), num_workers=2):\n    pass\n"
    "def last():\n    return batch\n"
)


def test_a_dropped_function_does_not_change_frk401s_fixability():
    reduced, line_map = slicing.reduce(FRK401_NOT_FIXABLE, K)
    assert line_map is not None and "def last" not in reduced
    assert _findings(FRK401_NOT_FIXABLE, None) == _findings(FRK401_NOT_FIXABLE, 10**9)
    assert [(f[0], f[1], f[-1]) for f in _findings(FRK401_NOT_FIXABLE, None)] == [("FRK401", 2, None)]



def test_frk401_plans_once_on_the_whole_file(monkeypatch):
    # a reduced file where FRK401 finds something: the reduced analysis only detects (no plan), the
    # whole file is analysed for FRK401 alone, the other rules' findings are the reduced file's
    from flake8_forksafe.families.processes import main_guard

    calls = []
    real = main_guard.plan_main_guard

    def counted(a, starting):
        calls.append(len(a.module.body))
        return real(a, starting)

    monkeypatch.setattr(main_guard, "plan_main_guard", counted)
    text = FRK401_NOT_FIXABLE + "\nloader = DataLoader(range(4), num_workers=2, collate_fn=lambda b: b)\n"
    reduced = _findings(text, None)
    assert calls == [4]  # once, on the whole module (the reduced one has 3 statements)
    assert [(f[0], f[1], f[-1]) for f in reduced] == [("FRK401", 2, None), ("FRK201", 7, "safe")]
    assert reduced == _findings(text, 10**9)

def test_cuts_inside_strings_and_decorators_are_merged(monkeypatch):
    text = (
        'DOC = """\ndef not_code():\nclass Nope:\n"""\n'
        "@decorator\n"
        "def f(x):\n    return x\n"
        "y = (1\n@ 2)\n"
        "class C:\n    pass\n"
    )
    whole = _facts_summary(prefilter.facts_of_text(text, K))
    monkeypatch.setattr(prefilter, "CHUNK_ABOVE", 0)
    assert _facts_summary(prefilter.facts_of_text(text, K)) == whole
    assert [(s.start, s.end, s.name) for s in prefilter.facts_of_text(text, K).stmts] == [
        (1, 4, ""), (5, 7, "f"), (8, 9, ""), (10, 11, "C")]
    monkeypatch.setattr(prefilter, "CHUNK_ABOVE", 0)
    assert prefilter.facts_of_text(text + "def broken(:\n", K) is None


BIG_HEAD = """import lmdb
from torch.utils.data import Dataset


def helper(p):
    return lmdb.open(p)


class DS(Dataset):
    def __init__(self, p):
        self.env = helper(p)

    def __getitem__(self, i):
        return self.env.begin().get(b"k")
"""


def test_big_file_is_reduced_and_positions_map_back():
    filler = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20000))
    tail = "\n\nclass Sub(DS):\n    def __init__(self, p):\n        self.db = lmdb.open(p)  # trailing\n"
    text = BIG_HEAD + filler + tail
    assert len(text) > slicing.SLICE_ABOVE
    reduced, line_map = slicing.reduce(text, K)
    assert line_map is not None and len(reduced) < 1000
    assert "def f1(" not in reduced and "class Sub(DS)" in reduced and "def helper" in reduced
    last = text.count("\n")
    found = [(f.code, f.line, f.col) for f in check_source(text, "big.py", ALL)]
    assert found == [("FRK101", 6, 11), ("FRK101", last, 18)]  # the factory call inside helper()
    noqa = text.replace("# trailing", "# noqa: FRK101")
    assert [(f.code, f.line) for f in check_source(noqa, "big.py", ALL)] == [("FRK101", 6)]


def test_relevant_code_over_the_limit_is_a_one_line_skip(monkeypatch):
    monkeypatch.setattr(slicing, "MAX_ANALYSED", 2000)
    body = "".join(f"        self.a{i} = {i}\n" for i in range(200))
    text = BIG_HEAD + "\n\nclass Big(Dataset):\n    def __init__(self):\n" + body
    with pytest.raises(SourceError) as exc:
        check_source(text, "big.py", ALL, slice_above=0)
    assert exc.value.message.startswith("skipped: ") and "MB that are analysed per file" in exc.value.message


def test_fix_leaves_a_file_over_the_limit_alone_and_says_why(tmp_path):
    import subprocess
    import sys

    filler = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60000))
    text = BIG_HEAD + filler
    assert len(text) > slicing.MAX_ANALYSED
    path = tmp_path / "big.py"
    path.write_text(text)
    r = subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "fix", "big.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        f"forksafe: big.py: not fixed: {len(text) / 1e6:.1f} MB is over the 1 MB that a fix rewrites per file; "
        "its findings are listed below"
    ]
    assert r.stdout.startswith("1 finding remains:\nbig.py:6:12: FRK101 ")
    assert path.read_text() == text


def test_big_file_facts_are_computed_once_and_not_kept(monkeypatch):
    calls = []
    real = prefilter._facts_of_text
    monkeypatch.setattr(prefilter, "_facts_of_text", lambda text, k: calls.append(len(text)) or real(text, k))
    text = BIG_HEAD + "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20000))
    assert [f.code for f in check_source(text, "big.py", ALL)] == ["FRK101"]
    assert calls == [len(text)]  # the gate's facts served the slicer
    assert not hasattr(prefilter, "_LAST")  # the gate returns its facts: nothing kept in the module
    assert prefilter.could_have_findings("x = 1\n# Dataset\n" * 20000, K) is False


WORKER_RENEWAL = """\
import numpy as np
from torch.utils.data import Dataset, get_worker_info


class DS(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __getitem__(self, i):
        return self.rng.random()


def wif(worker_id):
    info = get_worker_info()
    setattr(info.dataset, "rng", np.random.default_rng(info.seed))
"""


def test_a_function_reaching_the_workers_dataset_is_kept():
    # named by nothing, but it renews the dataset's RNG in each worker: FRK601 must see it
    reduced, _ = slicing.reduce(WORKER_RENEWAL, K)
    assert "def wif" in reduced
    assert _findings(WORKER_RENEWAL, None) == _findings(WORKER_RENEWAL, 10**9) == []
