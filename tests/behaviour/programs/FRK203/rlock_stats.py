"""Per-dataset access statistics under an RLock."""
import threading

from torch.utils.data import DataLoader, Dataset


class Counted(Dataset):
    def __init__(self, items):
        self.items = items
        self.hits = 0
        self._mutex = threading.RLock()

    def _count(self):
        with self._mutex:
            self.hits += 1

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        with self._mutex:
            self._count()
            return self.items[i] * 10


if __name__ == "__main__":
    ds = Counted(list(range(8)))
    for batch in DataLoader(ds, batch_size=4, num_workers=2):
        print(batch.tolist())
