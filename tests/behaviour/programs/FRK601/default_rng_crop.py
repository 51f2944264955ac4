"""Random crops from a numpy Generator made in __init__ (the stream changes with the fix: the
program prints the crop shapes and the set of image ids, which must not)."""
import numpy as np
from torch.utils.data import DataLoader, Dataset


class RandomCrop(Dataset):
    def __init__(self, n, size=8, crop=4, seed=0):
        self.images = np.arange(n * size * size, dtype="float32").reshape(n, size, size)
        self.crop = crop
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        top, left = self.rng.integers(0, self.images.shape[1] - self.crop, size=2)
        return i, self.images[i, top:top + self.crop, left:left + self.crop]


if __name__ == "__main__":
    seen = []
    for ids, crops in DataLoader(RandomCrop(6), batch_size=3, num_workers=2):
        seen += ids.tolist()
        print(tuple(crops.shape))
    print(sorted(seen))
