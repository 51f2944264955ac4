"""FRK101: exact findings, exact fixes, and the fixed code (FRK101's and FRK103's) really working in
DataLoader workers under fork, spawn and forkserver."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.rules._support import ALL, check_dedented, fix_dedented, run_with_modules

CFG = Config(select=("FRK101",))


def findings(src, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check_dedented(src, "ds.py", cfg)]


def fixed(src, cfg=CFG):
    return fix_dedented(src, "ds.py", cfg)


# --------------------------------------------------------------------------------------------------
# findings: exact positions and messages

BASIC = """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, path):
        self.env = lmdb.open(path, readonly=True)

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return txn.get(b"%d" % i)
"""


def test_message_says_what_why_and_what_to_do():
    (f,) = check_source(textwrap.dedent(BASIC), "ds.py", CFG)
    assert (f.code, f.line, f.col, f.fix) == ("FRK101", 7, 19, "safe")
    assert f.message == (
        "lmdb.open() opened in DS.__init__ and kept in self.env: forked DataLoader workers share the "
        "parent's handle and spawn workers cannot pickle it; open it lazily in each worker process"
    )


@pytest.mark.parametrize(
    "src, where",
    [
        # import alias
        ("import h5py as h\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n"
         "    def __init__(self, p):\n        self.f = h.File(p, 'r')\n", (6, 17)),
        # from-import alias of a function
        ("from lmdb import open as lmdb_open\nimport torch.utils.data as tud\n\nclass DS(tud.Dataset):\n"
         "    def __init__(self, p):\n        self.env = lmdb_open(p)\n", (6, 19)),
        # import inside __init__, dataset base imported as a module
        ("from torch.utils import data\n\nclass DS(data.Dataset):\n    def __init__(self, p):\n"
         "        import sqlite3\n        self.db = sqlite3.connect(p)\n", (6, 18)),
        # helper method called from __init__
        ("import tarfile\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n"
         "    def __init__(self, p):\n        self._load(p)\n\n    def _load(self, p):\n"
         "        self.tar = tarfile.open(p)\n", (9, 19)),
        # same-file base class __init__
        ("import zipfile\nfrom torch.utils.data import Dataset\n\nclass Base:\n"
         "    def __init__(self, p):\n        self.zf = zipfile.ZipFile(p)\n\n"
         "class DS(Base, Dataset):\n    def __init__(self, p):\n        super().__init__(p)\n", (6, 18)),
        # torchvision VisionDataset subclass
        ("import cv2\nfrom torchvision.datasets import VisionDataset\n\nclass DS(VisionDataset):\n"
         "    def __init__(self, root):\n        super().__init__(root)\n        self.cap = cv2.VideoCapture(root)\n",
         (7, 19)),
        # a same-module helper that returns the handle
        ("import h5py\nfrom torch.utils.data import Dataset\n\ndef open_h5(p):\n    return h5py.File(p, 'r')\n\n"
         "class DS(Dataset):\n    def __init__(self, p):\n        self.f = open_h5(p)\n", (5, 11)),
        # kept in a container
        ("from torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, ps):\n"
         "        self.fs = {}\n        for p in ps:\n            self.fs[p] = open(p, 'rb')\n", (7, 25)),
        # a derived h5py dataset kept
        ("import h5py\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
         "        self.x = h5py.File(p, 'r')['x']\n", (6, 17)),
        # np.load of an .npz keeps a zip open
        ("import numpy as np\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n"
         "    def __init__(self):\n        self.arrays = np.load('data.npz')\n", (6, 22)),
        # pd.read_csv with chunksize is an open reader
        ("import pandas as pd\nfrom torch.utils.data import IterableDataset\n\nclass DS(IterableDataset):\n"
         "    def __init__(self, p):\n        self.chunks = pd.read_csv(p, chunksize=1000)\n", (6, 22)),
    ],
)
def test_recall(src, where):
    assert [(c, ln, col) for c, ln, col, _ in findings(src)] == [("FRK101", *where)]


def test_sanity_check_after_opening_is_not_a_lazy_open():
    src = """
    import lmdb
    from torch.utils.data import Dataset

    class DS(Dataset):
        def __init__(self, root):
            self.env = lmdb.open(root, readonly=True)
            if not self.env:
                raise IOError(root)
    """
    assert findings(src) == [("FRK101", 7, 19, "safe")]


def test_generic_base_and_helper_returning_handles():
    src = """
    from typing import TypeVar
    import lmdb
    from torch.utils.data import Dataset

    T = TypeVar("T")

    class Store(Dataset[T]):
        def __init__(self, paths):
            self.envs = []
            for p in paths:
                env = self.connect(p)
                self.envs.append(env)
            self.main = self.connect(paths[0])

        def connect(self, p):
            return lmdb.open(p, readonly=True)

    class Sub(Store[int]):
        pass
    """
    # one factory call, two keepers (a container and self.main): one finding at the factory call
    # (RULES.md "Where a finding points"); no fix, since the container's handles would stay
    assert findings(src) == [("FRK101", 17, 15, None)]
    assert fixed(src) == textwrap.dedent(src)
    # one keeper: the fix rewrites the caller, the finding still points into the helper
    one = src.replace("            self.envs = []\n            for p in paths:\n                env = self.connect(p)\n"
                      "                self.envs.append(env)\n", "")
    assert findings(one) == [("FRK101", 13, 15, "safe")]
    assert "            self._main = self.connect(*self._main_args)\n" in fixed(one)


def test_npz_paths_built_at_runtime():
    src = """
    import os
    import numpy as np
    from torch.utils.data import Dataset

    class DS(Dataset):
        def __init__(self, root):
            self.a = np.load(os.path.join(root, "a.npz"))
            self.b = np.load(f"{root}/b.npz")
            self.c = np.load(root + "/c.npy")
            self.d = np.load(root + "/d.npz", mmap_mode="r")
    """
    assert findings(src) == [("FRK101", 8, 17, "safe"), ("FRK101", 9, 17, "safe")]


def test_user_configured_dataset_base():
    src = "import lmdb\nfrom mylib.data import Base\n\nclass DS(Base):\n    def __init__(self, p):\n        self.env = lmdb.open(p)\n"
    assert findings(src) == []
    cfg = Config(select=("FRK101",), extra_dataset_bases=("mylib.data.Base",))
    assert findings(src, cfg) == [("FRK101", 6, 19, "safe")]


def test_user_configured_handle_factory():
    src = "import mystore\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n        self.s = mystore.connect(p)\n"
    assert findings(src) == []
    cfg = Config(select=("FRK101",), extra_handle_factories=("mystore.connect",))
    assert findings(src, cfg) == [("FRK101", 6, 17, "safe")]


@pytest.mark.parametrize(
    "src",
    [
        # closed through `with self.f:`
        "from torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.f = open(p)\n        with self.f:\n            self.lines = self.f.readlines()\n",
        # reset to None after reading
        "import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.env = lmdb.open(p)\n        self.n = self.env.stat()['entries']\n        self.env = None\n",
        # a local handle closed after reading a derived dataset's data
        "import h5py\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        f = h5py.File(p, 'r')\n        self.x = f['x'][:]\n        self.y = f['y']\n        f.close()\n",
        # lazy through a helper only called under the test
        "import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.p, self.env = p, None\n\n    def _open(self):\n        self.env = lmdb.open(self.p)\n\n"
        "    def __getitem__(self, i):\n        if self.env is None:\n            self._open()\n        return i\n",
        # the result of a method of the handle, not the handle
        "from PIL import Image\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.img = Image.open(p).convert('RGB')\n        self.size = open(p, 'rb').read(4)\n",
        # handles opened on the worker side only
        "import h5py\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.p = p\n\n    def __getitem__(self, i):\n        self.f = h5py.File(self.p, 'r')\n        return self.f['x'][i]\n",
        # np.load of a .npy, np.load of .npz with mmap_mode, pd.read_csv without chunks
        "import numpy as np\nimport pandas as pd\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n"
        "    def __init__(self):\n        self.a = np.load('a.npy')\n        self.b = np.load('b.npz', mmap_mode='r')\n"
        "        self.c = pd.read_csv('c.csv')\n        self.d = pd.read_csv('d.csv', chunksize=None)\n",
        # __getstate__ allow-list + pid check
        "import os, lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.p = p\n        self.env = lmdb.open(p)\n        self.pid = os.getpid()\n\n"
        "    def __getitem__(self, i):\n        if self.pid != os.getpid():\n            self.env = lmdb.open(self.p)\n"
        "            self.pid = os.getpid()\n        return i\n\n    def __getstate__(self):\n        return {'p': self.p, 'pid': None}\n",
    ],
)
def test_precision(src):
    assert findings(src) == []


def test_getstate_without_pid_check_is_still_reported():
    src = (
        "import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.env = lmdb.open(p)\n\n    def __getstate__(self):\n        s = self.__dict__.copy()\n"
        "        s['env'] = None\n        return s\n"
    )
    assert findings(src) == [("FRK101", 6, 19, "safe")]


# --------------------------------------------------------------------------------------------------
# fixes


def test_fix_extends_an_existing_getstate_and_keeps_helper_calls():
    src = '''\
        import os
        import h5py
        from torch.utils.data import Dataset


        def open_h5(path, mode="r"):
            return h5py.File(path, mode)


        class DS(Dataset):
            def __init__(self, root, split):
                self.f = open_h5(os.path.join(root, split + ".h5"), mode="r")  # keep

            def __getitem__(self, i):
                return self.f["x"][i]

            def __getstate__(self):
                state = dict(self.__dict__)
                state["cache"] = None
                return state
        '''
    want = '''\
        import os
        import h5py
        from torch.utils.data import Dataset


        def open_h5(path, mode="r"):
            return h5py.File(path, mode)


        class DS(Dataset):
            def __init__(self, root, split):
                self._f_args = (os.path.join(root, split + ".h5"),)  # keep

            def __getitem__(self, i):
                return self.f["x"][i]

            def __getstate__(self):
                state = dict(self.__dict__)
                state.pop("_f", None)
                state.pop("_f_pid", None)
                state["cache"] = None
                return state

            # forksafe: one h5py.File() handle per process (PID-checked), not pickled
            @property
            def f(self):
                if getattr(self, "_f_pid", None) != os.getpid():
                    if getattr(self, "_f", None) is not None:
                        self._f.close()
                    self._f = open_h5(*self._f_args, mode="r")
                    self._f_pid = os.getpid()
                return self._f
        '''
    assert fixed(src) == textwrap.dedent(want)


def test_fix_two_handles_one_getstate_tabs_and_crlf():
    src = (
        "import lmdb\r\nfrom torch.utils.data import Dataset\r\n\r\nclass DS(Dataset):\r\n"
        "\tdef __init__(self, a, b):\r\n\t\tself.ea = lmdb.open(a)\r\n\t\tself.fb = open(b, 'rb')\r\n\r\n"
        "\tdef __getitem__(self, i):\r\n\t\treturn self.ea, self.fb\r\n"
    )
    out = fixed(src)
    assert "\n" not in out.replace("\r\n", "")
    assert "    " not in out  # the file's own indentation (tabs)
    assert out.count("def __getstate__") == 1
    assert '\t\tstate.pop("_ea", None)\r\n\t\tstate.pop("_ea_pid", None)\r\n\t\tstate.pop("_fb", None)' in out
    assert "\t\tself._ea = lmdb.open(*self._ea_args)\r\n" in out
    assert "\t\tself._fb = open(*self._fb_args, 'rb')\r\n" in out
    assert not check_source(out, "ds.py", ALL)
    assert fixed(out) == out


def test_fix_local_import_is_repeated_in_the_property():
    src = """
    from torch.utils.data import Dataset

    class DS(Dataset):
        def __init__(self, p):
            from lmdb import open as lmdb_open
            self.env = lmdb_open(p, readonly=True)
    """
    out = fixed(src)
    assert (
        "                self._env.close()\n"
        "            from lmdb import open as lmdb_open\n"
        "            self._env = lmdb_open(*self._env_args, readonly=True)\n"
    ) in out
    assert out.index("import os") < out.index("class DS")


def test_fix_derived_attribute_becomes_property():
    src = """
    import h5py
    from torch.utils.data import Dataset

    class DS(Dataset):
        def __init__(self, p):
            self.f = h5py.File(p, "r")
            self.x = self.f["x"]
            self.n = len(self.x)
    """
    out = fixed(src)
    assert "self.x = " not in out
    assert "    @property\n    def x(self):\n        return self.f[\"x\"]\n" in out
    assert "self.n = len(self.x)\n        self._close_f()" in out


@pytest.mark.parametrize(
    "src, reason",
    [
        # a derived transaction from the attribute, assigned again elsewhere
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
         "        self.env = lmdb.open(p)\n        self.txn = self.env.begin()\n\n    def reset(self):\n"
         "        self.txn = None\n",
         "self.txn keeps an object derived from it"),
        # a derived object built from more than the attribute, literals and a key computed without self
        # (self.f[k] is fixed: tests/test_fix_style.py)
        ("import h5py\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p, k):\n"
         "        self.f = h5py.File(p, 'r')\n        self.k = k\n        self.x = self.f[self.k]\n",
         "self.x keeps an object derived from it"),
        # the attribute is reassigned elsewhere (to something other than None: see test_fix_style.py)
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
         "        self.env = lmdb.open(p)\n\n    def reopen(self, q):\n        self.env = lmdb.open(q)\n",
         "self.env is also assigned in DS.reopen"),
        # __slots__
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    __slots__ = ('env',)\n\n"
         "    def __init__(self, p):\n        self.env = lmdb.open(p)\n",
         "DS defines __slots__"),
        # a __getstate__ that deletes the key
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
         "        self.env = lmdb.open(p)\n\n    def __getstate__(self):\n        s = self.__dict__.copy()\n"
         "        del s['env']\n        return s\n",
         "DS.__getstate__ deletes the attribute"),
        # a __getstate__ that is not a copy of __dict__ plus edits
        ("import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
         "        self.env = lmdb.open(p)\n\n    def __getstate__(self):\n        return {**vars(self), 'env': None}\n",
         "DS.__getstate__ does not start from a copy of self.__dict__"),
        # class defined inside a function
        ("import lmdb\nfrom torch.utils.data import Dataset\n\ndef make(p):\n    class DS(Dataset):\n"
         "        def __init__(self):\n            self.env = lmdb.open(p)\n    return DS\n",
         "the class is defined inside a function"),
    ],
)
def test_reported_without_fix(src, reason):
    (f,) = check_source(src, "ds.py", CFG)
    assert f.fix is None
    assert f.message.endswith(f"(no automatic fix: {reason})")
    assert fixed(src) == src


def test_docs_examples_are_the_real_fix_output():
    import re

    from tests.helpers import ROOT

    for code in ("FRK101", "FRK103", "FRK203"):
        text = (ROOT / "docs" / "rules" / f"{code}.md").read_text()
        example, use_instead = re.findall(r"```python\n(.*?)```", text, re.S)[:2]
        assert fix_source(example, "ex.py", ALL, unsafe=True).source == use_instead, code


# --------------------------------------------------------------------------------------------------
# three realistic datasets, fixed automatically and then run through real DataLoader workers

LMDB_DS = '''\
"""Pickled samples in an LMDB database; the count is stored under b"__len__"."""
import os
import pickle

import lmdb
from torch.utils.data import Dataset


class LMDBDataset(Dataset):
    def __init__(self, root, transform=None):
        self.root = root
        self.transform = transform
        self.env = lmdb.open(os.path.join(root, "train.lmdb"), readonly=True, lock=False, readahead=False)
        with self.env.begin(write=False) as txn:
            self.length = int(txn.get(b"__len__").decode())

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        with self.env.begin(write=False) as txn:
            sample = pickle.loads(txn.get(str(index).encode()))
        if self.transform is not None:
            sample = self.transform(sample)
        return sample
'''

H5_DS = '''\
import h5py as h
import torch.utils.data as tud


class H5Dataset(tud.Dataset):
    def __init__(self, path, key="images"):
        self.key = key
        self.h5 = h.File(path, "r")
        self.n = self.h5[key].shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.h5[self.key][i].astype("float32")
'''

FILE_DS = '''\
import os

from torch.utils import data


class RecordFile(data.Dataset):
    RECORD = 16

    def __init__(self, path):
        self.fh = open(path, "rb", buffering=0)  # unbuffered: every seek moves the shared offset
        self.fh.seek(0, os.SEEK_END)
        self.count = self.fh.tell() // self.RECORD

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        self.fh.seek(i * self.RECORD)
        return self.fh.read(self.RECORD)
'''

LAZY_DS = '''\
import lmdb
from torch.utils.data import Dataset


class LazyLMDB(Dataset):
    """FRK103: lazy, but __len__ opens it in the parent."""

    def __init__(self, path):
        self.path = path
        self.env = None

    def _init_db(self):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)

    def __len__(self):
        self._init_db()
        return self.env.stat()["entries"]

    def __getitem__(self, i):
        self._init_db()
        with self.env.begin() as txn:
            return txn.get(str(i).encode())
'''

LAZY_H5_DS = '''\
import h5py
import torch
from torch.utils.data import Dataset


class Frames(Dataset):
    """FRK103: the file and a dataset derived from it, opened together, lazily; __len__ opens them."""

    def __init__(self, path):
        self.path = path
        self._vil = None

    def _lazy_init(self):
        if self._vil is None:
            self._file = h5py.File(self.path, "r")
            self._vil = self._file["vil"]

    def __len__(self):
        self._lazy_init()
        return self._vil.shape[0]

    def __getitem__(self, i):
        self._lazy_init()
        return torch.from_numpy(self._vil[i])
'''

H5_FIXED = '''\
import os

import h5py as h
import torch.utils.data as tud


class H5Dataset(tud.Dataset):
    def __init__(self, path, key="images"):
        self.key = key
        self._h5_args = (path,)
        self.n = self.h5[key].shape[0]
        self._close_h5()  # each process reopens it on first use

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.h5[self.key][i].astype("float32")

    # forksafe: one h5py.File() handle per process (PID-checked), not pickled
    @property
    def h5(self):
        if getattr(self, "_h5_pid", None) != os.getpid():
            self._close_h5()
            self._h5 = h.File(*self._h5_args, "r")
            self._h5_pid = os.getpid()
        return self._h5

    def _close_h5(self):
        if getattr(self, "_h5", None) is not None:
            self._h5.close()
        self._h5 = self._h5_pid = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_h5", None)
        state.pop("_h5_pid", None)
        return state
'''

RUNNER = r'''
import os
import pickle
import sys

import h5py
import lmdb
import numpy as np
import torch
from torch.utils.data import ConcatDataset, DataLoader

import file_ds
import h5_ds
import lazy_ds
import lazy_h5_ds
import lmdb_ds


def build(root):
    env = lmdb.open(os.path.join(root, "train.lmdb"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(64):
            txn.put(str(i).encode(), pickle.dumps({"id": i, "x": [i, i * i]}))
        txn.put(b"__len__", b"64")
    env.close()
    with h5py.File(os.path.join(root, "images.h5"), "w") as f:
        f["images"] = np.arange(64 * 3, dtype="uint8").reshape(64, 3)
    with open(os.path.join(root, "records.bin"), "wb") as f:
        for i in range(64):
            f.write(i.to_bytes(16, "little"))
    env = lmdb.open(os.path.join(root, "lazy.lmdb"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(16):
            txn.put(str(i).encode(), b"lazy%d" % i)
    env.close()
    with h5py.File(os.path.join(root, "frames.h5"), "w") as f:
        f["vil"] = np.arange(8 * 2, dtype="int16").reshape(8, 2) - 7


def dataset(root):
    return ConcatDataset([
        lmdb_ds.LMDBDataset(root),
        h5_ds.H5Dataset(os.path.join(root, "images.h5")),
        file_ds.RecordFile(os.path.join(root, "records.bin")),
        lazy_ds.LazyLMDB(os.path.join(root, "lazy.lmdb")),
        lazy_h5_ds.Frames(os.path.join(root, "frames.h5")),
    ])


def items(loader):
    return [x.tolist() if isinstance(x, torch.Tensor) else x for x in loader]


if __name__ == "__main__":
    root = sys.argv[1]
    build(root)
    # one instance throughout (LMDB allows one environment per path and process): the parent
    # touches every handle first, then reads everything itself (the num_workers=0 baseline)
    ds = dataset(root)
    ds[0], ds[70], ds[130], ds[200], ds[210], len(ds)
    baseline = items(DataLoader(ds, batch_size=None, num_workers=0))
    assert len(baseline) == 216 and baseline[0] == {"id": 0, "x": [0, 0]}, baseline[:2]
    assert baseline[207] == b"lazy15" and baseline[215] == [7, 8], baseline[192:]
    assert baseline[64] == [0, 1, 2] and baseline[191] == (63).to_bytes(16, "little"), baseline[64:65]
    records = ds.datasets[2]
    for ctx in ("fork", "spawn", "forkserver"):
        offset = records.fh.seek(5)  # the parent's own file: workers must not move its offset
        got = items(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=ctx))
        assert got == baseline, ctx
        assert records.fh.tell() == offset, (ctx, "a worker used the parent's file description")
        print("ok", ctx, flush=True)
'''


def _run(tmp_path: Path, sources, runner: str = RUNNER) -> subprocess.CompletedProcess:
    data = tmp_path / "data"
    data.mkdir()
    return run_with_modules(tmp_path, sources, runner, data, timeout=240)


def test_h5py_fix_is_exact():
    assert fixed(H5_DS) == H5_FIXED


@pytest.mark.slow
def test_fixed_datasets_work_under_fork_spawn_and_forkserver(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("lmdb")
    pytest.importorskip("h5py")
    sources = {}
    for name, src, code in (
        ("lmdb_ds", LMDB_DS, "FRK101"),
        ("h5_ds", H5_DS, "FRK101"),
        ("file_ds", FILE_DS, "FRK101"),
        ("lazy_ds", LAZY_DS, "FRK103"),
        ("lazy_h5_ds", LAZY_H5_DS, "FRK103"),
    ):
        assert [f.code for f in check_source(src, f"{name}.py", ALL)] == [code]
        res = fix_source(src, f"{name}.py", ALL, unsafe=True)
        assert not res.errors and not res.remaining, res.remaining
        sources[name] = res.source
    proc = _run(tmp_path, sources)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert proc.stdout.split() == ["ok", "fork", "ok", "spawn", "ok", "forkserver"]


@pytest.mark.slow
def test_unfixed_datasets_fail_under_spawn(tmp_path):
    """The harness has teeth: the unfixed sources cannot even be sent to spawn workers."""
    pytest.importorskip("torch")
    pytest.importorskip("lmdb")
    pytest.importorskip("h5py")
    runner = RUNNER.replace('("fork", "spawn", "forkserver")', '("spawn",)')
    proc = _run(tmp_path, {"lmdb_ds": LMDB_DS, "h5_ds": H5_DS, "file_ds": FILE_DS, "lazy_ds": LAZY_DS,
                                 "lazy_h5_ds": LAZY_H5_DS}, runner)
    assert proc.returncode != 0
    assert "cannot pickle 'Environment' object" in proc.stderr, proc.stderr[-2000:]


# --------------------------------------------------------------------------------------------------
# derived objects kept without the handle: named on self, then lazy (two rounds of one fix run)

SPLIT = """
import h5py
from torch.utils.data import Dataset

class Chained(Dataset):
    def __init__(self, path):
        self.x = h5py.File(path, "r")["x"]  # the data

    def __getitem__(self, i):
        return self.x[i]

class Local(Dataset):
    def __init__(self, path):
        hf = h5py.File(path, "r")
        self.x = hf.get("x")
        self.n = len(hf["x"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i]
"""


def test_split_shapes_are_fixed_in_one_run():
    assert findings(SPLIT) == [("FRK101", 7, 17, "safe"), ("FRK101", 14, 13, "safe")]
    out = fixed(SPLIT)
    assert "        self._x_file_args = (path,)  # the data\n" in out
    assert "    def _x_file(self):\n" in out and '        return self._x_file["x"]\n' in out
    assert "        self._hf_args = (path,)\n" in out
    assert '        self.n = len(self._hf["x"])\n        self._close_hf()' in out
    assert 'self._x_of, self._x = self._hf, self._hf.get("x")' in out
    assert "hf = " not in out and not check_source(out, "ds.py", ALL)
    assert fixed(out) == out



def test_split_message_offers_the_fix():
    # a split plan is a fix: the message ends with what to do, not with a "no automatic fix" reason
    # (it once ended with the plan's repr, libcst nodes included: megabytes per finding)
    msgs = [f.message for f in check_dedented(SPLIT, "ds.py", CFG)]
    assert len(msgs) == 2
    for m in msgs:
        assert m.endswith("spawn workers cannot pickle it; open it lazily in each worker process"), m[:300]

@pytest.mark.parametrize(
    "body, why",
    [
        # the local is bound twice: its uses cannot all become self._hf
        ('hf = h5py.File(path, "r")\n        self.x = hf["x"]\n        hf = None',
         "hf is not assigned the handle once"),
        # the fix's name is taken
        ('self._x_file = 1\n        self.x = h5py.File(path, "r")["x"]', "self._x_file is already used"),
        # the next round would decline (the attribute is assigned elsewhere): no half-done split
        ('self.x = h5py.File(path, "r")["x"]\n\n    def reset(self):\n        self.x = []', "self.x"),
    ],
)
def test_split_declined(body, why):
    src = f"import h5py\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, path):\n        {body}\n"
    [f] = check_source(src, "ds.py", CFG)
    assert f.fix is None and why in f.message, f.message
    assert fix_source(src, "ds.py", CFG, unsafe=True).source == src


def test_split_fixed_dataset_pickles_and_reads_the_same(tmp_path):
    h5py = pytest.importorskip("h5py")
    pytest.importorskip("torch")
    import pickle
    import sys
    import types

    import numpy as np

    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(6, dtype="float32")
    mod = types.ModuleType("frk101_split_fixed")
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(fixed(SPLIT), mod.__name__, "exec"), mod.__dict__)
        for cls in (mod.Chained, mod.Local):
            ds = pickle.loads(pickle.dumps(cls(str(path))))
            assert [float(ds[i]) for i in range(6)] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert len(mod.Local(str(path))) == 6
    finally:
        del sys.modules[mod.__name__]


def test_message_names_the_dataset_that_keeps_a_reader():
    """A reader class is checked because a dataset keeps its objects: the message says which and how."""
    src = """
        import h5py
        from torch.utils.data import Dataset

        class Reader:
            def __init__(self, p):
                self.f = h5py.File(p, "r")

            def __getitem__(self, i):
                return self.f["x"][i]

        READERS = {"h5": Reader}

        class Direct(Dataset):
            def __init__(self, p):
                self.reader = Reader(p)

            def __getitem__(self, i):
                return self.reader[i]

        class Registry(Dataset):
            def __init__(self, p, kind):
                self.reader = READERS[kind](p)

            def __getitem__(self, i):
                return self.reader[i]
    """
    [f] = check_dedented(src, "ds.py", CFG)
    assert (f.line, f.col) == (7, 17)  # dedent keeps the leading blank line
    assert "opened in Reader.__init__ and kept in self.f (Reader is not a dataset, but dataset Direct keeps its objects)" in f.message
    only_registry = src.replace("self.reader = Reader(p)", "self.reader = None")
    [g] = check_dedented(only_registry, "ds.py", CFG)
    assert "(Reader is not a dataset, but dataset Registry builds its objects from a module-level registry and keeps them)" in g.message


def test_split_rewrites_only_the_statements_of_its_functions():
    """``apply_split`` rewrites the top-level statements that hold the planned functions only: the
    same code as the whole module visited, the other statements the same objects (also for a
    dataset class defined inside a top-level ``if``)."""

    import libcst as cst

    from flake8_forksafe.analysis import Analysis
    from flake8_forksafe.checks import BY_CODE
    from flake8_forksafe.config import Config
    from flake8_forksafe.families.handles.chains import (
        SplitPlan,
        _Split,
        _top_of,
        apply_split,
    )

    root = Path(__file__).resolve().parents[2]
    fixtures = sorted((root / "fixtures" / "FRK101").glob("pos_*.py"))
    sources = [p.read_text(encoding="utf-8") for p in fixtures if ".fixed" not in p.name]
    nested = (
        "import h5py\nfrom torch.utils.data import Dataset\n\nx = 1\n\nif True:\n"
        "    class D(Dataset):\n        def __init__(self, p):\n            self.data = h5py.File(p, 'r')['data']\n\n"
        "        def __getitem__(self, i):\n            return self.data[i]\n"
    )
    sources.append(nested)
    splits = 0
    for src in sources:
        a = Analysis(cst.parse_module(src), Config().knowledge)
        rule = BY_CODE["FRK101"]()
        plans = [rep.data for rep in rule.check(a) if isinstance(rep.data, SplitPlan)]
        if not plans:
            continue
        splits += 1
        got = apply_split(a.module, plans)
        assert got.code == a.module.visit(_Split(a.module, plans)).code
        kept = [s for s in got.body if any(s is t for t in a.module.body)]
        tops = {_top_of(a.module, p.fn) for p in plans}
        assert None not in tops and len(kept) == len(a.module.body) - len(tops)
    assert splits >= 3


def test_lazy_rewrite_of_the_touched_statements_is_that_of_the_whole_module(monkeypatch):
    """``apply_lazy`` visits only the top-level statements holding a node it rewrites
    (``edit.visit_statements``): every fixture's and corpus file's fix (unsafe fixes included) is
    the one a visit of the whole module gives."""
    import flake8_forksafe.families.handles.lazy as lazy

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "fixtures").glob("FRK*/*.py")) + sorted((root / "tests" / "corpus").glob("*.py"))
    sources = [p.read_text(encoding="utf-8") for p in files if ".fixed" not in p.name]
    cfg = Config(select=("FRK",))
    partial = [fix_source(s, "x.py", cfg, unsafe=True).source for s in sources]
    monkeypatch.setattr(lazy, "visit_statements", lambda module, rewrite, touched: module.visit(rewrite))
    whole = [fix_source(s, "x.py", cfg, unsafe=True).source for s in sources]
    assert partial == whole
    assert sum(p != s for p, s in zip(partial, sources)) > 50  # fixes happened


MAPPED_READER = """
    import numpy as np
    from torch.utils.data import Dataset

    class BinReader:
        def __init__(self, path):
            self._file = open(path, "rb")
            self._mmap = np.memmap(self._file, mode="r")

        def read(self, i):
            return self._mmap[i]

        def __del__(self):
            self._file.close()

    class Indexed(Dataset):
        def __init__(self, path):
            self.initialize(path)

        def initialize(self, path):
            self.path = path
            self.bin_reader = BinReader(path)

        def __getstate__(self):
            return self.path

        def __setstate__(self, state):
            self.initialize(state)

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.bin_reader.read(i)
"""


def test_reader_the_dataset_rebuilds_on_unpickling_and_reads_only_through_a_memmap(tmp_path):
    """megatron-core's IndexedDataset shape (session 11's holdout, seen: a false alarm there): the
    dataset leaves its reader out of the pickled state and builds a new one in ``__setstate__`` (spawn
    workers get their own), and no method a worker may call reads the file object (fork: the inherited
    descriptor is only the memory map's source). Checked as the CLI checks a project: the reader has no
    ``__getitem__``, so the project index finds the dataset that keeps it."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "ds.py").write_text(textwrap.dedent(MAPPED_READER))
    from tests.test_index import forksafe

    assert forksafe(tmp_path, ".", "--no-cache", "--select", "FRK101").stdout == ""
    reads_the_file = MAPPED_READER.replace("return self._mmap[i]", "self._file.seek(i)\n            return self._file.read(1)")
    (tmp_path / "ds.py").write_text(textwrap.dedent(reads_the_file))
    out = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK101").stdout.splitlines()
    assert [line.split(" ")[:2] for line in out[:1]] == [["ds.py:7:22:", "FRK101"]]
    kept_when_pickled = MAPPED_READER.replace("return self.path\n", "return self.__dict__\n")
    (tmp_path / "ds.py").write_text(textwrap.dedent(kept_when_pickled))
    out = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK101").stdout.splitlines()
    assert [line.split(" ")[:2] for line in out[:1]] == [["ds.py:7:22:", "FRK101"]]


def test_itemish_reader_the_dataset_rebuilds_on_unpickling():
    """The same with a reader the module alone shows a dataset keeping (it has ``__getitem__``)."""
    src = MAPPED_READER.replace("def read(self, i):", "def __getitem__(self, i):").replace(
        "self.bin_reader.read(i)", "self.bin_reader[i]"
    )
    assert findings(src) == []
    no_setstate = src.replace("def __setstate__(self, state):\n            self.initialize(state)\n", "")
    assert [f[:2] for f in findings(no_setstate)] == [("FRK101", 7)]


def test_a_plain_class_given_to_a_loader_through_an_annotated_parameter():
    """``def split(dataset: PatchCamelyon, n): DataLoader(dataset, num_workers=n)``: the class
    (no torch base, ``__getitem__``) is dataset-like because its objects reach a DataLoader; the
    h5py file its helper opens for ``__init__`` and whose dataset it keeps is FRK101 (vissl's
    PatchCamelyon script, a miss of session 13's holdout: seen, then fixed). Without the
    annotation, nothing says what ``dataset`` is."""
    src = """
        import h5py
        from torch.utils.data import DataLoader

        class PatchCamelyon:
            def __init__(self, path):
                self.x = self._open(path)["x"]

            def _open(self, p):
                return h5py.File(p, "r")

            def __getitem__(self, i):
                return self.x[i]

        def split(dataset: PatchCamelyon, n):
            return list(DataLoader(dataset, num_workers=n))
        """
    assert findings(src) == [("FRK101", 10, 15, None)]
    assert findings(src.replace("dataset: PatchCamelyon", "dataset")) == []


def test_a_handle_captured_by_a_local_function_kept_on_the_dataset():
    """``f = open(p)`` read by a local function (or a lambda) that ``__init__`` keeps on ``self``:
    the closure keeps the handle (pytorch-ood's TinyImages, a miss of session 13's holdout: seen,
    then fixed). No automatic fix; a local function that only reads other locals keeps no handle."""
    src = """
        from torch.utils.data import Dataset

        class TI(Dataset):
            def __init__(self, datafile, n):
                data_file = open(datafile, "rb")
                size = n

                def load_image(idx):
                    data_file.seek(idx * size)
                    return data_file.read(size)

                self.load_image = load_image

            def __getitem__(self, i):
                return self.load_image(i)
        """
    got = check_dedented(src, "ds.py", CFG)
    assert [(f.code, f.line, f.col, f.fix) for f in got] == [("FRK101", 6, 20, None)]
    assert "kept in self.load_image (captured by the local function load_image())" in got[0].message
    lam = src.replace("self.load_image = load_image", "self.load_image = lambda i: data_file.read(i)")
    got = check_dedented(lam, "ds.py", CFG)
    assert [(f.line, f.col) for f in got] == [(6, 20)] and "(captured by a lambda)" in got[0].message
    quiet = src.replace('data_file = open(datafile, "rb")', "data_file = datafile")
    assert findings(quiet) == []


PASSED = """
    import h5py
    from torch.utils.data import DataLoader, Dataset

    class DS(Dataset):
        def __init__(self, h5file, keys, opener=None):
            self.h5data = h5file
            self.keys = keys
            self.n = len(opener) if opener is not None else 0

        def __getitem__(self, i):
            return self.h5data[self.keys[i]][()]

    def make(path, keys):
        f = h5py.File(path, "r")
        ds = DS(f, keys)
        return DataLoader(ds, num_workers=4)

    def make_inline(path, keys):
        return DS(h5py.File(path, "r"), keys=keys)

    def only_used_while_constructing(path, keys):
        return DS(None, keys, opener=h5py.File(path, "r"))

    def in_a_with_block(path, keys):
        with h5py.File(path, "r") as f:
            return DS(f, keys)

    def closed(path, keys):
        f = h5py.File(path, "r")
        ds = DS(f, keys)
        f.close()
        return ds
    """


def test_a_handle_opened_outside_and_given_to_a_dataset_constructor_that_keeps_it():
    """terratorch's Sen4Map datamodule opens ``h5py.File`` in ``setup()`` and passes it to the
    dataset, whose ``__init__`` keeps it (a miss of session 13's holdout: seen, then fixed). Not: a
    parameter the constructor only uses, a ``with`` block, a handle closed in the function."""
    got = check_dedented(PASSED, "ds.py", CFG)
    assert [(f.code, f.line, f.col, f.fix) for f in got] == [("FRK101", 15, 8, None), ("FRK101", 20, 14, None)]
    assert got[0].message.startswith(
        "h5py.File() opened in make() is passed to the dataset constructor DS() as h5file, which keeps it: "
    )
    zero = PASSED.replace("num_workers=4", "num_workers=0")
    assert findings(zero) == []


def test_a_handle_given_to_a_dataset_class_of_another_module(tmp_path):
    from tests.test_index import forksafe, write

    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "geo/__init__.py": "",
            "geo/datasets.py": PASSED.split("def make(")[0],
            "geo/datamodule.py": """
                import h5py
                from torch.utils.data import DataLoader

                from geo.datasets import DS


                class DataModule:
                    def setup(self, path, keys):
                        train_file = h5py.File(path, "r")
                        self.train = DS(train_file, h5data_keys=keys)

                    def train_dataloader(self):
                        return DataLoader(self.train, num_workers=8)
                """,
        },
    )
    r = forksafe(tmp_path, "geo/datamodule.py", "--no-cache", "--select", "FRK101")
    out = [line for line in r.stdout.splitlines() if " FRK101 " in line]
    assert len(out) == 1 and out[0].startswith(f"{Path('geo/datamodule.py')}:10:22: FRK101 "), r.stdout + r.stderr
    assert "h5py.File() opened in DataModule.setup() is passed to the dataset constructor DS() as h5file" in out[0]
    assert out[0].endswith(f"as h5file, which keeps it (in DS.__init__, {Path('geo/datasets.py')}:6)")


def test_boto3_session_in_either_spelling_is_kept_per_process_without_a_close():
    # boto3 exports its session class as boto3.Session (the common spelling) and as
    # boto3.session.Session; a session has no close(): the lazy fix closes nothing
    src = '''
        import boto3
        from torch.utils.data import Dataset


        class S3Data(Dataset):
            def __init__(self, profile):
                self._session = boto3.Session(profile_name=profile)

            def __getitem__(self, i):
                return self._session.client("s3").get_object(Bucket="b", Key=str(i))
    '''
    assert findings(src) == [("FRK101", 8, 24, "safe")]
    assert findings(src.replace("boto3.Session(", "boto3.session.Session(")) == [("FRK101", 8, 24, "safe")]
    out = fixed(src)
    assert "self._session_kwargs = dict(profile_name=profile)" in out
    assert ".close()" not in out
    assert textwrap.dedent('''
        @property
        def _session(self):
            if getattr(self, "_session_pid", None) != os.getpid():
                self._session_local = boto3.Session(**self._session_kwargs)
                self._session_pid = os.getpid()
            return self._session_local
    ''').strip() in textwrap.dedent(out.split("# forksafe: one boto3.Session() object per process (PID-checked), not pickled\n", 1)[1])
