"""A file-backed dataset iterated for two epochs with spawn workers."""
import os
import tempfile

from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i]) as f:
            return len(f.read())


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    paths = []
    for i in range(4):
        p = os.path.join(root, f"{i}.txt")
        with open(p, "w") as f:
            f.write("x" * (i + 1))
        paths.append(p)
    loader = DataLoader(Files(paths), batch_size=2, num_workers=2, multiprocessing_context="spawn",
                        pin_memory=False)
    for epoch in range(2):
        print(epoch, [b.tolist() for b in loader])
