"""A transaction kept from an LMDB environment opened into a local; the entry count is read from the
environment in __init__."""
import os
import tempfile

import lmdb
from torch.utils.data import DataLoader, Dataset


class Captions(Dataset):
    def __init__(self, root):
        env = lmdb.open(root, readonly=True, lock=False)
        self.txn = env.begin()
        self.count = env.stat()["entries"]

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        return bytes(self.txn.get(b"%04d" % i)).decode("utf-8").upper()


if __name__ == "__main__":
    root = os.path.join(tempfile.mkdtemp(), "captions.lmdb")
    env = lmdb.open(root, map_size=1 << 22)
    with env.begin(write=True) as txn:
        for i in range(6):
            txn.put(b"%04d" % i, f"caption number {i}".encode())
    env.close()
    ds = Captions(root)
    print(len(ds))
    for batch in DataLoader(ds, batch_size=2, num_workers=2, collate_fn=list):
        print(batch)
