"""Precomputed embeddings preloaded to the GPU when there is one."""
import torch
from torch.utils.data import DataLoader, Dataset

USE_GPU = torch.cuda.is_available()


class Embeddings(Dataset):
    def __init__(self, n, dim):
        emb = torch.arange(n * dim, dtype=torch.float32).view(n, dim) / 10
        self.emb = emb.cuda() if USE_GPU else emb

    def __len__(self):
        return len(self.emb)

    def __getitem__(self, i):
        return self.emb[i]


if __name__ == "__main__":
    for b in DataLoader(Embeddings(6, 3), batch_size=2, num_workers=2):
        print(tuple(b.shape), b.dtype, b.cpu().tolist())
