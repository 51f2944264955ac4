"""The issue's script: `batch_size` is rebound after the loader is built from it."""
import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.arange(16.0))
batch_size = 4
loader = DataLoader(ds, batch_size=batch_size, num_workers=2)
for (b,) in loader:
    print(tuple(b.shape), b.tolist())
batch_size = 8
print("next run uses", batch_size)
