"""CSV rows as tensors moved to the default device in __init__ (CPU when no GPU)."""
import csv
import os
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Tabular(Dataset):
    def __init__(self, path, device=DEVICE):
        with open(path) as f:
            rows = list(csv.reader(f))[1:]
        self.x = torch.tensor([[float(v) for v in r[:-1]] for r in rows]).to(device)
        self.y = torch.tensor([int(r[-1]) for r in rows], device=device)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "t.csv")
    with open(path, "w") as f:
        f.write("a,b,label\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(6)))
    for x, y in DataLoader(Tabular(path), batch_size=3, num_workers=0 if DEVICE.type == "cuda" else 2):
        print(tuple(x.shape), x.cpu().tolist(), y.cpu().tolist())
