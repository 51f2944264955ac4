"""The start method given as a keyword argument."""
import multiprocessing

multiprocessing.set_start_method(method="spawn")

import tempfile  # noqa: E402
import os  # noqa: E402

from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Lines(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.lines = f.read().splitlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i][::-1]


if __name__ == "__main__":
    p = os.path.join(tempfile.mkdtemp(), "l.txt")
    with open(p, "w") as f:
        f.write("alpha\nbeta\ngamma\n")
    for b in DataLoader(Lines(p), batch_size=3, num_workers=2):
        print(b)
