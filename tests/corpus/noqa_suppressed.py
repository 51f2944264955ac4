"""Legacy shard dataset whose known findings are suppressed with noqa comments."""
import os
import queue
import sqlite3
import threading

import numpy as np
import torch
from torch.utils.data import Dataset

RECORD = 64


class LegacyShardDataset(Dataset):
    def __init__(self, path, db_path, seed=0):
        self.path = path
        self.fh = open(path, "rb")  # noqa: FRK101
        self.lock = threading.Lock()  # noqa
        self.db = sqlite3.connect(db_path)  # noqa: FRK203  # FRK101: 18
        self.rng = np.random.default_rng(seed)  # noqa: FRK101  # FRK601: 19
        self.prefetch = queue.Queue(maxsize=8)  # NOQA:FRK203
        self.g = torch.Generator()  # noqa: FRK601,FRK203
        self.size = os.path.getsize(path) // RECORD

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        with self.lock:
            self.fh.seek(i * RECORD)
            raw = self.fh.read(RECORD)
        label = self.db.execute("SELECT label FROM labels WHERE idx = ?", (i,)).fetchone()[0]
        x = np.frombuffer(raw, dtype=np.uint8).astype(np.float32)
        x += self.rng.normal(0, 1, size=x.shape).astype(np.float32)
        perm = torch.randperm(x.shape[0], generator=self.g)
        return torch.from_numpy(x)[perm], label
