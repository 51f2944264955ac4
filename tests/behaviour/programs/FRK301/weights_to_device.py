"""Per-sample weights created on a torch.device chosen at import."""
import torch
from torch.utils.data import DataLoader, Dataset

dev = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Weighted(Dataset):
    def __init__(self, values):
        self.values = torch.tensor(values, dtype=torch.float64)
        self.weights = torch.ones(len(values), device=dev) / len(values)

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        return self.values[i], self.weights[i]


if __name__ == "__main__":
    for v, w in DataLoader(Weighted([0.5, 1.5, 2.5, 3.5]), batch_size=2, num_workers=2):
        print(v.tolist(), [round(x, 6) for x in w.cpu().tolist()])
