import os
import tempfile

from base import FileDataset
from torch.utils.data import DataLoader


class Bytes(FileDataset):
    def __init__(self, path):
        super().__init__(path)
        self.fh = open(path, "rb")

    def __len__(self):
        return 4

    def __getitem__(self, i):
        self.fh.seek(i)
        return self.fh.read(1)[0]


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "b.bin")
    with open(path, "wb") as f:
        f.write(bytes([5, 6, 7, 8]))
    for b in DataLoader(Bytes(path), batch_size=2, num_workers=2):
        print(b.tolist())
