"""The stdlib start method set after `from torch...` imports."""
import multiprocessing

import numpy as np
from torch.utils.data import DataLoader

multiprocessing.set_start_method("forkserver")


def batches():
    return [b.tolist() for b in DataLoader(np.arange(8), batch_size=4, num_workers=2)]


if __name__ == "__main__":
    print(batches())
