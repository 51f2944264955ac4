"""Whole-slide grid tiles with per-process slide handles (the recommended pattern). Clean."""
import os

import numpy as np
import openslide
import torch
from torch.utils.data import Dataset


class GridTileDataset(Dataset):
    def __init__(self, slide_paths, tile_size=512, level=0):
        self.slide_paths = list(slide_paths)
        self.tile_size = tile_size
        self.level = level
        self.grid = []
        for si, path in enumerate(self.slide_paths):
            slide = openslide.OpenSlide(path)
            w, h = slide.level_dimensions[level]
            slide.close()
            for y in range(0, h - tile_size + 1, tile_size):
                for x in range(0, w - tile_size + 1, tile_size):
                    self.grid.append((si, x, y))
        self._slides = None
        self._pid = None

    def _slide(self, si):
        pid = os.getpid()
        if self._slides is None or self._pid != pid:
            self._slides = {}
            self._pid = pid
        if si not in self._slides:
            self._slides[si] = openslide.OpenSlide(self.slide_paths[si])
        return self._slides[si]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_slides"] = None
        state["_pid"] = None
        return state

    def __len__(self):
        return len(self.grid)

    def __getitem__(self, i):
        si, x, y = self.grid[i]
        slide = self._slide(si)
        ds = slide.level_downsamples[self.level]
        img = slide.read_region((int(x * ds), int(y * ds)), self.level, (self.tile_size, self.tile_size))
        arr = np.asarray(img.convert("RGB"), dtype=np.uint8)
        return torch.from_numpy(arr).permute(2, 0, 1).float().div_(255), si
