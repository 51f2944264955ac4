"""Transform factories using named functions, partials and callable classes (no lambdas). Clean."""
import functools
import math

import numpy as np
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset


def to_float(x, scale=255.0):
    return x.float() / scale


def maybe_gray_to_rgb(x):
    return x.expand(3, -1, -1) if x.shape[0] == 1 else x


class RandomErasingNumpy:
    def __init__(self, p=0.25, max_area=0.3):
        self.p = p
        self.max_area = max_area

    def __call__(self, img):
        if np.random.rand() > self.p:
            return img
        h, w = img.shape[-2:]
        area = np.random.uniform(0.02, self.max_area) * h * w
        eh = ew = int(math.sqrt(area))
        y, x = np.random.randint(0, max(h - eh, 1)), np.random.randint(0, max(w - ew, 1))
        img = img.clone()
        img[..., y:y + eh, x:x + ew] = 0
        return img


def build_transform(scale=255.0, train=True):
    ops = [T.Lambda(functools.partial(to_float, scale=scale)), T.Lambda(maybe_gray_to_rgb)]
    if train:
        ops.append(RandomErasingNumpy())
    return T.Compose(ops)


class UInt8Images(Dataset):
    def __init__(self, array, labels, transform=None):
        self.array = array
        self.labels = labels
        self.transform = transform or build_transform()
        self.classes = sorted(set(labels.tolist()), key=lambda c: (c % 10, c))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = torch.from_numpy(self.array[i])
        return self.transform(x), int(self.labels[i])


def make_loader(array, labels, workers=8):
    ds = UInt8Images(array, labels, transform=build_transform(train=True))
    return DataLoader(ds, batch_size=128, shuffle=True, num_workers=workers, persistent_workers=True)
