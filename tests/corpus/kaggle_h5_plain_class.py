# Kaggle-style script: a plain class (no Dataset base) passed straight to DataLoader.
import h5py
import numpy as np
import torch
import torch.nn as nn


class Data:
    def __init__(self, path, augment=False):
        self.f = h5py.File(path, "r")  # FRK101: 17
        self.X = self.f["X"]
        self.y = self.f["y"]
        self.augment = augment

    def __len__(self):
        return self.y.shape[0]

    def __getitem__(self, i):
        x = np.asarray(self.X[i], dtype=np.float32)
        if self.augment and np.random.rand() < 0.5:
            x = x[:, ::-1].copy()
        return torch.from_numpy(x), int(self.y[i])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(16, 2))

    def forward(self, x):
        return self.body(x)


if __name__ == "__main__":
    loader = torch.utils.data.DataLoader(Data("train.h5", augment=True), batch_size=64, shuffle=True,
                                         num_workers=4)
    net = Net()
    opt = torch.optim.Adam(net.parameters())
    for epoch in range(3):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(net(x.unsqueeze(1)), y).backward()
            opt.step()
        print("epoch", epoch, "done")
