"""random, numpy and torch seeded with constants in every worker."""
import random

import numpy as np
import torch
from torch.utils.data import DataLoader


def init_fn(worker_id):
    random.seed(42)
    np.random.seed(42)
    torch.manual_seed(42)


if __name__ == "__main__":
    loader = DataLoader(torch.arange(8), batch_size=4, num_workers=2, worker_init_fn=init_fn)
    print([tuple(b.shape) for b in loader], sorted(int(x) for b in loader for x in b))
