"""Dataset sharing a cache and counters through multiprocessing primitives (not flagged)."""
import multiprocessing as mp

import numpy as np
import torch
import torch.multiprocessing as tmp
from torch.utils.data import Dataset


class SharedCacheDataset(Dataset):
    def __init__(self, files, manager=None):
        self.files = list(files)
        self.manager = manager or mp.Manager()
        self.cache = self.manager.dict()
        self.lock = mp.Lock()
        self.hits = mp.Value("i", 0)
        self.misses = tmp.Value("i", 0)
        self.events = mp.Queue()

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if i in self.cache:
            with self.hits.get_lock():
                self.hits.value += 1
            arr = self.cache[i]
        else:
            arr = np.load(self.files[i], mmap_mode="r")[:].copy()
            with self.lock:
                self.cache[i] = arr
            with self.misses.get_lock():
                self.misses.value += 1
            self.events.put(("miss", i))
        return torch.from_numpy(arr)

    def stats(self):
        return {"hits": self.hits.value, "misses": self.misses.value}


class SharedArrayDataset(Dataset):
    """A shared-memory array created with multiprocessing.Array."""

    def __init__(self, n, dim):
        self.n, self.dim = n, dim
        self.buf = mp.Array("f", n * dim, lock=False)
        np.frombuffer(self.buf, dtype=np.float32)[:] = np.random.rand(n * dim)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        view = np.frombuffer(self.buf, dtype=np.float32).reshape(self.n, self.dim)
        return torch.from_numpy(view[i].copy())
