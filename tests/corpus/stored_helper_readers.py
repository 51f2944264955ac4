"""Record shards read through helper objects that the dataset stores (helpers are dataset-like)."""
import struct
import threading

import torch
from torch.utils.data import Dataset


class ShardReader:
    """Random access into one record shard; offsets come from a sidecar file."""

    def __init__(self, path):
        with open(path + ".offsets", "rb") as f:
            raw = f.read()
        self.offsets = struct.unpack(f"<{len(raw) // 8}Q", raw)
        self.fh = open(path, "rb")  # FRK101: 18

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        self.fh.seek(self.offsets[i])
        return self.fh.read(self.offsets[i + 1] - self.offsets[i])


class BlockCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.store = {}
        self.lock = threading.Lock()  # FRK203: 20

    def __getitem__(self, key):
        with self.lock:
            return self.store[key]

    def __contains__(self, key):
        return key in self.store

    def put(self, key, value):
        with self.lock:
            if len(self.store) < self.capacity:
                self.store[key] = value


class ShardedRecords(Dataset):
    def __init__(self, shard_paths, cache_size=0):
        self.readers = [ShardReader(p) for p in shard_paths]
        self.cache = BlockCache(cache_size)
        self.index = [(r, i) for r, reader in enumerate(self.readers) for i in range(len(reader))]

    def __len__(self):
        return len(self.index)

    def __getitem__(self, k):
        if k in self.cache:
            return self.cache[k]
        r, i = self.index[k]
        item = torch.frombuffer(bytearray(self.readers[r][i]), dtype=torch.uint8)
        self.cache.put(k, item)
        return item
