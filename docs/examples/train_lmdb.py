"""A small training script with the DataLoader hazards real projects ship.

Run `forksafe check docs/examples/` to see them, `forksafe fix --diff docs/examples/` to see the fixes.
"""
import pickle
import random
import threading

import lmdb
import numpy as np
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, Dataset

mp.set_start_method("spawn")


class LmdbFrames(Dataset):
    """Frames stored as pickled arrays in an LMDB environment."""

    def __init__(self, root, augment=True):
        self.root = root
        self.env = lmdb.open(root, readonly=True, lock=False, readahead=False)
        with self.env.begin() as txn:
            self.length = txn.stat()["entries"]
        self.lock = threading.Lock()
        self.rng = np.random.default_rng(0)
        self.augment = augment
        self.normalize = lambda x: (x - 0.5) / 0.25

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        with self.env.begin(write=False) as txn:
            frame = pickle.loads(txn.get(f"{index:08d}".encode()))
        if self.augment and self.rng.random() < 0.5:
            frame = frame[:, ::-1]
        return self.normalize(torch.as_tensor(frame.copy(), dtype=torch.float32))


def seed_worker(worker_id):
    np.random.seed(worker_id)
    random.seed(worker_id)


model = nn.Linear(64, 10)
dataset = LmdbFrames("/data/frames.lmdb")
loader = DataLoader(
    dataset,
    batch_size=32,
    num_workers=4,
    worker_init_fn=seed_worker,
    collate_fn=lambda batch: torch.stack(batch),
)
for batch in loader:
    model(batch.flatten(1)).sum().backward()
