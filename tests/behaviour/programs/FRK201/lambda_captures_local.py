"""A collate lambda that captures a local vocabulary (the fix binds it with functools.partial)."""
import torch
from torch.utils.data import DataLoader


def make_loader(words):
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    return DataLoader(words, batch_size=3, num_workers=2,
                      collate_fn=lambda batch: torch.tensor([vocab[w] for w in batch]))


if __name__ == "__main__":
    words = "the cat sat on the mat with the hat".split()
    for batch in make_loader(words):
        print(batch.tolist())
