"""A helper method called by __init__ moves the images to the device."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Images(Dataset):
    def __init__(self, arr):
        self.images = self._load(arr)

    def _load(self, arr):
        return torch.from_numpy(arr).float().to(DEVICE)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i].mean()


if __name__ == "__main__":
    arr = np.arange(5 * 4, dtype="uint8").reshape(5, 4)
    for b in DataLoader(Images(arr), batch_size=5, num_workers=2):
        print(b.cpu().tolist())
