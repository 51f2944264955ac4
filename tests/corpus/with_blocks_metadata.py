"""Datasets that read metadata with context managers or close/delete what they open. Clean."""
import contextlib
import gzip
import tarfile

import h5py
import numpy as np
import torch
from torch.utils.data import Dataset


class GzipLines(Dataset):
    def __init__(self, path, max_lines=None):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            self.lines = [line.rstrip("\n") for line in f]
        if max_lines is not None:
            self.lines = self.lines[:max_lines]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i]


class H5Index(Dataset):
    def __init__(self, path, key="x"):
        self.path = path
        self.key = key
        f = h5py.File(path, "r")
        try:
            self.shape = f[key].shape
            self.attrs = dict(f[key].attrs)
        finally:
            f.close()

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, i):
        with h5py.File(self.path, "r") as f:
            return torch.from_numpy(np.asarray(f[self.key][i]))


class TarMembers(Dataset):
    def __init__(self, tar_path):
        self.tar_path = tar_path
        with contextlib.closing(tarfile.open(tar_path)) as tar:
            self.members = [m.name for m in tar.getmembers() if m.isfile()]
        handle = open(tar_path + ".labels", "r")
        self.labels = [int(x) for x in handle.read().split()]
        handle.close()

    def __len__(self):
        return len(self.members)

    def __getitem__(self, i):
        with tarfile.open(self.tar_path) as tar:
            data = tar.extractfile(self.members[i]).read()
        return torch.frombuffer(bytearray(data), dtype=torch.uint8), self.labels[i]
