"""RNG objects on datasets: created in __init__ and drawn in workers (FRK601) vs. correct ones."""
import os
import random

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


class JitterDataset(Dataset):
    def __init__(self, points, sigma=0.01, seed=0):
        self.sigma = sigma
        self.rng = np.random.default_rng(seed)  # FRK601: 19
        self.gen = torch.Generator()  # FRK601: 19
        self.gen.manual_seed(seed)
        order = np.random.default_rng(seed + 1).permutation(len(points))
        self.points = points[order]
        self.split_rng = random.Random(seed)
        self.val_idx = set(self.split_rng.sample(range(len(points)), k=len(points) // 10))

    def __len__(self):
        return len(self.points)

    def __getitem__(self, i):
        p = self.points[i] + self.rng.normal(0.0, self.sigma, size=self.points[i].shape)
        keep = torch.rand(p.shape[0], generator=self.gen) > 0.1
        return torch.from_numpy(p.astype(np.float32))[keep], i in self.val_idx


class LazyRngDataset(Dataset):
    """Per-worker RNG created on first use from the worker seed (not flagged)."""

    def __init__(self, n, p_flip=0.5):
        self.n = n
        self.p_flip = p_flip
        self._rng = None
        self._pid = None

    def _get_rng(self):
        if self._rng is None or self._pid != os.getpid():
            info = get_worker_info()
            seed = info.seed if info is not None else torch.initial_seed()
            self._rng = np.random.default_rng(seed % 2**32)
            self._pid = os.getpid()
        return self._rng

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        flip = self._get_rng().random() < self.p_flip
        return torch.arange(8).flip(0) if flip else torch.arange(8)


class GlobalRngDataset(Dataset):
    """Uses the global RNGs, which the DataLoader reseeds per worker (not flagged)."""

    def __init__(self, n):
        self.n = n
        self.offsets = np.random.rand(n)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.offsets[i] + np.random.rand() + random.random() + torch.rand(1).item()
