"""Fixed-length clip sampler over videos with OpenCV (action-recognition style)."""
import glob
import os

import cv2
import numpy as np
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset


class VideoClipDataset(Dataset):
    def __init__(self, video_dir, clip_len=16, stride=2, size=112):
        self.paths = sorted(glob.glob(os.path.join(video_dir, "*.mp4")))
        self.caps = []
        for p in self.paths:
            self.caps.append(cv2.VideoCapture(p))  # FRK101: 29
        self.num_frames = [int(c.get(cv2.CAP_PROP_FRAME_COUNT)) for c in self.caps]
        self.clip_len = clip_len
        self.stride = stride
        self.transform = T.Compose([
            T.Lambda(lambda clip: clip.float() / 255.0),  # FRK201: 21
            T.Resize((size, size), antialias=True),
        ])

    def __len__(self):
        return len(self.paths)

    def _read_clip(self, vid, start):
        cap = self.caps[vid]
        cap.set(cv2.CAP_PROP_POS_FRAMES, start)
        frames = []
        for _ in range(self.clip_len):
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
            for _ in range(self.stride - 1):
                cap.grab()
        while len(frames) < self.clip_len:
            frames.append(frames[-1])
        return np.stack(frames)

    def __getitem__(self, idx):
        span = self.clip_len * self.stride
        start = max(0, (self.num_frames[idx] - span) // 2)
        clip = torch.from_numpy(self._read_clip(idx, start)).permute(0, 3, 1, 2)
        return self.transform(clip), idx


def make_loader(video_dir, batch_size=8):
    ds = VideoClipDataset(video_dir)
    return DataLoader(ds, batch_size=batch_size, num_workers=6, pin_memory=True)
