"""A module that rebinds `os` (the platform name used in its report): the fix's `os.getpid()` must
not read it."""
import sys
import tempfile
from pathlib import Path

from torch.utils.data import DataLoader, Dataset

os = "linux" if sys.platform.startswith("linux") else "other"


class Shards(Dataset):
    def __init__(self, path):
        self.fh = open(path, "rb")

    def __len__(self):
        return 6

    def __getitem__(self, i):
        self.fh.seek(i * 4)
        return int.from_bytes(self.fh.read(4), "little")


if __name__ == "__main__":
    path = Path(tempfile.mkdtemp()) / "shard.bin"
    path.write_bytes(b"".join((i * 7).to_bytes(4, "little") for i in range(6)))
    print("platform", os)
    for batch in DataLoader(Shards(str(path)), batch_size=2, num_workers=2):
        print(batch.tolist())
