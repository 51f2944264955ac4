"""Histology patch-feature bags stored in HDF5 (CLAM / camelyon style)."""
import h5py as h
import numpy as np
import torch
from torch.utils import data


class PatchBagDataset(data.Dataset):
    """One item per slide: all patch features of the slide."""

    def __init__(self, feats_path, coords_path, labels_csv, normalize=True):
        self.h5 = h.File(feats_path, "r")  # FRK101: 18
        self.features = self.h5["features"]
        self.coords = h.File(coords_path, "r")["coords"]  # FRK101: 22
        self.slide_ids, self.labels = self._read_labels(labels_csv)
        self.normalize = normalize
        self.mean = np.asarray(self.features.attrs["mean"], dtype=np.float32)
        self.std = np.asarray(self.features.attrs["std"], dtype=np.float32)

    @staticmethod
    def _read_labels(path):
        ids, labels = [], []
        with open(path) as f:
            next(f)
            for line in f:
                sid, lab = line.rstrip("\n").split(",")
                ids.append(sid)
                labels.append(int(lab))
        return ids, np.asarray(labels)

    def __len__(self):
        return len(self.slide_ids)

    def __getitem__(self, idx):
        sid = self.slide_ids[idx]
        grp = self.h5[sid]
        feats = torch.from_numpy(grp[()].astype(np.float32))
        if self.normalize:
            feats = (feats - torch.from_numpy(self.mean)) / torch.from_numpy(self.std)
        xy = torch.from_numpy(self.coords[idx])
        return feats, xy, int(self.labels[idx])


class SinglePatchDataset(data.Dataset):
    """Reads one patch per item; opens the file lazily in the worker only (not flagged)."""

    def __init__(self, path, transform=None):
        self.path = path
        self.transform = transform
        with h.File(path, "r") as f:
            self.length = f["imgs"].shape[0]
        self.file = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.file is None:
            self.file = h.File(self.path, "r")
        img = self.file["imgs"][i]
        if self.transform:
            img = self.transform(img)
        return img
