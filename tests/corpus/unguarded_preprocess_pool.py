"""Preprocessing script: shard conversion with multiprocessing and no main guard (FRK401)."""
import glob
import os
from multiprocessing import Pool, Process

import numpy as np
import torch

SRC = "raw/"
DST = "shards/"


def convert(path):
    arr = np.load(path)
    out = os.path.join(DST, os.path.basename(path).replace(".npy", ".pt"))
    torch.save(torch.from_numpy(arr).half(), out)
    return arr.shape[0]


def verify(indices):
    for i in indices:
        t = torch.load(os.path.join(DST, f"{i:06d}.pt"))
        assert torch.isfinite(t.float()).all(), i


files = sorted(glob.glob(os.path.join(SRC, "*.npy")))
os.makedirs(DST, exist_ok=True)

with Pool(processes=8) as pool:  # FRK401: 0
    sizes = pool.map(convert, files, chunksize=16)

print(f"converted {len(sizes)} files, {sum(sizes)} rows")

chunks = [list(range(i, len(files), 4)) for i in range(4)]
procs = [Process(target=verify, args=(c,)) for c in chunks]
for p in procs:
    p.start()  # FRK401: 4
for p in procs:
    p.join()
