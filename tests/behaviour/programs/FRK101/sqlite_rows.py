"""Rows of a SQLite table, the connection made in __init__."""
import os
import sqlite3
import tempfile

from torch.utils.data import DataLoader, Dataset


class SqliteRows(Dataset):
    def __init__(self, db):
        self.conn = sqlite3.connect(db)
        self.ids = [r[0] for r in self.conn.execute("SELECT id FROM samples ORDER BY id")]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        text, score = self.conn.execute(
            "SELECT text, score FROM samples WHERE id = ?", (self.ids[i],)
        ).fetchone()
        return {"text": text, "score": score}


if __name__ == "__main__":
    db = os.path.join(tempfile.mkdtemp(), "samples.db")
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE samples (id INTEGER PRIMARY KEY, text TEXT, score REAL)")
        c.executemany("INSERT INTO samples VALUES (?, ?, ?)", [(i, f"s{i}", i / 4) for i in range(8)])
    for batch in DataLoader(SqliteRows(db), batch_size=4, num_workers=2):
        print(batch["text"], batch["score"].tolist())
