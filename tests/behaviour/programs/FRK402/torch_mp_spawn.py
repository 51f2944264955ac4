"""Spawn chosen through torch.multiprocessing after torch is imported."""
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

mp.set_start_method("spawn")


class Ramp(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.tensor([i, i * 2])


if __name__ == "__main__":
    for batch in DataLoader(Ramp(), batch_size=3, num_workers=2):
        print(batch.tolist())
