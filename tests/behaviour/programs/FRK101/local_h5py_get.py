"""Features kept from an HDF5 file opened into a local; the length and a scale attribute are read in
__init__."""
import os
import tempfile

import h5py
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, path):
        hf = h5py.File(path, "r")
        self.feats = hf.get("feats")
        self.scale = float(hf.attrs["scale"])
        self.n = len(hf["feats"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.feats[i] * self.scale


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "feats.h5")
    with h5py.File(path, "w") as f:
        f["feats"] = np.arange(8 * 3, dtype="float32").reshape(8, 3)
        f.attrs["scale"] = 0.5
    ds = Features(path)
    print(len(ds), ds.scale, ds.feats.shape)
    for batch in DataLoader(ds, batch_size=4, num_workers=2, shuffle=False):
        print(batch.tolist())
