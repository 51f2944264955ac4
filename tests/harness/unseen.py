"""Datasets the harness has never seen (not in fixtures/runtime): some safe, some hazardous.

A plain module (no pytest import): the harness subprocess and spawn workers import it by name
(``tests.harness.unseen``) to unpickle these classes.
"""

import os
import random
import time
import zipfile

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

# ----------------------------------------------------------------------------- safe


class InMemory(Dataset):
    """Tensors in memory: safe everywhere."""

    def __init__(self, n=16):
        self.x = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], i


class MemmapFeatures(Dataset):
    """np.load(mmap_mode="r"): a mapping, not a descriptor; pickles as an array. Safe everywhere."""

    def __init__(self, path):
        self.data = np.load(path, mmap_mode="r")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.data[i]))


def make_memmap(folder, n=16):
    path = os.path.join(folder, "feats.npy")
    np.save(path, np.arange(n * 4, dtype=np.float32).reshape(n, 4))
    return MemmapFeatures(path)


class TorchAugment(Dataset):
    """Random augmentation from the global torch RNG, which DataLoader reseeds per worker and epoch."""

    def __init__(self, n=16):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(i)) + torch.rand(4)


# ----------------------------------------------------------------------------- hazardous


class ZipImages(Dataset):
    """A zip archive opened once in __init__ (like np.load of an .npz): one shared file offset."""

    def __init__(self, path):
        self.zf = zipfile.ZipFile(path)  # noqa: FRK101 - the hazard under test
        self.names = sorted(self.zf.namelist())

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return self.zf.read(self.names[i])


def make_zip(folder, n=16):
    path = os.path.join(folder, "images.zip")
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(n):
            zf.writestr(f"img{i:03d}.raw", bytes([i]) * 32)
    return ZipImages(path)


SCALE = 1


class Scaled(Dataset):
    """Reads a module-level setting the program changes at run time: spawn/forkserver workers re-import
    the module and see the default again."""

    def __init__(self, n=12):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * SCALE


def make_scaled(n=12):
    global SCALE
    SCALE = 3  # e.g. set from the command line in the training script
    return Scaled(n)


class ShuffledStream(IterableDataset):
    """An IterableDataset drawing from a random.Random made in __init__: every worker replays it."""

    def __init__(self, n=24, seed=1):
        self.n = n
        self.rng = random.Random(seed)  # noqa: FRK601 - the hazard under test

    def __iter__(self):
        for _ in range(self.n):
            yield self.rng.random()


class StuckInWorkers(Dataset):
    """Blocks forever once it runs anywhere but in the process that built it (a stand-in for a lock that a
    parent thread held at fork time)."""

    def __init__(self, n=4):
        self.n = n
        self.owner = os.getpid()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if os.getpid() != self.owner:
            time.sleep(3600)
        return i


class NoiseStream(IterableDataset):
    """Sharded stream of global-NumPy noise; correct only if each worker is seeded differently per epoch."""

    def __init__(self, n=24):
        self.n = n

    def __iter__(self):
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        shard, k = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(shard, self.n, k):
            yield i, float(np.random.rand())


def seed_by_id(worker_id):
    np.random.seed(worker_id)
