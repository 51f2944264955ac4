"""WebDataset-like streaming over tar shards; shards are opened inside __iter__. Clean."""
import io
import itertools
import json
import os
import tarfile

import torch
from PIL import Image
from torch.utils.data import IterableDataset, get_worker_info

SHARD_LIST = open(os.environ.get("SHARD_LIST", "shards.txt")).read().split()


class TarShardStream(IterableDataset):
    def __init__(self, shards=None, shuffle_buffer=1000, transform=None):
        super().__init__()
        self.shards = list(shards or SHARD_LIST)
        self.shuffle_buffer = shuffle_buffer
        self.transform = transform

    def _my_shards(self):
        info = get_worker_info()
        if info is None:
            return self.shards
        return self.shards[info.id::info.num_workers]

    def _samples(self, shard):
        with tarfile.open(shard, "r|*") as tar:
            current = {}
            for member in tar:
                if not member.isfile():
                    continue
                stem, ext = os.path.splitext(member.name)
                if current and current["__key__"] != stem:
                    yield current
                    current = {}
                current["__key__"] = stem
                current[ext] = tar.extractfile(member).read()
            if current:
                yield current

    def __iter__(self):
        info = get_worker_info()
        g = torch.Generator()
        g.manual_seed(info.seed if info is not None else torch.initial_seed())
        buf = []
        for sample in itertools.chain.from_iterable(self._samples(s) for s in self._my_shards()):
            img = Image.open(io.BytesIO(sample[".jpg"])).convert("RGB")
            meta = json.loads(sample[".json"])
            item = (self.transform(img) if self.transform else img, meta["label"])
            if len(buf) < self.shuffle_buffer:
                buf.append(item)
                continue
            j = int(torch.randint(len(buf), (1,), generator=g))
            yield buf[j]
            buf[j] = item
        yield from buf
