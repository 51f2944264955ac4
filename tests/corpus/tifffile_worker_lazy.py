"""Microscopy stacks read with tifffile: handle opened lazily in the worker only. Clean."""
import numpy as np
import tifffile
import torch
from torch.utils.data import Dataset


class TiffStackDataset(Dataset):
    def __init__(self, path, patch=128, normalize=True):
        self.path = path
        self.patch = patch
        self.normalize = normalize
        with tifffile.TiffFile(path) as tif:
            series = tif.series[0]
            self.shape = series.shape
            self.dtype = series.dtype
        self.n_z = self.shape[0]
        self.per_plane = (self.shape[-2] // patch) * (self.shape[-1] // patch)
        self._tif = None

    def _pages(self):
        if self._tif is None:
            self._tif = tifffile.TiffFile(self.path)
        return self._tif.pages

    def __len__(self):
        return self.n_z * self.per_plane

    def __getitem__(self, i):
        z, k = divmod(i, self.per_plane)
        cols = self.shape[-1] // self.patch
        r, c = divmod(k, cols)
        plane = self._pages()[z].asarray()
        tile = plane[r * self.patch:(r + 1) * self.patch, c * self.patch:(c + 1) * self.patch]
        tile = tile.astype(np.float32)
        if self.normalize:
            tile = (tile - tile.mean()) / (tile.std() + 1e-6)
        return torch.from_numpy(tile)[None]

    def __del__(self):
        if self._tif is not None:
            self._tif.close()
