"""A lazy LMDB environment already dropped from the pickle, but without a PID check: a forked
worker would reuse the parent's environment that __len__ opened."""
import pickle
import tempfile

import lmdb
from torch.utils.data import DataLoader, Dataset


class Vectors(Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["env"] = None
        return state

    def __len__(self):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        return self.env.stat()["entries"]

    def __getitem__(self, i):
        if self.env is None:
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        with self.env.begin() as txn:
            return pickle.loads(txn.get(str(i).encode()))


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    env = lmdb.open(root, map_size=1 << 22)
    with env.begin(write=True) as txn:
        for i in range(6):
            txn.put(str(i).encode(), pickle.dumps([i, -i]))
    env.close()
    for batch in DataLoader(Vectors(root), batch_size=2, num_workers=2):
        print([t.tolist() for t in batch])
