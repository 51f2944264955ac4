"""An HDF5 file opened lazily, but __init__ already opens it to read the length."""
import os
import tempfile

import h5py
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, path):
        self.path = path
        self.h5 = None
        self.n = len(self.file()["frames"])

    def file(self):
        if self.h5 is None:
            self.h5 = h5py.File(self.path, "r")
        return self.h5

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.file()["frames"][i].mean()


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "frames.h5")
    with h5py.File(path, "w") as f:
        f["frames"] = np.arange(8 * 3, dtype="float64").reshape(8, 3)
    for batch in DataLoader(Frames(path), batch_size=4, num_workers=2):
        print(batch.tolist())
