"""Property-based: generated dataset classes with handles, lambdas, locks and RNGs in varied shapes.

For every generated module: the fix output parses, a second fix changes nothing, and no finding
that had an applicable fix remains (only findings without an automatic fix may stay).
"""

from __future__ import annotations

import libcst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source

ALL = Config(select=("FRK", "FRK501"))

IMPORTS = st.sampled_from(
    [
        ("from torch.utils.data import Dataset, DataLoader", "Dataset", "DataLoader"),
        ("import torch.utils.data as tud", "tud.Dataset", "tud.DataLoader"),
        ("from torch.utils import data", "data.Dataset", "data.DataLoader"),
    ]
)
HANDLES = st.sampled_from(
    [
        ("import lmdb", "lmdb.open(path, readonly=True, lock=False)", "with self.{a}.begin() as txn:\n            return txn.get(str(i).encode())"),
        ("import h5py", 'h5py.File(path, "r")', 'return self.{a}["x"][i]'),
        ("", 'open(path, "rb")', "self.{a}.seek(i * 4)\n        return self.{a}.read(4)"),
        ("import sqlite3", "sqlite3.connect(path)", 'return self.{a}.execute("select 1").fetchone()'),
    ]
)
EXTRAS = st.lists(
    st.sampled_from(
        [
            ("import threading", "self.lock = threading.Lock()", "with self.lock:\n            pass"),
            ("import numpy as np", "self.rng = np.random.default_rng(0)", "_ = self.rng.random()"),
            ("", "self.transform = lambda x: x", "_ = self.transform(i)"),
            ("import random", "self.r = random.Random(1)", "_ = self.r.random()"),
        ]
    ),
    max_size=3,
    unique=True,
)
ATTR = st.sampled_from(["env", "f", "db", "handle", "fh"])
VIA_HELPER = st.booleans()
WORKERS = st.sampled_from(["0", "2", "NUM_WORKERS"])


@st.composite
def modules(draw):
    imp, base, loader = draw(IMPORTS)
    hmod, factory, use = draw(HANDLES)
    extras = draw(EXTRAS)
    attr = draw(ATTR)
    helper = draw(VIA_HELPER)
    workers = draw(WORKERS)
    head = [imp] + sorted({hmod} | {e[0] for e in extras} - {""})
    init = [f"self.path = path"]
    opener = f"self.{attr} = {factory}"
    if helper:
        init.append("self._open()")
    else:
        init.append(opener)
    init += [e[1] for e in extras]
    body = [e[2] for e in extras] + [use.format(a=attr)]
    src = "\n".join(h for h in head if h) + "\n\nNUM_WORKERS = 4\n\n\n"
    src += f"class Generated({base}):\n    def __init__(self, path):\n"
    src += "".join(f"        {line}\n" for line in init)
    if helper:
        src += f"\n    def _open(self):\n        {opener}\n"
    src += "\n    def __len__(self):\n        return 8\n"
    src += "\n    def __getitem__(self, i):\n" + "".join(
        "        " + chunk + "\n" for chunk in body
    )
    src += f'\n\ndef make_loader(path):\n    return {loader}(Generated(path), num_workers={workers})\n'
    return src


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=modules(), unsafe=st.booleans())
def test_generated_datasets_fix_cleanly(src, unsafe):
    compile(src, "gen.py", "exec")
    before = check_source(src, "gen.py", ALL)
    assert any(f.code == "FRK101" for f in before), (src, before)
    res = fix_source(src, "gen.py", ALL, unsafe=unsafe)
    assert not res.errors, res.errors
    libcst.parse_module(res.source)
    compile(res.source, "gen.py", "exec")
    again = fix_source(res.source, "gen.py", ALL, unsafe=unsafe)
    assert not again.changed, res.source
    allowed = {"safe"} | ({"unsafe"} if unsafe else set())
    left = [f for f in res.remaining if f.fix in allowed]
    assert not left, (res.source, left)
