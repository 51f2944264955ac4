"""Video dataset with decord; readers are created per item inside the worker. Clean."""
import os

import decord
import numpy as np
import torch
from decord import VideoReader, cpu
from torch.utils.data import Dataset

decord.bridge.set_bridge("torch")


class DecordClipDataset(Dataset):
    def __init__(self, root, list_file, num_frames=8):
        self.root = root
        self.num_frames = num_frames
        with open(list_file) as f:
            rows = [line.split() for line in f if line.strip()]
        self.samples = [(os.path.join(root, r[0]), int(r[1])) for r in rows]
        self.lengths = []
        for path, _ in self.samples:
            vr = VideoReader(path, ctx=cpu(0))
            self.lengths.append(len(vr))
            del vr

    def __len__(self):
        return len(self.samples)

    def _indices(self, n, worker_seed):
        rng = np.random.default_rng(worker_seed)
        seg = n / self.num_frames
        return [min(int(seg * i + rng.uniform(0, seg)), n - 1) for i in range(self.num_frames)]

    def __getitem__(self, idx):
        path, label = self.samples[idx]
        info = torch.utils.data.get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        vr = VideoReader(path, ctx=cpu(0), width=224, height=224)
        frames = vr.get_batch(self._indices(self.lengths[idx], (seed + idx) % 2**32))
        return frames.permute(3, 0, 1, 2).float() / 255.0, label


def video_collate(batch):
    clips, labels = zip(*batch)
    return torch.stack(clips), torch.tensor(labels)
