"""LightningDataModule with several loaders (PyTorch Lightning style)."""
import threading

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, random_split
from torch.utils.data.dataloader import default_collate
from torchvision import transforms
from torchvision.datasets import MNIST


class MNISTDataModule(pl.LightningDataModule):
    def __init__(self, data_dir="./data", batch_size=64, num_workers=4):
        super().__init__()
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.num_workers = num_workers
        self._setup_lock = threading.Lock()
        self.rng = np.random.default_rng(0)
        self.transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])

    def prepare_data(self):
        MNIST(self.data_dir, train=True, download=True)
        MNIST(self.data_dir, train=False, download=True)

    def setup(self, stage=None):
        with self._setup_lock:
            if stage in (None, "fit"):
                full = MNIST(self.data_dir, train=True, transform=self.transform)
                n_val = int(len(full) * 0.1)
                seed = int(self.rng.integers(0, 2**31 - 1))
                self.mnist_train, self.mnist_val = random_split(
                    full, [len(full) - n_val, n_val], generator=torch.Generator().manual_seed(seed))
            if stage in (None, "test"):
                self.mnist_test = MNIST(self.data_dir, train=False, transform=self.transform)

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, persistent_workers=True,
                          collate_fn=lambda batch: default_collate(batch))  # FRK201: 37

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=self.batch_size, num_workers=4,  # FRK501: 15
                          multiprocessing_context="forkserver")

    def test_dataloader(self):
        return DataLoader(self.mnist_test, batch_size=self.batch_size, num_workers=4,
                          multiprocessing_context="spawn", persistent_workers=True)

    def predict_dataloader(self):
        return DataLoader(self.mnist_test, batch_size=256, num_workers=0,
                          collate_fn=lambda b: default_collate(b))
