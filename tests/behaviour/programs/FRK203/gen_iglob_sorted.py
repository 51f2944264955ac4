"""Image paths from glob.iglob kept in __init__; the dataset sorts them into an index on first use."""
import glob
import os
import tempfile

from torch.utils.data import DataLoader, IterableDataset


class Index(IterableDataset):
    def __init__(self, root):
        self.found = glob.iglob(os.path.join(root, "**", "*.png"), recursive=True)

    def __iter__(self):
        for i, path in enumerate(sorted(self.found)):
            yield i, os.path.basename(path)


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    for d in ("train", "val"):
        os.makedirs(os.path.join(root, d))
        for i in range(4):
            open(os.path.join(root, d, f"{d}_{i}.png"), "wb").close()
    for batch in DataLoader(Index(root), batch_size=3, num_workers=2, collate_fn=list):
        print(batch)
