"""A base seed plus worker_id."""
import random

from torch.utils.data import DataLoader

BASE = 1000


def worker_init(worker_id):
    random.seed(BASE + worker_id)


if __name__ == "__main__":
    words = ["alpha", "beta", "gamma", "delta"]
    print([list(b) for b in DataLoader(words, batch_size=2, num_workers=2, worker_init_fn=worker_init)])
