"""`import multiprocessing as mp`, forkserver, then the data code."""
import multiprocessing as mp

mp.set_start_method("forkserver")

import numpy as np  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402


def main():
    data = np.arange(12, dtype="int64").reshape(6, 2)
    for b in DataLoader(data, batch_size=3, num_workers=2):
        print(b.tolist())


if __name__ == "__main__":
    main()
