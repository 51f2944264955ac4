"""Reads throttled by a Semaphore (at most two at a time) from temp files."""
import os
import tempfile
import threading

from torch.utils.data import DataLoader, Dataset


class Throttled(Dataset):
    def __init__(self, paths):
        self.paths = paths
        self.slots = threading.Semaphore(2)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with self.slots:
            with open(self.paths[i]) as f:
                return f.read().strip()


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    paths = []
    for i in range(5):
        p = os.path.join(root, f"{i}.txt")
        with open(p, "w") as f:
            f.write(f"doc {i}\n")
        paths.append(p)
    for batch in DataLoader(Throttled(paths), batch_size=5, num_workers=2):
        print(batch)
