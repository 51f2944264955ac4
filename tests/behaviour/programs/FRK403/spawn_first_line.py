"""Spawn set before torch is imported, but without force=True."""
import multiprocessing

multiprocessing.set_start_method("spawn")

import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

if __name__ == "__main__":
    for b in DataLoader(torch.arange(6), batch_size=2, num_workers=2):
        print(b.tolist())
