"""GPU work done inside DataLoader workers (FRK302) next to a correct training loop."""
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data._utils.collate import default_collate


class GpuAugmentDataset(Dataset):
    def __init__(self, arrays):
        self.arrays = arrays

    def __len__(self):
        return len(self.arrays)

    def _augment(self, x):
        noise = torch.randn(x.shape, device="cuda")  # FRK302: 16
        return x + 0.01 * noise

    def __getitem__(self, i):
        x = torch.from_numpy(self.arrays[i]).cuda(non_blocking=True)  # FRK302: 12
        return self._augment(x)


def gpu_collate(batch):
    out = default_collate(batch)
    return out.to("cuda")  # FRK302: 11


def cpu_collate(batch):
    return default_collate(batch).contiguous()


def train(model, arrays, epochs=2):
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(GpuAugmentDataset(arrays), batch_size=16, num_workers=2, collate_fn=gpu_collate)
    for _ in range(epochs):
        for x in loader:
            loss = F.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()


def evaluate(model, arrays):
    loader = DataLoader([torch.from_numpy(a) for a in arrays], batch_size=16, num_workers=2,
                        collate_fn=cpu_collate)
    with torch.no_grad():
        return [model(x.cuda(non_blocking=True)).mean().item() for x in loader]


if __name__ == "__main__":
    data = [np.random.rand(64).astype(np.float32) for _ in range(256)]
    net = torch.nn.Linear(64, 64)
    train(net, data)
    print(evaluate(net, data)[:4])
