"""A default target transform given as a lambda and stored."""
from torch.utils.data import DataLoader, Dataset


class Labeled(Dataset):
    def __init__(self, items, target_transform=lambda y: y % 2):
        self.items = items
        self.target_transform = target_transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x, y = self.items[i]
        return x, self.target_transform(y)


if __name__ == "__main__":
    ds = Labeled([(i * 1.5, i) for i in range(6)])
    for x, y in DataLoader(ds, batch_size=2, num_workers=2):
        print(x.tolist(), y.tolist())
