"""A spawn context object handed to the loader."""
import multiprocessing as mp

import numpy as np
from torch.utils.data import DataLoader

if __name__ == "__main__":
    data = np.linspace(0, 1, 6, dtype="float32")
    loader = DataLoader(data, batch_size=2, num_workers=2, multiprocessing_context=mp.get_context("spawn"))
    print([[round(v, 4) for v in b.tolist()] for b in loader])
