"""DDP launcher with the documented guard; start method set inside it. Clean."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class RandomTensors(Dataset):
    def __init__(self, n=4096, dim=32):
        self.x = torch.randn(n, dim)
        self.y = torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            init_method="tcp://127.0.0.1:29501")
    ds = RandomTensors()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
    loader = DataLoader(ds, batch_size=64, sampler=sampler, num_workers=2, persistent_workers=True)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    dist.destroy_process_group()


def launch_elastic(world):
    ctx = mp.start_processes(worker, args=(world,), nprocs=world, join=False, start_method="spawn")
    while not ctx.join():
        pass


if __name__ == "__main__":
    mp.set_start_method("spawn")
    world = int(os.environ.get("WORLD_SIZE", 2))
    if os.environ.get("ELASTIC"):
        launch_elastic(world)
    else:
        mp.spawn(worker, args=(world,), nprocs=world)
