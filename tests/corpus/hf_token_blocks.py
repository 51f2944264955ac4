"""Token-block dataset over a memory-mapped token file (fairseq / Megatron style). Clean."""
import json

import numpy as np
import torch
import torch.utils.data as tud


class TokenBlockDataset(tud.Dataset):
    def __init__(self, prefix, block_size=1024, stride=None):
        self.prefix = prefix
        self.block_size = block_size
        self.stride = stride or block_size
        with open(prefix + ".json") as f:
            meta = json.load(f)
        self.dtype = np.dtype(meta["dtype"])
        self.tokens = np.memmap(prefix + ".bin", dtype=self.dtype, mode="r")
        self.doc_index = np.load(prefix + ".idx.npy", mmap_mode="r")
        n = (len(self.tokens) - block_size - 1) // self.stride + 1
        self.num_blocks = max(n, 0)

    def __len__(self):
        return self.num_blocks

    def __getitem__(self, i):
        start = i * self.stride
        chunk = np.asarray(self.tokens[start:start + self.block_size + 1], dtype=np.int64)
        x = torch.from_numpy(chunk[:-1])
        y = torch.from_numpy(chunk[1:])
        return {"input_ids": x, "labels": y}


class ConcatTokenDataset(tud.Dataset):
    """Concatenates several token files; offsets are computed once in the parent."""

    def __init__(self, prefixes, block_size=1024):
        self.parts = [TokenBlockDataset(p, block_size) for p in prefixes]
        self.offsets = np.cumsum([0] + [len(p) for p in self.parts])

    def __len__(self):
        return int(self.offsets[-1])

    def __getitem__(self, i):
        part = int(np.searchsorted(self.offsets, i, side="right") - 1)
        return self.parts[part][i - int(self.offsets[part])]


def collate_blocks(samples, pad_id=0):
    input_ids = torch.stack([s["input_ids"] for s in samples])
    labels = torch.stack([s["labels"] for s in samples])
    return {"input_ids": input_ids, "labels": labels, "attention_mask": input_ids.ne(pad_id)}


def build_loader(prefixes, batch_size=8, workers=4):
    ds = ConcatTokenDataset(prefixes)
    return tud.DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers,
                          collate_fn=collate_blocks, pin_memory=True, drop_last=True)
