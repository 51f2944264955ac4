"""FRK103: lazy handles opened on the parent side, and the fix adding what is missing."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from tests.rules._support import ALL, check_dedented, fix_dedented

CFG = Config(select=("FRK103",))


def findings(src):
    return [(f.line, f.col, f.fix) for f in check_dedented(src, "m.py", CFG)]


def fixed(src):
    return fix_dedented(src, "m.py", CFG)


PID_ONLY = """
import os
import h5py
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, p):
        self.p = p
        self.f = None
        self.n = len(self.file()["x"])

    def file(self):
        if self.f is None:
            self.f = h5py.File(self.p, "r")
        return self.f

    def __getitem__(self, i):
        return self.file()["x"][i]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["f"] = None
        return state
"""


def test_missing_pid_check_only():
    (f,) = check_source(textwrap.dedent(PID_ONLY), "m.py", CFG)
    assert (f.line, f.col, f.fix) == (14, 21, "safe")
    assert f.message == (
        "lazy h5py.File() in self.f is opened on the parent side of DS (__init__, __len__ or a property "
        "they use): forked workers inherit the parent's handle (no os.getpid() check); reopen it when "
        "the PID changes"
    )
    out = fixed(PID_ONLY)
    assert out == textwrap.dedent(PID_ONLY).replace(
        '        if self.f is None:\n            self.f = h5py.File(self.p, "r")\n',
        '        if self.f is None or getattr(self, "_f_pid", None) != os.getpid():\n'
        "            if self.f is not None:\n"
        "                self.f.close()  # inherited through fork: close it before reopening\n"
        '            self.f = h5py.File(self.p, "r")\n'
        "            self._f_pid = os.getpid()\n",
    )
    assert not check_source(out, "m.py", ALL)


HASATTR = """
import lmdb
from torch.utils.data import Dataset

class DS(Dataset):
    def __init__(self, p):
        self.p = p

    @property
    def env(self):
        if not hasattr(self, "_env"):
            self._env = lmdb.open(self.p, readonly=True)
        return self._env

    def __len__(self):
        return self.env.stat()["entries"]

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return txn.get(b"%d" % i)
"""


def test_hasattr_style_gets_pop_and_getattr():
    assert findings(HASATTR) == [(12, 24, "safe")]
    out = fixed(HASATTR)
    assert (
        '        if not hasattr(self, "_env") or getattr(self, "_env_pid", None) != os.getpid():\n'
        '            if getattr(self, "_env", None) is not None:\n'
        "                self._env.close()  # inherited through fork: close it before reopening\n"
        "            self._env = lmdb.open(self.p, readonly=True)\n"
        "            self._env_pid = os.getpid()\n"
    ) in out
    assert (
        "    def __getstate__(self):\n"
        "        state = self.__dict__.copy()\n"
        '        state.pop("_env", None)\n'
        '        state.pop("_env_pid", None)\n'
        "        return state\n"
    ) in out
    assert fixed(out) == out
    assert not check_source(out, "m.py", ALL)


@pytest.mark.parametrize(
    "src",
    [
        # only the workers open it
        "import lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.p, self.env = p, None\n\n    def __len__(self):\n        return 10\n\n"
        "    def __getitem__(self, i):\n        if self.env is None:\n            self.env = lmdb.open(self.p)\n        return i\n",
        # PID check and __reduce__
        "import os, lmdb\nfrom torch.utils.data import Dataset\n\nclass DS(Dataset):\n    def __init__(self, p):\n"
        "        self.p, self.env, self.pid = p, None, None\n        self.n = self._e().stat()['entries']\n\n"
        "    def _e(self):\n        if self.env is None or self.pid != os.getpid():\n            self.env = lmdb.open(self.p)\n"
        "            self.pid = os.getpid()\n        return self.env\n\n    def __reduce__(self):\n        return (DS, (self.p,))\n",
    ],
)
def test_precision(src):
    assert findings(src) == []


def test_early_return_is_reported_without_fix():
    src = """
    import zipfile
    from torch.utils.data import Dataset

    class DS(Dataset):
        def __init__(self, p):
            self.p, self.zf = p, None
            self.names = self.z().namelist()

        def z(self):
            if self.zf is not None:
                return self.zf
            self.zf = zipfile.ZipFile(self.p)
            return self.zf

        def __getitem__(self, i):
            return self.z().read(self.names[i])
    """
    (f,) = check_source(textwrap.dedent(src), "m.py", CFG)
    assert (f.line, f.col, f.fix) == (13, 18, None)
    assert f.message.endswith("(no automatic fix: the lazy open is not directly inside its `if self.x is None:` block)")


def test_objects_derived_in_the_lazy_block_are_reset_too():
    src = """
    import h5py
    from torch.utils.data import Dataset

    class Frames(Dataset):
        def __init__(self, path):
            self.path = path
            self._vil = None

        def _lazy_init(self):
            if self._vil is None:
                self._file = h5py.File(self.path, "r")
                self._vil = self._file["vil"]

        def __len__(self):
            self._lazy_init()
            return len(self._vil)
    """
    assert findings(src) == [(12, 25, "safe")]
    out = fixed(src)
    assert (
        '        if self._vil is None or getattr(self, "_file_pid", None) != os.getpid():\n'
        '            if getattr(self, "_file", None) is not None:\n'
        "                self._file.close()  # inherited through fork: close it before reopening\n"
        '            self._file = h5py.File(self.path, "r")\n'
        "            self._file_pid = os.getpid()\n"
        '            self._vil = self._file["vil"]\n'
    ) in out
    assert '        state["_file"] = None\n        state["_vil"] = None\n        state.pop("_file_pid", None)\n' in out
    assert not check_source(out, "m.py", ALL)


def test_derived_object_set_outside_the_lazy_block_is_not_fixed():
    src = """
    import h5py
    from torch.utils.data import Dataset

    class Frames(Dataset):
        def __init__(self, path):
            self.path, self.f = path, None
            self.x = self.file()["x"]

        def file(self):
            if self.f is None:
                self.f = h5py.File(self.path, "r")
            return self.f

        def __getitem__(self, i):
            return self.x[i]
    """
    (f,) = check_source(textwrap.dedent(src), "m.py", CFG)
    assert f.fix is None and f.message.endswith("(no automatic fix: self.x, derived from the handle, is set outside the lazy block)")
