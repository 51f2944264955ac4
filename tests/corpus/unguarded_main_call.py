"""Train script whose entry function is called unguarded at import time."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args()


def build_data(n=10_000, dim=20):
    x = torch.randn(n, dim)
    w = torch.randn(dim, 1)
    y = x @ w + 0.1 * torch.randn(n, 1)
    return TensorDataset(x, y)


def main():
    args = parse_args()
    loader = DataLoader(build_data(), batch_size=128, shuffle=True, num_workers=args.workers)
    model = nn.Linear(20, 1)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(x)
        print(f"epoch {epoch}: {total / len(loader.dataset):.4f}")


main()  # FRK401: 0
