"""Feature extraction with a CUDA model while loader workers are forked explicitly (FRK404)."""
import multiprocessing

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class NpyFolder(Dataset):
    def __init__(self, files):
        self.files = list(files)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.from_numpy(np.load(self.files[i]).astype(np.float32)), i


def extract(files, model):
    loader = DataLoader(NpyFolder(files), batch_size=64, num_workers=8,
                        multiprocessing_context=multiprocessing.get_context("fork"))  # FRK404: 48
    feats = []
    with torch.no_grad():
        for x, _ in loader:
            feats.append(model(x.cuda(non_blocking=True)).cpu())
    return torch.cat(feats)


def save(feats, path):
    np.save(path, feats.numpy())


if __name__ == "__main__":
    import glob
    import sys

    torch.multiprocessing.set_start_method("fork", force=True)  # FRK404: 4
    model = nn.Sequential(nn.Linear(512, 256), nn.GELU(), nn.Linear(256, 128)).cuda().eval()
    files = sorted(glob.glob(sys.argv[1] + "/*.npy"))
    save(extract(files, model), sys.argv[2])
