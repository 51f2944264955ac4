"""A framework-free batching utility with its own ``Dataset`` class (not torch's). Clean."""
import os
import threading

import numpy as np

RECORD_BYTES = 3 * 32 * 32 + 1


class Dataset(object):
    """CIFAR-style binary records, read through one shared file handle."""

    def __init__(self, path):
        self.fh = open(path, "rb")
        self.lock = threading.Lock()
        self.rng = np.random.default_rng(0)
        self.n = os.path.getsize(path) // RECORD_BYTES

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with self.lock:
            self.fh.seek(i * RECORD_BYTES)
            rec = np.frombuffer(self.fh.read(RECORD_BYTES), dtype=np.uint8)
        return rec[1:].reshape(3, 32, 32).astype(np.float32) / 255.0, int(rec[0])


class Batcher:
    def __init__(self, dataset, batch_size=128, shuffle=True):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle

    def __iter__(self):
        order = np.arange(len(self.dataset))
        if self.shuffle:
            self.dataset.rng.shuffle(order)
        for s in range(0, len(order), self.batch_size):
            items = [self.dataset[int(i)] for i in order[s:s + self.batch_size]]
            yield np.stack([x for x, _ in items]), np.array([y for _, y in items])


if __name__ == "__main__":
    ds = Dataset("data_batch_1.bin")
    for xb, yb in Batcher(ds):
        print(xb.shape, np.bincount(yb, minlength=10))
        break
