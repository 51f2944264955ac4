"""Training utilities: loggers, caches, registries, samplers. Look-alikes, not datasets. Clean."""
import json
import queue
import threading
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler


class JsonlLogger:
    def __init__(self, path):
        self.fh = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def log(self, **fields):
        fields["time"] = time.time()
        with self.lock:
            self.fh.write(json.dumps(fields) + "\n")


class LRUCache:
    def __init__(self, capacity=1024):
        self.capacity = capacity
        self._data = {}
        self._lock = threading.RLock()

    def __getitem__(self, key):
        with self._lock:
            value = self._data.pop(key)
            self._data[key] = value
            return value

    def __setitem__(self, key, value):
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = value
            if len(self._data) > self.capacity:
                self._data.pop(next(iter(self._data)))


class AsyncCheckpointer:
    def __init__(self):
        self.q = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            state, path = self.q.get()
            torch.save(state, path)

    def save(self, state, path):
        self.q.put(({k: v.cpu() for k, v in state.items()}, path))


class BucketBatchSampler(Sampler):
    """Runs in the main process: its RNG is fine there."""

    def __init__(self, lengths, batch_size, seed=0):
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        order = np.argsort(self.lengths + self.rng.uniform(0, 1, len(self.lengths)))
        batches = [order[i:i + self.batch_size].tolist() for i in range(0, len(order), self.batch_size)]
        self.rng.shuffle(batches)
        return iter(batches)

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def bucketed_loader(dataset, lengths, batch_size=32):
    sampler = BucketBatchSampler(lengths, batch_size)
    return DataLoader(dataset, batch_sampler=sampler, num_workers=4)
