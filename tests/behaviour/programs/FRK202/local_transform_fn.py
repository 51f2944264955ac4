"""A normalising transform defined in the dataset factory and stored on the dataset."""
import torch
from torch.utils.data import DataLoader, Dataset


class Vectors(Dataset):
    def __init__(self, data, transform):
        self.data = data
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.transform(self.data[i])


def make_dataset():
    def normalise(v):
        return v / v.norm()

    data = [torch.tensor([3.0, 4.0]) * (i + 1) for i in range(4)]
    return Vectors(data, normalise)


if __name__ == "__main__":
    for batch in DataLoader(make_dataset(), batch_size=2, num_workers=2):
        print([[round(x, 4) for x in row] for row in batch.tolist()])
