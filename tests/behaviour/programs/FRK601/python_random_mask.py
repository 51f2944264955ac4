"""Token masking drawn from random.Random kept on self (prints the lengths and counts)."""
import random

from torch.utils.data import DataLoader, Dataset


class Masked(Dataset):
    def __init__(self, sentences, p=0.3):
        self.sentences = sentences
        self.p = p
        self.rand = random.Random(1234)

    def __len__(self):
        return len(self.sentences)

    def __getitem__(self, i):
        words = self.sentences[i].split()
        return " ".join("[MASK]" if self.rand.random() < self.p else w for w in words)


if __name__ == "__main__":
    ds = Masked(["a b c d", "e f g", "h i j k l", "m n"])
    out = [s for b in DataLoader(ds, batch_size=2, num_workers=2) for s in b]
    print([len(s.split()) for s in out])
