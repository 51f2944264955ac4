"""An LMDB dataset of pickled records, the environment opened in __init__."""
import pickle
import tempfile

import lmdb
from torch.utils.data import DataLoader, Dataset


class LMDBRecords(Dataset):
    def __init__(self, path):
        self.env = lmdb.open(path, readonly=True, lock=False)
        with self.env.begin() as txn:
            self.length = int(txn.get(b"__len__"))

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return pickle.loads(txn.get(str(i).encode()))


def build(path):
    env = lmdb.open(path, map_size=1 << 22)
    with env.begin(write=True) as txn:
        for i in range(12):
            txn.put(str(i).encode(), pickle.dumps({"id": i, "label": i % 3}))
        txn.put(b"__len__", b"12")
    env.close()


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    build(root)
    for batch in DataLoader(LMDBRecords(root), batch_size=4, num_workers=2):
        print(batch["id"].tolist(), batch["label"].tolist())
