"""`import multiprocessing as mp` after torch, spawn set at module level."""
import torch
import multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

mp.set_start_method("spawn")

if __name__ == "__main__":
    ds = TensorDataset(torch.arange(6).view(3, 2), torch.tensor([0, 1, 0]))
    for x, y in DataLoader(ds, batch_size=3, num_workers=2):
        print(x.tolist(), y.tolist())
