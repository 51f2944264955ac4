"""Seeds numpy and torch from worker_id; items read from a temp .npy file."""
import os
import tempfile

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def worker_init_fn(worker_id):
    np.random.seed(worker_id)
    torch.manual_seed(worker_id)


class Arrays(Dataset):
    def __init__(self, path):
        self.arr = np.load(path)

    def __len__(self):
        return len(self.arr)

    def __getitem__(self, i):
        return self.arr[i] * 2


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "a.npy")
    np.save(path, np.arange(10).reshape(5, 2))
    for b in DataLoader(Arrays(path), batch_size=5, num_workers=2, worker_init_fn=worker_init_fn):
        print(b.tolist())
