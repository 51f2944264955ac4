"""worker_init_fn variants: constant seeds (FRK602) and correct per-worker seeding."""
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

BASE_SEED = 1234


def worker_init_const(worker_id):
    np.random.seed(worker_id)  # FRK602: 4
    random.seed(1000 + worker_id)  # same worker_init_fn: one finding


def worker_init_fixed(_):
    torch.manual_seed(BASE_SEED)  # FRK602: 4


def worker_init_good(worker_id):
    s = torch.initial_seed() % 2**32
    np.random.seed(s)
    random.seed(s)


def worker_init_info(worker_id):
    info = get_worker_info()
    np.random.seed(info.seed % 2**32)


def worker_init_numpy_state(worker_id):
    np.random.seed(np.random.get_state()[1][0] + worker_id)


class NoisyRange(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i + np.random.rand(), i + random.random()


if __name__ == "__main__":
    ds = NoisyRange(64)
    loaders = {
        "const": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=worker_init_const),
        "fixed": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=worker_init_fixed),
        "good": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=worker_init_good),
        "info": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=worker_init_info),
        "state": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=worker_init_numpy_state),
        "inline": DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=lambda wid: np.random.seed(wid)),  # FRK201: 77 # FRK602: 89
    }
    for name, loader in loaders.items():
        for epoch in range(2):
            print(name, epoch, [b[0][:2].tolist() for b in loader][:1])
