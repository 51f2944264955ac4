"""A lazily opened LMDB environment that __len__ opens in the parent."""
import tempfile

import lmdb
from torch.utils.data import DataLoader, Dataset


class LazyLMDB(Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None

    def _open(self):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)

    def __len__(self):
        self._open()
        with self.env.begin() as txn:
            return txn.stat()["entries"]

    def __getitem__(self, i):
        self._open()
        with self.env.begin() as txn:
            return txn.get(b"%03d" % i).decode()


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    env = lmdb.open(root, map_size=1 << 22)
    with env.begin(write=True) as txn:
        for i in range(10):
            txn.put(b"%03d" % i, b"item-%d" % (i * i))
    env.close()
    for batch in DataLoader(LazyLMDB(root), batch_size=5, num_workers=2):
        print(batch)
