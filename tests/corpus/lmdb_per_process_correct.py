"""LMDB datasets that already do the per-process lazy pattern correctly. Clean."""
import os
import pickle

import lmdb
import torch
from torch.utils.data import Dataset


class LmdbImageDataset(Dataset):
    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        env = lmdb.open(path, readonly=True, lock=False)
        with env.begin() as txn:
            self.keys = [k for k, _ in txn.cursor()]
        env.close()
        self._env = None
        self._pid = None

    def _get_env(self):
        pid = os.getpid()
        if self._env is None or self._pid != pid:
            if self._env is not None:
                self._env.close()
            self._env = lmdb.open(self.path, readonly=True, lock=False, readahead=False)
            self._pid = pid
        return self._env

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_env"] = None
        state["_pid"] = None
        return state

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        with self._get_env().begin(write=False) as txn:
            img = pickle.loads(txn.get(self.keys[i]))
        if self.transform is not None:
            img = self.transform(img)
        return img


class LmdbTextDataset(Dataset):
    """__len__ goes through the lazy handle, which is PID-checked and dropped when pickled."""

    def __init__(self, path):
        self.path = path
        self._env = None
        self._owner = None

    def _db(self):
        if self._env is None or self._owner != os.getpid():
            self._env = lmdb.open(self.path, readonly=True, lock=False)
            self._owner = os.getpid()
        return self._env

    def __getstate__(self):
        d = self.__dict__.copy()
        d["_env"] = None
        return d

    def __len__(self):
        with self._db().begin() as txn:
            return txn.stat()["entries"]

    def __getitem__(self, i):
        with self._db().begin() as txn:
            return torch.tensor(pickle.loads(txn.get(str(i).encode())))
