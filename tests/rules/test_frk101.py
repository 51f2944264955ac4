"""FRK101: exact findings, exact fixes, and the fixed code really working in DataLoader workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source

CFG = Config(select=("FRK101",)).with_knowledge()
ALL = Config(select=("FRK", "FRK501")).with_knowledge()


def findings(src, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check_source(textwrap.dedent(src), "ds.py", cfg)]


def fixed(src, cfg=CFG):
    res = fix_source(textwrap.dedent(src), "ds.py", cfg, unsafe=True)
    assert not res.errors
    return res.source


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
        self.fh = open(path, "rb")
        self.fh.seek(0, os.SEEK_END)
        self.count = self.fh.tell() // self.RECORD

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        self.fh.seek(i * self.RECORD)
        return self.fh.read(self.RECORD)
'''

H5_FIXED = '''\
import h5py as h
import torch.utils.data as tud
import os


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

    @property
    def h5(self):
        """The h5py.File() handle of this process: opened on first use, reopened after a fork."""
        if getattr(self, "_h5_pid", None) != os.getpid():
            self._close_h5()
            self._h5 = h.File(*self._h5_args, "r")
            self._h5_pid = os.getpid()
        return self._h5

    def _close_h5(self):
        """Close this process's h5py.File() handle if it is open (the next use reopens it)."""
        handle = getattr(self, "_h5", None)
        self._h5 = self._h5_pid = None
        if handle is not None:
            handle.close()

    def __getstate__(self):
        """Pickle without the per-process handles: each process opens its own on first use."""
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


def dataset(root):
    return ConcatDataset([
        lmdb_ds.LMDBDataset(root),
        h5_ds.H5Dataset(os.path.join(root, "images.h5")),
        file_ds.RecordFile(os.path.join(root, "records.bin")),
    ])


def items(loader):
    return [x.tolist() if isinstance(x, torch.Tensor) else x for x in loader]


if __name__ == "__main__":
    root = sys.argv[1]
    build(root)
    # one instance throughout (LMDB allows one environment per path and process): the parent
    # touches every handle first, then reads everything itself (the num_workers=0 baseline)
    ds = dataset(root)
    ds[0], ds[70], ds[130], len(ds)
    baseline = items(DataLoader(ds, batch_size=None, num_workers=0))
    assert len(baseline) == 192 and baseline[0] == {"id": 0, "x": [0, 0]}, baseline[:2]
    assert baseline[64] == [0, 1, 2] and baseline[191] == (63).to_bytes(16, "little"), baseline[64:65]
    for ctx in ("fork", "spawn", "forkserver"):
        got = items(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=ctx))
        assert got == baseline, ctx
        print("ok", ctx, flush=True)
'''


def _run(tmp_path: Path, sources) -> subprocess.CompletedProcess:
    for name, src in sources.items():
        (tmp_path / f"{name}.py").write_text(src)
    (tmp_path / "runner.py").write_text(RUNNER)
    data = tmp_path / "data"
    data.mkdir()
    env = dict(os.environ, PYTHONPATH=str(tmp_path), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "runner.py"), str(data)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"DataLoader run timed out:\n{out}\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_fixed_datasets_work_under_fork_spawn_and_forkserver(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("lmdb")
    pytest.importorskip("h5py")
    sources = {}
    for name, src in (("lmdb_ds", LMDB_DS), ("h5_ds", H5_DS), ("file_ds", FILE_DS)):
        assert [f[0] for f in findings(src)] == ["FRK101"]
        res = fix_source(src, f"{name}.py", ALL, unsafe=True)
        assert not res.errors and not res.remaining, res.remaining
        sources[name] = res.source
    proc = _run(tmp_path, sources)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert proc.stdout.split() == ["ok", "fork", "ok", "spawn", "ok", "forkserver"]


@pytest.mark.slow
def test_unfixed_datasets_fail_under_spawn(tmp_path):
    """The harness has teeth: the same run over the unfixed sources fails (spawn cannot pickle)."""
    pytest.importorskip("torch")
    pytest.importorskip("lmdb")
    pytest.importorskip("h5py")
    runner = RUNNER.replace('("fork", "spawn", "forkserver")', '("spawn",)')
    (tmp_path / "runner_src").write_text(runner)
    sources = {"lmdb_ds": LMDB_DS, "h5_ds": H5_DS, "file_ds": FILE_DS}
    global RUNNER_OVERRIDE
    proc = _run_with(tmp_path, sources, runner)
    assert proc.returncode != 0
    assert "pickle" in proc.stderr


def _run_with(tmp_path, sources, runner):
    global RUNNER
    saved = RUNNER
    RUNNER = runner
    try:
        return _run(tmp_path, sources)
    finally:
        RUNNER = saved
