"""Random tile sampler over whole-slide images (openslide), pathology-repo style."""
import math
import random

import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset


class RandomTileDataset(Dataset):
    def __init__(self, slide_table, tile_size=256, level=0, tiles_per_slide=64, seed=1234, transform=None):
        import openslide

        df = pd.read_csv(slide_table)
        self.slide_ids = df["slide_id"].tolist()
        self.labels = df["label"].to_numpy()
        self.slides = {sid: openslide.OpenSlide(p) for sid, p in zip(df["slide_id"], df["path"])}  # FRK101: 28
        self.tile_size = tile_size
        self.level = level
        self.tiles_per_slide = tiles_per_slide
        self.transform = transform
        self.rng = random.Random(seed)  # FRK601: 19
        self.dims = {sid: s.level_dimensions[level] for sid, s in self.slides.items()}

    def __len__(self):
        return len(self.slide_ids) * self.tiles_per_slide

    def _random_location(self, sid):
        w, h = self.dims[sid]
        x = self.rng.randint(0, max(w - self.tile_size, 0))
        y = self.rng.randint(0, max(h - self.tile_size, 0))
        return x, y

    def __getitem__(self, index):
        sid = self.slide_ids[index // self.tiles_per_slide]
        x, y = self._random_location(sid)
        scale = self.slides[sid].level_downsamples[self.level]
        region = self.slides[sid].read_region((int(x * scale), int(y * scale)), self.level,
                                              (self.tile_size, self.tile_size)).convert("RGB")
        tile = np.asarray(region)
        if self.transform is not None:
            tile = self.transform(image=tile)["image"]
        label = int(self.labels[index // self.tiles_per_slide])
        return torch.from_numpy(np.ascontiguousarray(tile)).permute(2, 0, 1), label


def tiles_needed(width, height, tile_size):
    return math.ceil(width / tile_size) * math.ceil(height / tile_size)
