"""A collate function defined inside the loader factory."""
import torch
from torch.utils.data import DataLoader


def build_loader(pairs):
    def collate(batch):
        xs, ys = zip(*batch)
        return torch.stack(xs), torch.tensor(ys)

    return DataLoader(pairs, batch_size=2, num_workers=2, collate_fn=collate)


if __name__ == "__main__":
    pairs = [(torch.full((2,), float(i)), i % 2) for i in range(6)]
    for x, y in build_loader(pairs):
        print(x.tolist(), y.tolist())
