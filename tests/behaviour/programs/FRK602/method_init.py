"""A trainer whose worker_init_fn seeds numpy from worker_id."""
import numpy as np
from torch.utils.data import DataLoader


def _init(worker_id):
    np.random.seed(7 * worker_id)


class Trainer:
    def __init__(self, data):
        self.loader = DataLoader(data, batch_size=2, num_workers=2, worker_init_fn=_init)

    def run(self):
        return [b.tolist() for b in self.loader]


if __name__ == "__main__":
    print(Trainer(np.arange(6)).run())
