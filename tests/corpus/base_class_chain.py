"""Same-file base classes and mixins: handles opened in a base __init__ reached via super()."""
import json

import torch
from torch.utils.data import Dataset


class JsonlBase(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = self._scan(path)
        self.fh = open(path, "rb")  # FRK101: 18

    @staticmethod
    def _scan(path):
        offsets, pos = [], 0
        with open(path, "rb") as f:
            for line in f:
                offsets.append(pos)
                pos += len(line)
        return offsets

    def __len__(self):
        return len(self.offsets)

    def _record(self, i):
        self.fh.seek(self.offsets[i])
        return json.loads(self.fh.readline())


class InstructionDataset(JsonlBase):
    def __init__(self, path, tokenizer, max_len=512):
        super().__init__(path)
        self.tokenizer = tokenizer
        self.max_len = max_len

    def __getitem__(self, i):
        rec = self._record(i)
        ids = self.tokenizer(rec["prompt"] + rec["response"], truncation=True, max_length=self.max_len)
        return torch.tensor(ids["input_ids"])


class IndexFileMixin:
    def __init__(self, index_path, **kwargs):
        super().__init__(**kwargs)
        self.index_fh = open(index_path, "rb")  # FRK101: 24

    def _offset(self, i):
        self.index_fh.seek(8 * i)
        return int.from_bytes(self.index_fh.read(8), "little")


class IndexedText(IndexFileMixin, Dataset):
    def __init__(self, index_path, text):
        super().__init__(index_path)
        self.text = text

    def __len__(self):
        return len(self.text) // 128

    def __getitem__(self, i):
        start = self._offset(i)
        return self.text[start:start + 128]
