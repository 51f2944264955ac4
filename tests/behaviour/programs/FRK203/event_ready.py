"""An Event marking that the label map has been loaded."""
import threading

from torch.utils.data import DataLoader, Dataset


class Tagged(Dataset):
    def __init__(self, labels):
        self.labels = labels
        self.ready = threading.Event()
        self.mapping = {}

    def _load(self):
        if not self.ready.is_set():
            self.mapping = {name: k for k, name in enumerate(sorted(set(self.labels)))}
            self.ready.set()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        self._load()
        return self.mapping[self.labels[i]]


if __name__ == "__main__":
    for batch in DataLoader(Tagged(["dog", "cat", "dog", "eel", "cat", "ant"]), batch_size=3, num_workers=2):
        print(batch.tolist())
