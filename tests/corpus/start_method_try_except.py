"""Start method configured at import time after torch, wrapped in try/except (FRK402 only)."""
import logging

import torch
import torch.multiprocessing as tmp
from torch.utils.data import DataLoader, TensorDataset

log = logging.getLogger(__name__)

try:
    tmp.set_start_method("spawn")  # FRK402: 4
except RuntimeError:
    log.debug("start method already set")


def configure(method="spawn"):
    # Inside a function: only runs when called (from the guarded entry point below).
    tmp.set_start_method(method, force=True)


def make_loader(n=1000, workers=2):
    x = torch.randn(n, 16)
    y = (x.sum(dim=1) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True, num_workers=workers,
                      persistent_workers=workers > 0)


def fit(loader, epochs=3):
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model


if __name__ == "__main__":
    configure()
    fit(make_loader())
