"""Fuzzing with hypothesmith-generated programs (short run; the long one is benchmarks/fuzz.py).

Properties:

* ``check_source`` never raises anything but ``SourceError`` (whose ``message`` is one line), on
  generated programs, on generated programs spliced into DataLoader code full of hazards (so the
  rules and the fixes actually have something to chew on), and on arbitrary text and bytes;
  its findings are well-formed.
* ``fix_source`` never raises anything but ``SourceError``, reports no internal fixer error, its
  output has the input's type, parses with libcst, compiles whenever the input compiled, and a
  second fix changes nothing (idempotence).

The helpers are module-level so that ``benchmarks/fuzz.py`` can run the same properties longer.
"""

from __future__ import annotations

import re

import textwrap

import libcst
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesmith import from_grammar

from flake8_forksafe.engine import check_source
from flake8_forksafe.model import SourceError
from flake8_forksafe.fix import fix_source

PATH = "fuzz_example.py"

# Generated programs such as `1()` make compile() warn (hypothesmith compiles each one too).
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

# Real-looking DataLoader code with hazards of every family (handles, RNG, lambdas, CUDA,
# start method, generators, unpicklable attributes).
SEEDS = (
    '''\
import h5py
from torch.utils.data import Dataset, DataLoader


class H5(Dataset):
    def __init__(self, path):
        self.f = h5py.File(path, "r")
        self.x = self.f["x"]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


loader = DataLoader(H5("a.h5"), batch_size=4, num_workers=4)
''',
    '''\
import random
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader


class Noisy(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.random.rand(3) + random.random() + torch.rand(1).item() + i


dl = DataLoader(Noisy(), num_workers=2, collate_fn=lambda b: b)
''',
    '''\
import lmdb
import torch
from torch.utils.data import IterableDataset, DataLoader


class Stream(IterableDataset):
    def __init__(self, p):
        self.env = lmdb.open(p, readonly=True)
        self.txn = self.env.begin()
        self.dev = torch.zeros(3).cuda()

    def __iter__(self):
        yield from self.txn.cursor()


DataLoader(Stream("db"), num_workers=8, worker_init_fn=lambda w: None)
''',
    '''\
import multiprocessing as mp
import sqlite3
import torch
from torch.utils.data import DataLoader

mp.set_start_method("fork")
LABELS = open("labels.txt")


class DS(torch.utils.data.Dataset):
    def __init__(self):
        self.fh = open("data.bin", "rb")
        self.db = sqlite3.connect("meta.db")
        self.gen = (i for i in range(10))

    def __len__(self):
        return 10

    def __getitem__(self, i):
        self.fh.seek(4 * i)
        return self.fh.read(4)


if __name__ == "__main__":
    DataLoader(DS(), num_workers=4, persistent_workers=True)
''',
)

TEMPLATE = '''\
import h5py
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader


class Fuzz(Dataset):
    def __init__(self, path):
        self.f = h5py.File(path, "r")
{init}
    def __len__(self):
        return 3

    def __getitem__(self, i):
        x = np.random.rand(2)
{body}
        return x


DataLoader(Fuzz("x.h5"), num_workers=2, collate_fn=lambda b: b)
'''


def _join(a: str, b: str) -> str:
    return a + ("" if a.endswith("\n") or not a else "\n") + b


def _in_template(init: str, body: str) -> str:
    def ind(code: str) -> str:
        return textwrap.indent("pass\n" + code, " " * 8)

    return TEMPLATE.format(init=ind(init), body=ind(body))


def programs():
    """Generated programs, alone or spliced into hazard-rich DataLoader code."""
    gen = from_grammar()
    seeds = st.sampled_from(SEEDS)
    return st.one_of(
        gen,
        st.builds(_join, seeds, gen),
        st.builds(_join, gen, seeds),
        st.builds(_in_template, gen, gen),
    )


def _compiles(text: str) -> bool:
    try:
        compile(text, PATH, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _check_findings(findings, text: str) -> None:
    nlines = len(re.findall(r"\r\n|\r|\n", text)) + 1  # Python's line breaks: a lone \r counts too
    for f in findings:
        assert f.code.startswith("FRK"), f
        assert isinstance(f.message, str) and f.message and "\n" not in f.message, f
        assert 1 <= f.line <= nlines, (f, nlines)
        assert f.col >= 0, f


def assert_check_ok(source) -> None:
    """check_source raises nothing but SourceError; findings are well-formed."""
    variants = [dict(), dict(prefilter=False)] if isinstance(source, str) else [dict()]
    for kwargs in variants:
        try:
            findings = check_source(source, PATH, **kwargs)
        except SourceError as exc:
            assert isinstance(exc.message, str) and "\n" not in exc.message, exc.message
            continue
        if isinstance(source, str):
            _check_findings(findings, source)


def assert_fix_ok(source, unsafe: bool = False) -> None:
    """fix_source: no crash, output parses, compiles if the input did, and is a fixed point."""
    try:
        first = fix_source(source, PATH, unsafe=unsafe)
    except SourceError:
        return
    out = first.source
    assert type(out) is type(source)
    assert not first.errors, first.errors
    text = out.decode("utf-8") if isinstance(out, bytes) else out
    libcst.parse_module(text)
    src_text = source.decode("utf-8") if isinstance(source, bytes) else source
    if _compiles(src_text):
        assert _compiles(text), f"fix broke compilation:\n{text}"
    if first.changed:
        assert out != source
    else:
        assert out == source
    second = fix_source(out, PATH, unsafe=unsafe)
    assert second.source == out, "second fix changed the output (not idempotent)"
    assert not second.changed
    assert not second.errors, second.errors
    _check_findings(second.remaining, text)


FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)


@FUZZ
@given(source=programs())
def test_check_never_crashes(source):
    assert_check_ok(source)
    assert_check_ok(source.encode("utf-8"))


@FUZZ
@given(source=programs(), unsafe=st.booleans(), as_bytes=st.booleans())
def test_fix_parses_and_is_idempotent(source, unsafe, as_bytes):
    assert_fix_ok(source.encode("utf-8") if as_bytes else source, unsafe)


@settings(max_examples=60, deadline=None)
@given(source=st.one_of(st.text(), st.binary(),
                        st.builds(_join, st.sampled_from(SEEDS), st.text())))
# Found by benchmarks/fuzz.py: libcst's parser accepts identifiers with characters newer than
# the running Python's Unicode tables, then its Name validation raises CSTValidationError.
@example("x\U0001e5d0 = 1\n")
@example(SEEDS[0] + "\U0001e5d0\n")
def test_check_arbitrary_input_raises_only_source_error(source):
    assert_check_ok(source)


def test_seeds_have_findings_and_fix_cleanly():
    """The seeds are what makes the spliced programs interesting: they must have findings."""
    found = [check_source(seed, PATH) for seed in SEEDS]
    assert any(found), "no seed has a finding: the spliced programs exercise nothing"
    for seed in SEEDS:
        assert_fix_ok(seed, unsafe=False)
        assert_fix_ok(seed, unsafe=True)
