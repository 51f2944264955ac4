"""A main() that iterates a loader, called without a guard."""
from torch.utils.data import DataLoader, Dataset


class Words(Dataset):
    def __init__(self, text):
        self.words = text.split()

    def __len__(self):
        return len(self.words)

    def __getitem__(self, i):
        return len(self.words[i])


def main():
    total = 0
    for batch in DataLoader(Words("a quick brown fox jumps over the lazy dog"), batch_size=3, num_workers=2):
        total += int(batch.sum())
        print(batch.tolist())
    print("letters", total)


main()
