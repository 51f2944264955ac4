"""A directory tree walked with os.walk in __init__; the files are read while iterating."""
import os
import tempfile

from torch.utils.data import DataLoader, IterableDataset


class TextTree(IterableDataset):
    def __init__(self, root):
        self.root = root
        self.tree = os.walk(root)

    def __iter__(self):
        for dirpath, _, names in self.tree:
            for name in sorted(names):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    yield os.path.relpath(os.path.join(dirpath, name), self.root), len(f.read())


if __name__ == "__main__":
    root = tempfile.mkdtemp()
    for sub in ("a", "b/c"):
        os.makedirs(os.path.join(root, sub))
        for i in range(3):
            with open(os.path.join(root, sub, f"f{i}.txt"), "w", encoding="utf-8") as f:
                f.write("x" * (i + len(sub)))
    print(sorted(DataLoader(TextTree(root), batch_size=None, num_workers=2)))
