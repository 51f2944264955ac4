"""A text corpus: line offsets indexed in __init__ from a file kept open."""
import os
import tempfile

from torch.utils.data import DataLoader, Dataset


class LineCorpus(Dataset):
    def __init__(self, path):
        self.f = open(path, "r", encoding="utf-8")
        self.offsets = []
        pos = 0
        for line in self.f:
            self.offsets.append(pos)
            pos += len(line.encode("utf-8"))

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        self.f.seek(self.offsets[i])
        return self.f.readline().rstrip("\n").upper()


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"sentence number {i}\n" for i in range(7)))
    for batch in DataLoader(LineCorpus(path), batch_size=3, num_workers=2):
        print(batch)
