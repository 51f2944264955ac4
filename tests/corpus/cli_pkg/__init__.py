"""Tiny package whose ``python -m cli_pkg`` entry point benchmarks a loader. Clean."""
import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = ["SyntheticImages", "describe"]


class SyntheticImages(Dataset):
    def __init__(self, n=1024, size=64, channels=3):
        self.n = n
        self.size = size
        self.channels = channels

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = np.random.default_rng(i)
        img = g.random((self.channels, self.size, self.size), dtype=np.float32)
        return torch.from_numpy(img), i % 10


def describe(ds):
    x, y = ds[0]
    return f"{type(ds).__name__}: {len(ds)} items of shape {tuple(x.shape)}, label {y}"


def stats(ds, n=16):
    xs = torch.stack([ds[i][0] for i in range(min(n, len(ds)))])
    return {"mean": xs.mean().item(), "std": xs.std().item()}
