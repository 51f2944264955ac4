"""Spawn set after torch; the dataset reads a temp JSON-lines file."""
import json
import os
import tempfile

import torch
import torch.multiprocessing
from torch.utils.data import DataLoader, Dataset

torch.multiprocessing.set_start_method("spawn")


class JsonLines(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i]["x"]), self.rows[i]["y"]


if __name__ == "__main__":
    path = os.path.join(tempfile.mkdtemp(), "d.jsonl")
    with open(path, "w") as f:
        for i in range(4):
            f.write(json.dumps({"x": [i, i + 1], "y": i % 2}) + "\n")
    for x, y in DataLoader(JsonLines(path), batch_size=2, num_workers=2):
        print(x.tolist(), y.tolist())
