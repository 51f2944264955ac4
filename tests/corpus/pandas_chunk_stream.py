"""Streams a large CSV in chunks (IterableDataset) with an HDF5 side table."""
import numpy as np
import pandas as pd
import torch
from torch.utils.data import IterableDataset, get_worker_info


class CsvChunkStream(IterableDataset):
    def __init__(self, csv_path, meta_path, store_path, chunksize=50_000, label_col="target"):
        super().__init__()
        self.meta = pd.read_csv(meta_path)
        self.feature_cols = [c for c in self.meta["column"] if c != label_col]
        self.label_col = label_col
        self.reader = pd.read_csv(csv_path, chunksize=chunksize, usecols=self.feature_cols + [label_col])  # FRK101: 22
        self.store = pd.HDFStore(store_path, mode="r")  # FRK101: 21
        self.norm = self.store["normalization"]

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        mu = self.norm.loc["mean", self.feature_cols].to_numpy(np.float32)
        sd = self.norm.loc["std", self.feature_cols].to_numpy(np.float32)
        for k, chunk in enumerate(self.reader):
            if k % nw != wid:
                continue
            x = (chunk[self.feature_cols].to_numpy(np.float32) - mu) / sd
            y = chunk[self.label_col].to_numpy(np.int64)
            for i in range(len(chunk)):
                yield torch.from_numpy(x[i]), int(y[i])


class CsvInMemory(torch.utils.data.Dataset):
    """Whole table read eagerly: no handle kept (not flagged)."""

    def __init__(self, csv_path, label_col="target"):
        df = pd.read_csv(csv_path)
        self.x = df.drop(columns=[label_col]).to_numpy(np.float32)
        self.y = df[label_col].to_numpy(np.int64)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])
