"""A script with a guard for its report, but the loading loop above it."""
import sqlite3
import tempfile
import os

from torch.utils.data import DataLoader

db = os.path.join(tempfile.mkdtemp(), "scores.db")
with sqlite3.connect(db) as c:
    c.execute("CREATE TABLE s (v REAL)")
    c.executemany("INSERT INTO s VALUES (?)", [(i / 2,) for i in range(6)])
with sqlite3.connect(db) as c:
    rows = [r[0] for r in c.execute("SELECT v FROM s ORDER BY v")]
means = [float(b.mean()) for b in DataLoader(rows, batch_size=2, num_workers=2)]

if __name__ == "__main__":
    print("means", means)
