"""Dataset with a background prefetch thread and other unpicklable members (FRK203)."""
import queue
import threading

import numpy as np
import torch
from torch.utils.data import Dataset


class PrefetchingDataset(Dataset):
    def __init__(self, files, depth=64, backend="cv2"):
        self.files = list(files)
        self._queue = queue.Queue(maxsize=depth)  # FRK203: 22
        self._stop = threading.Event()  # FRK203: 21
        self._thread = threading.Thread(target=self._prefetch, daemon=True)  # FRK203: 23
        self._thread.start()
        self._records = self._iter_records()  # FRK203: 24
        if backend == "cv2":
            import cv2

            self.decoder = cv2  # FRK203: 27
        else:
            self.decoder = None

    def _iter_records(self):
        for path in self.files:
            with open(path, "rb") as f:
                yield path, f.read()

    def _prefetch(self):
        for path in self.files:
            if self._stop.is_set():
                return
            self._queue.put((path, np.fromfile(path, dtype=np.uint8)))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, raw = self._queue.get()
        if self.decoder is not None:
            img = self.decoder.imdecode(raw, 1)
        else:
            img = raw
        return torch.from_numpy(np.ascontiguousarray(img)), path

    def close(self):
        self._stop.set()
        self._thread.join(timeout=1.0)
