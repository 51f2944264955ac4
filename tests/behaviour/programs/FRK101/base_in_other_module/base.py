"""A project's base dataset: subclasses open `fh`; `close()` resets it."""
from torch.utils.data import Dataset


class FileDataset(Dataset):
    def __init__(self, path):
        self.path = path
        self.fh = None

    def close(self):
        if self.fh is not None:
            self.fh.close()
        self.fh = None
