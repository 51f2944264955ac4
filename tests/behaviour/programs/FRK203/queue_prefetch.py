"""A small queue of recently used indices kept for debugging."""
import queue

from torch.utils.data import DataLoader, Dataset


class Recent(Dataset):
    def __init__(self, n):
        self.n = n
        self.recent = queue.Queue(maxsize=3)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.recent.full():
            self.recent.get_nowait()
        self.recent.put_nowait(i)
        return i * i


if __name__ == "__main__":
    for batch in DataLoader(Recent(9), batch_size=3, num_workers=2):
        print(batch.tolist())
