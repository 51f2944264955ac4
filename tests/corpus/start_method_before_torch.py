"""Sets the start method before torch is imported, then trains under a guard."""
import multiprocessing as mp

mp.set_start_method("forkserver")  # FRK403: 0
mp.set_forkserver_preload(["numpy"])

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Sines(Dataset):
    def __init__(self, n=2048, length=128):
        self.freqs = np.linspace(0.5, 8.0, n, dtype=np.float32)
        self.t = np.linspace(0, 1, length, dtype=np.float32)

    def __len__(self):
        return len(self.freqs)

    def __getitem__(self, i):
        wave = np.sin(2 * np.pi * self.freqs[i] * self.t) + 0.05 * np.random.randn(len(self.t))
        return torch.from_numpy(wave.astype(np.float32)), torch.tensor(self.freqs[i])


def evaluate(model, ds):
    loader = DataLoader(ds, batch_size=128, num_workers=2,
                        multiprocessing_context=mp.get_context("forkserver"), persistent_workers=True)
    total = 0.0
    with torch.no_grad():
        for x, f in loader:
            total += torch.nn.functional.mse_loss(model(x).squeeze(-1), f, reduction="sum").item()
    return total / len(ds)


if __name__ == "__main__":
    model = torch.nn.Sequential(torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    print(evaluate(model, Sines()))
