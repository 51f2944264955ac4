"""Streams decoded audio from media files with PyAV (IterableDataset)."""
import av
import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info


class AudioFrameStream(IterableDataset):
    def __init__(self, path, sample_rate=16000, chunk=16000):
        super().__init__()
        self.path = path
        self.sample_rate = sample_rate
        self.chunk = chunk
        self.container = av.open(path)  # FRK101: 25
        self.stream = self.container.streams.audio[0]
        self.duration = float(self.stream.duration * self.stream.time_base) if self.stream.duration else None

    def _resampler(self):
        return av.AudioResampler(format="s16", layout="mono", rate=self.sample_rate)

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        resampler = self._resampler()
        buf = np.zeros(0, dtype=np.int16)
        n = 0
        self.container.seek(0)
        for frame in self.container.decode(self.stream):
            for rf in resampler.resample(frame):
                buf = np.concatenate([buf, rf.to_ndarray().reshape(-1)])
            while len(buf) >= self.chunk:
                piece, buf = buf[:self.chunk], buf[self.chunk:]
                if n % nw == wid:
                    yield torch.from_numpy(piece.astype(np.float32) / 32768.0)
                n += 1


class AudioFileList(IterableDataset):
    """Opens each file inside __iter__ with a context manager (not flagged)."""

    def __init__(self, paths, sample_rate=16000):
        super().__init__()
        self.paths = list(paths)
        self.sample_rate = sample_rate

    def __iter__(self):
        info = get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for p in paths:
            with av.open(p) as container:
                for frame in container.decode(audio=0):
                    yield torch.from_numpy(frame.to_ndarray().astype(np.float32))
