"""Forkserver chosen (torch alias) after the torch imports, with a small sum reduction."""
import torch
import torch.multiprocessing as tmp
from torch.utils.data import DataLoader

tmp.set_start_method("forkserver")

if __name__ == "__main__":
    total = torch.zeros(())
    for b in DataLoader(torch.arange(10.0), batch_size=5, num_workers=2):
        total += b.sum()
        print(b.tolist())
    print("total", float(total))
