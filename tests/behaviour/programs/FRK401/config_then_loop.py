"""Settings, then a loop over two loaders, then a summary; a helper reads a setting."""
import torch
from torch.utils.data import DataLoader

SCALE = 2.0


def scaled(batch):
    return batch * SCALE


train = DataLoader(torch.arange(6.0), batch_size=3, num_workers=2)
val = DataLoader(torch.arange(6.0, 9.0), batch_size=3, num_workers=2)
results = {"train": [], "val": []}
for b in train:
    results["train"].append(scaled(b).tolist())
for b in val:
    results["val"].append(scaled(b).tolist())
print(results)
