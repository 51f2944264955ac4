"""Random horizontal flips from a default_rng (prints the multiset of row sums, unchanged by flips)."""
import os
import tempfile

import numpy as np
from torch.utils.data import DataLoader, Dataset


class FlipDataset(Dataset):
    def __init__(self, path):
        self.images = np.load(path)
        self.rng = np.random.default_rng()

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i]
        if self.rng.random() < 0.5:
            img = img[:, ::-1].copy()
        return img


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "imgs.npy")
    np.save(path, np.arange(4 * 2 * 3).reshape(4, 2, 3))
    for b in DataLoader(FlipDataset(path), batch_size=2, num_workers=2):
        print(tuple(b.shape), sorted(b.sum(dim=2).flatten().tolist()))
