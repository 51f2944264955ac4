"""FRK203's second generator fix: a generator that reads a handle, or a generator function's, kept on a
dataset becomes a PID-checked property that builds it on first use in each process (issue 12, item 5).

What is asserted: the exact rewrite, its applicability (safe for a generator function's call, unsafe for a
generator expression or ``os.scandir``), the declines and their reasons, and the behaviour of the fixed
classes: in one process the attribute is still one one-shot generator (same items, same exhaustion); a
pickled copy or a process with another pid builds its own from the start; real DataLoader workers under
fork, spawn and forkserver return the items of ``num_workers=0``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import textwrap
import types

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.rules._support import ALL, fix_dedented, run_with_modules

CFG = Config(select=("FRK203",))

GENEXP = """
import json
from torch.utils.data import IterableDataset

class Lines(IterableDataset):
    def __init__(self, path, min_len=2):
        self.path = path
        self.lines = (json.loads(line) for line in open(path) if len(line) > min_len)

    def __iter__(self):
        yield from self.lines
"""

GENEXP_FIXED = """
import json
import os
from torch.utils.data import IterableDataset

class Lines(IterableDataset):
    def __init__(self, path, min_len=2):
        self.path = path
        self._lines_args = (path, min_len)

    def __iter__(self):
        yield from self.lines

    # forksafe: one generator per process (PID-checked), not pickled
    @property
    def lines(self):
        if getattr(self, "_lines_pid", None) != os.getpid():
            path, min_len = self._lines_args
            self._lines = (
                json.loads(line) for line in open(path) if len(line) > min_len
            )
            self._lines_pid = os.getpid()
        return self._lines

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lines", None)
        state.pop("_lines_pid", None)
        return state
"""

FUNC = """
from torch.utils.data import Dataset

def read_rows(path, sep=","):
    with open(path) as fh:
        for line in fh:
            yield line.rstrip("\\n").split(sep)

class Rows(Dataset):
    def __init__(self, path, n, sep=";"):
        self.n = n
        self.rows = read_rows(path, sep=sep)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return next(self.rows)
"""


def _check(src):
    return check_source(textwrap.dedent(src), "m.py", CFG)


def _load(src, name):
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # pickle finds the class by module name
    try:
        exec(compile(src, name, "exec"), mod.__dict__)
    except ImportError as exc:  # pragma: no cover - torch missing
        pytest.skip(str(exc))
    return mod


def test_generator_expression_over_open_is_built_per_process_unsafe():
    [f] = _check(GENEXP)
    assert (f.line, f.col, f.fix) == (8, 22, "unsafe")
    assert f.message.endswith(
        "create it in the process that iterates it (unsafe fix: a PID-checked property builds it on first use in "
        "each process and pickling leaves it out; its source is then opened on first use, not in __init__)")
    assert fix_dedented(GENEXP, "m.py", CFG) == textwrap.dedent(GENEXP_FIXED)
    # unsafe: without --unsafe-fixes nothing changes
    assert fix_dedented(GENEXP, "m.py", CFG, unsafe=False) == textwrap.dedent(GENEXP)
    # idempotent, and the fixed file is clean of every rule
    again = fix_source(textwrap.dedent(GENEXP_FIXED), "m.py", ALL, unsafe=True)
    assert not again.changed and not again.remaining


def test_generator_function_call_is_built_per_process_safe():
    [f] = _check(FUNC)
    assert (f.line, f.col, f.fix) == (12, 20, "safe")
    assert f.message.endswith(
        "create it in the process that iterates it (fix: a PID-checked property builds it on first use in each "
        "process; pickling leaves it out)")
    out = fix_dedented(FUNC, "m.py", CFG, unsafe=False)  # a safe fix: applied without --unsafe-fixes
    assert "        self._rows_args = (path,)\n        self._rows_kwargs = dict(sep=sep)\n" in out
    assert "            self._rows = read_rows(*self._rows_args, **self._rows_kwargs)\n" in out
    assert "    # forksafe: one read_rows() generator per process (PID-checked), not pickled\n" in out
    assert not check_source(out, "m.py", ALL)


def test_os_scandir_and_generator_methods():
    src = """
    import os
    from torch.utils.data import IterableDataset

    class Tree(IterableDataset):
        def __init__(self, root):
            self.entries = os.scandir(root)
            self.names = self._walk(root)

        def _walk(self, root):
            for d, _, files in os.walk(root):
                yield from files

        def __iter__(self):
            yield from zip((e.name for e in self.entries), self.names)
    """
    fs = _check(src)
    assert [(f.line, f.fix) for f in fs] == [(7, "unsafe"), (8, "safe")]
    out = fix_dedented(src, "m.py", CFG)
    assert "            self._entries = os.scandir(*self._entries_args)\n" in out
    assert "            self._names = self._walk(*self._names_args)\n" in out
    assert not check_source(out, "m.py", ALL)


def test_long_and_multiline_generators_keep_their_layout():
    src = """
    import gzip
    from torch.utils.data import IterableDataset

    class Long(IterableDataset):
        def __init__(self, path, encoding="utf-8", errors="replace"):
            self.lines = (raw.decode(encoding, errors).rstrip() for raw in gzip.open(path) if raw.strip())
            self.words = (
                # one word at a time
                word
                for line in open(path)
                for word in line.split()
            )

        def __iter__(self):
            yield from zip(self.lines, self.words)
    """
    out = fix_dedented(src, "m.py", CFG)
    assert (
        '        if getattr(self, "_lines_pid", None) != os.getpid():\n'
        "            encoding, errors, path = self._lines_args\n"
        "            self._lines = (\n"
        "                raw.decode(encoding, errors).rstrip()\n"
        "                for raw in gzip.open(path)\n"
        "                if raw.strip()\n"
        "            )\n"
    ) in out
    assert (
        '        if getattr(self, "_words_pid", None) != os.getpid():\n'
        "            (path,) = self._words_args\n"
        "            self._words = (\n"
        "                # one word at a time\n"
        "                word\n"
        "                for line in open(path)\n"
        "                for word in line.split()\n"
        "            )\n"
    ) in out
    assert max(len(line) for line in out.splitlines()) <= 88
    assert not fix_source(out, "m.py", CFG, unsafe=True).changed


def test_existing_getstate_is_extended_and_a_none_elsewhere_gets_a_setter():
    src = """
    from torch.utils.data import IterableDataset

    class DS(IterableDataset):
        def __init__(self, path):
            self.path = path
            self.lines = (line for line in open(path))

        def close(self):
            self.lines = None

        def __iter__(self):
            yield from self.lines

        def __getstate__(self):
            state = self.__dict__.copy()
            state["path"] = str(state["path"])
            return state
    """
    out = fix_dedented(src, "m.py", CFG)
    assert ('        state = self.__dict__.copy()\n        state.pop("_lines", None)\n'
            '        state.pop("_lines_pid", None)\n        state["path"] = str(state["path"])\n') in out
    assert "    @lines.setter\n    def lines(self, value):\n" in out
    assert not check_source(out, "m.py", ALL)


def test_fixed_generator_keeps_its_meaning_in_one_process_and_restarts_per_process(tmp_path):
    pytest.importorskip("torch")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(5)) + "\n")
    before = _load(textwrap.dedent(GENEXP), "frk203_lazy_before")
    after = _load(textwrap.dedent(GENEXP_FIXED), "frk203_lazy_after")
    try:
        with pytest.raises(TypeError, match="cannot pickle 'generator'"):
            pickle.dumps(before.Lines(str(data)))
        old, new = before.Lines(str(data)), after.Lines(str(data))
        assert new.lines is new.lines  # one generator object per process
        assert next(new.lines) == next(old.lines) == {"i": 0}  # next() keeps its meaning
        assert list(new) == list(old) == [{"i": i} for i in range(1, 5)]
        assert list(new) == list(old) == []  # one-shot, as before: a second pass finds it exhausted
        copy = pickle.loads(pickle.dumps(new))  # spawn: the generator is not pickled, the copy builds its own
        assert "_lines" not in copy.__dict__ and list(copy) == [{"i": i} for i in range(5)]
        new._lines_pid = os.getpid() + 1  # what a forked worker sees: a pid that did not build it
        assert list(new) == [{"i": i} for i in range(5)]
    finally:
        del sys.modules["frk203_lazy_before"], sys.modules["frk203_lazy_after"]


@pytest.mark.parametrize(
    "init, more, why",
    [
        # the parent side consumes it: a fresh generator per process would not skip the header
        ("self.it = (l.split(',') for l in open(path))\n        self.cols = next(self.it)", "",
         "the parent side uses self.it: a fresh generator per process would lose what it consumed"),
        ("self.it = (l for l in open(path))", "\n    def __len__(self):\n        return sum(1 for _ in self.it)\n",
         "the parent side uses self.it: a fresh generator per process would lose what it consumed"),
        # the handle is a local: keeping it on the instance would keep the handle
        ("fh = open(path)\n        self.it = (l for l in fh)", "",
         "fh is a handle opened outside the generator (keeping it would keep the handle)"),
        ("self.it = gen(open(path))", "",
         "an argument is a handle (keeping it on the instance would keep the handle)"),
        # what the expression reads must have the value it had in __init__
        ("self.it = (l + sep for l in open(path))\n        sep = sep.upper()", "",
         "the argument sep is rebound in __init__"),
        ("for p in [path]:\n            q = p\n        self.it = (l for l in open(q))", "",
         "the local q is not assigned once, plainly, before it in __init__"),
        ("self.it = (l for l in open(self.p))", "\n    def move(self, p):\n        self.p = p\n",
         "self.p, which it reads, is also assigned in DS.move"),
        ("self.it = (l for l in open(path) if (n := len(l)))", "", "it holds an assignment expression (:=)"),
        ("self.it = (f(l) for l in open(path) for f in [lambda x: x])", "", "it holds a lambda"),
        ("self.it = (l for l in open(path) if l != '''\n'''  )", "", "a string in it spans lines"),
        ("if path:\n            self.it = (l for l in open(path))", "",
         "it is assigned inside a block, not at the top of the method"),
        ("self.it = cached(path)", "", "the generator function cached() is decorated"),
        ("self.it = (l for l in open(path))", "\n    def reopen(self):\n        self.it = iter([])\n",
         "self.it is also assigned in DS.reopen"),
        ("self.it = (l for l in open(nowhere))", "", "nowhere is not defined where the fix can see it"),
        ("def gen(p):\n            yield p\n        self.it = gen(path)", "",
         "gen is a name of __init__ (the property could not call it)"),
        ("getattr = bool\n        self.it = (l for l in open(path) if getattr(l))", "",
         "it reads a local named getattr (the fix calls getattr in the property)"),
    ],
)
def test_declined_with_the_reason(init, more, why):
    src = (f"import functools\nfrom torch.utils.data import IterableDataset\n\n"
           f"def gen(fh):\n    yield from fh\n\n@functools.lru_cache()\ndef cached(p):\n    yield p\n\n"
           f"class DS(IterableDataset):\n    def __init__(self, path, sep=','):\n        {init}\n"
           f"{more}\n    def __iter__(self):\n        yield from self.it\n")
    [f] = [f for f in check_source(src, "m.py", CFG) if "self.it" in f.message]
    assert f.fix is None and f.message.endswith(f"(no automatic fix: {why})"), f.message
    assert fix_source(src, "m.py", CFG, unsafe=True).source == src


RUNNER = r"""
import json, sys
from torch.utils.data import DataLoader

import fixed



def items(ds, **kw):
    return sorted(json.dumps(x) for x in DataLoader(ds, batch_size=None, **kw))


if __name__ == "__main__":
    path = sys.argv[1]
    out = {"baseline": items(fixed.make(path))}
    for ctx in ("fork", "spawn", "forkserver"):
        out[ctx] = items(fixed.make(path), num_workers=2, multiprocessing_context=ctx)
        used = fixed.make(path)
        items(used)  # the parent iterates it first (a sanity pass), then the workers start
        out[ctx + " after a parent pass"] = items(used, num_workers=2, multiprocessing_context=ctx)
    print(json.dumps(out))
"""

SHARDED = """
import json
from torch.utils.data import IterableDataset, get_worker_info

def read_ids(path):
    with open(path) as fh:
        for line in fh:
            yield json.loads(line)["i"]

class Genexp(IterableDataset):
    def __init__(self, path):
        self.recs = (json.loads(line) for line in open(path) if line.strip())

    def __iter__(self):
        info = get_worker_info()
        shard, n = (0, 1) if info is None else (info.id, info.num_workers)
        for k, rec in enumerate(self.recs):
            if k % n == shard:
                yield rec["i"]

class Func(IterableDataset):
    def __init__(self, path):
        self.ids = read_ids(path)

    def __iter__(self):
        info = get_worker_info()
        shard, n = (0, 1) if info is None else (info.id, info.num_workers)
        for k, i in enumerate(self.ids):
            if k % n == shard:
                yield i
"""


@pytest.mark.slow
@pytest.mark.parametrize("cls", ["Genexp", "Func"])
def test_fixed_datasets_return_the_items_of_num_workers_0_under_every_start_method(tmp_path, cls):
    """Real DataLoader workers, a fresh dataset per run (a generator is one-shot): the fixed dataset's items
    under fork, spawn and forkserver equal its num_workers=0 items, also when the parent iterated it first."""
    pytest.importorskip("torch")
    src = SHARDED + f"\n\ndef make(path):\n    return {cls}(path)\n"
    out = fix_source(src, "fixed.py", CFG, unsafe=True)
    assert out.changed and not out.remaining
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(21)))
    proc = run_with_modules(tmp_path, {"fixed": out.source}, RUNNER, data, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want = sorted(json.dumps(i) for i in range(21))
    assert got.pop("baseline") == want
    assert got == {k: want for k in got} and len(got) == 6
