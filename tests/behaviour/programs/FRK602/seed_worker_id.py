"""numpy seeded with worker_id in worker_init_fn (never called with num_workers=0)."""
import numpy as np
from torch.utils.data import DataLoader, Dataset


def seed_worker(worker_id):
    np.random.seed(worker_id)


class Jitter(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return i


if __name__ == "__main__":
    print([b.tolist() for b in DataLoader(Jitter(), batch_size=3, num_workers=2, worker_init_fn=seed_worker)])
