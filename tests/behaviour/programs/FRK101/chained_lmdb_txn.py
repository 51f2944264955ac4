"""An LMDB read transaction begun on the environment call itself (lmdb.open(...).begin())."""
import os
import pickle
import tempfile

import lmdb
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __init__(self, root):
        self.txn = lmdb.open(root, readonly=True, lock=False).begin()
        self.keys = pickle.loads(self.txn.get(b"__keys__"))

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        buf = self.txn.get(self.keys[i])
        return torch.from_numpy(np.frombuffer(buf, dtype=np.int32).copy())


if __name__ == "__main__":
    root = os.path.join(tempfile.mkdtemp(), "records.lmdb")
    env = lmdb.open(root, map_size=1 << 22)
    keys = [b"k%03d" % i for i in range(9)]
    with env.begin(write=True) as txn:
        for i, k in enumerate(keys):
            txn.put(k, np.arange(i, i + 3, dtype=np.int32).tobytes())
        txn.put(b"__keys__", pickle.dumps(keys))
    env.close()
    ds = Records(root)
    print(len(ds), ds[4].tolist())
    for batch in DataLoader(ds, batch_size=3, num_workers=2):
        print(batch.tolist())
