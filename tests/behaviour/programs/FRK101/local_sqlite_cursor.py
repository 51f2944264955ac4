"""A cursor kept from a sqlite connection opened into a local of __init__; the row count is read there."""
import os
import sqlite3
import tempfile

from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, db):
        conn = sqlite3.connect(db)
        self.cur = conn.cursor()
        self.n = self.cur.execute("SELECT COUNT(*) FROM items").fetchone()[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        name, value = self.cur.execute("SELECT name, value FROM items WHERE id = ?", (i,)).fetchone()
        return f"{name}={value}"


if __name__ == "__main__":
    db = os.path.join(tempfile.mkdtemp(), "items.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, value REAL)")
        c.executemany("INSERT INTO items VALUES (?, ?, ?)", [(i, f"item{i}", i * 1.5) for i in range(7)])
    ds = Rows(db)
    print(len(ds), ds[3])
    for batch in DataLoader(ds, batch_size=3, num_workers=2, collate_fn=list):
        print(batch)
