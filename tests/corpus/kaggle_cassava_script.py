# Cassava leaf disease - baseline training script (Kaggle notebook export, no main guard)
import os
import random

import albumentations as A
import cv2
import numpy as np
import pandas as pd
import timm
import torch
import torch.nn as nn
from albumentations.pytorch import ToTensorV2
from torch.utils.data import DataLoader, Dataset

SEED = 42
EPOCHS = 10
DATA = "../input/cassava-leaf-disease-classification"
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed):
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)


def seed_worker(worker_id):
    np.random.seed(SEED + worker_id)  # FRK602: 4


class LeafDataset(Dataset):
    def __init__(self, df, transforms=None):
        self.df = df.reset_index(drop=True)
        self.transforms = transforms

    def __len__(self):
        return len(self.df)

    def __getitem__(self, idx):
        row = self.df.iloc[idx]
        img = cv2.imread(os.path.join(DATA, "train_images", row.image_id))
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        if self.transforms:
            img = self.transforms(image=img)["image"]
        return img, torch.tensor(row.label)


seed_everything(SEED)
train_df = pd.read_csv(os.path.join(DATA, "train.csv"))
train_tf = A.Compose([A.RandomResizedCrop(384, 384), A.HorizontalFlip(p=0.5), A.Normalize(), ToTensorV2()])
train_ds = LeafDataset(train_df, transforms=train_tf)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=4,
                          worker_init_fn=seed_worker, drop_last=True)

images, labels = next(iter(train_loader))  # FRK401: 0
print(images.shape, labels[:8])

model = timm.create_model("tf_efficientnet_b4_ns", pretrained=True, num_classes=5).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
criterion = nn.CrossEntropyLoss()

for epoch in range(EPOCHS):  # FRK401: 0
    model.train()
    running = 0.0
    for step, (images, labels) in enumerate(train_loader):
        images, labels = images.cuda(), labels.cuda()
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: loss {running / len(train_loader):.4f}")
    torch.save(model.state_dict(), f"effnet_b4_epoch{epoch}.pth")
