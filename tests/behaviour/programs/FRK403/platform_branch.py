"""Spawn everywhere, set where the platform needs it (without force=True)."""
import multiprocessing
import sys

if sys.platform != "win32":
    multiprocessing.set_start_method("spawn")

from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Letters(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return "abcd"[i]


if __name__ == "__main__":
    for b in DataLoader(Letters(), batch_size=2, num_workers=2):
        print(b)
