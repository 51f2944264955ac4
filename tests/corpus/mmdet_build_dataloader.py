"""build_dataloader in the style of mmdet/mmseg (worker_init_fn bound with functools.partial)."""
import random
from functools import partial

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def collate(batch, samples_per_gpu=1):
    return {k: [b[k] for b in batch] for k in batch[0]}


def worker_init_fn(worker_id, num_workers, rank, seed):
    # The seed of each worker equals to num_worker * rank + worker_id + user_seed
    worker_seed = num_workers * rank + worker_id + seed
    np.random.seed(worker_seed)  # FRK602: 4
    random.seed(worker_seed)  # same worker_init_fn: one finding
    torch.manual_seed(worker_seed)  # same worker_init_fn: one finding


def build_dataloader(dataset, samples_per_gpu, workers_per_gpu, num_gpus=1, dist_mode=True,
                     shuffle=True, seed=None, persistent_workers=False, **kwargs):
    rank, world_size = get_dist_info()
    if dist_mode:
        sampler = DistributedSampler(dataset, world_size, rank, shuffle=shuffle, seed=seed or 0)
        batch_size = samples_per_gpu
        num_workers = workers_per_gpu
    else:
        sampler = None
        batch_size = num_gpus * samples_per_gpu
        num_workers = num_gpus * workers_per_gpu
    init_fn = partial(worker_init_fn, num_workers=num_workers, rank=rank,
                      seed=seed) if seed is not None else None
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=partial(collate, samples_per_gpu=samples_per_gpu),
        pin_memory=kwargs.pop("pin_memory", False),
        shuffle=shuffle if sampler is None else False,
        worker_init_fn=init_fn,
        persistent_workers=persistent_workers,
        **kwargs)
