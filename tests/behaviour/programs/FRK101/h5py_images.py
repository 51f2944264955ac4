"""An HDF5 image store opened in __init__ and read per item."""
import os
import tempfile

import h5py
import numpy as np
from torch.utils.data import DataLoader, Dataset


class H5Images(Dataset):
    def __init__(self, path, key="images"):
        self.key = key
        self.h5 = h5py.File(path, "r")

    def __len__(self):
        return len(self.h5[self.key])

    def __getitem__(self, i):
        return self.h5[self.key][i].astype("float32") / 255.0


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "images.h5")
    with h5py.File(path, "w") as f:
        f["images"] = np.arange(10 * 2 * 2, dtype="uint8").reshape(10, 2, 2)
    loader = DataLoader(H5Images(path), batch_size=5, num_workers=2)
    for batch in loader:
        print(tuple(batch.shape), round(float(batch.sum()), 4))
