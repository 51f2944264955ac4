"""A stream of CSV rows filtered by a generator expression in __init__, sharded per worker in __iter__."""
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Rows(IterableDataset):
    def __init__(self, lines, min_fields=3):
        self.rows = (line.split(",") for line in lines if line.count(",") + 1 >= min_fields)

    def __iter__(self):
        info = get_worker_info()
        shard, n = (0, 1) if info is None else (info.id, info.num_workers)
        for i, row in enumerate(self.rows):
            if i % n == shard:
                yield torch.tensor([float(x) for x in row])


if __name__ == "__main__":
    lines = [",".join(str(i * k) for k in range(1 + i % 4)) for i in range(20)]
    for batch in DataLoader(Rows(lines), batch_size=4, num_workers=2, collate_fn=list):
        print([t.tolist() for t in batch])
