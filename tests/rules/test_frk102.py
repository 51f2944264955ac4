"""FRK102: module-level handles used by DataLoader workers."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source

CFG = Config(select=("FRK102",))


def findings(src):
    return [(f.line, f.col, f.fix) for f in check_source(textwrap.dedent(src), "m.py", CFG)]


def test_message_and_position():
    src = """
    import lmdb
    from torch.utils.data import Dataset

    ENV = lmdb.open("db", readonly=True)

    class DS(Dataset):
        def __getitem__(self, i):
            with ENV.begin() as txn:
                return txn.get(b"%d" % i)
    """
    (f,) = check_source(textwrap.dedent(src), "m.py", CFG)
    assert (f.line, f.col, f.fix) == (5, 6, None)
    assert f.message == (
        "lmdb.open() opened at module level and kept in ENV is used by DS.__getitem__ in DataLoader "
        "workers: forked workers share the parent's handle; open it per process (lazily in the "
        "dataset, PID-checked, or in worker_init_fn)"
    )
    assert fix_source(textwrap.dedent(src), "m.py", CFG, unsafe=True).changed is False


@pytest.mark.parametrize(
    "src, want",
    [
        # derived object, used through a method the worker side calls
        ("import h5py\nfrom torch.utils.data import Dataset\n\nX = h5py.File('a.h5', 'r')['x']\n\n"
         "class DS(Dataset):\n    def _row(self, i):\n        return X[i]\n\n    def __getitem__(self, i):\n"
         "        return self._row(i)\n", [(4, 4, None)]),
        # worker_init_fn uses a module-level connection
        ("import sqlite3\nfrom torch.utils.data import DataLoader\n\nDB = sqlite3.connect('x.db')\n\n"
         "def init(wid):\n    DB.execute('PRAGMA cache_size=1000')\n\n"
         "loader = DataLoader(range(4), num_workers=2, worker_init_fn=init)\n", [(4, 5, None)]),
        # IterableDataset streaming a module-level file, opened under the main guard
        ("from torch.utils.data import IterableDataset\n\nclass Lines(IterableDataset):\n"
         "    def __iter__(self):\n        yield from FH\n\nif __name__ == '__main__':\n"
         "    FH = open('corpus.txt')\n", [(8, 9, None)]),
        # a nested def declares `global ENV`; the outer function's own `ENV = ...` is a local of the
        # outer function and reopens nothing
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nENV = lmdb.open('db')\n\ndef setup():\n"
         "    def note():\n        global ENV\n        print(ENV)\n    ENV = lmdb.open('db')\n    return note\n\n"
         "class DS(Dataset):\n    def __getitem__(self, i):\n        return ENV.stat()\n", [(4, 6, None)]),
    ],
)
def test_recall(src, want):
    assert findings(src) == want


@pytest.mark.parametrize(
    "src",
    [
        # only the parent side uses it
        "import lmdb\nfrom torch.utils.data import Dataset\n\nENV = lmdb.open('db')\n\nclass DS(Dataset):\n"
        "    def __init__(self):\n        self.n = ENV.stat()['entries']\n\n    def __getitem__(self, i):\n        return i\n",
        # a parameter shadows the global
        "from torch.utils.data import Dataset\n\nfh = open('x')\n\nclass DS(Dataset):\n"
        "    def __getitem__(self, i, fh=None):\n        return fh\n",
        # reopened per process through `global`
        "import lmdb\nfrom torch.utils.data import Dataset\n\nENV = lmdb.open('db')\n\ndef reopen(_):\n"
        "    global ENV\n    ENV = lmdb.open('db')\n\nclass DS(Dataset):\n    def __getitem__(self, i):\n        return ENV.stat()\n",
        # reopened in a function nested in another one
        "import lmdb\nfrom torch.utils.data import Dataset\n\nENV = lmdb.open('db')\n\ndef make():\n"
        "    def reopen(_):\n        global ENV\n        ENV = lmdb.open('db')\n    return reopen\n\n"
        "class DS(Dataset):\n    def __getitem__(self, i):\n        return ENV.stat()\n",
        # memory maps are not handles; neither is data read in a module-level `with`
        "import numpy as np\nfrom torch.utils.data import Dataset\n\nA = np.memmap('a.bin', mode='r')\n"
        "with open('labels.txt') as f:\n    LABELS = f.read().split()\n\nclass DS(Dataset):\n"
        "    def __getitem__(self, i):\n        return A[i], LABELS[i]\n",
        # not a dataset
        "import lmdb\n\nENV = lmdb.open('db')\n\nclass Cache:\n    def __getitem__(self, k):\n        return ENV.begin().get(k)\n",
    ],
)
def test_precision(src):
    assert findings(src) == []
