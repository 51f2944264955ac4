"""LMDB feature datasets whose lazy environment gets opened in the parent (FRK103)."""
import pickle

import lmdb
import numpy as np
import torch
from torch.utils.data import Dataset


class LmdbFeatureDataset(Dataset):
    def __init__(self, db_path, keys_file=None):
        self.db_path = db_path
        self.env = None
        self.keys = None
        if keys_file is not None:
            with open(keys_file, "rb") as f:
                self.keys = pickle.load(f)

    def _init_db(self):
        if self.env is None:
            self.env = lmdb.open(self.db_path, readonly=True, lock=False, readahead=False, max_readers=256)  # FRK103: 23

    def __len__(self):
        self._init_db()
        if self.keys is not None:
            return len(self.keys)
        with self.env.begin() as txn:
            return txn.stat()["entries"]

    def __getitem__(self, index):
        self._init_db()
        key = self.keys[index] if self.keys is not None else f"{index:08d}".encode()
        with self.env.begin(write=False) as txn:
            payload = pickle.loads(txn.get(key))
        feat = torch.from_numpy(np.asarray(payload["feat"], dtype=np.float32))
        return feat, int(payload["label"])


class LmdbPairDataset(Dataset):
    """The length is read through the lazy accessor from __init__ itself."""

    def __init__(self, db_path):
        self.db_path = db_path
        self.length = self._get_env().stat()["entries"] // 2

    def _get_env(self):
        if not hasattr(self, "_env"):
            self._env = lmdb.open(self.db_path, readonly=True, lock=False)  # FRK103: 24
        return self._env

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        with self._get_env().begin() as txn:
            a = pickle.loads(txn.get(f"a{i:08d}".encode()))
            b = pickle.loads(txn.get(f"b{i:08d}".encode()))
        return torch.as_tensor(a), torch.as_tensor(b)
