"""FRK203: unpicklable / fork-unsafe objects kept on a dataset, and the per-process lazy fix."""

from __future__ import annotations

import os
import pickle
import sys
import textwrap
import types

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.rules._support import ALL, check_dedented, fix_dedented

CFG = Config(select=("FRK203",))


def findings(src):
    return [(f.line, f.col, f.fix) for f in check_dedented(src, "m.py", CFG)]


def fixed(src):
    return fix_dedented(src, "m.py", CFG)


LOCKS = """
import queue
import threading as th
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, items, slots=2):
        self.items = items
        self.lock = th.RLock()
        self.sem = th.Semaphore(slots)
        self.done = queue.SimpleQueue()

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        with self.lock, self.sem:
            self.done.put(i)
            return self.items[i]
"""


def test_messages_and_positions():
    fs = check_source(textwrap.dedent(LOCKS), "m.py", CFG)
    assert [(f.line, f.col, f.fix) for f in fs] == [(9, 20, "safe"), (10, 19, "safe"), (11, 20, "safe")]
    assert fs[0].message == (
        "threading.RLock() created in DS.__init__ and kept in self.lock: spawn workers cannot pickle it "
        "and fork copies it into every worker in its current state; create it lazily in each worker process"
    )


def _load(src, name):
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # pickle finds the class by module name
    try:
        exec(compile(src, name, "exec"), mod.__dict__)
    except ImportError as exc:  # pragma: no cover - torch missing
        pytest.skip(str(exc))
    return mod


def test_fixed_dataset_pickles_and_recreates_per_process():
    pytest.importorskip("torch")
    out = fixed(LOCKS)
    assert "        self._sem_args = (slots,)\n" in out
    assert "            self._sem = th.Semaphore(*self._sem_args)\n" in out
    assert not check_source(out, "m.py", ALL)
    mod = _load(out, "frk203_fixed_locks")
    try:
        ds = mod.DS([1, 2, 3], slots=1)
        assert ds[1] == 2 and ds.done.get() == 1  # the parent uses it first
        lock = ds.lock
        assert ds.lock is lock  # one object per process
        copy = pickle.loads(pickle.dumps(ds))  # spawn: the lock is not pickled
        assert copy[2] == 3 and copy.lock is not lock
        ds._lock_pid = os.getpid() + 1  # what a forked child sees
        assert ds.lock is not lock
    finally:
        del sys.modules["frk203_fixed_locks"]


def test_unfixed_dataset_does_not_pickle():
    pytest.importorskip("torch")
    mod = _load(textwrap.dedent(LOCKS), "frk203_unfixed_locks")
    try:
        with pytest.raises(TypeError, match="cannot pickle"):
            pickle.dumps(mod.DS([1]))
    finally:
        del sys.modules["frk203_unfixed_locks"]


@pytest.mark.parametrize(
    "src, want",
    [
        # thread: reported, no fix
        ("import threading\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self):\n"
         "        self.t = threading.Thread(target=print)\n", [(6, 17, None)]),
        # via a local variable
        ("import threading\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self):\n"
         "        lock = threading.Lock()\n        self.lock = lock\n", [(6, 15, None)]),
        # a generator method's result: built per process (tests/rules/test_frk203_lazy_generators.py)
        ("from torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, xs):\n"
         "        self.it = self._gen(xs)\n\n    def _gen(self, xs):\n        yield from xs\n", [(5, 18, "safe")]),
        # module object, aliased
        ("import numpy as np\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self):\n"
         "        self.np = np\n", [(6, 18, None)]),
        # a queue the parent fills: a fresh queue per process would be empty
        ("import queue\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, xs):\n"
         "        self.q = queue.Queue()\n        for x in xs:\n            self.q.put(x)\n", [(6, 17, None)]),
        # executors
        ("from concurrent.futures import ThreadPoolExecutor\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n"
         "    def __init__(self):\n        self.pool = ThreadPoolExecutor(4)\n", [(6, 20, None)]),
    ],
)
def test_recall(src, want):
    assert findings(src) == want


@pytest.mark.parametrize(
    "src",
    [
        "import multiprocessing as mp\nimport torch.multiprocessing as tmp\nfrom torch.utils.data import Dataset\n\n"
        "class DS(Dataset):\n    def __init__(self):\n        self.l = mp.Lock()\n        self.q = tmp.Queue()\n"
        "        self.m = mp.Manager().dict()\n        self.v = mp.get_context('spawn').Event()\n",
        "import threading\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self):\n"
        "        self.lock_type = threading.Lock\n        self.order = iter([1, 2])\n",
        "import threading\n\nclass NotADataset:\n    def __init__(self):\n        self.lock = threading.Lock()\n",
        # a parameter that shadows a module name is not a module
        "import json\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, json=None):\n"
        "        self.json = json\n",
    ],
)
def test_precision(src):
    assert findings(src) == []


GEN_SRC = """
import os
import pathlib
import scanlib
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, root, store):
        self.a = os.scandir(root)
        self.b = pathlib.Path(root).rglob("*.wav")
        self.c = (pathlib.Path(root) / "x").glob("*.png")
        base = pathlib.Path(root)
        self.d = base.walk()
        self.e = store.scan(root)
        self.f = scanlib.stream(root)
        self.g = store.glob("*")

    def __getitem__(self, i):
        return i
"""


def test_generator_calls_come_from_the_library_model_and_config():
    """One routine reads the three lists of ``rules/libraries.toml``; each list is extensible from
    configuration (``store.glob`` on a receiver that is not evidently a path is not a generator)."""

    def found(cfg):
        return sorted(f.line for f in check_source(GEN_SRC, "gen.py", cfg) if f.code == "FRK203")

    assert found(Config(select=("FRK203",))) == [9, 10, 11, 13]
    cfg = Config(
        select=("FRK203",),
        extend_knowledge=(
            ("libraries.generator_methods", ("scan",)),
            ("libraries.generator_functions", ("scanlib.stream",)),
        ),
    )
    assert found(cfg) == [9, 10, 11, 13, 14, 15]


# ---------------------------------------------------------------- generators: the unsafe materialise fix

GENS = """
from pathlib import Path
from torch.utils.data import IterableDataset

class DS(IterableDataset):
    def __init__(self, paths, root, suffix=".txt"):
        self.files = (p for p in paths if p.endswith(suffix))
        self.pngs = Path(root).rglob("*.png")

    def __iter__(self):
        for f in self.files:
            yield f
        yield from sorted(str(p) for p in self.pngs)
"""


def test_generator_fix_is_unsafe_and_materialises():
    fs = check_source(textwrap.dedent(GENS), "m.py", CFG)
    assert [(f.line, f.fix) for f in fs] == [(7, "unsafe"), (8, "unsafe")]
    assert fs[0].message.endswith(
        "(unsafe fix: materialise it in __init__; a second pass then sees the items again)")
    assert fixed(GENS) == textwrap.dedent(GENS).replace(
        "(p for p in paths if p.endswith(suffix))", "[p for p in paths if p.endswith(suffix)]").replace(
        'Path(root).rglob("*.png")', 'list(Path(root).rglob("*.png"))')
    # without --unsafe-fixes nothing changes
    assert fix_dedented(GENS, "m.py", CFG, unsafe=False) == textwrap.dedent(GENS)


def test_materialised_generator_pickles_and_yields_the_same_first_pass(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "a.png").write_bytes(b"")
    before = _load(textwrap.dedent(GENS), "frk203_gens_before")
    after = _load(fixed(GENS), "frk203_gens_after")
    try:
        args = (["x.txt", "y.csv", "z.txt"], str(tmp_path))
        with pytest.raises(TypeError, match="cannot pickle 'generator'"):
            pickle.dumps(before.DS(*args))
        ds = pickle.loads(pickle.dumps(after.DS(*args)))
        assert list(ds) == list(before.DS(*args)) == ["x.txt", "z.txt", str(tmp_path / "a.png")]
    finally:
        del sys.modules["frk203_gens_before"], sys.modules["frk203_gens_after"]


@pytest.mark.parametrize(
    "value, use, why",
    [
        ("(i for i in itertools.count())", "for x in self.it:\n            yield x", "itertools.count() is endless"),
        # it reads a handle, but the parent side consumes it (the lazy fix's other declines are in
        # tests/rules/test_frk203_lazy_generators.py)
        ("(l.strip() for l in open(path))", "yield from self.it\n\n    def __len__(self):\n        return sum(1 for _ in self.it)",
         "the parent side uses self.it: a fresh generator per process would lose what it consumed"),
        ("(x for x in read(path))", "yield from self.it", "it calls read, which may be endless or read a handle"),
        ("Path(path).glob('*')", "yield next(self.it)", "self.it is used as an iterator in DS.__iter__"),
        ("(x for x in path)", "return self.it", "self.it is used as an iterator in DS.__iter__"),
        ("(x for x in iter(input, ''))", "yield from self.it", "iter(f, sentinel) may be endless"),
    ],
)
def test_generator_fix_declined(value, use, why):
    src = (f"import itertools, os\nfrom pathlib import Path\nfrom torch.utils.data import IterableDataset\n\n"
           f"def read(p):\n    yield p\n\nclass DS(IterableDataset):\n    def __init__(self, path):\n"
           f"        self.it = {value}\n\n    def __iter__(self):\n        {use}\n")
    [f] = check_source(src, "m.py", CFG)
    assert f.fix is None and f"(no automatic fix: {why}" in f.message, f.message
    assert fix_source(src, "m.py", CFG, unsafe=True).source == src


def test_generator_fix_declined_when_list_is_rebound():
    src = ("from pathlib import Path\nfrom torch.utils.data import IterableDataset\n\nlist = tuple\n\n"
           "class DS(IterableDataset):\n    def __init__(self, root):\n        self.it = Path(root).glob('*')\n\n"
           "    def __iter__(self):\n        yield from self.it\n")
    [f] = check_source(src, "m.py", CFG)
    assert f.fix is None and "the name list is rebound here" in f.message


@pytest.mark.parametrize("workers, expected", [("0", []), ("2", [("FRK203", 8)])])
def test_a_dataset_only_given_to_loaders_without_workers_is_never_pickled(workers, expected):
    """trl's RolloutQueueDataset keeps a queue.Queue, and its module's only DataLoader (given a
    batcher wrapping it) has num_workers=0: nothing is pickled for a worker."""
    src = textwrap.dedent(f"""\
        import queue
        from torch.utils.data import DataLoader, IterableDataset


        class Rollouts(IterableDataset):
            def __init__(self, q):
                self.q = q
                self.traces = queue.Queue(maxsize=4)

            def __iter__(self):
                yield self.q.get()


        def loader(q):
            dataset = Rollouts(q)
            dataset = Batcher(dataset)
            return DataLoader(dataset, batch_size=1, num_workers={workers})
        """)
    got = [(f.code, f.line) for f in check_source(src, "trainer.py", Config(select=("FRK203",)))]
    assert got == expected


def test_a_starred_generator_is_unpacked_at_once():
    """``[*folder.glob(...)]`` / ``(*p.rglob(...), x)`` build a list / tuple of the items: nothing
    lazy is kept (alphafold3-pytorch's ``AtomDataset``, session 12's holdout, seen: a false alarm
    there); the generator itself in a list still is."""
    src = """
        from pathlib import Path
        from torch.utils.data import Dataset

        class DS(Dataset):
            def __init__(self, folder):
                folder = Path(folder)
                self.files = [*folder.glob("**/*.pt")]
                self.more = (*folder.rglob("*.x"), 1)
                self.both = {*folder.glob("*.z")}
                self.kept = [folder.glob("*.y")]

            def __getitem__(self, i):
                return self.files[i], self.more, self.both, self.kept
        """
    assert findings(src) == [(11, 21, None)]


def test_a_module_kept_through_a_parameter_default():
    """``def __init__(self, pickler=pickle): self.pickler = pickler``: unless a caller gives another
    value, the dataset keeps the module (webdataset's ``LMDBCached``, seen in the work corpus); reported
    at the stored name, without a fix. A default that is no module, or a parameter rebound first, is not."""
    src = '''
        import pickle

        from torch.utils.data import Dataset


        class Cached(Dataset):
            def __init__(self, items, pickler=pickle, other=None, codec=pickle):
                self.items = items
                self.pickler = pickler
                self.other = other
                codec = codec.dumps
                self.codec = codec

            def __getitem__(self, i):
                return self.pickler.loads(self.items[i])
    '''
    found = check_dedented(src, "ds.py", CFG)
    assert [(f.code, f.line, f.col, f.fix) for f in found] == [("FRK203", 10, 23, None)]
    assert found[0].message.startswith("the module pickle (the default of pickler) stored in Cached.__init__ and kept in self.pickler")
