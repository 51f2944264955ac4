"""A dataset class defined inside the function that trains on it."""
import torch
from torch.utils.data import DataLoader, Dataset


def train(n):
    class Squares(Dataset):
        def __init__(self, size):
            self.size = size

        def __len__(self):
            return self.size

        def __getitem__(self, i):
            return torch.tensor(float(i * i))

    total = 0.0
    for batch in DataLoader(Squares(n), batch_size=4, num_workers=2):
        total += float(batch.sum())
        print(batch.tolist())
    print("total", total)


if __name__ == "__main__":
    train(8)
