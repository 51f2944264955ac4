"""Pre-extracted features in .npz files and images in a zip archive."""
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset


class ZipImageFeatures(Dataset):
    def __init__(self, root, transform=None):
        self.root = Path(root)
        self.archive = zipfile.ZipFile(self.root / "images.zip")  # FRK101: 23
        self.names = sorted(n for n in self.archive.namelist() if n.endswith(".png"))
        self.features = np.load(self.root / "features.npz")  # FRK101: 24
        self.mean = np.load(self.root / "mean.npy")
        self.labels = np.load(os.path.join(root, "labels.npz"))["labels"]
        self.transform = transform

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        name = self.names[i]
        with self.archive.open(name) as fh:
            img = Image.open(io.BytesIO(fh.read())).convert("L")
        key = os.path.splitext(os.path.basename(name))[0]
        feat = self.features[key] - self.mean
        if self.transform is not None:
            img = self.transform(img)
        return img, torch.from_numpy(feat.astype(np.float32)), int(self.labels[i])


class NpzInMemory(Dataset):
    """Loads every array eagerly and closes the archive (not flagged)."""

    def __init__(self, path):
        with np.load(path) as z:
            self.x = z["x"].astype(np.float32)
            self.y = z["y"].astype(np.int64)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])
