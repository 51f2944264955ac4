"""__getstate__ handling of handles: complete (reopen per process), incomplete, and closed handles."""
import os
import sqlite3

import h5py
import torch
from torch.utils.data import Dataset


class H5Reopening(Dataset):
    """Opens in __init__ but drops the handle when pickled and reopens when the PID changes."""

    def __init__(self, path):
        self.path = path
        self.h5 = h5py.File(path, "r")
        self.length = len(self.h5["x"])
        self.pid = os.getpid()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["h5"] = None
        return state

    def _file(self):
        if self.h5 is None or self.pid != os.getpid():
            self.h5 = h5py.File(self.path, "r")
            self.pid = os.getpid()
        return self.h5

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return torch.from_numpy(self._file()["x"][i])


class H5DropOnly(Dataset):
    """Drops the handle for pickling but a forked worker still uses the parent's handle."""

    def __init__(self, path):
        self.path = path
        self.h5 = h5py.File(path, "r")  # FRK101: 18
        self.length = len(self.h5["x"])

    def __getstate__(self):
        d = dict(self.__dict__)
        d.pop("h5")
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        self.h5 = h5py.File(self.path, "r")

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return torch.from_numpy(self.h5["x"][i])


class SqliteRowsClosed(Dataset):
    """Connections used only while __init__ runs (not flagged)."""

    def __init__(self, db_path, extra_db=None):
        conn = sqlite3.connect(db_path)
        self.rows = conn.execute("SELECT x, y FROM samples").fetchall()
        conn.close()
        if extra_db is not None:
            self.extra = sqlite3.connect(extra_db)
            self.rows += self.extra.execute("SELECT x, y FROM samples").fetchall()
            self.extra.close()
            del self.extra

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        x, y = self.rows[i]
        return torch.tensor(x, dtype=torch.float32), int(y)
