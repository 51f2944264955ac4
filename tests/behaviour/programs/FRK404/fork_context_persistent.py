"""A persistent fork loader in a training module that pins to CUDA."""
import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.tensor([i, -i])


def loaders():
    return DataLoader(Pairs(), batch_size=3, num_workers=2, multiprocessing_context="fork",
                      persistent_workers=True)


if __name__ == "__main__":
    use_cuda = torch.cuda.is_available()
    for epoch in range(2):
        for b in loaders():
            if use_cuda:
                b = b.cuda(non_blocking=True)
            print(epoch, b.cpu().tolist())
