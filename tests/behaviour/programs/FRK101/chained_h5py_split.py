"""A split of an HDF5 file kept as a dataset subscripted off the file call (h5py.File(p)[key])."""
import os
import tempfile

import h5py
import numpy as np
from torch.utils.data import DataLoader, Dataset


class SplitImages(Dataset):
    def __init__(self, path, split="train"):
        self.split = split
        self.images = h5py.File(path, "r")[f"{split}/images"]

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, i):
        return self.images[i].astype("float32") / 10.0


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "splits.h5")
    with h5py.File(path, "w") as f:
        f["train/images"] = np.arange(12 * 4, dtype="uint8").reshape(12, 2, 2)
        f["val/images"] = np.ones((3, 2, 2), dtype="uint8")
    for split in ("train", "val"):
        ds = SplitImages(path, split)
        print(split, len(ds), ds.images.shape, ds.images.dtype)
        for batch in DataLoader(ds, batch_size=4, num_workers=2):
            print(tuple(batch.shape), round(float(batch.sum()), 3))
