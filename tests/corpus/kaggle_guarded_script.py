# Plant pathology - training script with a main guard and per-worker seeding. Clean.
import os
import random

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import models, transforms as T

DATA = "../input/plant-pathology-2021-fgvc8"


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class PlantDataset(Dataset):
    def __init__(self, df, root, transform=None):
        self.paths = [os.path.join(root, f) for f in df["image"]]
        self.labels = df["label_id"].to_numpy()
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with Image.open(self.paths[i]) as im:
            img = im.convert("RGB")
        if self.transform is not None:
            img = self.transform(img)
        return img, int(self.labels[i])


def train_one_epoch(model, loader, opt, crit):
    model.train()
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    df = pd.read_csv(os.path.join(DATA, "train.csv"))
    df["label_id"] = df["labels"].astype("category").cat.codes
    tf = T.Compose([T.RandomResizedCrop(256), T.RandomHorizontalFlip(), T.ToTensor()])
    ds = PlantDataset(df, os.path.join(DATA, "train_images"), transform=tf)
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, worker_init_fn=seed_worker,
                        generator=g, pin_memory=True)
    peek = DataLoader(ds, batch_size=4, num_workers=0, collate_fn=lambda b: list(zip(*b)))
    imgs, labels = next(iter(peek))
    print(len(imgs), labels)
    model = models.resnet50(num_classes=int(df["label_id"].max()) + 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(5):
        train_one_epoch(model, loader, opt, nn.CrossEntropyLoss())
        torch.save(model.state_dict(), f"resnet50_{epoch}.pt")
