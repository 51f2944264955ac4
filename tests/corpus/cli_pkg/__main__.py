"""``python -m cli_pkg``: a package __main__ runs its code at top level; not flagged (FRK401 exempts it)."""
import sys
import time

import torch
from torch.utils.data import DataLoader

from . import SyntheticImages, describe

workers = int(sys.argv[1]) if len(sys.argv) > 1 else 4
ds = SyntheticImages(n=4096)
print(describe(ds))

loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=workers, pin_memory=False)

start = time.perf_counter()
n = 0
for x, y in loader:
    n += x.shape[0]
    assert x.dtype == torch.float32
elapsed = time.perf_counter() - start
print(f"{n} images in {elapsed:.2f}s ({n / elapsed:.0f} img/s) with {workers} workers")

first = next(iter(loader))
print("first batch:", first[0].shape, first[1][:8].tolist())

summary = {"images": n, "seconds": round(elapsed, 3), "workers": workers}
for key, value in summary.items():
    print(f"{key:>8}: {value}")
sys.exit(0)
