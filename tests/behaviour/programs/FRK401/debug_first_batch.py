"""Peek at the first batch of a loader at module level."""
import numpy as np
from torch.utils.data import DataLoader

data = np.arange(20, dtype="float32").reshape(10, 2)
loader = DataLoader(data, batch_size=4, num_workers=2)
first = next(iter(loader))
print("first batch", first.tolist())
print("batches", len(loader))
