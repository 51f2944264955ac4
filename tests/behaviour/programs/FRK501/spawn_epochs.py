"""Three epochs over a spawn-context loader."""
import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    ds = TensorDataset(torch.arange(6.0), torch.arange(6) % 2)
    loader = DataLoader(ds, batch_size=3, num_workers=2, multiprocessing_context="spawn")
    for epoch in range(3):
        print(epoch, [(x.tolist(), y.tolist()) for x, y in loader])
