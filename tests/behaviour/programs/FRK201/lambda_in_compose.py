"""A pipeline of callables, one a lambda, kept on the dataset."""
import torch
from torch.utils.data import DataLoader, Dataset


class Compose:
    def __init__(self, fns):
        self.fns = fns

    def __call__(self, x):
        for fn in self.fns:
            x = fn(x)
        return x


class Signals(Dataset):
    def __init__(self):
        self.signals = [torch.linspace(0, i, 4) for i in range(5)]
        self.transform = Compose([torch.neg, lambda t: t - t.mean()])

    def __len__(self):
        return len(self.signals)

    def __getitem__(self, i):
        return self.transform(self.signals[i])


if __name__ == "__main__":
    for batch in DataLoader(Signals(), batch_size=5, num_workers=2):
        print([[round(v, 4) for v in row] for row in batch.tolist()])
