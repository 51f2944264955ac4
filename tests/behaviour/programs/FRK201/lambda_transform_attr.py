"""A dataset whose transform is a lambda kept on self."""
import torch
from torch.utils.data import DataLoader, Dataset


class Scaled(Dataset):
    def __init__(self, n, scale):
        self.data = torch.arange(n, dtype=torch.float32)
        self.transform = lambda x: x * scale + 1

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.transform(self.data[i])


if __name__ == "__main__":
    for batch in DataLoader(Scaled(6, 0.5), batch_size=3, num_workers=2):
        print(batch.tolist())
