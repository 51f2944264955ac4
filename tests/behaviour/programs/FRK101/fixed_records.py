"""Fixed-size binary records read with seek/read from a file opened in __init__."""
import os
import struct
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

RECORD = struct.Struct("<if")


class RecordFile(Dataset):
    def __init__(self, path):
        self.fh = open(path, "rb")
        self.n = os.path.getsize(path) // RECORD.size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.fh.seek(i * RECORD.size)
        label, value = RECORD.unpack(self.fh.read(RECORD.size))
        return torch.tensor([value]), label


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "records.bin")
    with open(path, "wb") as f:
        for i in range(9):
            f.write(RECORD.pack(i % 2, i * 0.5))
    for x, y in DataLoader(RecordFile(path), batch_size=3, num_workers=2):
        print(x.squeeze(1).tolist(), y.tolist())
