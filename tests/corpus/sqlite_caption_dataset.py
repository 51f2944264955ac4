"""Image-caption dataset with SQLite metadata: connection made in an __init__ helper (FRK101)
and a module-level cache connection used by the workers (FRK102)."""
import io
import sqlite3

import torch
from PIL import Image
from torch.utils.data import Dataset

CACHE_DB = sqlite3.connect("/tmp/caption_cache.db", check_same_thread=False)  # FRK102: 11


def cached_caption(key):
    row = CACHE_DB.execute("SELECT caption FROM cache WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


class CaptionDataset(Dataset):
    def __init__(self, db_path, tokenizer, max_len=64):
        self.tokenizer = tokenizer
        self.max_len = max_len
        self._connect(db_path)
        self.ids = [r[0] for r in self.cur.execute("SELECT id FROM captions ORDER BY id")]

    def _connect(self, db_path):
        self.conn = sqlite3.connect(db_path)  # FRK101: 20
        self.cur = self.conn.cursor()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        key = self.ids[i]
        cap = cached_caption(key)
        if cap is None:
            cap, blob = self.conn.execute("SELECT caption, image FROM captions WHERE id = ?", (key,)).fetchone()
        else:
            (blob,) = self.conn.execute("SELECT image FROM captions WHERE id = ?", (key,)).fetchone()
        img = Image.open(io.BytesIO(blob)).convert("RGB")
        tokens = self.tokenizer(cap, max_length=self.max_len, truncation=True, padding="max_length")
        return img, torch.tensor(tokens["input_ids"])
