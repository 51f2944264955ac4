"""Fine-tuning script with lambdas passed into datasets and loaders (FRK201)."""
import argparse

import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision import datasets, models

grayscale_to_rgb = T.Compose([
    T.Resize(224),
    T.ToTensor(),
    T.Lambda(lambda x: x.repeat(3, 1, 1) if x.shape[0] == 1 else x),  # FRK201: 13
])


class FastLoader(DataLoader):
    """A DataLoader subclass that fixes some defaults."""

    def __init__(self, dataset, batch_size=64, **kwargs):
        super().__init__(dataset, batch_size=batch_size, num_workers=8, pin_memory=True,
                         collate_fn=lambda b: tuple(torch.stack(t) if torch.is_tensor(t[0]) else torch.tensor(t)  # FRK201: 36
                                                    for t in zip(*b)), **kwargs)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=6)
    return p.parse_args()


def main(args):
    train = datasets.ImageFolder(args.root + "/train", transform=grayscale_to_rgb,
                                 target_transform=lambda y: torch.tensor(y, dtype=torch.long))  # FRK201: 50
    val = datasets.ImageFolder(args.root + "/val", transform=grayscale_to_rgb)
    classes = sorted(train.classes, key=lambda c: c.lower())
    sizes = list(map(lambda s: s[1], train.samples))
    print(len(classes), "classes,", len(sizes), "samples")
    train_loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=args.workers)
    val_loader = FastLoader(val)
    model = models.resnet18(num_classes=len(classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in train_loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        acc = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader) / len(val)
    print("val acc", acc)


if __name__ == "__main__":
    main(parse())
