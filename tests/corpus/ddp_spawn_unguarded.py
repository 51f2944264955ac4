"""Multi-GPU CIFAR training launched with torch.multiprocessing.spawn (launcher left unguarded)."""
import argparse
import functools
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

mp.set_start_method("spawn")  # FRK402: 0


def pad_collate(batch, pad_value=0.0):
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.tensor(ys)


def setup(rank, world_size):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)


def main_worker(rank, world_size, args):
    setup(rank, world_size)
    tf = transforms.Compose([transforms.ToTensor()])
    ds = datasets.CIFAR10(args.data, train=True, download=False, transform=tf)
    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        pin_memory=True, collate_fn=functools.partial(pad_collate, pad_value=0.0))
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).cuda(rank), device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.cuda(rank, non_blocking=True), y.cuda(rank, non_blocking=True)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.3f}")
    dist.destroy_process_group()


parser = argparse.ArgumentParser()
parser.add_argument("--data", default="./data")
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--workers", type=int, default=4)
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
world_size = torch.cuda.device_count()
mp.spawn(main_worker, args=(world_size, args), nprocs=world_size, join=True)  # FRK401: 0
