"""A SQLite connection made on first use; __len__ uses it in the parent."""
import os
import sqlite3
import tempfile

from torch.utils.data import DataLoader, Dataset


class Captions(Dataset):
    def __init__(self, db):
        self.db = db
        self.conn = None

    def connection(self):
        if self.conn is None:
            self.conn = sqlite3.connect(self.db)
        return self.conn

    def __len__(self):
        return self.connection().execute("SELECT COUNT(*) FROM captions").fetchone()[0]

    def __getitem__(self, i):
        return self.connection().execute("SELECT caption FROM captions WHERE id = ?", (i,)).fetchone()[0]


if __name__ == "__main__":
    db = os.path.join(tempfile.mkdtemp(), "captions.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE captions (id INTEGER PRIMARY KEY, caption TEXT)")
        c.executemany("INSERT INTO captions VALUES (?, ?)", [(i, f"a photo of {i} cats") for i in range(6)])
    for batch in DataLoader(Captions(db), batch_size=3, num_workers=2):
        print(batch)
