"""Datasets built on MONAI and PyTorch Geometric base classes."""
import sqlite3

import h5py
import numpy as np
import torch
from monai.data import Dataset as MonaiDataset
from torch_geometric.data import Data
from torch_geometric.data import Dataset as PygDataset


class BratsH5(MonaiDataset):
    def __init__(self, data, index_h5, transform=None, loader=lambda p: np.load(p)):  # FRK201: 62
        super().__init__(data=data, transform=transform)
        self.index = h5py.File(index_h5, "r")  # FRK101: 21
        self.loader = loader

    def _transform(self, index):
        item = dict(self.data[index])
        item["image"] = self.loader(item["image"])
        item["bbox"] = self.index["bbox"][index]
        return self.transform(item) if self.transform is not None else item


class MoleculeGraphs(PygDataset):
    def __init__(self, root, db_path, transform=None):
        self.conn = sqlite3.connect(db_path)  # FRK101: 20
        self.n = self.conn.execute("SELECT COUNT(*) FROM mols").fetchone()[0]
        super().__init__(root, transform)

    @property
    def raw_file_names(self):
        return []

    @property
    def processed_file_names(self):
        return []

    def len(self):
        return self.n

    def get(self, idx):
        atoms, edges = self.conn.execute("SELECT atoms, edges FROM mols WHERE id = ?", (idx,)).fetchone()
        x = torch.from_numpy(np.frombuffer(atoms, dtype=np.float32).reshape(-1, 16).copy())
        edge_index = torch.from_numpy(np.frombuffer(edges, dtype=np.int64).reshape(2, -1).copy())
        return Data(x=x, edge_index=edge_index)
