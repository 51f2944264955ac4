"""A torch.Generator shuffles patch order per item (prints sorted patches: the set stays)."""
import torch
from torch.utils.data import DataLoader, Dataset


class Patches(Dataset):
    def __init__(self, n):
        self.data = torch.arange(n * 4).view(n, 4)
        self.gen = torch.Generator()
        self.gen.manual_seed(3)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i][torch.randperm(4, generator=self.gen)]


if __name__ == "__main__":
    for b in DataLoader(Patches(4), batch_size=2, num_workers=2):
        print(tuple(b.shape), b.sort(dim=1).values.tolist())
