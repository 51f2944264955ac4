"""Loader factories with nested helpers (FRK202) and the exempt num_workers=0 debug path."""
import functools

import torch
from torch.utils.data import DataLoader, Dataset


def pad_to(batch, length):
    xs = torch.stack([torch.nn.functional.pad(x, (0, length - x.shape[-1])) for x, _ in batch])
    return xs, torch.tensor([y for _, y in batch])


class FileDataset(Dataset):
    def __init__(self, paths, loader):
        self.paths = list(paths)
        self.loader = loader

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.loader(self.paths[i]), i


def build_train_loader(ds, cfg):
    max_len = cfg["max_len"]

    def collate(batch):  # FRK202: 4
        xs = [b[0][:max_len] for b in batch]
        return pad_to(list(zip(xs, [b[1] for b in batch])), max_len)

    return DataLoader(ds, batch_size=cfg["batch_size"], num_workers=cfg["workers"], collate_fn=collate)


def build_debug_loader(ds):
    def collate(batch):
        return list(batch)

    return DataLoader(ds, batch_size=2, num_workers=0, collate_fn=collate)


def build_eval_loader(ds, length):
    return DataLoader(ds, batch_size=64, num_workers=4, collate_fn=functools.partial(pad_to, length=length))


def make_split(base, indices):
    class _IndexedSplit(Dataset):  # FRK202: 4
        def __len__(self):
            return len(indices)

        def __getitem__(self, i):
            return base[indices[i]]

    return _IndexedSplit()


def with_worker_init(ds, offset):
    def init_fn(worker_id):  # FRK202: 4
        torch.manual_seed(torch.initial_seed() + offset)

    return DataLoader(ds, batch_size=8, num_workers=2, worker_init_fn=init_fn)


def make_file_dataset(paths, map_location="cpu"):
    def load(path):  # FRK202: 4
        return torch.load(path, map_location=map_location)

    return FileDataset(paths, loader=load)


def _pairs_len(self):
    return len(self.a)


def _pairs_getitem(self, i):
    return self.a[i], self.b[i]


# Bound at module level under its own name: pickle finds it by reference, so this one is fine.
TensorPairs = type("TensorPairs", (Dataset,), {"__len__": _pairs_len, "__getitem__": _pairs_getitem})


def make_pairs_class(name, base=Dataset):
    """Dataset classes minted per experiment: pickle cannot find them by name."""
    return type(name, (base,), {"__len__": _pairs_len, "__getitem__": _pairs_getitem})  # FRK202: 11
