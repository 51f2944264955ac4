"""A fork context object given to the loader; the model may live on CUDA."""
import multiprocessing as mp

import torch
from torch.utils.data import DataLoader

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    net = torch.nn.Identity()
    if torch.cuda.is_available():
        net = net.cuda()
    for b in DataLoader(list(range(6)), batch_size=2, num_workers=2, multiprocessing_context=ctx):
        print(net(b).tolist())
