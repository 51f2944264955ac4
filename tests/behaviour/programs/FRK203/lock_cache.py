"""A decoded-image cache guarded by a threading.Lock made in __init__."""
import threading

import torch
from torch.utils.data import DataLoader, Dataset


class CachedDecode(Dataset):
    def __init__(self, n):
        self.n = n
        self.cache = {}
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.lock:
            if i not in self.cache:
                self.cache[i] = torch.arange(3) + i
            return self.cache[i]


if __name__ == "__main__":
    for batch in DataLoader(CachedDecode(6), batch_size=3, num_workers=2):
        print(batch.tolist())
