"""Evaluation helpers that choose a start method per loader (FRK501 cases). No CUDA here."""
import multiprocessing as mp

import torch
from torch.utils import data as tdata


class Squares(tdata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor([float(i * i)])


def make_loaders(ds):
    a = tdata.DataLoader(ds, batch_size=32, num_workers=4, multiprocessing_context="spawn")  # FRK501: 8
    b = tdata.DataLoader(ds, batch_size=32, num_workers=4, multiprocessing_context=mp.get_context("forkserver"),
                         persistent_workers=True)
    c = tdata.DataLoader(ds, batch_size=32, num_workers=0, multiprocessing_context="spawn")
    d = tdata.DataLoader(ds, batch_size=32, num_workers=2,  # FRK501: 8
                         multiprocessing_context=mp.get_context("spawn"), persistent_workers=False)
    e = tdata.DataLoader(ds, batch_size=32, num_workers=2, multiprocessing_context="fork")
    ctx = mp.get_context("forkserver")
    f = tdata.DataLoader(ds, batch_size=16, num_workers=3, multiprocessing_context=ctx)  # FRK501: 8
    return a, b, c, d, e, f


def mse(loaders, model):
    out = []
    for loader in loaders:
        err = 0.0
        for x, y in loader:
            err += float(((model(x) - y) ** 2).sum())
        out.append(err)
    return out


if __name__ == "__main__":
    model = torch.nn.Linear(1, 1)
    print(mse(make_loaders(Squares(512)), model))
