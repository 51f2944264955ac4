"""Gaussian noise from np.random.RandomState (prints shapes and the noise-free means)."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self, n, sigma=0.0):
        self.clean = np.ones((n, 3), dtype="float32") * np.arange(n, dtype="float32")[:, None]
        self.sigma = sigma
        self.state = np.random.RandomState(7)

    def __len__(self):
        return len(self.clean)

    def __getitem__(self, i):
        noise = self.state.normal(0, 1, size=3).astype("float32") * self.sigma
        return torch.from_numpy(self.clean[i] + noise)


if __name__ == "__main__":
    for b in DataLoader(Noisy(6), batch_size=3, num_workers=2):
        print(tuple(b.shape), b.mean(dim=1).tolist())
