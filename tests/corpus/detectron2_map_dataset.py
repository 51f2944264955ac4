"""detectron2-style DatasetFromList / MapDataset and a dataset-catalog registration."""
import copy
import logging
import random

import numpy as np
import torch.utils.data as data

logger = logging.getLogger(__name__)
DATASET_CATALOG = {}


def register(name, func):
    assert name not in DATASET_CATALOG, f"Dataset '{name}' is already registered!"
    DATASET_CATALOG[name] = func


class DatasetFromList(data.Dataset):
    """Wrap a list to a torch Dataset; copies items so workers can't mutate them."""

    def __init__(self, lst, copy_items=True):
        self._lst = lst
        self._copy = copy_items

    def __len__(self):
        return len(self._lst)

    def __getitem__(self, idx):
        if self._copy:
            return copy.deepcopy(self._lst[idx])
        return self._lst[idx]


class MapDataset(data.Dataset):
    """Map a function over the elements; retries a random other element when it returns None."""

    def __init__(self, dataset, map_func):
        self._dataset = dataset
        self._map_func = map_func
        self._rng = random.Random(42)  # FRK601: 20
        self._fallback_candidates = set(range(len(dataset)))

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, idx):
        retry_count = 0
        cur_idx = int(idx)
        while True:
            result = self._map_func(self._dataset[cur_idx])
            if result is not None:
                self._fallback_candidates.add(cur_idx)
                return result
            retry_count += 1
            self._fallback_candidates.discard(cur_idx)
            cur_idx = self._rng.sample(sorted(self._fallback_candidates), k=1)[0]
            if retry_count >= 3:
                logger.warning("Failed to apply `_map_func` for idx: %d, retry count: %d", idx, retry_count)


class DatasetMapper:
    """A picklable callable: reads an image path and returns a training dict."""

    def __init__(self, is_train=True, min_size=800):
        self.is_train = is_train
        self.min_size = min_size

    def __call__(self, record):
        record = dict(record)
        h, w = record["height"], record["width"]
        scale = self.min_size / min(h, w)
        record["image_size"] = (int(h * scale), int(w * scale))
        record["flip"] = self.is_train and np.random.rand() < 0.5
        return record
