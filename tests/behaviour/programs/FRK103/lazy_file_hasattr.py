"""A binary file opened on first use (hasattr check); __len__ reads its size through it."""
import os
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, path, width=4):
        self.path = path
        self.width = width

    def handle(self):
        if not hasattr(self, "fh"):
            self.fh = open(self.path, "rb")
        return self.fh

    def __len__(self):
        fh = self.handle()
        fh.seek(0, os.SEEK_END)
        return fh.tell() // self.width

    def __getitem__(self, i):
        fh = self.handle()
        fh.seek(i * self.width)
        return torch.frombuffer(bytearray(fh.read(self.width)), dtype=torch.uint8).sum()


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "s.bin")
    with open(path, "wb") as f:
        f.write(bytes(range(24)))
    for batch in DataLoader(Samples(path), batch_size=3, num_workers=2):
        print(batch.tolist())
